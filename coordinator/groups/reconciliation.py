"""The reconciliation engine: how one member moves from its current assignment to its target.

Shared by every group type with a declarative target (KIP-848 `consumer` groups, `connect`
groups): items are opaque and hashable — (topic id, partition) pairs for consumers,
connector and task ids for workers. This module never touches IO or time.

Rules (Apache Kafka's CurrentAssignmentBuilder):
- An item is *held* by a member while it is assigned to it or pending its revocation. An
  item is given to a new owner only once no other member holds it, so no item is ever
  held by two members at once.
- Revoke before assign: a member that must give items up is told its smaller assignment
  and stays at its old epoch (UNREVOKED) until it reports, through its owned items, that
  it no longer has them. A member that reports nothing (null) still holds them.
- A member whose target includes items others still hold moves to the target epoch with
  what is free (UNRELEASED) and picks the rest up on later heartbeats as they are freed.
- Otherwise the member is STABLE at the target epoch, holding exactly its target.
- Eager (`revoke_all`, Kafka Connect's eager protocol): a member moving to a new target
  epoch first gives up everything it holds, even what its target keeps, and is assigned
  its target only afterwards; the caller says, through `held_by_others`, when the items
  are free (for an eager group: once no member holds anything from an older epoch).
Every result is a new immutable `MemberAssignment`; the caller records and applies it.
"""

from __future__ import annotations

from collections.abc import Callable, Hashable
from dataclasses import dataclass
from enum import IntEnum
from typing import Generic, TypeVar

Item = TypeVar("Item", bound=Hashable)


class MemberState(IntEnum):
    STABLE = 0
    UNREVOKED = 1
    UNRELEASED = 2
    UNKNOWN = 127


@dataclass(frozen=True, slots=True)
class MemberAssignment(Generic[Item]):
    state: MemberState
    member_epoch: int
    previous_epoch: int
    assigned: frozenset[Item]
    pending_revocation: frozenset[Item]

    @classmethod
    def joining(cls) -> MemberAssignment[Item]:
        return cls(MemberState.STABLE, 0, 0, frozenset(), frozenset())

    @property
    def held(self) -> frozenset[Item]:
        return self.assigned | self.pending_revocation


@dataclass(frozen=True, slots=True)
class TargetMember(Generic[Item]):
    """A member's part of the target: its items, and what a client-side assignor said with
    them (an error, and metadata the member reads at the target's epoch)."""

    items: frozenset[Item]
    error: int = 0
    metadata_version: int = 0
    metadata: bytes = b""


def reconcile(
    current: MemberAssignment[Item],
    target_epoch: int,
    target: frozenset[Item],
    owned: frozenset[Item] | None,
    held_by_others: Callable[[Item], bool],
    *,
    revoke_all: bool = False,
) -> MemberAssignment[Item]:
    """The member's next state, given its target and the items it reports owning."""
    if current.state == MemberState.STABLE:
        if current.member_epoch == target_epoch:
            return current
        return _next(current, target_epoch, target, owned, held_by_others, revoke_all)
    if current.state == MemberState.UNREVOKED:
        # Waiting for the member to let go: only its report of what it owns can end the wait.
        if owned is None or owned & current.pending_revocation:
            return current
        return _next(current, target_epoch, target, owned, held_by_others, revoke_all)
    if current.state == MemberState.UNRELEASED:
        # Try again: other members may have released what this one is waiting for.
        return _next(current, target_epoch, target, owned, held_by_others, revoke_all)
    raise ValueError(f"cannot reconcile a member in state {current.state.name}")


def _next(
    current: MemberAssignment[Item],
    target_epoch: int,
    target: frozenset[Item],
    owned: frozenset[Item] | None,
    held_by_others: Callable[[Item], bool],
    revoke_all: bool,
) -> MemberAssignment[Item]:
    # Eager: nothing is kept across epochs (what the target keeps is stopped and assigned again).
    moving = revoke_all and current.member_epoch != target_epoch
    kept = frozenset() if moving else current.assigned & target
    to_revoke = current.assigned - kept
    wanted = target - kept
    unreleased = frozenset(item for item in wanted if held_by_others(item))
    free = wanted - unreleased
    # The member may already have let the revoked items go (a lost response): then it
    # need not be asked again.
    still_owned = to_revoke if owned is None else to_revoke & owned
    if still_owned:
        return MemberAssignment(
            MemberState.UNREVOKED, current.member_epoch, current.previous_epoch, kept, to_revoke
        )
    state = MemberState.UNRELEASED if unreleased else MemberState.STABLE
    return MemberAssignment(state, target_epoch, current.member_epoch, kept | free, frozenset())


class Ownership(Generic[Item]):
    """Which member holds each item (assigned or pending revocation), group-wide."""

    def __init__(self) -> None:
        self._holder: dict[Item, str] = {}

    def held_by_others(self, member_id: str) -> Callable[[Item], bool]:
        return lambda item: self._holder.get(item, member_id) != member_id

    def update(
        self, member_id: str, before: MemberAssignment[Item] | None, after: MemberAssignment[Item] | None
    ) -> None:
        """Apply a member's change; raises if it would take an item another member holds."""
        released = (before.held if before else frozenset()) - (after.held if after else frozenset())
        for item in released:
            if self._holder.get(item) == member_id:
                del self._holder[item]
        for item in after.held if after else frozenset():
            holder = self._holder.setdefault(item, member_id)
            if holder != member_id:
                raise AssertionError(f"{item!r} is held by {holder}, not free for {member_id}")

    def snapshot(self) -> dict[Item, str]:
        return dict(self._holder)


def fenced_reason(current: MemberAssignment[Item], epoch: int, owned: frozenset[Item] | None) -> str | None:
    """Why a heartbeat at `epoch` is fenced (FENCED_MEMBER_EPOCH), or None if it is accepted.

    Epoch 0 (a rejoin) and the member's own epoch are accepted. A newer epoch is fenced. An
    older one is accepted only when it is the member's previous epoch and what it reports
    owning is a subset of its current assignment: the answer that moved it on was lost.
    """
    if epoch in (0, current.member_epoch):
        return None
    if epoch > current.member_epoch:
        return f"Epoch {epoch} is newer than the member's {current.member_epoch}."
    if epoch == current.previous_epoch and owned is not None and owned <= current.assigned:
        return None
    return f"Epoch {epoch} is older than the member's {current.member_epoch}."

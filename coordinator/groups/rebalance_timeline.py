"""The rebalance timeline: each group's last rebalances, as an operator asks about them.

Why did the group rebalance, what moved, and when did each member work again? The core
knows each answer at the moment it happens and forgets it afterwards: the cause of an epoch
bump is the request or deadline that bumped it (`requests.Trigger`), the moves are the
difference between two settled assignments, and a member reaches the new epoch with the
assignment record that puts it there. This module keeps those facts, per group, for the
last `size` rebalances; `group_metrics` feeds it as it observes the group.

Rules
-----
- A rebalance spans what `group_metrics` calls a reconcile: from the first new epoch while
  the group was settled until it is settled again (Stable, every member at the target).
  Epoch bumps in between join the same rebalance as further triggers, so the time to
  balance is the one the reconcile summary counts, and the histogram is fed the same value.
- Moves are per holder (a static member's instance, else the member): *revoked* is what it
  held at the previous settled point and does not hold now, *assigned* the reverse. An item
  nobody holds when the group settles (a lost worker's work awaiting the scheduled delay) is
  revoked and not yet assigned; it is *paused* until a later rebalance assigns it. A
  modern group revokes before it assigns, so every revoked item paused.
- Times are milliseconds after the rebalance started, on the core's clock.
- Bounded: `size` rebalances per group, each naming the members and items of that group;
  forgotten with the group. Nothing here is a record: the timeline starts empty after a
  restart (docs/operations.md says why).

Pure: no IO, no clock; items are named by the function the owner passes in.
"""

from __future__ import annotations

from collections import deque
from collections.abc import Callable, Hashable, Mapping
from dataclasses import dataclass, field
from typing import Any

ItemName = Callable[[Hashable], str]


@dataclass(frozen=True, slots=True)
class Cause:
    """One epoch bump of the rebalance: why, whom it concerned, the epoch it led to, when."""

    cause: str
    member: str  # the holder's name ("" when no member)
    epoch: int
    at_ms: int

    def as_json(self) -> dict[str, Any]:
        return {"cause": self.cause, "member": self.member, "epoch": self.epoch, "at_ms": self.at_ms}


@dataclass(frozen=True, slots=True)
class MemberMoves:
    member: str  # the holder: a static member's instance id, else the member id
    client_id: str
    revoked: tuple[str, ...]
    assigned: tuple[str, ...]
    reached_ms: int | None  # when it reached the new epoch; None: not a member at the end


@dataclass(frozen=True, slots=True)
class Rebalance:
    group_type: str
    from_epoch: int
    to_epoch: int
    started_ms: int  # the core's clock (wall-clock milliseconds in the coordinator)
    time_to_balance_ms: int
    triggers: tuple[Cause, ...]
    members: tuple[MemberMoves, ...]

    @property
    def paused(self) -> int:
        """Items revoked in this rebalance: each was held by nobody for a while."""
        return sum(len(m.revoked) for m in self.members)

    def as_json(self) -> dict[str, Any]:
        return {
            "group_type": self.group_type,
            "from_epoch": self.from_epoch,
            "to_epoch": self.to_epoch,
            "started_ms": self.started_ms,
            "time_to_balance_ms": self.time_to_balance_ms,
            "paused": self.paused,
            "triggers": [t.as_json() for t in self.triggers],
            "members": [
                {"member": m.member, "client_id": m.client_id, "revoked": list(m.revoked),
                 "assigned": list(m.assigned), "reached_ms": m.reached_ms}
                for m in self.members
            ],
        }  # fmt: skip


@dataclass
class OpenRebalance:
    """A rebalance under way: what is known of it so far."""

    from_epoch: int
    started_ms: int
    triggers: list[Cause] = field(default_factory=list)
    reached: dict[str, int] = field(default_factory=dict)  # member id -> ms after the start

    def triggered(self, causes: list[tuple[str, str]], epoch: int, now_ms: int) -> None:
        for cause, member in causes or [("unknown", "")]:
            self.triggers.append(Cause(cause, member, epoch, now_ms - self.started_ms))

    def member_reached(self, member_id: str, now_ms: int) -> None:
        self.reached[member_id] = now_ms - self.started_ms

    def settled(
        self,
        group_type: str,
        to_epoch: int,
        now_ms: int,
        before: Mapping[Hashable, str],
        after: Mapping[Hashable, str],
        present: Mapping[str, tuple[str, str]],
        clients: Mapping[str, str],
        item_name: ItemName,
    ) -> Rebalance:
        """The finished rebalance. `before`/`after`: item -> holder at the two settled points;
        `present`: member id -> (holder, client id) of the members now; `clients`: holder ->
        client id of members gone. A present member not in `reached` reached the epoch when the
        group settled (a classic group's members, all answered by the leader's SyncGroup)."""
        revoked: dict[str, list[str]] = {}
        assigned: dict[str, list[str]] = {}
        for item, holder in before.items():
            if after.get(item) != holder:
                revoked.setdefault(holder, []).append(item_name(item))
        for item, holder in after.items():
            if before.get(item) != holder:
                assigned.setdefault(holder, []).append(item_name(item))
        elapsed = now_ms - self.started_ms
        reached = {holder: self.reached.get(member_id, elapsed) for member_id, (holder, _) in present.items()}
        names = {**clients, **dict(present.values())}
        moves = tuple(
            MemberMoves(
                holder,
                names.get(holder, ""),
                tuple(sorted(revoked.get(holder, ()))),
                tuple(sorted(assigned.get(holder, ()))),
                reached.get(holder),
            )
            for holder in sorted(set(revoked) | set(assigned) | set(reached))
        )
        return Rebalance(
            group_type, self.from_epoch, to_epoch, self.started_ms, elapsed, tuple(self.triggers), moves
        )


class Timelines:
    """The last `size` rebalances of each group, oldest first."""

    def __init__(self, size: int) -> None:
        self.size = size
        self.groups: dict[str, deque[Rebalance]] = {}

    def add(self, group_id: str, rebalance: Rebalance) -> None:
        entries = self.groups.get(group_id)
        if entries is None:
            entries = self.groups[group_id] = deque(maxlen=self.size)
        entries.append(rebalance)

    def of(self, group_id: str) -> list[Rebalance]:
        return list(self.groups.get(group_id, ()))

    def forget(self, group_id: str) -> None:
        self.groups.pop(group_id, None)

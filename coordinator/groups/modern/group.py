"""The model of a modern group: epochs, members, the target, who holds what, who computes.

A modern group (a KIP-848 consumer group, a connect group) has a *group epoch*, bumped when
what the assignment depends on changes, and an *assignment epoch*, the epoch its target was
computed for. Each member carries the profile its heartbeats declared (a group type's
persisted member metadata: instance id, client, rebalance timeout, assignors, and what a
classic-protocol member joined with) and its current assignment, moved towards its target
by the reconciliation engine. Members are immutable values: a member changes only when a
record replaces it.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from enum import StrEnum
from typing import Any, ClassVar, Generic

from connect_rebalance.errors import ErrorCode, KafkaApiError
from coordinator.groups.client_assignment import ComputeRound
from coordinator.groups.reconciliation import Item, MemberAssignment, MemberState, Ownership, TargetMember

TEMPORARY_LEAVE_EPOCH = -2


class ModernState(StrEnum):
    EMPTY = "Empty"
    ASSIGNING = "Assigning"
    RECONCILING = "Reconciling"
    STABLE = "Stable"
    DEAD = "Dead"


@dataclass(frozen=True, slots=True)
class Member(Generic[Item]):
    member_id: str
    profile: Any  # the group type's member snapshot (records.py, connect_records.py)
    assignment: MemberAssignment[Item] = field(default_factory=MemberAssignment.joining)

    def __getattr__(self, name: str) -> Any:
        """A member's profile fields read as its own (`member.instance_id`, `member.url`)."""
        return getattr(self.profile, name)


@dataclass
class ModernGroup(Generic[Item]):
    group_id: str
    group_epoch: int = 0
    assignment_epoch: int = 0
    members: dict[str, Member[Item]] = field(default_factory=dict)
    target: dict[str, TargetMember[Item]] = field(default_factory=dict)
    target_error: int = 0  # reported by a client-side assignor with the target
    assignor_name: str = ""
    ownership: Ownership[Item] = field(default_factory=Ownership)
    compute: ComputeRound = field(default_factory=ComputeRound)
    profiles_version: int = 0  # bumped by every change of a member's profile (or of who is a member)
    # Derived from the above, dropped whenever a record changes the group: a settled group's
    # heartbeats then read its state without walking its members, and a describe of an
    # unchanged group (a monitor polling it) hands out the members it described last time.
    derived_state: ModernState | None = field(default=None, repr=False, compare=False)
    last_described: tuple[Any, Any] | None = field(default=None, repr=False, compare=False)  # key, members

    type_name: ClassVar[str] = ""

    @property
    def protocol_type(self) -> str:
        return self.type_name

    @property
    def state(self) -> ModernState:
        if self.derived_state is None:
            self.derived_state = self._state()
        return self.derived_state

    def forget_derived(self) -> None:
        self.derived_state = self.last_described = None

    def _state(self) -> ModernState:
        if not self.members:
            return ModernState.EMPTY
        if self.group_epoch > self.assignment_epoch:
            return ModernState.ASSIGNING
        if any(
            m.assignment.state != MemberState.STABLE or m.assignment.member_epoch != self.assignment_epoch
            for m in self.members.values()
            if m.assignment.member_epoch != TEMPORARY_LEAVE_EPOCH
        ):
            return ModernState.RECONCILING
        return ModernState.STABLE

    def is_empty(self) -> bool:
        return not self.members

    def target_of(self, member_id: str) -> frozenset[Item]:
        entry = self.target.get(member_id)
        return entry.items if entry is not None else frozenset()

    def static_member(self, instance_id: str) -> Member[Item] | None:
        return next((m for m in self.members.values() if m.instance_id == instance_id), None)

    @property
    def empty_since_ms(self) -> int:
        return -1

    def tombstones(self) -> list[Any]:
        raise NotImplementedError

    def subscribed_topics(self) -> set[str] | None:
        return None  # unknown, unless the group type knows (consumer groups)

    def validate_offset_commit(
        self, member_id: str, instance_id: str | None, generation: int, version: int
    ) -> None:
        """A member commits with its current epoch (v9+). A simple commit (negative epoch: an
        admin client, or a consumer that assigns its own partitions and may send its own
        member id) is accepted by a group with no members, as Kafka does."""
        if generation < 0 and not self.members:
            return
        if not member_id and generation < 0:
            raise KafkaApiError(ErrorCode.UNKNOWN_MEMBER_ID, "the group has members; commit as one of them")
        member = self.members.get(member_id)
        if member is not None and member.classic is not None:
            # A classic member commits with its member epoch as generation, at any version.
            if generation != member.assignment.member_epoch:
                raise KafkaApiError(
                    ErrorCode.ILLEGAL_GENERATION,
                    f"generation {generation} is not the member's epoch {member.assignment.member_epoch}",
                )
            return
        self.validate_offset_fetch(member_id, generation)
        if version < 9:
            raise KafkaApiError(
                ErrorCode.UNSUPPORTED_VERSION, f"{self.type_name} group members commit with OffsetCommit v9+"
            )

    def validate_offset_fetch(self, member_id: str | None, epoch: int) -> None:
        """OffsetFetch v9+ naming a member must carry its current epoch; without one, anyone may read."""
        if member_id is None:
            return
        member = self.members.get(member_id)
        if member is None:
            raise KafkaApiError(
                ErrorCode.UNKNOWN_MEMBER_ID, f"Member {member_id} is not a member of the group."
            )
        current = member.assignment.member_epoch
        if epoch != current:
            raise KafkaApiError(ErrorCode.STALE_MEMBER_EPOCH, f"epoch {epoch} is not the member's {current}")

    def settled(self, member: Member[Item]) -> bool:
        """Nothing to do for this member: at the target's epoch, nothing pending, no target due."""
        return (
            member.assignment.state == MemberState.STABLE
            and member.assignment.member_epoch == self.assignment_epoch
            and self.group_epoch == self.assignment_epoch
        )

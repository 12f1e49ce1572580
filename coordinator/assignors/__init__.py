"""Server-side assignors for consumer groups: pure functions from group state to a target.

    assignor.assign(members, partitions_of) -> {member id: frozenset of (topic, partition)}
    assignor.target(spec) -> owner array (partition index -> member index)

`uniform` (the default) puts balance first and stickiness second: in a group whose members all
subscribe to the same topics, assignment sizes differ by at most one; with different
subscriptions the sizes are the most even those subscriptions allow (no chain of moves, each
member giving one partition to a subscriber of its topic, reaches a member holding two fewer
than the first); members keep as much of their previous target as balance allows. `range`
hands each topic's partitions out in contiguous ranges to its subscribers in a fixed order
(static members by instance id, then the rest by member id), so members subscribed to
co-partitioned topics get the same partition numbers of each. Assignors are looked up by name in `ASSIGNORS`.

The package's parts:
- `spec.py`: the integer-array representation every assignor works on (layout, members,
  subscription and topic classes, per-member views);
- `uniform.py`, `range.py`: the assignors, as functions of a `GroupSpec`;
- `levels.py`, `chains.py`: the uniform assignor's moves for different subscriptions (dealing
  and single moves; chains of moves across subscription classes);
- `members.py`: the conversion from and to the coordinator's per-member frozensets.
Nothing here does IO or reads a clock; an assignor holds no state between calls.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Protocol

from coordinator.assignors.members import (
    Assignment,
    AssignmentMember,
    PartitionSet,
    assign_members,
    group_spec,
    member_targets,
)
from coordinator.assignors.range import range_target
from coordinator.assignors.spec import (
    GroupSpec,
    IntArray,
    MemberPartitions,
    PartitionLayout,
    TopicPartition,
    layout_of,
)
from coordinator.assignors.uniform import uniform_target

__all__ = [
    "ASSIGNORS",
    "DEFAULT_ASSIGNOR",
    "Assignment",
    "AssignmentMember",
    "GroupSpec",
    "MemberPartitions",
    "PartitionLayout",
    "PartitionSet",
    "RangeAssignor",
    "ServerAssignor",
    "TopicPartition",
    "UniformAssignor",
    "group_spec",
    "layout_of",
    "member_targets",
]


class ServerAssignor(Protocol):
    name: str

    def target(self, spec: GroupSpec) -> IntArray: ...

    def assign(
        self, members: Mapping[str, AssignmentMember], partitions_of: Mapping[str, int]
    ) -> Assignment: ...


class UniformAssignor:
    name = "uniform"

    def target(self, spec: GroupSpec) -> IntArray:
        return uniform_target(spec)

    def assign(self, members: Mapping[str, AssignmentMember], partitions_of: Mapping[str, int]) -> Assignment:
        return assign_members(uniform_target, members, partitions_of)


class RangeAssignor:
    name = "range"

    def target(self, spec: GroupSpec) -> IntArray:
        return range_target(spec)

    def assign(self, members: Mapping[str, AssignmentMember], partitions_of: Mapping[str, int]) -> Assignment:
        return assign_members(range_target, members, partitions_of)


ASSIGNORS: dict[str, ServerAssignor] = {a.name: a for a in (UniformAssignor(), RangeAssignor())}
DEFAULT_ASSIGNOR = "uniform"

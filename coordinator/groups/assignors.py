"""Server-side assignors for consumer groups: pure functions from group state to a target.

    assignor.assign(members, partitions_of) -> {member id: frozenset of (topic, partition)}

`uniform` (the default) puts balance first and stickiness second: assignment sizes differ
by at most one for members with the same subscription, and members keep as much of their
previous target as balance allows. `range` hands each topic's partitions out in contiguous
ranges to its subscribers in a fixed order (static members by instance id, then the rest
by member id), so members subscribed to co-partitioned topics get the same partition
numbers of each. Assignors are looked up by name in `ASSIGNORS`.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Protocol

TopicPartition = tuple[str, int]


@dataclass(frozen=True, slots=True)
class AssignmentMember:
    member_id: str
    subscribed: frozenset[str]
    current_target: frozenset[TopicPartition] = frozenset()
    instance_id: str | None = None
    rack_id: str | None = None
    tags: dict[str, str] = field(default_factory=dict)


Assignment = dict[str, frozenset[TopicPartition]]


class ServerAssignor(Protocol):
    name: str

    def assign(
        self, members: Mapping[str, AssignmentMember], partitions_of: Mapping[str, int]
    ) -> Assignment: ...


def _subscribed_partitions(topics: frozenset[str], partitions_of: Mapping[str, int]) -> list[TopicPartition]:
    return [(t, p) for t in sorted(topics) if t in partitions_of for p in range(partitions_of[t])]


class UniformAssignor:
    name = "uniform"

    def assign(self, members: Mapping[str, AssignmentMember], partitions_of: Mapping[str, int]) -> Assignment:
        if not members:
            return {}
        subscriptions = {m.subscribed for m in members.values()}
        if len(subscriptions) == 1:
            return self._homogeneous(members, partitions_of)
        return self._heterogeneous(members, partitions_of)

    def _homogeneous(
        self, members: Mapping[str, AssignmentMember], partitions_of: Mapping[str, int]
    ) -> Assignment:
        order = sorted(members)
        everything = _subscribed_partitions(next(iter(members.values())).subscribed, partitions_of)
        valid = set(everything)
        minimum, extra = divmod(len(everything), len(order))
        previous = {m: sorted(members[m].current_target & valid) for m in order}
        # Extra slots go to members that already held more, so fewer partitions move.
        by_previous = sorted(order, key=lambda m: (-len(previous[m]), m))
        quota = {m: minimum + (1 if i < extra else 0) for i, m in enumerate(by_previous)}
        result: dict[str, list[TopicPartition]] = {m: previous[m][: quota[m]] for m in order}
        taken = {tp for kept in result.values() for tp in kept}
        pool = [tp for tp in everything if tp not in taken]
        for m in order:
            need = quota[m] - len(result[m])
            result[m].extend(pool[:need])
            del pool[:need]
        return {m: frozenset(result[m]) for m in order}

    def _heterogeneous(
        self, members: Mapping[str, AssignmentMember], partitions_of: Mapping[str, int]
    ) -> Assignment:
        order = sorted(members)
        result: dict[str, set[TopicPartition]] = {m: set() for m in order}
        owner: dict[TopicPartition, str] = {}

        def still_valid(member: str, tp: TopicPartition) -> bool:
            return (
                tp[0] in members[member].subscribed
                and tp[1] < partitions_of.get(tp[0], 0)
                and tp not in owner
            )

        for m in order:  # keep what is still subscribed and not claimed
            for tp in sorted(members[m].current_target):
                if still_valid(m, tp):
                    owner[tp] = m
                    result[m].add(tp)
        subscribers = {t: [m for m in order if t in members[m].subscribed] for t in partitions_of}
        topics = sorted(
            (t for t in partitions_of if subscribers[t]),
            key=lambda t: (-partitions_of[t] / len(subscribers[t]), len(subscribers[t]), t),
        )
        for topic in topics:
            for partition in range(partitions_of[topic]):
                if (topic, partition) not in owner:
                    target = min(subscribers[topic], key=lambda m: (len(result[m]), m))
                    owner[(topic, partition)] = target
                    result[target].add((topic, partition))
        for _ in range(16):  # balance: move partitions from the most to the least loaded subscriber
            moved = False
            for topic in topics:
                subs = subscribers[topic]
                while True:
                    most = max(
                        subs, key=lambda m: (sum(1 for tp in result[m] if tp[0] == topic) > 0, len(result[m]))
                    )
                    least = min(subs, key=lambda m: (len(result[m]), m))
                    candidates = sorted(tp for tp in result[most] if tp[0] == topic)
                    if not candidates or len(result[most]) <= len(result[least]) + 1:
                        break
                    tp = candidates[-1]
                    result[most].discard(tp)
                    result[least].add(tp)
                    moved = True
            if not moved:
                break
        return {m: frozenset(result[m]) for m in order}


class RangeAssignor:
    name = "range"

    def assign(self, members: Mapping[str, AssignmentMember], partitions_of: Mapping[str, int]) -> Assignment:
        order = sorted(
            members.values(), key=lambda m: (m.instance_id is None, m.instance_id or "", m.member_id)
        )
        result: dict[str, set[TopicPartition]] = {m.member_id: set() for m in order}
        for topic in sorted(partitions_of):
            subscribers = [m.member_id for m in order if topic in m.subscribed]
            if not subscribers:
                continue
            minimum, extra = divmod(partitions_of[topic], len(subscribers))
            start = 0
            for i, member_id in enumerate(subscribers):
                count = minimum + (1 if i < extra else 0)
                result[member_id].update((topic, p) for p in range(start, start + count))
                start += count
        return {m: frozenset(parts) for m, parts in result.items()}


ASSIGNORS: dict[str, ServerAssignor] = {a.name: a for a in (UniformAssignor(), RangeAssignor())}
DEFAULT_ASSIGNOR = "uniform"

"""The coordinator's side of an assignment: members with subscriptions and `(topic, partition)` sets.

The group core keeps each member's target as a frozenset of `(topic id, partition)` and hands
the assignors `AssignmentMember`s. This module converts that to a `GroupSpec` and a target back
to per-member sets, and is where the Python-object cost of an assignment lives, so it does as
little per member as it can:

- A member's target comes back as a `PartitionSet`: a frozenset that also carries its partition
  indexes and the layout they refer to. When the coordinator passes it back as the member's
  current target, reading it is an array copy, not a walk over tuples; plain frozensets (after a
  restart) are read tuple by tuple once.
- A member whose target does not change gets its current `PartitionSet` back, the same object,
  so an incremental assignment builds sets only for the members that gain or lose partitions.
- Members with the same subscription object share one subscription class without comparing
  topic sets; equal sets in different objects cost one hash and one comparison each.
"""

from __future__ import annotations

import itertools
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field

import numpy as np

from coordinator.assignors.spec import (
    GroupSpec,
    IntArray,
    MemberPartitions,
    PartitionLayout,
    TopicPartition,
    layout_of,
)


@dataclass(frozen=True, slots=True)
class AssignmentMember:
    member_id: str
    subscribed: frozenset[str]
    current_target: frozenset[TopicPartition] = frozenset()
    instance_id: str | None = None
    rack_id: str | None = None
    tags: dict[str, str] = field(default_factory=dict)


Assignment = dict[str, frozenset[TopicPartition]]


class PartitionSet(frozenset[TopicPartition]):
    """A member's target partitions: a frozenset of `(topic, partition)` that remembers its
    partition indexes in `layout`, so the next assignment reads it without touching the tuples."""

    __slots__ = ("layout", "indexes")
    layout: PartitionLayout
    indexes: IntArray

    def __new__(cls, layout: PartitionLayout, indexes: IntArray) -> PartitionSet:
        tuples = layout.tuples
        made = super().__new__(cls, map(tuples.__getitem__, indexes.tolist()))
        made.layout, made.indexes = layout, indexes
        return made

    def __reduce__(self) -> tuple[type[frozenset[TopicPartition]], tuple[tuple[TopicPartition, ...]]]:
        return frozenset, (tuple(self),)  # the indexes are a cache; a copy is a plain frozenset


def assign_members(
    target_of: Callable[[GroupSpec], IntArray],
    members: Mapping[str, AssignmentMember],
    partitions_of: Mapping[str, int],
) -> Assignment:
    """Run an assignor's `target_of` for coordinator-side members; every member gets an entry."""
    if not members:
        return {}
    spec, held = group_spec(members, partitions_of)
    return member_targets(spec, target_of(spec), list(members.values()), held)


def group_spec(
    members: Mapping[str, AssignmentMember], partitions_of: Mapping[str, int]
) -> tuple[GroupSpec, IntArray]:
    """The spec for these members, and how many current-target entries each member has."""
    layout = layout_of(partitions_of)
    values = list(members.values())
    classes, member_class = _subscription_classes([m.subscribed for m in values], layout)
    targets = [m.current_target for m in values]
    held = np.fromiter(map(len, targets), dtype=np.int64, count=len(targets))
    owner = np.full(layout.size, -1, dtype=np.int64)
    if held.any():
        indexes, holders = _target_indexes(targets, held, layout)
        owner[indexes] = holders
        if np.count_nonzero(owner >= 0) < indexes.size:  # claimed twice: the first claim keeps it
            claimed, first = np.unique(indexes, return_index=True)
            owner[claimed] = holders[first]
    instances = tuple(m.instance_id for m in values)
    spec = GroupSpec(
        layout=layout,
        member_ids=tuple(members),
        classes=classes,
        member_class=member_class,
        owner=owner,
        instance_ids=instances if any(instances) else (),
    )
    return spec, held


def member_targets(
    spec: GroupSpec, target: IntArray, values: list[AssignmentMember], held: IntArray
) -> Assignment:
    """Per-member sets for `target`, reusing each unchanged member's current `PartitionSet`."""
    layout, count = spec.layout, spec.member_count
    before = spec.owner
    moved = np.flatnonzero(before != target)
    changed = np.zeros(count, dtype=bool)
    changed[before[moved][before[moved] >= 0]] = True
    changed[target[moved][target[moved] >= 0]] = True
    # Entries the owner array could not hold (unknown topics, claimed twice) change a member too.
    recorded = np.bincount(before[before >= 0], minlength=count)
    changed |= recorded != held
    reusable = [type(m.current_target) is PartitionSet and m.current_target.layout is layout for m in values]
    view = MemberPartitions(target, count) if (changed | ~np.asarray(reusable, dtype=bool)).any() else None
    empty = PartitionSet(layout, np.zeros(0, dtype=np.int64))
    result: Assignment = {}
    for m, (member_id, member) in enumerate(zip(spec.member_ids, values, strict=True)):
        if reusable[m] and not changed[m]:
            result[member_id] = member.current_target
        else:
            assert view is not None
            indexes = view.of(m)
            result[member_id] = PartitionSet(layout, indexes) if indexes.size else empty
    return result


def _subscription_classes(
    subscriptions: list[frozenset[str]], layout: PartitionLayout
) -> tuple[tuple[IntArray, ...], IntArray]:
    """Classes of members subscribed to the same existing topics, and each member's class."""
    distinct = {id(s): s for s in subscriptions}  # by object first: callers often share them
    by_topics: dict[tuple[int, ...], int] = {}
    by_value: dict[frozenset[str], int] = {}
    class_of_object: dict[int, int] = {}
    index_of = layout.index_of
    for key, topics in distinct.items():
        found = by_value.get(topics)
        if found is None:
            known = tuple(sorted(index_of[t] for t in topics if t in index_of))
            found = by_value[topics] = by_topics.setdefault(known, len(by_topics))
        class_of_object[key] = found
    member_class = np.fromiter(
        map(class_of_object.__getitem__, map(id, subscriptions)), dtype=np.int64, count=len(subscriptions)
    )
    classes = tuple(np.asarray(topics, dtype=np.int64) for topics in by_topics)
    return classes, member_class


def _target_indexes(
    targets: list[frozenset[TopicPartition]], held: IntArray, layout: PartitionLayout
) -> tuple[IntArray, IntArray]:
    """Partition indexes of every member's current target and the member holding each."""
    members = np.repeat(np.arange(len(targets), dtype=np.int64), held)
    if all(type(t) is PartitionSet and t.layout is layout for t in targets if t):
        return np.concatenate([t.indexes for t in targets if t]), members  # type: ignore[attr-defined]
    pairs = list(itertools.chain.from_iterable(targets))
    topics = np.fromiter((layout.index_of.get(t, -1) for t, _ in pairs), dtype=np.int64, count=len(pairs))
    partitions = np.fromiter((p for _, p in pairs), dtype=np.int64, count=len(pairs))
    known = topics >= 0
    known[known] &= (partitions[known] >= 0) & (partitions[known] < layout.counts[topics[known]])
    return layout.offsets[topics[known]] + partitions[known], members[known]

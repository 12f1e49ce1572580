"""The assignors' working representation: partitions, members and subscriptions as integer arrays.

An assignor never handles `(topic, partition)` tuples or member-id strings in its inner loops.
Everything is numbered once:

- `PartitionLayout`: the group's topics in name order and their partitions numbered 0..P-1,
  topic after topic, so a topic is a contiguous range `[offsets[t], offsets[t + 1])`.
- `GroupSpec`: members numbered 0..M-1 in the caller's order; each member points at a
  *subscription class* (members with the same subscribed topics share one); the current target
  is one array `owner[partition] -> member` (-1: nobody), as Kafka's group keeps an inverted
  target assignment beside its members.
- A target is the same kind of array. `MemberPartitions` turns it into each member's partition
  indexes (one stable radix sort), which is what a per-member view needs.

Topics with the same subscribers form a *topic class* (`topic_classes`): the uniform assignor's
heterogeneous case and the range assignor work per class, not per topic and member, so their cost
follows the number of partitions and of distinct subscriptions, not members x topics.

This module is pure: numpy arrays in, numpy arrays out; no IO, no clock.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from functools import cached_property, lru_cache

import numpy as np
import numpy.typing as npt

IntArray = npt.NDArray[np.int64]
TopicPartition = tuple[str, int]


class PartitionLayout:
    """Every partition of the group's topics, numbered topic by topic in topic-name order."""

    def __init__(self, topics: Sequence[str], counts: Sequence[int]) -> None:
        self.topics: tuple[str, ...] = tuple(topics)
        self.counts: IntArray = np.asarray(counts, dtype=np.int64).reshape(-1)
        self.offsets: IntArray = np.zeros(len(self.topics) + 1, dtype=np.int64)
        np.cumsum(self.counts, out=self.offsets[1:])
        self.index_of: dict[str, int] = {t: i for i, t in enumerate(self.topics)}

    @property
    def size(self) -> int:
        return int(self.offsets[-1])

    @cached_property
    def topic_of(self) -> IntArray:
        """Topic index of each partition."""
        return np.repeat(np.arange(len(self.topics), dtype=np.int64), self.counts)

    @cached_property
    def tuples(self) -> list[TopicPartition]:
        """`(topic, partition)` of each partition index, built once per layout."""
        return [(t, p) for t, n in zip(self.topics, self.counts.tolist(), strict=True) for p in range(n)]

    def partitions(self, topic_indexes: IntArray) -> IntArray:
        """Partition indexes of the given topics, topic by topic in the order given."""
        starts, counts = self.offsets[topic_indexes], self.counts[topic_indexes]
        total = int(counts.sum())
        if total == 0:
            return np.zeros(0, dtype=np.int64)
        # arange per topic without a Python loop: a running index minus each topic's shift.
        shift = np.repeat(starts - (np.cumsum(counts) - counts), counts)
        return np.arange(total, dtype=np.int64) + shift


@lru_cache(maxsize=64)
def _layout_for(items: tuple[tuple[str, int], ...]) -> PartitionLayout:
    return PartitionLayout([t for t, _ in items], [max(0, n) for _, n in items])


def layout_of(partitions_of: Mapping[str, int]) -> PartitionLayout:
    """The layout for these topics; equal inputs give the same object (its tuples are built once)."""
    return _layout_for(tuple(sorted(partitions_of.items())))


@dataclass(frozen=True, eq=False, slots=True)
class GroupSpec:
    """A group as the assignors see it: members, subscription classes and the current target.

    `classes[c]` holds the (sorted, existing) topic indexes subscription class c subscribes to;
    `member_class[m]` is member m's class; `owner[p]` is partition p's member in the current
    target, or -1. `instance_ids[m]` is member m's static instance id (None: dynamic; an empty
    tuple: no static members).
    """

    layout: PartitionLayout
    member_ids: tuple[str, ...]
    classes: tuple[IntArray, ...]
    member_class: IntArray
    owner: IntArray
    instance_ids: tuple[str | None, ...] = ()

    @property
    def member_count(self) -> int:
        return len(self.member_ids)

    def subscribes(self) -> npt.NDArray[np.bool_]:
        """classes x topics: whether the class subscribes to the topic."""
        matrix = np.zeros((len(self.classes), len(self.layout.topics)), dtype=bool)
        for c, topics in enumerate(self.classes):
            matrix[c, topics] = True
        return matrix

    def retained_owner(self, subscribes: npt.NDArray[np.bool_] | None = None) -> IntArray:
        """The current target without partitions whose member no longer subscribes to their topic."""
        owner = self.owner.copy()
        held = np.flatnonzero(owner >= 0)
        if held.size:
            matrix = self.subscribes() if subscribes is None else subscribes
            valid = matrix[self.member_class[owner[held]], self.layout.topic_of[held]]
            owner[held[~valid]] = -1
        return owner


@dataclass(frozen=True, slots=True)
class TopicClass:
    """Topics that have the same subscribers; `members` sorted by member index."""

    members: IntArray
    topics: IntArray


def topic_classes(spec: GroupSpec, subscribes: npt.NDArray[np.bool_]) -> list[TopicClass]:
    """Group the subscribed topics by the set of subscription classes that subscribe to them."""
    subscribed_topics = np.flatnonzero(subscribes.any(axis=0))
    if subscribed_topics.size == 0:
        return []
    columns = subscribes[:, subscribed_topics].T
    if columns.shape[1] <= 62:  # each topic's set of classes as the bits of one integer
        keys = columns.astype(np.int64) @ (np.int64(1) << np.arange(columns.shape[1], dtype=np.int64))
        _, first, which = np.unique(keys, return_index=True, return_inverse=True)
        signatures = columns[first]
    else:
        signatures, which = np.unique(np.ascontiguousarray(columns), axis=0, return_inverse=True)
    which = which.reshape(-1)
    by_class = members_by_class(spec)
    found = []
    for s, signature in enumerate(signatures):
        members = np.concatenate([by_class[c] for c in np.flatnonzero(signature)])
        members.sort()
        found.append(TopicClass(members, subscribed_topics[which == s]))
    return found


def members_by_class(spec: GroupSpec) -> list[IntArray]:
    """Member indexes of each subscription class, ascending."""
    order = np.argsort(spec.member_class, kind="stable")
    bounds = np.searchsorted(spec.member_class[order], np.arange(len(spec.classes) + 1))
    return [order[bounds[c] : bounds[c + 1]] for c in range(len(spec.classes))]


class MemberPartitions:
    """Each member's partition indexes in a target (`owner` array), ascending within a member."""

    __slots__ = ("order", "bounds")

    def __init__(self, owner: IntArray, member_count: int) -> None:
        assigned = np.flatnonzero(owner >= 0)
        keys = owner[assigned]
        if keys.size and (keys[1:] < keys[:-1]).any():
            # Radix sort when member indexes fit 16 bits: linear, ~8x faster than a comparison sort.
            by_member = np.argsort(keys.astype(np.uint16) if member_count < 1 << 16 else keys, kind="stable")
            assigned, keys = assigned[by_member], keys[by_member]
        # else each member already holds one run of partitions (a full homogeneous assignment)
        self.order: IntArray = assigned
        self.bounds: list[int] = np.searchsorted(keys, np.arange(member_count + 1)).tolist()

    def of(self, member: int) -> IntArray:
        return self.order[self.bounds[member] : self.bounds[member + 1]]

    def sizes(self) -> IntArray:
        return np.diff(np.asarray(self.bounds, dtype=np.int64))

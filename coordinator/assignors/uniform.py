"""The uniform assignor (Kafka's default server-side assignor): balance first, stickiness second.

Theory of operation, on the integer arrays of `spec.py`:

Homogeneous groups (every member subscribes to the same topics), as Kafka's
UniformHomogeneousAssignmentBuilder: P partitions over M members give each member
`P // M` partitions and `P % M` of them one more, so sizes differ by at most one. The extra
slots go to members that already hold more than `P // M` (then to the others in member order),
which keeps the most partitions where they are. Each member keeps its current partitions up to
its quota (the lowest-numbered ones); the rest, with every partition nobody holds, are dealt in
partition order to the members below quota, in member order, so a full assignment hands each
member a contiguous run of partitions. Cost: O(P + M) array operations and one radix sort.

Heterogeneous groups, as Kafka's UniformHeterogeneousAssignmentBuilder:
1. Members keep every partition of a topic they still subscribe to.
2. Partitions nobody holds are dealt to their topic's least loaded subscribers, raising the
   lowest level first (Kafka's order: by the member's size before the partition, then member
   index). Topics with the same subscribers (a *topic class*) are dealt together, classes with
   the most partitions per subscriber first, the way Kafka orders topics.
3. Balance, single moves: while some member holding a partition of a class has at least two
   more partitions than another subscriber of that class, the most loaded such member gives one
   to the least loaded. Passes over the classes repeat until a pass moves nothing. Every move
   lowers the sum of squared sizes, so this ends; then no partition can move to a subscriber of
   its topic with two fewer partitions, which is Kafka's definition of balanced (Kafka stops
   after 16 passes; its assignments can be left "almost balanced" where ours are not).
4. Balance, chains (`chains.py`): where no single move helps, a member may still give a
   partition to a co-subscriber who gives one of another topic on, ..., to a member holding two
   fewer (a={x}, b={x,y}, c={y} left at 3/4/5 become 4/4/4). Such chains are moved until none
   is left: the sizes are then the most even the subscriptions allow.
Cost: O(P log P + sum of class sizes) array work per pass plus O(moves log M) for the moves;
the chains cost O(subscription classes + their links) per chain found, one check when none is.
"""

from __future__ import annotations

import numpy as np

from coordinator.assignors.chains import move_along_chains
from coordinator.assignors.levels import balance, deal
from coordinator.assignors.spec import GroupSpec, IntArray, TopicClass, topic_classes


def uniform_target(spec: GroupSpec) -> IntArray:
    """The uniform assignor's target: `owner[partition] -> member index` (-1: nobody subscribes)."""
    if spec.member_count == 0:
        return np.full(spec.layout.size, -1, dtype=np.int64)
    if len(spec.classes) == 1:
        return _homogeneous(spec)
    return _heterogeneous(spec)


def _homogeneous(spec: GroupSpec) -> IntArray:
    members = spec.member_count
    target = np.full(spec.layout.size, -1, dtype=np.int64)
    partitions = spec.layout.partitions(spec.classes[0])
    if partitions.size == 0:
        return target
    owner = spec.retained_owner()[partitions]
    minimum, extra = divmod(partitions.size, members)
    held = np.flatnonzero(owner >= 0)
    counts = np.bincount(owner[held], minlength=members)
    quota = np.full(members, minimum, dtype=np.int64)
    if extra:
        # Any member may take an extra slot; members already above the minimum first.
        above = np.flatnonzero(counts > minimum)
        chosen = above[:extra]
        if chosen.size < extra:
            others = np.flatnonzero(counts <= minimum)[: extra - chosen.size]
            chosen = np.concatenate([chosen, others])
        quota[chosen] += 1
    if held.size and (counts > quota).any():
        holders = owner[held]
        # Rank of each held partition within its member (partition order); keep rank < quota.
        by_member = np.argsort(holders.astype(np.uint16) if members < 1 << 16 else holders, kind="stable")
        starts = np.cumsum(counts) - counts
        rank = np.empty(held.size, dtype=np.int64)
        rank[by_member] = np.arange(held.size) - starts[holders[by_member]]
        owner[held[rank >= quota[holders]]] = -1
        counts = np.minimum(counts, quota)
    free = np.flatnonzero(owner < 0)
    owner[free] = np.repeat(np.arange(members, dtype=np.int64), quota - counts)
    target[partitions] = owner
    return target


def _heterogeneous(spec: GroupSpec) -> IntArray:
    subscribes = spec.subscribes()
    owner = spec.retained_owner(subscribes)
    sizes = np.bincount(owner[owner >= 0], minlength=spec.member_count).astype(np.int64)
    classes = _ordered(topic_classes(spec, subscribes), spec)
    class_partitions = [spec.layout.partitions(_topic_order(c.topics, spec)) for c in classes]
    for topic_class, partitions in zip(classes, class_partitions, strict=True):
        free = partitions[owner[partitions] < 0]
        if free.size:
            deal(topic_class.members, free, owner, sizes)
    movable = [
        (c, p) for c, p in zip(classes, class_partitions, strict=True) if c.members.size > 1 and p.size
    ]
    while sum(balance(c.members, p, owner, sizes) for c, p in movable):
        pass
    move_along_chains(spec, subscribes, classes, class_partitions, owner, sizes)
    return owner


def _topic_order(topics: IntArray, spec: GroupSpec) -> IntArray:
    """Kafka's topic order within a class (same subscribers): more partitions first, then name."""
    return topics[np.lexsort((topics, -spec.layout.counts[topics]))]


def _ordered(classes: list[TopicClass], spec: GroupSpec) -> list[TopicClass]:
    """Classes by Kafka's topic order: partitions per subscriber descending, subscribers ascending."""

    def key(c: TopicClass) -> tuple[float, int, int]:
        most = int(spec.layout.counts[c.topics].max())
        return (-most / c.members.size, c.members.size, int(c.topics.min()))

    return sorted(classes, key=key)

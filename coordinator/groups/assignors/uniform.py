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
3. Balance: while some member holding a partition of a class has at least two more partitions
   than another subscriber of that class, the most loaded such member gives one to the least
   loaded. Passes over the classes repeat until a pass moves nothing. Every move lowers the sum
   of squared sizes, so this ends; when it ends no partition can move to a subscriber of its
   topic with two fewer partitions, which is Kafka's definition of balanced (Kafka stops after
   16 passes; its assignments can be left "almost balanced" where ours are not).
Cost: O(P log P + sum of class sizes) array work per pass plus O(moves log M) for the moves.
"""

from __future__ import annotations

import heapq

import numpy as np

from .spec import GroupSpec, IntArray, TopicClass, topic_classes


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
            _deal(topic_class.members, free, owner, sizes)
    movable = [
        (c, p) for c, p in zip(classes, class_partitions, strict=True) if c.members.size > 1 and p.size
    ]
    while sum(_balance(c.members, p, owner, sizes) for c, p in movable):
        pass
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


def _deal(members: IntArray, partitions: IntArray, owner: IntArray, sizes: IntArray) -> None:
    """Give `partitions` to the least loaded of `members`, lowest level first (water filling)."""
    level = sizes[members]
    count = partitions.size
    # Sorted by (level, member index): Kafka's order among members of equal level.
    rank = np.argsort(level, kind="stable")
    ordered = level[rank]
    below = np.concatenate(([0], np.cumsum(ordered)))
    # Raising the first i members (sorted) to the level of member i costs i * level - their sum.
    cost = ordered * np.arange(ordered.size) - below[:-1]
    raised = int(np.searchsorted(cost, count, side="right"))
    fill = (count + int(below[raised])) // raised
    adds = np.zeros(members.size, dtype=np.int64)
    adds[rank[:raised]] = fill - ordered[:raised]
    # What is left (fewer than `raised`) goes one each to the first members at the fill level.
    adds[rank[: count - int(adds.sum())]] += 1
    who = np.repeat(np.arange(members.size), adds)
    step = np.arange(count) - np.repeat(np.cumsum(adds) - adds, adds)
    position = np.empty(members.size, dtype=np.int64)
    position[rank] = np.arange(members.size)
    # Kafka hands out partitions level by level: by the member's size before it, then its rank.
    order = np.argsort((level[who] + step) * members.size + position[who], kind="stable")
    owner[partitions] = members[who[order]]
    sizes[members] += adds


def _balance(members: IntArray, partitions: IntArray, owner: IntArray, sizes: IntArray) -> int:
    """Move partitions of one topic class from its most to its least loaded subscribers, one at a
    time, until no holder has two more than any subscriber. Returns the number moved."""
    level = sizes[members]
    holder = np.searchsorted(members, owner[partitions])  # position of each owner in `members`
    holds = np.bincount(holder, minlength=members.size)
    if int(level[holds > 0].max()) - int(level.min()) <= 1:
        return 0
    by_holder = np.argsort(holder, kind="stable")
    ends = np.cumsum(holds)  # partitions of holder h: partitions[by_holder[ends[h] - holds[h]:ends[h]]]
    given: dict[int, list[int]] = {}  # partitions a member received here (it may give them on)
    levels, held = level.tolist(), holds.tolist()
    receivers = [(lv, m) for m, lv in enumerate(levels)]
    donors = [(-lv, -m) for m, lv in enumerate(levels) if held[m] > 0]
    heapq.heapify(receivers)
    heapq.heapify(donors)
    moved = 0
    while donors and receivers:
        top, d = -donors[0][0], -donors[0][1]
        if top != levels[d] or held[d] == 0:  # stale entry
            heapq.heappop(donors)
            continue
        low, r = receivers[0]
        if low != levels[r]:
            heapq.heappop(receivers)
            continue
        if top - low <= 1:
            break
        if given.get(d):
            partition = given[d].pop()
        else:
            taken = held[d] - len(given.get(d, ()))  # still-original partitions of d
            partition = int(partitions[by_holder[ends[d] - holds[d] + taken - 1]])
        owner[partition] = members[r]
        given.setdefault(r, []).append(partition)
        levels[d] -= 1
        levels[r] += 1
        held[d] -= 1
        held[r] += 1
        heapq.heapreplace(donors, (-levels[d], -d)) if held[d] else heapq.heappop(donors)
        heapq.heapreplace(receivers, (levels[r], r))
        heapq.heappush(receivers, (levels[d], d))
        heapq.heappush(donors, (-levels[r], -r))
        moved += 1
    sizes[members] = levels
    return moved

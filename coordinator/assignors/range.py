"""The range assignor, as Kafka's server-side RangeAssignor: contiguous ranges, co-partitioned.

Members are ordered once: static members first by instance id, then the others by member id.
Each topic's partitions are cut into contiguous ranges for its subscribers in that order: with
n partitions and k subscribers, the first n % k get n // k + 1 and the rest n // k. Members that
subscribe to the same topics therefore get the same partition numbers of every topic with the
same partition count (co-partitioning, for joins), and an assignment depends only on the
members and the topics, never on the previous target (Kafka's range assignor is not sticky;
instance ids keep a static member's ranges across restarts).

Topics with the same subscribers and the same partition count share one owner pattern, so the
cost is O(P) array writes plus O(M log M) for the member order, not one step per member per topic.
"""

from __future__ import annotations

import numpy as np

from coordinator.assignors.spec import GroupSpec, IntArray, PartitionLayout, topic_classes


def range_target(spec: GroupSpec) -> IntArray:
    """The range assignor's target: `owner[partition] -> member index` (-1: nobody subscribes)."""
    layout = spec.layout
    owner = np.full(layout.size, -1, dtype=np.int64)
    if spec.member_count == 0:
        return owner
    order = _member_order(spec)
    if len(spec.classes) == 1:  # everyone subscribes to the same topics: one class, in member order
        _deal(owner, layout, spec.classes[0], np.array(order, dtype=np.int64))
        return owner
    position = np.empty(spec.member_count, dtype=np.int64)
    position[order] = np.arange(spec.member_count)
    for topic_class in topic_classes(spec, spec.subscribes()):
        subscribers = topic_class.members[np.argsort(position[topic_class.members])]
        _deal(owner, layout, topic_class.topics, subscribers)
    return owner


def _deal(owner: IntArray, layout: PartitionLayout, topics: IntArray, subscribers: IntArray) -> None:
    """Cut each of `topics` into contiguous ranges for `subscribers` in their order, one owner
    pattern per distinct partition count."""
    counts = layout.counts[topics]
    if topics.size == 0:
        return
    first = int(counts[0])
    distinct = [first] if (counts == first).all() else np.unique(counts).tolist()
    for count in distinct:
        if count <= 0:
            continue
        minimum, extra = divmod(count, subscribers.size)
        pattern = np.repeat(subscribers, minimum) if minimum else subscribers[:0]
        if extra:  # the first `extra` subscribers take one more, their ranges first
            sizes = np.full(subscribers.size, minimum, dtype=np.int64)
            sizes[:extra] += 1
            pattern = np.repeat(subscribers, sizes)
        same = topics if len(distinct) == 1 else topics[counts == count]
        if same.size == len(layout.topics):  # every topic: the whole array, topic after topic
            owner[:] = np.tile(pattern, same.size)
        else:
            owner[layout.partitions(same)] = np.tile(pattern, same.size)


def _member_order(spec: GroupSpec) -> list[int]:
    ids = spec.member_ids
    if not any(spec.instance_ids):
        return sorted(range(len(ids)), key=ids.__getitem__)
    instances = spec.instance_ids
    return sorted(range(len(ids)), key=lambda m: (instances[m] is None, instances[m] or "", ids[m]))

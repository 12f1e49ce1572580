"""Which task of a connector reads which topic partition: the one rule TopicIngest's tasks and
the `topic` data source's `share` option both apply.

Partition p of topic t belongs to task `(crc32(t) + p) % count`. It needs no lookup (a
connector has no cluster to ask when it makes task configs), and partitions added to a topic
move no existing partition to another task, so no checkpoint loses a partition it had read.
"""

from __future__ import annotations

import zlib
from collections.abc import Sequence


def task_owns(topic: str, partition: int, index: int, count: int) -> bool:
    """Whether task `index` of `count` reads this partition (stable as partitions are added)."""
    return (zlib.crc32(topic.encode()) + partition) % count == index


def partitions_of_task(
    partitions: Sequence[tuple[str, int]], index: int, count: int
) -> list[tuple[str, int]]:
    return sorted(tp for tp in partitions if task_owns(tp[0], tp[1], index, count))


def parse_share(text: str) -> tuple[int, int]:
    """`"1/4"` -> (1, 4): share 1 of 4; a ValueError says what is wrong."""
    index, sep, count = text.partition("/")
    if not sep or not index.strip().isdigit() or not count.strip().isdigit():
        raise ValueError(f"share: {text!r} is not <index>/<count>")
    parsed = int(index), int(count)
    if parsed[1] < 1 or parsed[0] >= parsed[1]:
        raise ValueError(f"share: {text!r} needs 0 <= index < count")
    return parsed

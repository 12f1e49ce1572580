"""What a VerifiableSource wrote (workers/connectors/verifiable.py), read back and checked.

Every record names its task, the worker and the run (one start of the task) that wrote it,
its sequence number, and when the run wrote it. A run's span is from its first record to its
last; two runs of one task whose spans overlap ran at the same time.
"""

from __future__ import annotations

import json
import time
from dataclasses import dataclass
from typing import Any

from kafka import KafkaConsumer, TopicPartition

Raw = tuple[int, int, bytes | None, bytes | None]  # partition, timestamp ms, key, value


def read_raw(bootstrap: str, topic: str) -> list[Raw]:
    """(partition, record timestamp ms, key, value) of every record in `topic`, read to its
    end: partition by partition, each in log order; nothing before the topic exists."""
    consumer = KafkaConsumer(bootstrap_servers=bootstrap, group_id=None, enable_auto_commit=False)
    try:
        partitions = [TopicPartition(topic, p) for p in sorted(consumer.partitions_for_topic(topic) or ())]
        if not partitions:  # made by its first record, not yet written
            return []
        consumer.assign(partitions)
        consumer.seek_to_beginning(*partitions)
        end = consumer.end_offsets(partitions)
        found: dict[int, list[Raw]] = {tp.partition: [] for tp in partitions}
        deadline = time.monotonic() + 30
        while any(consumer.position(tp) < end[tp] for tp in partitions):
            assert time.monotonic() < deadline, f"could not read {topic} to its end"
            for tp, records in consumer.poll(timeout_ms=500).items():
                found[tp.partition].extend((tp.partition, r.timestamp, r.key, r.value) for r in records)
        return [record for p in sorted(found) for record in found[p]]
    finally:
        consumer.close()


def read_records(bootstrap: str, topic: str) -> list[tuple[int, int, dict[str, Any]]]:
    """(partition, record timestamp ms, decoded value) of every record in `topic`, read to its
    end: partition by partition, each in log order."""
    raw = read_raw(bootstrap, topic)
    return [(partition, timestamp, json.loads(value)) for partition, timestamp, _, value in raw]  # type: ignore[arg-type]


def read_values(bootstrap: str, topic: str) -> list[tuple[int, dict[str, Any]]]:
    """(record timestamp ms, decoded value) of every record in `topic`, read to its end."""
    return [(timestamp, value) for _, timestamp, value in read_records(bootstrap, topic)]


@dataclass
class Run:
    """One start of a task on one worker, as its records show it."""

    task: int
    run: str
    worker: str
    first_ms: float
    last_ms: float
    records: int


def runs_by_task(bootstrap: str, topic: str) -> dict[int, list[Run]]:
    """Each task's runs, in the order they began."""
    runs: dict[tuple[int, str], Run] = {}
    for _, value in read_values(bootstrap, topic):
        key, at = (value["task"], value["run"]), value["at"]
        found = runs.get(key)
        if found is None:
            runs[key] = Run(value["task"], value["run"], value["worker"], at, at, 1)
        else:
            found.first_ms, found.last_ms = min(found.first_ms, at), max(found.last_ms, at)
            found.records += 1
    by_task: dict[int, list[Run]] = {}
    for run in sorted(runs.values(), key=lambda r: r.first_ms):
        by_task.setdefault(run.task, []).append(run)
    return by_task


def assert_no_task_ran_twice_at_once(by_task: dict[int, list[Run]]) -> None:
    """No two runs of a task overlap in time, on two workers or on one."""
    for task, runs in by_task.items():
        for earlier, later in zip(runs, runs[1:], strict=False):
            assert earlier.last_ms < later.first_ms, (
                f"task {task} ran on {earlier.worker} (run {earlier.run}, until {earlier.last_ms}) and on "
                f"{later.worker} (run {later.run}, from {later.first_ms}) at once"
            )


def started_since(by_task: dict[int, list[Run]], since_ms: float) -> set[int]:
    """The tasks with a run that began after `since_ms` (wall clock, ms)."""
    return {task for task, runs in by_task.items() if any(r.first_ms > since_ms for r in runs)}


def written_since(by_task: dict[int, list[Run]], since_ms: float) -> set[int]:
    """The tasks that wrote a record after `since_ms`: running then."""
    return {task for task, runs in by_task.items() if any(r.last_ms > since_ms for r in runs)}

"""Which report of a task's status counts when two workers' reports cross in the status topic."""

from __future__ import annotations

import asyncio
import json

import pytest

from workers.storage.status_store import StatusStore, _stale
from workers.storage.topic_log import Handler

pytestmark = pytest.mark.unit


def report(worker: str, generation: int, state: str) -> dict[str, object]:
    return {"state": state, "trace": None, "worker_id": worker, "generation": generation}


def test_a_former_owners_late_unassigned_does_not_hide_the_new_owners_running() -> None:
    running = report("w2", 5, "RUNNING")
    assert _stale(report("w1", 4, "UNASSIGNED"), running)


def test_newer_generations_and_the_same_workers_reports_always_count() -> None:
    assert not _stale(report("w1", 6, "RUNNING"), report("w2", 5, "RUNNING"))
    assert not _stale(report("w2", 3, "UNASSIGNED"), report("w2", 5, "RUNNING"))  # its own, restarted
    assert not _stale(report("w1", 4, "RUNNING"), None)
    assert not _stale(report("w1", 5, "UNASSIGNED"), report("w2", 5, "RUNNING"))


class LaggingLog:
    """A status topic whose records come back to the store only when `deliver` is called."""

    def __init__(self, handler: Handler) -> None:
        self.handler, self.records, self.delivered = handler, [], 0

    async def write(self, key: bytes | None, value: bytes | None, partition: int | None = None) -> int:
        self.records.append((key, value))
        return len(self.records) - 1

    def deliver(self, count: int) -> None:
        for key, value in self.records[self.delivered : self.delivered + count]:
            self.handler(key, value, 0, self.delivered)
            self.delivered += 1


async def test_a_workers_own_earlier_report_read_back_late_does_not_undo_its_latest() -> None:
    """Seen before: a task stopped and started again within milliseconds read as STOPPED, on
    its own worker, until the status topic caught up with the RUNNING written after."""
    logs: list[LaggingLog] = []
    store = StatusStore(lambda handler: logs.append(LaggingLog(handler)) or logs[-1], "w1")
    task = ("orders", 0)
    store.report(task, "STOPPED", None, 3)
    store.report(task, "RUNNING", None, 3)
    await asyncio.sleep(0)  # both writes handed to the topic
    logs[0].deliver(1)  # the STOPPED comes back after the RUNNING was reported
    assert store.status_of(task)["state"] == "RUNNING"
    logs[0].deliver(1)
    assert store.status_of(task)["state"] == "RUNNING"
    # Another worker's report read from the topic still counts, and so does this worker's
    # own report read back when nothing newer of it is on its way.
    logs[0].handler(b"status-task-orders-0", json.dumps(report("w2", 4, "RUNNING")).encode(), 0, 2)
    assert store.status_of(task)["worker_id"] == "w2"
    logs[0].handler(b"status-task-orders-0", json.dumps(report("w1", 5, "UNASSIGNED")).encode(), 0, 3)
    assert store.status_of(task)["state"] == "UNASSIGNED"

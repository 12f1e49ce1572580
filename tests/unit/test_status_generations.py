"""Which report of a task's status counts when two workers' reports cross in the status topic."""

from __future__ import annotations

import pytest

from workers.status_store import _stale

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

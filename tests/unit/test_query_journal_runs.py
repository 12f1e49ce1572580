"""How the e2e tests rebuild each task's query runs from the workers' journals
(tests/support/spark_cluster.py, `runs_of_journals`), on journals as workers write them.

The case that misled the moved-task resume test: a worker preparing a task that moves to it
(warm handoff) is assigned the task before its prepared run can be released (the old owner
crashed, and the prepared run had ended at its gate), so it starts the task afresh and
cancels the prepared run beside it; the cancelled run's stop is journalled after the new
run's first batch. That batch is the new run's: the prepared run never read.
"""

from __future__ import annotations

import math

import pytest

from tests.support.spark_cluster import runs_of_journals

pytestmark = pytest.mark.unit
Q, W = "ingest-2", "w2"


def entry(event: str, at: float, **extra: object) -> dict[str, object]:
    return {"event": event, "query": Q, "worker": W, "at": at, **extra}


def first_batch(at: float, batch: int) -> dict[str, object]:
    trigger = f"2026-11-29T03:00:{at:06.3f}Z".replace("Z", "+0000")
    return entry("first-batch", at, batch=batch, start={"clicks": {"2": 10}}, end={"clicks": {"2": 20}},
                 trigger=trigger)  # fmt: skip


def test_a_batch_belongs_to_the_run_started_in_place_of_a_prepared_run_cancelled_beside_it() -> None:
    journal = [
        entry("prepared", 1.0),
        entry("starting", 2.0),  # the prepared run could not be released: started afresh
        first_batch(3.0, 7),
        entry("stopped", 4.0, prepared_only=True),  # the prepared run, cancelled at its gate
        entry("stopped", 9.0, rows=20, first_batch={"batch": 7}, last_batch={"batch": 9}),
    ]
    [run] = runs_of_journals({W: journal}, {})[Q]
    assert run.first_batch is not None and run.first_batch["batch"] == 7
    assert run.stopped and run.end == 9.0 and run.last_batch == {"batch": 9}
    assert run.start == 2.0


def test_a_prepared_run_seen_reading_before_its_release_is_active_from_its_first_batch() -> None:
    journal = [entry("prepared", 1.0), first_batch(3.0, 5), entry("starting", 4.0, prepared=True),
               entry("stopped", 8.0, last_batch={"batch": 6})]  # fmt: skip
    [run] = runs_of_journals({W: journal}, {})[Q]
    assert run.first_batch is not None and run.first_batch["batch"] == 5
    assert run.start <= 4.0 and run.end == 8.0


def test_a_prepared_run_cancelled_at_its_gate_is_no_run_and_a_killed_workers_run_ends_with_it() -> None:
    cancelled = [entry("prepared", 1.0), entry("stopped", 2.0, prepared_only=True)]
    assert runs_of_journals({W: cancelled}, {}) == {}
    [run] = runs_of_journals({W: [entry("starting", 1.0), first_batch(2.0, 0)]}, {W: 5.0})[Q]
    assert run.end == 5.0 and not run.stopped
    [run] = runs_of_journals({W: [entry("starting", 1.0)]}, {})[Q]
    assert run.end == math.inf

"""Which of Spark's query events reach a task: a run's end is its own, never an earlier run's.

A task's runs share one query id (it is kept in the checkpoint); only the run id tells them
apart. Spark delivers listener events asynchronously, so a run stopped for a restart can
report its end after the next run of the task has started.
"""

from __future__ import annotations

import uuid
from pathlib import Path
from types import SimpleNamespace

import pytest

from workers.spark.runtime import SparkRuntime

pytestmark = pytest.mark.unit


def test_an_earlier_runs_late_end_does_not_fail_the_tasks_current_run(tmp_path: Path) -> None:
    """Seen before: tasks.max changed, a TopicIngest task restarted with its new config, and
    the old run's end, delivered after the new run started, made the task FAILED."""
    runtime = SparkRuntime("local[1]", {}, str(tmp_path), 1000)
    ended: list[str | None] = []
    runtime._handlers["orders-0"] = (lambda progress: None, ended.append)
    runtime._started("run-1", "orders-0")
    runtime._stopping.add("run-1")  # stop_query marks the run it stops
    runtime._started("run-2", "orders-0")
    runtime._terminated("run-1", "")
    assert ended == []
    runtime._started("run-3", "orders-0")  # an earlier run that ended by itself, late
    runtime._terminated("run-2", "boom")
    assert ended == []
    runtime._terminated("run-3", "the topic is gone")
    assert ended == ["the topic is gone"]


def test_an_earlier_runs_late_batch_is_not_counted_as_the_current_runs() -> None:
    """Seen before: a task moved back to a worker that had run it, and a batch of its earlier
    run there, delivered 23 s late by a listener behind the batches, was taken for the new
    run's first batch (its query journal said the new run began at batch 97 of 160)."""
    runtime = SparkRuntime("local[1]", {}, "unused", 1000)
    seen: list[int] = []
    runtime._handlers["orders-0"] = (lambda progress: seen.append(progress.batchId), lambda error: None)
    runtime._started("0b5b8f7e-0000-4000-8000-000000000001", "orders-0")
    runtime._started("0b5b8f7e-0000-4000-8000-000000000002", "orders-0")
    for run, batch in (("1", 97), ("2", 161), ("1", 98), ("2", 162)):
        progress = SimpleNamespace(name="orders-0", batchId=batch,
                                   runId=uuid.UUID(f"0b5b8f7e-0000-4000-8000-00000000000{run}"))  # fmt: skip
        runtime._progress(progress)
    assert seen == [161, 162]

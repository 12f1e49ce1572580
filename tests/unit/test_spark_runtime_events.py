"""Which of Spark's query events reach a task: a run's end is its own, never an earlier run's.

A task's runs share one query id (it is kept in the checkpoint); only the run id tells them
apart. Spark delivers listener events asynchronously, so a run stopped for a restart can
report its end after the next run of the task has started.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from workers.spark_runtime import SparkRuntime

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

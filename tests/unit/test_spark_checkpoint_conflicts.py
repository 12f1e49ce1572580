"""Which ends of a task's query are a lost race with another run of the task, not a failure.

A worker frozen past its session resumes with its JVM, and its query may plan or commit a
batch beside the run that took the task over. Whichever run loses ends with one of Spark's
messages below (quoted from Spark 4.x's logs of a frozen worker's successor); the task's
current run then starts again from the checkpoint instead of the task going FAILED.
"""

from __future__ import annotations

import pytest

from workers.spark.task import lost_to_another_run

pytestmark = pytest.mark.unit

OFFSET_LOG_RACE = (
    "java.lang.IllegalStateException: Concurrent update to the log. Multiple streaming jobs detected for 1\n"
    "\tat org.apache.spark.sql.execution.streaming.runtime.FileStreamSource.fetchMaxOffset"
)
SINK_LOG_RACE = (
    "java.lang.IllegalStateException: Race while writing batch 15 to the file sink metadata log at "
    "file:/data/files-out/task-0: another writer already committed this batch. This usually means "
    "multiple concurrent streaming queries are writing to the same output path"
)


@pytest.mark.parametrize("error", [OFFSET_LOG_RACE, SINK_LOG_RACE], ids=["offset-log", "file-sink-log"])
def test_a_batch_another_run_wrote_first_restarts_the_query_rather_than_failing_the_task(error: str) -> None:
    assert lost_to_another_run(error)


@pytest.mark.parametrize(
    "error",
    [None, "org.apache.spark.SparkException: Job aborted due to stage failure: Python worker exited"],
)
def test_any_other_end_of_the_query_is_the_tasks_failure(error: str | None) -> None:
    assert not lost_to_another_run(error)

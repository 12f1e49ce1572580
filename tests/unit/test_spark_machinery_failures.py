"""Which ends of a task's query are Spark's own machinery failing on a busy machine (a retry
cures them), and how long the task waits before it starts its query again.

The messages are Spark 4.x's own: a planner that did not connect back in time is what
sixteen queries starting at once on two cores met (PythonWorkerFactory's 10 s)."""

from __future__ import annotations

import pytest

from workers.spark.task import (
    MACHINERY_RESTARTS,
    TRANSIENT_BACKOFF_MAX_S,
    machinery_backoff_s,
    spark_machinery_failed,
)

pytestmark = pytest.mark.unit

PLANNER_TIMED_OUT = (
    "org.apache.spark.SparkException: Python worker failed to connect back.\n"
    "\tat org.apache.spark.api.python.PythonWorkerFactory.createSimpleWorker(PythonWorkerFactory.scala:244)\n"
    "\tat org.apache.spark.sql.execution.python.streaming.PythonStreamingSourceRunner.init"
    "(PythonStreamingSourceRunner.scala:93)\n"
    "Caused by: java.net.SocketTimeoutException: "
    "Timed out while waiting for the Python worker to connect back"
)
WORKER_CRASHED = "org.apache.spark.SparkException: Python worker exited unexpectedly (crashed)"
PY4J_DROPPED = "py4j.protocol.Py4JNetworkError: Answer from Java side is empty"
PLANNER_GONE = (
    "java.io.EOFException\n\tat java.base/java.io.DataInputStream.readInt(DataInputStream.java:386)\n"
    "\tat org.apache.spark.sql.execution.python.streaming.PythonStreamingSourceRunner.latestOffset"
    "(PythonStreamingSourceRunner.scala:150)"
)


@pytest.mark.parametrize(
    "error",
    [PLANNER_TIMED_OUT, WORKER_CRASHED, PY4J_DROPPED, PLANNER_GONE],
    ids=["planner-timeout", "crash", "py4j", "planner-gone"],
)
def test_spark_machinery_failing_starts_the_query_again(error: str) -> None:
    assert spark_machinery_failed(error)


@pytest.mark.parametrize(
    "error",
    [
        None,
        "pyspark.errors.exceptions.base.PySparkRuntimeError: ValueError: topic 'x' does not exist",
        "java.lang.IllegalStateException: Concurrent update to the log. Multiple streaming jobs detected",
        "org.apache.spark.SparkException: [PYTHON_DATA_SOURCE_ERROR] TimeoutError: clicks-0: no records "
        "after offset 10 within 60000 ms",
        "java.io.EOFException\n\tat org.apache.spark.sql.execution.streaming.HDFSMetadataLog.get",
    ],
    ids=["no-error", "config-error", "checkpoint-race", "data-timeout", "truncated-checkpoint"],
)
def test_a_config_data_or_checkpoint_error_is_not_a_machinery_failure(error: str | None) -> None:
    assert not spark_machinery_failed(error)


def test_the_wait_before_each_start_again_doubles_up_to_its_bound() -> None:
    waits = [machinery_backoff_s(n) for n in range(1, MACHINERY_RESTARTS + 1)]
    assert waits[:4] == [1.0, 2.0, 4.0, 8.0]
    assert max(waits) == TRANSIENT_BACKOFF_MAX_S
    assert waits == sorted(waits)

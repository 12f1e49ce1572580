"""The worker's Spark runtime with real PySpark: stopping is bounded.

A revocation is acknowledged only once the task's query is inactive, so stopping must
end a query even in the middle of a batch that would never finish, and within a bound:
here a batch stuck in a Python UDF (Spark interrupts the stream thread and cancels the
batch's job), and `stop_query` returns with the query inactive. And a worker process
running a Spark task stops on SIGTERM within its bound though its coordinator is gone,
leaving neither its JVM nor Spark's Python workers behind.
"""

from __future__ import annotations

import time
from pathlib import Path
from typing import Any

import pytest

from tests.support.group_scenario import wait_until
from tests.support.spark_cluster import descendants, jvm_of, sigterm_and_time, spark_worker_cluster
from tests.support.worker_cluster import rest
from workers.spark_runtime import SparkRuntime

pytestmark = pytest.mark.e2e

STOP_TIMEOUT_MS = 2000


def stuck_writer(spark: Any, marker: Path) -> Any:
    """A query whose first batch blocks in a Python UDF (after touching `marker`)."""
    from pyspark.sql.functions import udf

    @udf("long")
    def stuck(value: int) -> int:
        marker.touch()
        time.sleep(600)  # the batch never finishes on its own
        return value

    return (
        spark.readStream.format("rate")
        .option("rowsPerSecond", "1")
        .load()
        .select(stuck("value").alias("v"))
        .writeStream.format("noop")
        .trigger(processingTime="100 milliseconds")
    )


@pytest.mark.timeout(240)
def test_a_query_stuck_in_a_batch_stops_within_the_bound(tmp_path: Path) -> None:
    runtime = SparkRuntime(
        "local[1]",
        {"spark.ui.enabled": "false", "spark.sql.shuffle.partitions": "1", "spark.driver.memory": "512m"},
        str(tmp_path / "checkpoints"),
        STOP_TIMEOUT_MS,
        "test-worker",
    )
    try:
        marker = tmp_path / "in-the-udf"
        terminated: list[str | None] = []
        query = runtime.start_query(
            stuck_writer(runtime.session(), marker), "stuck", 0, lambda _: None, terminated.append
        )
        assert runtime.active_queries() == ["stuck-0"]
        wait_until(marker.exists, 120, "the batch to be inside the UDF")

        started = time.monotonic()
        runtime.stop_query(query)
        took = time.monotonic() - started

        # Inactive, within the bound (graceful, then forced, each bounded by the timeout).
        assert not query.isActive
        assert runtime.active_queries() == []
        assert took < 2 * STOP_TIMEOUT_MS / 1000, took
        # Stopped on purpose: not reported as the query failing by itself.
        assert terminated == []
    finally:
        runtime.close()


GRACEFUL_MS = 3000
MARGIN_S = 10.0  # leaving, closing clients and stopping the SparkSession, on a loaded machine


@pytest.mark.timeout(240)
def test_sigterm_stops_a_spark_worker_whose_coordinator_is_gone_and_leaves_no_process(tmp_path: Path) -> None:
    """Seen before: such a worker was still running 70 s after SIGTERM; only SIGKILL ended it."""
    with spark_worker_cluster(tmp_path, **{"task.shutdown.graceful.timeout.ms": str(GRACEFUL_MS)}) as cluster:
        worker = cluster.start("w1")
        config = {"connector.class": "Datagen", "tasks.max": "1", "output.path": str(tmp_path / "out"),
                  "rows.per.second": "50", "trigger.interval.ms": "500"}  # fmt: skip
        assert rest("POST", f"{worker.url}/connectors", {"name": "gen", "config": config})[0] == 201
        wait_until(
            lambda: cluster.placement("gen").get("0") == worker.worker_id, 120, "the Spark task running"
        )
        assert worker.process is not None and jvm_of(worker) is not None
        started = descendants(worker.process.pid)
        cluster.coordinator.kill()
        took = sigterm_and_time(worker, GRACEFUL_MS / 1000 + MARGIN_S + 60)
        assert worker.process.poll() is not None, f"still running {took:.0f} s after SIGTERM"
        assert took <= GRACEFUL_MS / 1000 + MARGIN_S, f"SIGTERM took {took:.1f} s to stop the worker"
        wait_until(
            lambda: not any(Path(f"/proc/{pid}").exists() for pid in started), 10, "its processes gone"
        )


@pytest.mark.timeout(240)
def test_a_task_waiting_for_the_spark_session_says_so_in_its_status_and_the_worker_root(
    tmp_path: Path,
) -> None:
    """A worker starts its SparkSession on its first Spark task (warm-up off here, so the wait
    comes exactly then): until the session is up, the task's status names the worker and says
    it waits for the session, and the worker's `/` says the runtime is starting."""
    with spark_worker_cluster(tmp_path, **{"spark.session.warmup": "false"}) as cluster:
        worker = cluster.start("w1")
        assert rest("GET", f"{worker.url}/")[1]["spark_runtime"]["state"] == "NOT_STARTED"
        config = {"connector.class": "Datagen", "tasks.max": "1", "output.path": str(tmp_path / "out"),
                  "rows.per.second": "50", "trigger.interval.ms": "500"}  # fmt: skip
        assert rest("POST", f"{worker.url}/connectors", {"name": "gen", "config": config})[0] == 201
        waiting: list[dict[str, Any]] = []
        runtime_states: set[str] = set()
        deadline = time.monotonic() + 120
        while time.monotonic() < deadline:
            code, status = rest("GET", f"{worker.url}/connectors/gen/status")
            task = status["tasks"][0] if code == 200 and status.get("tasks") else {}
            if task.get("state") == "RUNNING":
                break
            if "Spark session is starting" in task.get("trace", ""):
                waiting.append(task)
                runtime_states.add(rest("GET", f"{worker.url}/")[1]["spark_runtime"]["state"])
            time.sleep(0.05)
        assert waiting, "the task's status never said it waits for the worker's Spark session"
        assert all(t["state"] == "UNASSIGNED" and t["worker_id"] == worker.worker_id for t in waiting)
        assert "STARTING" in runtime_states, runtime_states
        wait_until(lambda: cluster.placement("gen").get("0") == worker.worker_id, 120, "the task running")
        runtime = rest("GET", f"{worker.url}/")[1]["spark_runtime"]
        assert runtime["state"] == "READY" and runtime["start_seconds"] > 0, runtime
        assert "trace" not in rest("GET", f"{worker.url}/connectors/gen/status")[1]["tasks"][0]

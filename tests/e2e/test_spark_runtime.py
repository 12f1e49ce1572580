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
from workers.spark.runtime import SparkRuntime

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


def slow_writer(spark: Any, marker: Path, output: Path) -> Any:
    """A query whose every batch takes about a second, in a Python UDF that touches `marker`."""
    from pyspark.sql.functions import udf

    @udf("long")
    def slow(value: int) -> int:
        marker.touch()
        time.sleep(1.0)
        return value

    return (
        spark.readStream.format("rate").option("rowsPerSecond", "1").load()
        .select(slow("value").alias("v"))
        .writeStream.format("parquet").option("path", str(output))
        .trigger(processingTime="100 milliseconds")
    )  # fmt: skip


def batches(checkpoint: Path, log: str) -> set[int]:
    folder = checkpoint / log
    return {int(p.name) for p in folder.iterdir() if p.name.isdigit()} if folder.is_dir() else set()


@pytest.mark.timeout(240)
def test_a_graceful_stop_lets_the_batch_under_way_commit_and_an_urgent_one_does_not(tmp_path: Path) -> None:
    """A revocation or a leave (finish_batch) stops the query after the batch under way
    commits, so the next owner starts after it instead of reading it again; a stop of work
    that may already run elsewhere (a lost session) does not wait for it."""
    runtime = SparkRuntime("local[1]", {"spark.ui.enabled": "false", "spark.sql.shuffle.partitions": "1"},
                           str(tmp_path / "checkpoints"), 6000, "test-worker")  # fmt: skip
    try:
        assert stopped_after_its_batch(runtime, tmp_path, finish_batch=True), (
            "a graceful stop threw the batch under way away"
        )
        assert not stopped_after_its_batch(runtime, tmp_path, finish_batch=False), (
            "an urgent stop waited for the batch under way"
        )
    finally:
        runtime.close()


def stopped_after_its_batch(runtime: SparkRuntime, base: Path, finish_batch: bool) -> bool:
    """Stop a slow query while a batch runs: was that batch committed?"""
    marker, name = base / f"in-a-batch-{finish_batch}", f"slow{int(finish_batch)}"
    writer = slow_writer(runtime.session(), marker, base / f"out-{finish_batch}")
    query = runtime.start_query(writer, name, 0, lambda _: None, lambda _: None)
    checkpoint = Path(runtime.checkpoint_of(name, 0))
    wait_until(lambda: len(batches(checkpoint, "commits")) >= 2, 120, "two batches committed")
    marker.unlink()
    wait_until(marker.exists, 60, "a batch inside its UDF")
    running = max(batches(checkpoint, "offsets"))
    runtime.stop_query(query, finish_batch=finish_batch)
    assert not query.isActive
    return running in batches(checkpoint, "commits")


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


@pytest.mark.timeout(300)
def test_a_joining_worker_takes_spark_tasks_only_once_its_session_is_ready(tmp_path: Path) -> None:
    """A worker joining a cluster that runs Spark tasks warms its session before it joins:
    the task balance moves to it keeps running on its old worker meanwhile, and never waits,
    stopped, for the joiner's session (its status would say so)."""
    with spark_worker_cluster(tmp_path) as cluster:
        first = cluster.start("w1")
        config = {"connector.class": "Datagen", "tasks.max": "2", "output.path": str(tmp_path / "out"),
                  "rows.per.second": "50", "trigger.interval.ms": "500"}  # fmt: skip
        assert rest("POST", f"{first.url}/connectors", {"name": "gen", "config": config})[0] == 201
        everything_on_w1 = {"C": first.worker_id, "0": first.worker_id, "1": first.worker_id}
        wait_until(lambda: cluster.placement("gen") == everything_on_w1, 120, "w1 running it all")
        joiner = cluster.start("w2")
        waited: list[dict[str, Any]] = []
        deadline = time.monotonic() + 120
        while time.monotonic() < deadline and joiner.worker_id not in cluster.placement("gen").values():
            code, status = rest("GET", f"{first.url}/connectors/gen/status")
            tasks = status.get("tasks", []) if code == 200 else []
            waited += [t for t in tasks if "Spark session is starting" in t.get("trace", "")]
            time.sleep(0.05)
        assert joiner.worker_id in cluster.placement("gen").values(), "nothing moved to the joining worker"
        assert waited == [], f"a task moved to the joiner waited for its Spark session: {waited[:1]}"
        runtime = rest("GET", f"{joiner.url}/")[1]["spark_runtime"]
        assert runtime["state"] == "READY", runtime

"""The planners of a worker's Spark queries, and what a task does when Spark's machinery fails.

Spark plans each streaming query over a Python data source in a Python process; the worker
runs one planner host that plans every query of its session, on a thread each
(workers/spark/planner_host.py). Spark gives a planner 10 s to connect back to its JVM: on a
busy machine (here: the host frozen with SIGSTOP, as an overloaded machine leaves it
unscheduled) that start times out, and the task starts its query again from its checkpoint
with a backoff, never going FAILED. A host that dies (SIGKILL) ends its queries' planners;
the tasks start their queries again and the worker starts a new host for them.
"""

from __future__ import annotations

import contextlib
import os
import signal
import threading
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

import pytest

from tests.e2e.test_topic_ingest import create_topic, produce
from tests.support.group_scenario import wait_until
from tests.support.spark_cluster import descendants, spark_worker_cluster
from tests.support.worker_cluster import WorkerCluster, rest
from workers.harness.process import WorkerProcess
from workers.spark.parquet_output import committed_column
from workers.spark.planner_host import RUNNER

pytestmark = pytest.mark.e2e
RETRIED = "Spark's own processes failed"


def command_lines(worker: WorkerProcess) -> dict[int, str]:
    """Every process below the worker, by pid: its command line."""
    assert worker.process is not None
    found = {}
    for pid in descendants(worker.process.pid):
        try:
            found[pid] = Path(f"/proc/{pid}/cmdline").read_bytes().replace(b"\0", b" ").decode()
        except OSError:
            continue
    return found


def planner_hosts(worker: WorkerProcess) -> list[int]:
    return [pid for pid, line in command_lines(worker).items() if "workers.spark.planner_host" in line]


def planner_processes(worker: WorkerProcess) -> list[int]:
    """Spark's planner processes, each planning its query itself (not handed to the host)."""
    return [pid for pid, line in command_lines(worker).items() if RUNNER in line]


def rows(output: Path) -> int:
    try:
        return len(committed_column(str(output), "value"))
    except (OSError, ValueError):  # a batch being committed
        return 0


@contextmanager
def states_seen(cluster: WorkerCluster, connectors: list[str]) -> Iterator[set[str]]:
    """Every state the connectors' tasks are seen in, polled every 0.2 s while the block runs."""
    seen: set[str] = set()
    done = threading.Event()

    def poll() -> None:
        while not done.wait(0.2):
            for name in connectors:
                with contextlib.suppress(AssertionError):  # not known yet
                    seen.update(t["state"] for t in cluster.status(name)["tasks"])

    thread = threading.Thread(target=poll, daemon=True)
    thread.start()
    try:
        yield seen
    finally:
        done.set()
        thread.join(10)


def ready_worker(cluster: WorkerCluster) -> WorkerProcess:
    worker = cluster.start("w1")
    wait_until(lambda: rest("GET", f"{worker.url}/")[1]["spark_runtime"]["state"] == "READY", 180,
               "the worker's Spark session")  # fmt: skip
    return worker


def ingest(cluster: WorkerCluster, worker: WorkerProcess, name: str, topic: str, output: Path) -> None:
    config = {"connector.class": "TopicIngest", "tasks.max": "1", "topics": topic, "output.path": str(output),
              "trigger.interval.ms": "500"}  # fmt: skip
    assert rest("POST", f"{worker.url}/connectors", {"name": name, "config": config})[0] == 201


@pytest.mark.timeout(400)
def test_a_spark_start_that_times_out_is_started_again_and_its_task_never_fails(tmp_path: Path) -> None:
    with spark_worker_cluster(tmp_path) as cluster:
        worker = ready_worker(cluster)
        bootstrap = cluster.coordinator.bootstrap
        create_topic(bootstrap, "clicks", 1)
        produce(bootstrap, "clicks", range(300), 1)
        [host] = planner_hosts(worker)
        with states_seen(cluster, ["clicks-ingest"]) as seen:
            os.kill(host, signal.SIGSTOP)  # the planner's start cannot connect back within Spark's 10 s
            try:
                ingest(cluster, worker, "clicks-ingest", "clicks", tmp_path / "out")
                wait_until(lambda: RETRIED in worker.log_text() or "FAILED" in seen, 120,
                           "the query's start timing out and the task starting it again")  # fmt: skip
            finally:
                os.kill(host, signal.SIGCONT)
            assert "FAILED" not in seen, f"the task was reported FAILED (states seen: {sorted(seen)})"
            wait_until(lambda: rows(tmp_path / "out") >= 300 or "FAILED" in seen, 180,
                       "every record ingested after the retry")  # fmt: skip
        assert "FAILED" not in seen, f"the task was reported FAILED (states seen: {sorted(seen)})"
        assert cluster.status("clicks-ingest")["tasks"][0]["state"] == "RUNNING"
        assert sorted(int(v) for v in committed_column(str(tmp_path / "out"), "value")) == list(range(300))


@pytest.mark.timeout(400)
def test_every_query_is_planned_in_the_workers_one_planner_host_which_is_replaced_when_it_dies(
    tmp_path: Path,
) -> None:
    names = ["a", "b", "c"]
    with spark_worker_cluster(tmp_path) as cluster:
        worker = ready_worker(cluster)
        bootstrap = cluster.coordinator.bootstrap
        for name in names:
            create_topic(bootstrap, name, 1)
            produce(bootstrap, name, range(200), 1)
        with states_seen(cluster, names) as seen:
            for name in names:
                ingest(cluster, worker, name, name, tmp_path / name)
            wait_until(lambda: all(rows(tmp_path / n) >= 200 for n in names), 180, "every backlog read")
            assert planner_processes(worker) == [], "a query is planned in a process of its own"
            [host] = planner_hosts(worker)

            os.kill(host, signal.SIGKILL)  # every query's planner goes with it
            for name in names:
                produce(bootstrap, name, range(200, 400), 1)
            wait_until(lambda: all(rows(tmp_path / n) >= 400 for n in names) or "FAILED" in seen, 180,
                       "every record read after the host died")  # fmt: skip
        assert "FAILED" not in seen, f"a task was reported FAILED (states seen: {sorted(seen)})"
        assert [p for p in planner_hosts(worker) if p != host], "no new planner host was started"
        assert planner_processes(worker) == [], "a query is planned in a process of its own"
        for name in names:
            assert sorted(int(v) for v in committed_column(str(tmp_path / name), "value")) == list(range(400))

"""Spark tasks stay exactly once when a worker is frozen past its session.

A TopicIngest and a FileIngest run on three Spark workers while records and files keep
arriving. Twice, a worker is frozen with everything it started (SIGSTOP of the worker, its
JVM and Spark's Python workers, as a paused machine is frozen) until its tasks run on the
others, and then thawed: its queries resume where they were, beside their successors, until
its watchdog stops them. Spark tasks commit through their checkpoint and their file sink's
log, whose batch commits are atomic, so a batch is committed by one run only. Read back
through Spark, each output holds every input row exactly once.
"""

from __future__ import annotations

import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from connect_rebalance_cli import sample_data
from tests.e2e.test_file_ingest import Lander
from tests.e2e.test_topic_ingest import create_topic
from tests.support.group_scenario import ContinuousProducer, wait_until
from tests.support.spark_cluster import CHURN_TRIGGER_MS, freeze_with_jvm, spark_worker_cluster, thaw
from tests.support.worker_cluster import WorkerCluster, rest
from workers.spark.parquet_output import committed_column, read_output

pytestmark = pytest.mark.e2e
CONNECTORS = {"ingest": 2, "files": 2}  # tasks each
STALL_S = 30.0  # a count that has not grown for this long has settled


def settled(count: Callable[[], int], total: int) -> int:
    """`count()` once it has reached `total`, or has not grown for STALL_S: what to assert on."""
    seen, since = count(), time.monotonic()
    while seen < total and time.monotonic() - since < STALL_S:
        time.sleep(0.5)
        now = count()
        if now != seen:
            seen, since = now, time.monotonic()
    return seen


def committed_rows(output: Path, column: str) -> int:
    """Rows the tasks' file sinks have committed (their `_spark_metadata` logs)."""
    try:
        return len(committed_column(str(output), column))
    except (OSError, ValueError):  # a batch being committed
        return 0


def tasks_on(cluster: WorkerCluster, worker_id: str) -> int:
    return sum(
        1 for name in CONNECTORS for item, owner in cluster.placement(name).items()
        if item != "C" and owner == worker_id
    )  # fmt: skip


def start_ingesting(
    cluster: WorkerCluster, data: Path, first: int, topic_out: Path, files_out: Path
) -> tuple[ContinuousProducer, Lander]:
    """A TopicIngest and a FileIngest (2 tasks each) running on the started workers, with
    records and files arriving."""
    bootstrap = cluster.coordinator.bootstrap
    create_topic(bootstrap, "clicks", 4)
    producer = ContinuousProducer(bootstrap, "clicks", 10**6, per_second=40).start()
    lander = Lander(data, first, every=2.0, rounds=None)  # until the test's churn is over
    configs = {
        "ingest": {"connector.class": "TopicIngest", "topics": "clicks", "tasks.max": "2",
                   "output.path": str(topic_out), "trigger.interval.ms": CHURN_TRIGGER_MS,
                   "max.records.per.batch": "200"},
        "files": {"connector.class": "FileIngest", "tasks.max": "2", "input.path": str(data),
                  "format": "json", "schema": sample_data.SCHEMA, "output.path": str(files_out),
                  "max.files.per.trigger": "2", "trigger.interval.ms": CHURN_TRIGGER_MS},
    }  # fmt: skip
    url = cluster.running()[0].url
    for name, config in configs.items():
        assert rest("POST", f"{url}/connectors", {"name": name, "config": config})[0] == 201
    wait_until(lambda: all_running(cluster), 180, "both connectors' tasks running")
    lander.start()
    return producer, lander


def assert_every_row_once(spark: Any, topic_out: Path, records: int, files_out: Path, rows: int) -> None:
    """Read back through Spark, each output holds every input row exactly once."""
    ids = sorted(int(r.value) for r in read_output(spark, str(topic_out)).select("value").collect())
    assert len(ids) == records and ids == list(range(records)), (
        f"TopicIngest: {len(ids)} rows for {records} records, {len(ids) - len(set(ids))} twice"
    )
    ids = sorted(row.id for row in read_output(spark, str(files_out)).select("id").collect())
    assert len(ids) == rows and ids == list(range(rows)), (
        f"FileIngest: {len(ids)} rows for {rows}, {len(ids) - len(set(ids))} twice"
    )


def all_running(cluster: WorkerCluster) -> bool:
    return all(len(cluster.placement(name)) == tasks + 1 for name, tasks in CONNECTORS.items())


@pytest.mark.timeout(900)
def test_workers_frozen_past_their_session_leave_every_row_exactly_once(spark: Any, tmp_path: Path) -> None:
    data, files_out, topic_out = tmp_path / "in", tmp_path / "files-out", tmp_path / "topic-out"
    first = sample_data.write_files(data, 0, 1)
    with spark_worker_cluster(tmp_path) as cluster:
        workers = [cluster.start(n) for n in ("w1", "w2", "w3")]
        producer, lander = start_ingesting(cluster, data, first, topic_out, files_out)

        for round_ in range(2):
            victim = max(workers, key=lambda w: tasks_on(cluster, w.worker_id))
            assert tasks_on(cluster, victim.worker_id) >= 1
            before = committed_rows(topic_out, "value")
            frozen = freeze_with_jvm(victim)
            try:
                wait_until(
                    lambda v=victim: all_running(cluster) and tasks_on(cluster, v.worker_id) == 0,
                    120, f"freeze {round_}: the frozen worker's tasks running elsewhere",
                )  # fmt: skip
                wait_until(lambda b=before: committed_rows(topic_out, "value") > b, 120,
                           f"freeze {round_}: batches committed by the successors")  # fmt: skip
            finally:
                thaw(victim, frozen)
            wait_until(lambda: all_running(cluster) and all(tasks_on(cluster, w.worker_id) for w in workers),
                       180, f"freeze {round_}: the thawed worker back in the group with work")  # fmt: skip

        records, rows = producer.finish(), lander.finish()

        # Until every row is in (or the counts stop growing): then what was committed is judged.
        settled(lambda: committed_rows(topic_out, "value"), records)
        settled(lambda: committed_rows(files_out, "id"), rows)

    assert_every_row_once(spark, topic_out, records, files_out, rows)

"""Connectors' queries on a real Spark standalone cluster, through churn.

A Spark master and two Spark workers are started from the installed PySpark on loopback;
three connect workers run with `spark.master=spark://127.0.0.1:<port>`, so each is a Spark
application whose queries run on the cluster's executors, with checkpoints and output on a
directory all of them share. A TopicIngest and a FileIngest ingest while a connect worker
joins, one leaves gracefully, one is killed with SIGKILL, and one Spark executor is killed
with SIGKILL (its Spark worker starts another). Read back through Spark, each output holds
every input row exactly once.
"""

from __future__ import annotations

import json
import os
import signal
import urllib.request
from pathlib import Path
from typing import Any

import pytest

from connect_rebalance_cli import sample_data
from tests.e2e.test_frozen_spark_workers import (
    all_running,
    assert_every_row_once,
    committed_rows,
    settled,
    start_ingesting,
)
from tests.support.group_scenario import wait_until
from tests.support.spark_cluster import kill_with_jvm, processes, spark_worker_cluster
from tests.support.spark_standalone import StandaloneCluster, spark_standalone

pytestmark = pytest.mark.e2e
# Each connect worker is one application holding one executor core and 512 MB: four fit the
# two Spark workers (2 cores and 1 GB each), so a joining worker gets an executor too.
ON_THE_CLUSTER = {"spark.cores.max": "1", "spark.executor.cores": "1", "spark.executor.memory": "512m",
                  # executors call their driver (the connect worker) back on loopback
                  "spark.driver.host": "127.0.0.1", "spark.driver.bindAddress": "127.0.0.1"}  # fmt: skip


def executors(spark_cluster: StandaloneCluster) -> dict[str, list[dict[str, Any]]]:
    """Each running application's executors on the cluster's Spark workers, by app name.

    A master or Spark worker whose web UI does not answer within its timeout (it shares two cores with a
    dozen JVMs while executors launch) counts as showing nothing this time; the caller polls.
    """
    found: dict[str, list[dict[str, Any]]] = {}
    try:
        workers = spark_cluster.status().get("workers", [])
    except OSError:
        return found
    for worker in workers:
        if worker.get("state") != "ALIVE":
            continue
        try:
            with urllib.request.urlopen(f"{worker['webuiaddress']}/json/", timeout=5) as answer:
                state = json.loads(answer.read())
        except OSError:
            continue
        for executor in state.get("executors", []):
            found.setdefault(executor["appdesc"]["name"], []).append(executor)
    return found


def executor_pids() -> list[int]:
    """Spark executors' processes on this machine (CoarseGrainedExecutorBackend JVMs)."""
    return [pid for pid, command in processes("cmdline") if b"CoarseGrainedExecutorBackend" in command]


@pytest.mark.timeout(900)
def test_connectors_on_a_spark_cluster_ingest_every_row_once_through_joins_leaves_and_kills(
    spark: Any, tmp_path: Path
) -> None:
    shared = tmp_path / "shared"  # checkpoints, input and output: every process sees them
    data, files_out, topic_out = shared / "in", shared / "files-out", shared / "topic-out"
    first = sample_data.write_files(data, 0, 1)
    with (
        spark_standalone(tmp_path / "spark", workers=2) as spark_cluster,
        spark_worker_cluster(
            tmp_path,
            **{
                "spark.master": spark_cluster.master_url,
                "checkpoint.dir": str(shared / "checkpoints"),
                **ON_THE_CLUSTER,
            },
        ) as cluster,  # fmt: skip
    ):
        workers = [cluster.start(n) for n in ("w1", "w2", "w3")]
        producer, lander = start_ingesting(cluster, data, first, topic_out, files_out)

        # Every connect worker is an application with an executor on the cluster's workers.
        apps = {f"connect-worker {w.worker_id}" for w in workers}
        wait_until(lambda: apps <= set(executors(spark_cluster)), 120, "an executor for each connect worker")

        def ingesting(what: str) -> None:
            before = committed_rows(topic_out, "value"), committed_rows(files_out, "id")
            wait_until(lambda: all_running(cluster), 180, f"{what}: every task running")
            wait_until(lambda: committed_rows(topic_out, "value") > before[0], 120, f"{what}: topic batches")
            wait_until(lambda: committed_rows(files_out, "id") > before[1], 120, f"{what}: file batches")

        ingesting("start")
        cluster.start("w4")  # joins: some tasks move to it
        ingesting("after a join")
        workers[0].stop()  # leaves gracefully
        ingesting("after a graceful leave")
        kill_with_jvm(workers[1])  # crashes
        ingesting("after a connect worker's SIGKILL")
        victim = executor_pids()[0]
        os.kill(victim, signal.SIGKILL)  # a Spark executor dies; its worker starts another
        ingesting("after an executor's SIGKILL")

        records, rows = producer.finish(), lander.finish()
        settled(lambda: committed_rows(topic_out, "value"), records)
        settled(lambda: committed_rows(files_out, "id"), rows)
        assert victim not in executor_pids()

    assert_every_row_once(spark, topic_out, records, files_out, rows)

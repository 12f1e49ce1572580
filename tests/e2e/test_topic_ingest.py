"""Topic partitions on a coordinator -> Parquet through the `topic` PySpark data source.

The data source alone, with plain PySpark in this process: it reads only the partitions it
is given, its offsets are the checkpoint's (a query restarted on its checkpoint reads
exactly what came after its last batch), and read limits bound each micro-batch.

The TopicIngest connector on worker processes, each with its own SparkSession: every
record read once while workers join, leave and are killed; a task that moves resumes where
its checkpoint says; a task's query never runs on two workers at once; a query that fails
makes its task FAILED with Spark's error, and a restart brings it back.
"""

from __future__ import annotations

import json
import math
import time
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest
from kafka import KafkaProducer
from kafka.admin import KafkaAdminClient, NewPartitions, NewTopic

from connect_rebalance.processes import CoordinatorProcess
from tests.support.group_scenario import ContinuousProducer, wait_until
from tests.support.spark_cluster import (
    CHURN_TRIGGER_MS,
    Run,
    journal,
    jvm_of,
    kill_with_jvm,
    overlaps,
    runs,
    spark_worker_cluster,
)
from tests.support.worker_cluster import WorkerCluster, metrics, rest
from workers.spark.parquet_output import read_output
from workers.spark.partition_split import task_owns
from workers.spark.share_handoff import committed_offsets
from workers.spark.topic_source import TopicDataSource

pytestmark = pytest.mark.e2e


def create_topic(bootstrap: str, topic: str, partitions: int) -> None:
    admin = KafkaAdminClient(bootstrap_servers=bootstrap)
    try:
        admin.create_topics([NewTopic(topic, partitions, 1)])
    finally:
        admin.close()


def produce(bootstrap: str, topic: str, ids: range, partitions: int) -> None:
    """Record `i` goes to partition `i % partitions`, its value the id as text."""
    producer = KafkaProducer(bootstrap_servers=bootstrap, linger_ms=5)
    try:
        for i in ids:
            producer.send(topic, key=str(i).encode(), value=str(i).encode(), partition=i % partitions)
        producer.flush(30)
    finally:
        producer.close()


def catch_up(spark: Any, bootstrap: str, base: Path, **options: str) -> None:
    """Run the topic -> Parquet query until it has read everything there is now, then stop."""
    spark.dataSource.register(TopicDataSource)
    reader = spark.readStream.format("topic").option("bootstrap.servers", bootstrap)
    for name, value in options.items():
        reader = reader.option(name, value)
    query = (
        reader.load()
        .writeStream.format("parquet")
        .option("path", str(base / "out"))
        .option("checkpointLocation", str(base / "ckpt"))
        .trigger(availableNow=True)
        .start()
    )
    assert query.awaitTermination(120), "the query did not finish within 120 s"
    assert query.exception() is None, query.exception()


def ids_read(spark: Any, base: Path) -> list[int]:
    rows = spark.read.parquet(str(base / "out")).selectExpr("CAST(CAST(value AS STRING) AS INT) AS id")
    return sorted(r.id for r in rows.collect())


def test_reads_only_the_assigned_partitions_and_resumes_from_its_checkpoint(
    spark: Any, coordinator: CoordinatorProcess, tmp_path: Path
) -> None:
    bootstrap = coordinator.bootstrap
    create_topic(bootstrap, "orders", 3)
    produce(bootstrap, "orders", range(0, 600), 3)

    # Given a query over partitions 0 and 2 of 3, in batches of at most 150 records,
    catch_up(spark, bootstrap, tmp_path, assign="orders:0,orders:2", maxOffsetsPerTrigger="150")
    # then it read those partitions' records and nothing of partition 1,
    assert ids_read(spark, tmp_path) == [i for i in range(600) if i % 3 != 1]
    # in batches bounded by the limit, whose offsets are in the checkpoint.
    batches = [p for p in (tmp_path / "ckpt" / "commits").iterdir() if p.name.isdigit()]
    assert len(batches) == 3  # 150 + 150 + 100
    assert committed_offsets(str(tmp_path / "ckpt")) == {"orders": {"0": 200, "2": 200}}

    # When more records arrive and the query restarts on its checkpoint,
    produce(bootstrap, "orders", range(600, 900), 3)
    catch_up(spark, bootstrap, tmp_path, assign="orders:0,orders:2")
    # then it reads exactly the new ones: every id once.
    assert ids_read(spark, tmp_path) == [i for i in range(900) if i % 3 != 1]
    assert committed_offsets(str(tmp_path / "ckpt")) == {"orders": {"0": 300, "2": 300}}


def test_subscribe_reads_every_partition_from_latest_when_asked(
    spark: Any, coordinator: CoordinatorProcess, tmp_path: Path
) -> None:
    bootstrap = coordinator.bootstrap
    create_topic(bootstrap, "events", 2)
    produce(bootstrap, "events", range(0, 100), 2)

    # A query subscribed to the topic, starting at its end, reads nothing of what is there;
    catch_up(spark, bootstrap, tmp_path, subscribe="events", startingOffsets="latest")
    assert committed_offsets(str(tmp_path / "ckpt")) in (None, {"events": {"0": 50, "1": 50}})
    # what arrives afterwards it reads from both partitions.
    produce(bootstrap, "events", range(100, 160), 2)
    catch_up(spark, bootstrap, tmp_path, subscribe="events", startingOffsets="latest")
    assert ids_read(spark, tmp_path) == list(range(100, 160))


# -- the TopicIngest connector on a cluster of worker processes --------------------------

# Produced at this rate from before the connector starts until after the last event.
RECORDS_PER_SECOND = 40


def committed_records(cluster: WorkerCluster, connector: str) -> int:
    """What the tasks' checkpoints record as read, through `GET /connectors/{name}/offsets`."""
    for worker in cluster.running():
        code, body = rest("GET", f"{worker.url}/connectors/{connector}/offsets")
        if code == 200:
            return sum(entry["offset"]["kafka_offset"] for entry in body["offsets"])
    return 0


@dataclass
class Moves:
    """What one run of TopicIngest through a join, a graceful leave and a SIGKILL left behind."""

    records: int
    ids: list[int]
    runs: dict[str, list[Run]]
    killed: str
    died_at: float
    stopped_offsets: int  # what GET /connectors/ingest/offsets sums to once the connector is STOPPED


@pytest.fixture(scope="module")
def moves(spark: Any, tmp_path_factory: pytest.TempPathFactory) -> Iterator[Moves]:
    """4 TopicIngest tasks on 3 workers while records arrive; a worker leaves, one joins, one crashes."""
    base = tmp_path_factory.mktemp("moves")
    with spark_worker_cluster(base) as cluster:
        bootstrap = cluster.coordinator.bootstrap
        create_topic(bootstrap, "clicks", 8)
        w1, w2, _ = (cluster.start(n) for n in ("w1", "w2", "w3"))
        producer = ContinuousProducer(bootstrap, "clicks", 10**6, per_second=RECORDS_PER_SECOND).start()
        config = {"connector.class": "TopicIngest", "topics": "clicks", "tasks.max": "4",
                  "output.path": str(base / "out"), "trigger.interval.ms": CHURN_TRIGGER_MS,
                  "max.records.per.batch": "200"}  # fmt: skip
        assert rest("POST", f"{w1.url}/connectors", {"name": "ingest", "config": config})[0] == 201

        def moves_on(what: str) -> None:
            """Every task runs on a live worker and the tasks commit more than they had."""
            wait_until(lambda: cluster.balanced("ingest", 5), 120, f"{what}: tasks spread over the workers")
            before = committed_records(cluster, "ingest")
            wait_until(lambda: committed_records(cluster, "ingest") > before, 120, f"{what}: new batches")

        moves_on("start")
        w1.stop()  # leaves gracefully: its tasks move once prepared elsewhere
        moves_on("after a graceful leave")
        w4 = cluster.start("w4")  # joins once its Spark session is ready: some tasks move to it

        # Under load, three Spark JVMs on two cores take 1-2 minutes to start a fourth; the
        # worker joins the group only then, so the move is timed from there.
        def session_ready() -> bool:
            code, body = rest("GET", f"{w4.url}/")
            return code == 200 and body["spark_runtime"]["state"] == "READY"

        wait_until(session_ready, 300, "the joining worker's Spark session ready")
        moves_on("after a join")
        died_at = kill_with_jvm(w2)  # crashes: its tasks move once its session expires
        moves_on("after a crash")
        records = producer.finish()
        wait_until(lambda: committed_records(cluster, "ingest") == records, 180, "every record committed")
        # KIP-875: offsets are read with the connector STOPPED (no task runs, none is configured).
        assert rest("PUT", f"{cluster.running()[0].url}/connectors/ingest/stop")[0] == 204
        wait_until(lambda: cluster.status("ingest")["connector"]["state"] == "STOPPED", 60, "ingest stopped")
        stopped_offsets = committed_records(cluster, "ingest")

        # The connector is STOPPED before its tasks' queries are: each run's last lines (a batch
        # that committed just before the stop, and the stop) come once its query has stopped.
        def every_run_ended() -> bool:
            found = runs(list(cluster.workers.values()), {w2.worker_id: died_at})
            return all(run.end != math.inf for task in found.values() for run in task)

        wait_until(every_run_ended, 60, "every task's query stopped, in its worker's journal")
        task_runs = runs(list(cluster.workers.values()), {w2.worker_id: died_at})
    ids = [int(r.value) for r in read_output(spark, str(base / "out")).select("value").collect()]
    yield Moves(records, ids, task_runs, w2.worker_id, died_at, stopped_offsets)


@pytest.mark.timeout(600)
def test_topic_ingest_reads_every_record_once_while_workers_join_leave_and_crash(moves: Moves) -> None:
    # Read through Spark (each task's sink log): every record, none twice.
    assert len(moves.ids) == moves.records, f"{len(moves.ids)} rows for {moves.records} records"
    assert sorted(moves.ids) == list(range(moves.records)), "every record exactly once"
    # All 4 tasks ran, and the three events moved tasks between workers.
    assert len(moves.runs) == 4, moves.runs
    moved = sum(len({r.worker for r in found}) - 1 for found in moves.runs.values())
    assert moved >= 3, moves.runs


@pytest.mark.timeout(600)
def test_a_stopped_topic_ingest_reports_the_offsets_its_checkpoints_committed(moves: Moves) -> None:
    """Seen before: `{"offsets": []}` once STOPPED, though KIP-875 reads offsets in that state."""
    assert moves.stopped_offsets == moves.records


@pytest.mark.timeout(600)
def test_a_moved_task_resumes_after_the_last_offset_its_previous_run_committed(moves: Moves) -> None:
    # Stopped (a graceful leave, or a revocation for a join) and started elsewhere: the next run
    # that commits a batch starts at the next batch, reading from exactly where the last one
    # ended. A run in between may have been stopped before its first batch (a task moved twice
    # in quick succession: revoked for the leave, then again for the join); it committed nothing.
    handovers = []
    for found in moves.runs.values():
        last = None  # the latest run that stopped after committing a batch, nothing committed since
        for run in found:
            if run.first_batch:
                if last is not None:
                    handovers.append((last, run))
                last = run if run.stopped and run.last_batch else None
    assert handovers, moves.runs
    for before, after in handovers:
        assert before.last_batch is not None and after.first_batch is not None
        assert after.first_batch["batch"] == before.last_batch["batch"] + 1, (before, after)
        assert after.first_batch["start"] == before.last_batch["end"], (before, after)
    # After the crash, the killed worker's tasks resumed from their checkpoints too.
    resumed = [
        after
        for found in moves.runs.values()
        for before, after in zip(found, found[1:], strict=False)
        if before.worker == moves.killed and not before.stopped
    ]
    # A run that started after the last record was read (a move late in the churn) reads
    # nothing and commits no batch: there is nothing to check of it.
    read = [run for run in resumed if run.first_batch]
    assert read and all(run.first_batch["batch"] > 0 for run in read), resumed


@pytest.mark.timeout(600)
def test_a_task_never_runs_its_query_on_two_workers_at_once(moves: Moves) -> None:
    # From each worker's journal: a run is active from just before start() until its worker
    # saw it inactive — or, on the killed worker, until its JVM was gone.
    assert not overlaps(moves.runs), overlaps(moves.runs)
    killed_runs = [r for found in moves.runs.values() for r in found if r.worker == moves.killed]
    assert killed_runs and all(r.end <= moves.died_at for r in killed_runs)


def batches(checkpoint: Path, log: str) -> set[int]:
    folder = checkpoint / log
    return {int(p.name) for p in folder.iterdir() if p.name.isdigit()} if folder.is_dir() else set()


BULK = 120_000  # records; batches of 30,000 take seconds here
AFTER = 2_000  # records written once the owner has left


@pytest.mark.timeout(600)
def test_a_task_moved_in_the_middle_of_a_long_batch_is_handed_over_at_that_batchs_commit(
    spark: Any, tmp_path: Path
) -> None:
    """A worker leaving while its task's batch runs goes on with it while the other worker
    prepares the task (warm handoff), lets its batch under way commit, and only then does the
    task start on the other worker, from the next batch: the two owners never run or commit
    the query at the same time, no batch is read twice, and every record is read once."""
    with spark_worker_cluster(tmp_path, **{"task.shutdown.graceful.timeout.ms": "30000"}) as cluster:
        bootstrap = cluster.coordinator.bootstrap
        create_topic(bootstrap, "bulk", 2)
        produce(bootstrap, "bulk", range(BULK), 2)
        workers = [cluster.start("w1"), cluster.start("w2")]
        config = {"connector.class": "TopicIngest", "topics": "bulk", "tasks.max": "1",
                  "output.path": str(tmp_path / "out"), "trigger.interval.ms": "200",
                  "max.records.per.batch": "30000"}  # fmt: skip
        assert rest("POST", f"{workers[0].url}/connectors", {"name": "bulk", "config": config})[0] == 201
        checkpoint = tmp_path / "checkpoints" / "bulk" / "0"

        def second_batch_under_way() -> bool:
            planned, done = batches(checkpoint, "offsets"), batches(checkpoint, "commits")
            return bool(done) and max(planned) == 1 and 1 not in done

        wait_until(second_batch_under_way, 180, "the task's second batch under way")
        owner = next(w for w in workers if w.worker_id == cluster.placement("bulk").get("0"))
        owner.stop()  # SIGTERM: a graceful leave, in the middle of batch 1
        # The owner may have read everything while the other worker prepared: more records
        # give the taker a batch of its own.
        produce(bootstrap, "bulk", range(BULK, BULK + AFTER), 2)

        def settled() -> bool:  # every record committed, or two owners ran at once: no use waiting
            return committed_records(cluster, "bulk") == BULK + AFTER or bool(overlaps(runs(workers, {})))

        wait_until(settled, 300, "every record committed")
        for worker in workers:
            worker.stop()  # the taker's stop journals what its run did, from the query's own record
        task_runs = runs(workers, {})["bulk-0"]
        entries = [(w.worker_id, e) for w in workers for e in journal(w) if e["query"] == "bulk-0"]
    ended = [(w, e) for w, e in entries if e["event"] == "ended"]
    assert not ended, f"a run lost the task's checkpoint to another (both committed its batches): {ended}"
    assert not overlaps({"bulk-0": task_runs}), task_runs
    # The taker prepared the task while its owner ran it, and went on from that run's last batch.
    assert [w for w, e in entries if e["event"] == "starting" and e.get("prepared")], entries
    last_on_owner = max(i for i, run in enumerate(task_runs) if run.worker == owner.worker_id)
    assert last_on_owner + 1 < len(task_runs), f"the task never ran after the leave: {task_runs}"
    left, taken = task_runs[last_on_owner], task_runs[last_on_owner + 1]
    assert left.last_batch is not None and left.last_batch["batch"] >= 1, (
        f"the batch under way at the leave was not committed by its owner: {left}"
    )
    assert taken.first_batch is not None and taken.first_batch["batch"] == left.last_batch["batch"] + 1, taken
    assert taken.first_batch["start"] == left.last_batch["end"], (left, taken)
    ids = sorted(int(r.value) for r in read_output(spark, str(tmp_path / "out")).select("value").collect())
    assert ids == list(range(BULK + AFTER)), f"{len(ids)} rows for {BULK + AFTER} records"


def task_status(worker_url: str, connector: str, task: int) -> dict[str, Any]:
    """The task's status entry; {"state": None} while its config is not written yet."""
    code, body = rest("GET", f"{worker_url}/connectors/{connector}/tasks/{task}/status")
    if code == 404:
        return {"state": None}
    assert code == 200, body
    return body  # type: ignore[no-any-return]


@pytest.mark.timeout(300)
def test_a_failed_query_fails_its_task_with_the_trace_and_a_restart_brings_it_back(
    spark_cluster: WorkerCluster, tmp_path: Path
) -> None:
    bootstrap = spark_cluster.coordinator.bootstrap
    create_topic(bootstrap, "orders", 2)
    produce(bootstrap, "orders", range(0, 100), 2)
    worker = spark_cluster.start("w1")
    config = {"connector.class": "TopicIngest", "topics": "orders", "tasks.max": "1",
              "output.path": str(tmp_path / "out"), "trigger.interval.ms": "300"}  # fmt: skip
    assert rest("POST", f"{worker.url}/connectors", {"name": "orders", "config": config})[0] == 201

    # Running: its status and the worker's metrics carry the query's progress.
    wait_until(lambda: task_status(worker.url, "orders", 0).get("progress", {}).get("rows") == 100, 120,
               "the task's progress to count the 100 records")  # fmt: skip
    progress = task_status(worker.url, "orders", 0)["progress"]
    assert progress["batches"] >= 1 and progress["last_batch_ms"] > 0, progress
    assert {"input_rows_per_second", "processed_rows_per_second"} <= set(progress)
    assert metrics(worker.url)['connect_worker_task_rows_total{connector="orders",task="0"}'] == 100
    assert jvm_of(worker) is not None

    # When its topic is deleted, the query fails: the task is FAILED with Spark's error.
    admin = KafkaAdminClient(bootstrap_servers=bootstrap)
    try:
        admin.delete_topics(["orders"])
    finally:
        admin.close()
    produce_failed_at = time.monotonic()
    wait_until(lambda: task_status(worker.url, "orders", 0)["state"] == "FAILED", 150, "the task to fail")
    failed = task_status(worker.url, "orders", 0)
    assert "terminated" in failed["trace"] and "orders" in failed["trace"], failed["trace"][:2000]
    assert time.monotonic() - produce_failed_at < 150

    # With the topic back, a restart through REST runs it again, from its checkpoint.
    create_topic(bootstrap, "orders", 2)
    produce(bootstrap, "orders", range(100, 160), 2)
    assert rest("POST", f"{worker.url}/connectors/orders/tasks/0/restart")[0] == 204
    wait_until(lambda: task_status(worker.url, "orders", 0)["state"] == "RUNNING", 60, "the task to run")
    assert json.dumps(task_status(worker.url, "orders", 0)).count("trace") == 0


@pytest.mark.timeout(300)
def test_partitions_added_while_topic_ingest_runs_are_read_once_by_the_task_they_fall_to(
    spark: Any, spark_cluster: WorkerCluster, tmp_path: Path
) -> None:
    """Seen before: a task's query read the partitions there were when it started, so records
    in partitions added later were never read (and a task with no partition ran nothing)."""
    bootstrap = spark_cluster.coordinator.bootstrap
    create_topic(bootstrap, "grows", 1)
    produce(bootstrap, "grows", range(0, 50), 1)
    worker = spark_cluster.start("w1")
    config = {"connector.class": "TopicIngest", "topics": "grows", "tasks.max": "2",
              "output.path": str(tmp_path / "out"), "trigger.interval.ms": "300",
              "partition.discovery.interval.ms": "1000"}  # fmt: skip
    assert rest("POST", f"{worker.url}/connectors", {"name": "grows", "config": config})[0] == 201
    wait_until(lambda: committed_records(spark_cluster, "grows") == 50, 120, "the first 50 records read")

    # When the topic grows from 1 partition to 4 and records arrive in all of them,
    admin = KafkaAdminClient(bootstrap_servers=bootstrap)
    try:
        admin.create_partitions({"grows": NewPartitions(4)})
    finally:
        admin.close()
    produce(bootstrap, "grows", range(50, 450), 4)

    # then every record is read, once, and each partition by the task it falls to.
    give_up = time.monotonic() + 90  # the partitions are found within 1 s, read within a few more
    wait_until(lambda: committed_records(spark_cluster, "grows") == 450 or time.monotonic() > give_up,
               120, "all 450 records read, or 90 s gone")  # fmt: skip
    code, body = rest("GET", f"{worker.url}/connectors/grows/offsets")
    assert code == 200, body
    read = {e["partition"]["kafka_partition"]: e["offset"]["kafka_offset"] for e in body["offsets"]}
    assert read == {0: 150, 1: 100, 2: 100, 3: 100}, read
    ids = [int(r.value) for r in read_output(spark, str(tmp_path / "out")).select("value").collect()]
    assert sorted(ids) == list(range(450)), f"{len(ids)} rows, {len(set(ids))} distinct"
    for index in range(2):
        rows = spark.read.parquet(str(tmp_path / "out" / f"task-{index}")).select("partition").collect()
        assert {r.partition for r in rows} == {p for p in range(4) if task_owns("grows", p, index, 2)}


@pytest.mark.timeout(600)
def test_changing_tasks_max_while_topic_ingest_runs_reads_every_record_once(
    spark: Any, spark_cluster: WorkerCluster, tmp_path: Path
) -> None:
    """Seen before: a partition that a tasks.max change gave to another task was read again
    by it from its first record (each task's query starts a partition new to it there)."""
    bootstrap = spark_cluster.coordinator.bootstrap
    create_topic(bootstrap, "resized", 8)
    w1, _ = spark_cluster.start("w1"), spark_cluster.start("w2")
    producer = ContinuousProducer(bootstrap, "resized", 10**6, per_second=RECORDS_PER_SECOND).start()
    config = {"connector.class": "TopicIngest", "topics": "resized", "tasks.max": "2",
              "output.path": str(tmp_path / "out"), "trigger.interval.ms": CHURN_TRIGGER_MS,
              "max.records.per.batch": "200"}  # fmt: skip
    assert rest("POST", f"{w1.url}/connectors", {"name": "resized", "config": config})[0] == 201

    def ingesting(what: str, tasks: int) -> None:
        """`tasks` tasks run, spread, and what is committed grows."""
        running = f"{what}: {tasks} tasks running"
        wait_until(lambda: spark_cluster.balanced("resized", tasks + 1), 120, running)
        before = committed_records(spark_cluster, "resized")
        wait_until(lambda: committed_records(spark_cluster, "resized") > before, 120, f"{what}: new batches")

    ingesting("start", 2)
    for tasks in (3, 2):  # more tasks, then fewer: partitions move between tasks both ways
        config["tasks.max"] = str(tasks)
        assert rest("PUT", f"{w1.url}/connectors/resized/config", config)[0] == 200
        ingesting(f"tasks.max={tasks}", tasks)
    records = producer.finish()
    wait_until(lambda: committed_records(spark_cluster, "resized") == records, 180, "every record committed")
    ids = [int(r.value) for r in read_output(spark, str(tmp_path / "out")).select("value").collect()]
    assert len(ids) == records and sorted(ids) == list(range(records)), (
        f"{len(ids)} rows, {len(set(ids))} distinct, for {records} records"
    )

"""Topic partitions on a coordinator -> Parquet through the `topic` PySpark data source.

The data source alone, with plain PySpark in this process: it reads only the partitions it
is given, its offsets are the checkpoint's (a query restarted on its checkpoint reads
exactly what came after its last batch), and read limits bound each micro-batch.
"""

from __future__ import annotations

import os
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from kafka import KafkaProducer
from kafka.admin import KafkaAdminClient, NewTopic

from connect_rebalance.processes import CoordinatorProcess
from workers.connectors.topic_spark_source import TopicDataSource, committed_offsets

pytestmark = pytest.mark.e2e


@pytest.fixture(scope="module")
def spark() -> Iterator[Any]:
    """A small local session; Spark's Python workers use this interpreter (and its packages)."""
    os.environ.setdefault("PYSPARK_PYTHON", sys.executable)
    from pyspark.sql import SparkSession

    session = (
        SparkSession.builder.master("local[1]")
        .appName("topic-source-test")
        .config("spark.ui.enabled", "false")
        .config("spark.ui.showConsoleProgress", "false")
        .config("spark.sql.shuffle.partitions", "1")
        .config("spark.sql.streaming.stopTimeout", "30s")
        .getOrCreate()
    )
    session.dataSource.register(TopicDataSource)
    try:
        yield session
    finally:
        session.stop()


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

"""The warm-up a Spark task about to move to a worker runs there first (workers/spark/warmup.py),
in a real local session against a real coordinator: it runs through the file sink's first
compaction of its metadata log, batch by batch, and its reads ready Spark's Python workers for
the task's topics without failing; a FileIngest task's warm-up reads its log of files, writing nothing."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
from confluent_kafka.admin import AdminClient, NewTopic

from connect_rebalance.processes import CoordinatorProcess
from connect_rebalance_cli import sample_data
from workers.connectors.topic_ingest import source_options
from workers.spark.warmup import COMPACT_INTERVAL, prepared_batches, warm_reads

pytestmark = pytest.mark.e2e

FILES = 7  # landed and read, two a batch


def test_a_prepared_runs_warm_up_runs_through_the_file_sinks_first_compaction_and_readies_its_reads(
    spark: Any, coordinator: CoordinatorProcess
) -> None:
    admin = AdminClient({"bootstrap.servers": coordinator.bootstrap})
    for future in admin.create_topics([NewTopic("orders", 2, 1)]).values():
        future.result(30)
    config = {"topics": "orders", "task.index": "0", "task.count": "1"}
    options = source_options(config, coordinator.bootstrap)

    # Spark's default compact interval of the file sink's log: its 10th batch compacts it.
    assert prepared_batches(spark) == 10
    assert warm_reads(spark, options) == 10, "the warm-up ran its batches all at once"

    spark.conf.set(COMPACT_INTERVAL, "4")
    try:
        assert warm_reads(spark, options) == 4
    finally:
        spark.conf.unset(COMPACT_INTERVAL)


def test_a_prepared_file_ingest_run_reads_its_tasks_log_of_files_and_writes_nothing(
    spark: Any, tmp_path: Path
) -> None:
    """What a FileIngest task about to move here reads ahead (file_ingest.read_source_log): the
    log of files its query has read, as Spark's own start reads it, without writing to it."""
    from workers.connectors.file_ingest import read_source_log

    source_log = tmp_path / "checkpoint" / "sources" / "0"
    assert read_source_log(spark, source_log) == 0, "no checkpoint yet: nothing to read"
    sample_data.write_files(tmp_path / "in", 0, FILES, 2, shards=1)
    query = (
        spark.readStream.format("json").schema(sample_data.SCHEMA).option("maxFilesPerTrigger", "2")
        .load(str(tmp_path / "in" / "*")).writeStream.format("parquet").option("path", str(tmp_path / "out"))
        .option("checkpointLocation", str(tmp_path / "checkpoint")).trigger(availableNow=True).start()
    )  # fmt: skip
    assert query.awaitTermination(120)
    before = {p.name: p.stat().st_mtime_ns for p in source_log.iterdir()}

    assert read_source_log(spark, source_log) == FILES
    assert {p.name: p.stat().st_mtime_ns for p in source_log.iterdir()} == before, "the log was written"

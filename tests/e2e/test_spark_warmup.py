"""The warm-up a Spark task about to move to a worker runs there first (workers/spark_warmup.py),
in a real local session against a real coordinator: it runs through the file sink's first
compaction of its metadata log, batch by batch, and its reads ready Spark's Python workers for
the task's topics without failing."""

from __future__ import annotations

from typing import Any

import pytest
from confluent_kafka.admin import AdminClient, NewTopic

from connect_rebalance.processes import CoordinatorProcess
from workers.connectors.topic_ingest import source_options
from workers.spark_warmup import COMPACT_INTERVAL, prepared_batches, warm_reads

pytestmark = pytest.mark.e2e


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

"""Datagen: a generated stream of order events -> Parquet, for demos and benchmarks.

Each task runs Spark's `rate` source at its share of `rows.per.second` and turns the
source's sequence number into a row whose id is unique across tasks (`value * tasks +
index`). The rate source is replayable from its checkpoint, so a task moved to another
worker continues the same sequence, and with `rows.total` the output ends with exactly
ids `0 .. rows.total - 1`: a demo can prove nothing was lost or duplicated.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from workers.plugins.api import ConfigDef, TaskContext, indexed_task_configs, non_negative_int, positive_int
from workers.spark.checkpoint_generations import CheckpointedConnector
from workers.spark.parquet_output import parquet_sink
from workers.spark.task import SparkTask


class DatagenTask(SparkTask):
    def writer(self, spark: Any, config: Mapping[str, str], context: TaskContext) -> Any:
        from pyspark.sql import functions as f

        index, count = int(config["task.index"]), int(config["task.count"])
        per_task = max(1, int(config.get("rows.per.second") or 100) // count)
        frame = (
            spark.readStream.format("rate").option("rowsPerSecond", str(per_task)).load()
            .select((f.col("value") * count + index).alias("id"), f.col("timestamp").alias("ts"))
            .withColumn("customer", f.format_string("customer-%03d", f.col("id") * 7919 % 1000))
            .withColumn("amount", (f.col("id") * 37 % 10000) / 100)
        )  # fmt: skip
        total = int(config.get("rows.total") or 0)
        if total:
            frame = frame.where(f.col("id") < total)
        return parquet_sink(frame, config, context)


class Datagen(CheckpointedConnector):
    type = "source"
    task_class = DatagenTask
    config_defs = [
        ConfigDef("output.path", required=True,
                  documentation="Parquet output: one directory per task under it."),
        ConfigDef("rows.per.second", "INT", default="100", validate=positive_int,
                  documentation="Rows generated per second, shared among the tasks."),
        ConfigDef("rows.total", "LONG", default="0", validate=non_negative_int,
                  documentation="Stop producing rows at this many ids (0: never)."),
        ConfigDef("trigger.interval.ms", "INT", default="1000", validate=positive_int,
                  documentation="How often a micro-batch starts."),
    ]  # fmt: skip

    def task_configs(self, config: Mapping[str, str], max_tasks: int) -> list[dict[str, str]]:
        return indexed_task_configs(self.declared(config), max_tasks)

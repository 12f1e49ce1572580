"""A Spark connector installed on `plugin.path`, run by a worker with real PySpark.

Its task labels each generated row with a Python UDF from its own package: Spark pickles the
function by reference, so each of Spark's Python processes imports the plugin's module to
run it, which it can only do if the worker gave them the plugin path.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.support.group_scenario import wait_until
from tests.support.plugin_layouts import pip, write_source
from tests.support.spark_cluster import spark_worker_cluster
from tests.support.worker_cluster import rest
from workers.spark.parquet_output import committed_column

pytestmark = pytest.mark.e2e
TOTAL = 200
TASK = """from workers.connectors.datagen import Datagen
from workers.spark.parquet_output import parquet_sink
from workers.spark.task import SparkTask

from spark_labels.labels import label


class LabelledTask(SparkTask):
    def writer(self, spark, config, context):
        from pyspark.sql import functions as f

        frame = spark.readStream.format("rate").option("rowsPerSecond", "100").load()
        frame = frame.select(f.col("value").alias("id")).where(f.col("id") < int(config["rows.total"]))
        return parquet_sink(frame.withColumn("label", f.udf(label, "string")(f.col("id"))), config, context)


class LabelledGen(Datagen):
    task_class = LabelledTask
"""


@pytest.mark.timeout(300)
def test_a_spark_connector_on_the_plugin_path_runs_its_own_udf_in_sparks_python_processes(
    tmp_path: Path,
) -> None:
    modules = {"spark_labels/__init__.py": "", "spark_labels/task.py": TASK,
               "spark_labels/labels.py": "def label(i):\n    return f'labelled-{i}'\n"}  # fmt: skip
    entry_points = {"LabelledGen": "spark_labels.task:LabelledGen"}
    source = write_source(tmp_path / "src", "spark-labels", "1.0.0", entry_points, modules)
    plugins = tmp_path / "plugins"
    pip("install", "--target", str(plugins / "spark-labels"), str(source))
    out = tmp_path / "out"
    with spark_worker_cluster(tmp_path, **{"plugin.path": str(plugins)}) as cluster:
        worker = cluster.start("w1")
        config = {"connector.class": "LabelledGen", "tasks.max": "1", "output.path": str(out),
                  "rows.total": str(TOTAL), "trigger.interval.ms": "500"}  # fmt: skip
        assert rest("POST", f"{worker.url}/connectors", {"name": "labelled", "config": config})[0] == 201

        def failed() -> list[str]:
            return [t.get("trace", "") for t in cluster.status("labelled")["tasks"] if t["state"] == "FAILED"]

        def labels() -> list[str]:
            try:
                return committed_column(str(out), "label")
            except (OSError, ValueError):
                return []

        wait_until(lambda: len(labels()) >= TOTAL or failed(), 240, f"{TOTAL} labelled rows committed")
        assert failed() == []
    assert sorted(labels(), key=lambda text: int(text.rpartition("-")[2])) == [
        f"labelled-{i}" for i in range(TOTAL)
    ]

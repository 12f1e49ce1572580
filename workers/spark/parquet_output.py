"""Where Spark ingestion tasks write, and how their output is read back.

Each task writes Parquet under `<output.path>/task-<n>`: one directory per task, because a
file sink's `_spark_metadata` log has one writer; after the connector's offsets were reset or
altered, under `task-<n>-g<generation>` (checkpoint_generations.py). Reading through Spark
(`read_output`) honours each sink's log, so files a killed run left half-committed are not
counted.
"""

from __future__ import annotations

from collections.abc import Mapping
from pathlib import Path
from typing import Any

from workers.plugins.api import TaskContext
from workers.spark.checkpoint_generations import connector_root, generation
from workers.spark.metadata_logs import log_entries


def output_dir(config: Mapping[str, str], index: int, generation: int = 0) -> str:
    """Task `index`'s output directory in the connector's `generation`."""
    name = f"task-{index}" if generation == 0 else f"task-{index}-g{generation}"
    return str(Path(config["output.path"]) / name)


def read_output(spark: Any, path: str) -> Any:
    """Every task's output under `path`, read through Spark (honouring each sink's log); a
    task that never committed a batch (stopped before its first) has nothing to read."""
    tasks = [d for d in sorted(Path(path).glob("task-*")) if d.is_dir() and committed_files(d)]
    frames = [spark.read.parquet(str(d)) for d in tasks]
    if not frames:
        raise FileNotFoundError(f"no task output under {path}")
    result = frames[0]
    for frame in frames[1:]:
        result = result.unionByName(frame)
    return result


def parquet_sink(frame: Any, config: Mapping[str, str], context: TaskContext) -> Any:
    """The task's DataStreamWriter: Parquet under its own directory (of the connector's current
    generation), on the configured trigger."""
    root = connector_root(context.extra["worker_config"].checkpoint_dir, context.connector)
    return (
        frame.writeStream.format("parquet")
        .option("path", output_dir(config, int(config["task.index"]), generation(root)))
        .trigger(processingTime=f"{config.get('trigger.interval.ms') or 1000} milliseconds")
    )


def committed_files(task_dir: Path) -> list[str]:
    """The Parquet files a file sink has committed, from its `_spark_metadata` log.

    Reading only these (not every `part-*` file) is what makes the output exactly-once: a
    run killed mid-batch can leave a file the log never took in.
    """
    files: dict[str, bool] = {}
    for entry in log_entries(task_dir / "_spark_metadata"):
        files[entry["path"]] = entry.get("action", "add") == "add"
    return sorted(path.removeprefix("file://") for path, added in files.items() if added)


def committed_column(output_path: str, column: str) -> list[Any]:
    """One column of every task's committed output, read with pyarrow (no Spark needed)."""
    import pyarrow.parquet as pq

    values: list[Any] = []
    for task_dir in sorted(Path(output_path).glob("task-*")):
        for path in committed_files(task_dir):
            values.extend(pq.read_table(path, columns=[column]).column(column).to_pylist())
    return values

"""Where Spark ingestion tasks write, and how their output is read back.

Each task writes Parquet under `<output.path>/task-<n>`: one directory per task, because a
file sink's `_spark_metadata` log has one writer. Reading through Spark (`read_output`)
honours each sink's log, so files a killed run left half-committed are not counted.
"""

from __future__ import annotations

from collections.abc import Mapping
from pathlib import Path
from typing import Any


def output_dir(config: Mapping[str, str], index: int) -> str:
    return str(Path(config["output.path"]) / f"task-{index}")


def read_output(spark: Any, path: str) -> Any:
    """Every task's output under `path`, read through Spark (honouring each sink's log)."""
    frames = [spark.read.parquet(str(d)) for d in sorted(Path(path).glob("task-*")) if d.is_dir()]
    if not frames:
        raise FileNotFoundError(f"no task output under {path}")
    result = frames[0]
    for frame in frames[1:]:
        result = result.unionByName(frame)
    return result


def parquet_sink(frame: Any, config: Mapping[str, str], index: int) -> Any:
    """The task's DataStreamWriter: Parquet under its own directory, on the configured trigger."""
    return (
        frame.writeStream.format("parquet")
        .option("path", output_dir(config, index))
        .trigger(processingTime=f"{config.get('trigger.interval.ms') or 1000} milliseconds")
    )

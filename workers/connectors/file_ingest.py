"""FileIngest: JSON, CSV or Parquet files landing in a directory -> Parquet, with Spark.

Input lives in sub-directories of `input.path` (by day, by source, by shard: any names).
Each task reads the sub-directories whose name hashes to it — `crc32(name) % tasks ==
index` — as one Structured Streaming file source over a glob of those directories, so every
file is read by exactly one task and `tasks.max` scales the work. Files dropped into those
sub-directories are picked up as they land (write them under a name starting with `.` or
`_` and rename them into place: Spark ignores such names, so it never reads half a file).
The sub-directories are listed when a task starts; a new one is read once the connector
restarts (`POST /connectors/{name}/restart?includeTasks=true`).

Which files a task has read lives in its checkpoint, so a task that moves to another
worker — after a graceful stop or a crash — reads each file once, and reading the output
through Spark (`parquet_output.read_output`) gives every row once.

Its offsets (`GET /connectors/{name}/offsets`) are, per sub-directory, how many of its files
the tasks' committed batches have read and the last of them. They can be reset (KIP-875
`DELETE`: every file is read again, into a new generation of output directories,
spark/checkpoint_generations.py) but not altered: a file source's position is the set of files it
has read, which Spark keeps and cannot be told.
"""

from __future__ import annotations

import logging
import zlib
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any
from urllib.parse import unquote, urlsplit

from workers.plugins.api import ConfigDef, ConfigProblem, TaskContext, indexed_task_configs, positive_int
from workers.spark.checkpoint_generations import CheckpointedConnector, connector_root
from workers.spark.metadata_logs import log_entries
from workers.spark.parquet_output import parquet_sink
from workers.spark.runtime import checkpoint_path
from workers.spark.share_handoff import task_checkpoints
from workers.spark.task import SparkTask

log = logging.getLogger(__name__)

FORMATS = ("json", "csv", "parquet")


def _valid_format(value: str) -> str | None:
    return None if value in FORMATS else f"must be one of {', '.join(FORMATS)}"


def _valid_schema(value: str) -> str | None:
    """A DDL schema, `name type, name type`, checked without starting Spark."""
    columns = [c.strip() for c in value.split(",") if c.strip()]
    if not columns:
        return "must name at least one column, as `id long, name string`"
    for column in columns:
        parts = column.split()
        if len(parts) < 2 or not parts[0].replace("_", "").isalnum():
            return f"{column!r} is not `name type`"
    return None


def _valid_bool(value: str) -> str | None:
    return None if value.lower() in ("true", "false") else "must be true or false"


def task_reads(name: str, index: int, count: int) -> bool:
    """Whether task `index` of `count` reads the sub-directory `name`."""
    return zlib.crc32(name.encode()) % count == index


def directories_of_task(input_path: str, index: int, count: int) -> list[str]:
    """The sub-directories (names) of `input_path` that task `index` reads, sorted."""
    found = sorted(d.name for d in Path(input_path).iterdir() if d.is_dir() and d.name[0] not in "._")
    return [name for name in found if task_reads(name, index, count)]


def input_glob(input_path: str, directories: Sequence[str]) -> str:
    """One path naming the task's sub-directories (Hadoop glob braces), whose files the source
    lists. Not their files (`.../*`): Spark lists more than 32 paths with a Spark job of its
    own, and a glob of every file made each batch list its inputs that way, a batch taking
    0.65 s more once 170 files had landed, and growing with every file."""
    return f"{input_path.rstrip('/')}/{{{','.join(directories)}}}"


class FileIngestTask(SparkTask):
    """One task's query: its sub-directories' files -> Parquet under output.path/task-<index>.

    Spark's file source reads the task's checkpoint as its query starts, so it cannot wait at
    a start gate: a task moving here is prepared by `warm_up` instead."""

    preparable = True
    source_gate = False

    def writer(self, spark: Any, config: Mapping[str, str], context: TaskContext) -> Any:
        directories = self._directories(config)
        if not directories:
            return None  # more tasks than sub-directories: nothing for this one
        reader = _reader(spark, config, _schema(spark, config, directories))
        return parquet_sink(reader.load(input_glob(config["input.path"], directories)), config, context)

    def warm_up(self, spark: Any, config: Mapping[str, str], context: TaskContext) -> None:
        """The task's query, once, over a row of nulls of its schema in its format, into a
        scratch directory: its first batch on this worker (the JVM's code for this reader and
        schema, compiled) comes before the move, not in it. Nothing of the task's input,
        checkpoint or output is read or written. (More batches, as a TopicIngest task's
        warm-up runs, did not make the first batch here faster: its time goes to reading the
        checkpoint's log of files, which no scratch query warms.)"""
        directories = self._directories(config)
        if not directories:
            return
        from workers.spark.warmup import run_in_scratch  # PySpark's: loaded where Spark runs

        schema = _schema(spark, config, directories)

        def nulls(scratch: Path) -> Any:
            row = spark.createDataFrame([tuple(None for _ in schema.fields)], schema)
            written = row.write.format(_format(config)).option("header", _header(config))
            written.save(str(scratch / "in" / "d"))
            return _reader(spark, config, schema).load(str(scratch / "in" / "*"))

        run_in_scratch(nulls)
        worker = context.extra["worker_config"]
        checkpoint = checkpoint_path(worker.checkpoint_dir, context.connector, int(config["task.index"]))
        try:
            read_source_log(spark, Path(checkpoint) / "sources" / "0")
        except Exception as exc:  # noqa: BLE001 - Spark's own class; the start reads the log anyway
            log.info("%s: its log of files was not read ahead (%s)", context.connector, exc)

    @staticmethod
    def _directories(config: Mapping[str, str]) -> list[str]:
        return directories_of_task(config["input.path"], int(config["task.index"]), int(config["task.count"]))


def read_source_log(spark: Any, folder: Path) -> int:
    """Read a file source's log of the files it has read, as its query's start does first
    (Spark's FileStreamSourceLog.restore), without writing anything: so the JVM has compiled
    that reading of JSON before the task's query starts here. On a new worker it took 0.3-0.9
    s of a moved task's start, growing with the files the task had read; the worker the task
    came back to, which had read its log before, took 0.3 s. The entries read (0 for no log)."""
    if not folder.is_dir():
        return 0
    jvm = spark.sparkContext._jvm
    log = jvm.org.apache.spark.sql.execution.streaming.runtime.FileStreamSourceLog
    return len(log(log.VERSION(), spark._jsparkSession, str(folder)).restore())


def _format(config: Mapping[str, str]) -> str:
    return config.get("format") or "json"


def _header(config: Mapping[str, str]) -> str:
    return (config.get("csv.header") or "true").lower()


def _schema(spark: Any, config: Mapping[str, str], directories: Sequence[str]) -> Any:
    """The rows' schema: the config's, or (Parquet carries its own) the files' already there."""
    if config.get("schema"):
        from pyspark.sql.types import StructType

        return StructType.fromDDL(config["schema"])
    return spark.read.parquet(input_glob(config["input.path"], directories)).schema


def _reader(spark: Any, config: Mapping[str, str], schema: Any) -> Any:
    """The task's file source, as configured, not yet given its path."""
    fmt = _format(config)
    reader = (
        spark.readStream.format(fmt)
        .option("maxFilesPerTrigger", config.get("max.files.per.trigger") or "100")
        .schema(schema)
    )
    return reader.option("header", _header(config)) if fmt == "csv" else reader


class FileIngest(CheckpointedConnector):
    type = "source"
    task_class = FileIngestTask
    config_defs = [
        ConfigDef("input.path", required=True,
                  documentation="Directory whose sub-directories receive the files (split among tasks)."),
        ConfigDef("output.path", required=True,
                  documentation="Parquet output: one directory per task under it."),
        ConfigDef("format", default="json", validate=_valid_format, documentation="json, csv or parquet."),
        ConfigDef("schema", validate=_valid_schema,
                  documentation="The rows' schema as DDL (`id long, name string`); required for json, csv."),
        ConfigDef("csv.header", default="true", validate=_valid_bool,
                  documentation="CSV files start with a header."),
        ConfigDef("max.files.per.trigger", "INT", default="100", validate=positive_int,
                  documentation="At most this many new files per micro-batch."),
        ConfigDef("trigger.interval.ms", "INT", default="1000", validate=positive_int,
                  documentation="How often a micro-batch starts."),
    ]  # fmt: skip

    @classmethod
    def validate(cls, config: Mapping[str, str]) -> list[ConfigProblem]:
        problems = super().validate(config)
        fmt = _format(config)
        named = {p.name for p in problems}
        if fmt in ("json", "csv") and "schema" not in named and not (config.get("schema") or "").strip():
            problems.append(ConfigProblem("schema", f'"schema" is required for format {fmt}'))
        path = config.get("input.path")
        if path and not Path(path).is_dir():
            problems.append(ConfigProblem("input.path", f"Invalid value {path} for configuration input.path: "
                                          "not a directory"))  # fmt: skip
        return problems

    def task_configs(self, config: Mapping[str, str], max_tasks: int) -> list[dict[str, str]]:
        return indexed_task_configs(self.declared(config), max_tasks)

    @classmethod
    def offsets(cls, worker: Any, connector: str) -> list[dict[str, Any]]:
        root = connector_root(worker.checkpoint_dir, connector)
        read: dict[str, list[str]] = {}
        for task in task_checkpoints(root):
            for path in files_read(root / str(task)):
                read.setdefault(Path(path).parent.name, []).append(Path(path).name)
        return [
            {"partition": {"directory": directory}, "offset": {"files": len(files), "last_file": files[-1]}}
            for directory, files in sorted(read.items())
        ]


def files_read(checkpoint: Path) -> list[str]:
    """The files the query's committed batches read, in the order it read them: its file
    source's log (`sources/0`) up to the last batch with a commit (a later one is re-run)."""
    commits = checkpoint / "commits"
    done = [int(p.name) for p in commits.iterdir() if p.name.isdigit()] if commits.is_dir() else []
    if not done:
        return []
    entries = log_entries(checkpoint / "sources" / "0", max(done))
    ordered = sorted(entries, key=lambda e: (e["batchId"], e["path"]))
    return [unquote(urlsplit(entry["path"]).path) for entry in ordered]  # the log holds URIs

"""TopicIngest: topic partitions on the coordinator (or any Kafka cluster) -> Parquet, with Spark.

Each task runs one Structured Streaming query: the `topic` data source
(`workers.spark.topic_source`) over the task's share of the partitions, into Parquet under
`<output.path>/task-<n>` (one directory per task: a file sink's `_spark_metadata` log has
one writer). The query's offsets live in its checkpoint, so a task that moves to another
worker — after a graceful stop or a crash — resumes after its last committed batch, and
reading the output through Spark gives every record once (`read_output`).

The split needs no lookup when task configs are made (a connector has no cluster to ask
then): each task config names its index and the task count, and the task's query subscribes
to the topics and reads the partitions with `(crc32(topic) + partition) % tasks == index`
(spark/partition_split.py). The query looks for new partitions at every batch (at most
`partition.discovery.interval.ms` behind), so partitions added to a topic while the
connector runs are read, from their first record, by the task they fall to; adding
partitions moves no existing partition to another task, so no checkpoint loses a partition
it had read. A task whose share is empty still runs its query, so that it reads the
partitions that later fall to it. Changing `tasks.max` does move partitions between tasks: a
moved partition is read on from where its former task leaves it, once that task has let go
of it (spark/share_handoff.py: the runs' markers in the checkpoints).
"""

from __future__ import annotations

import re
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

from workers.plugins.api import ConfigDef, TaskContext, indexed_task_configs, non_negative_int, positive_int
from workers.spark.checkpoint_generations import (
    GENERATION,
    CheckpointedConnector,
    OffsetChanges,
    OffsetsRefused,
    begin_generation,
    connector_root,
    starting_offsets,
)
from workers.spark.parquet_output import parquet_sink
from workers.spark.runtime import checkpoint_path
from workers.spark.share_handoff import (
    INITIAL_OFFSETS,
    Partition,
    committed_offsets,
    flatten,
    mark,
    task_checkpoints,
)
from workers.spark.task import SparkTask

STARTING = ("earliest", "latest")
LEGAL_TOPIC = re.compile(r"[a-zA-Z0-9._-]+")
INTEGER = re.compile(r"[+-]?[0-9]+")


def _topics(value: str) -> list[str]:
    return sorted({t.strip() for t in value.split(",") if t.strip()})


def _valid_topics(value: str) -> str | None:
    for topic in _topics(value):  # Kafka's rule: ASCII letters, digits, `.`, `_`, `-`; not `.` or `..`
        if len(topic) > 249 or topic in (".", "..") or not LEGAL_TOPIC.fullmatch(topic):
            return f"{topic!r} is not a valid topic name"
    return None if _topics(value) else "must name at least one topic"


def _valid_starting(value: str) -> str | None:
    return None if value in STARTING else "must be earliest or latest"


def _valid_bootstrap(value: str) -> str | None:
    for server in (s.strip() for s in value.split(",") if s.strip()):
        host, sep, port = server.rpartition(":")
        if not sep or not host or not port.isdigit():
            return f"{server!r} is not host:port"
    return None


class TopicIngestTask(SparkTask):
    """One task's query: its partitions -> Parquet under output.path/task-<index>."""

    checkpoint: str | None = None
    count = 0
    preparable = True  # the `topic` source waits at a start gate (spark/start_gate.py)

    def writer(self, spark: Any, config: Mapping[str, str], context: TaskContext) -> Any:
        worker = context.extra["worker_config"]
        bootstrap = config.get("bootstrap.servers") or context.bootstrap_servers
        # A sink-like reader of topics: the worker's `consumer.*` security, as in Kafka Connect,
        # with the connector's `consumer.override.*` over it.
        consumer = context.consumer_settings
        index, self.count = int(config["task.index"]), int(config["task.count"])
        find_partitions(bootstrap, _topics(config["topics"]), consumer=consumer)  # they exist
        for topic in _topics(config["topics"]):
            context.track_topic(topic)
        self.checkpoint = checkpoint_path(worker.checkpoint_dir, context.connector, index)
        handoff = {"handoffCheckpoints": str(Path(self.checkpoint).parent),
                   "initialOffsetsFile": str(Path(self.checkpoint) / INITIAL_OFFSETS),
                   "startingOffsetsFile": str(Path(self.checkpoint).parent / GENERATION),
                   # a killed worker's task, gone from the layout, holds partitions no longer
                   # than its session: the worker is gone, or stops its work before that
                   "handoffTimeoutMs": str(2 * worker.session_timeout_ms),
                   **self.gate_options()}  # fmt: skip
        return parquet_sink(topic_stream(spark, config, bootstrap, consumer, handoff), config, context)

    def warm_up(self, spark: Any, config: Mapping[str, str], context: TaskContext) -> None:
        """The Python workers that will run this task's first reads here connect to its
        topics' cluster first (workers.spark.warmup.warm_reads): a first read in a new worker otherwise
        spends most of its time connecting."""
        from workers.spark.warmup import warm_reads  # PySpark's: loaded where Spark runs

        bootstrap = config.get("bootstrap.servers") or context.bootstrap_servers
        warm_reads(spark, source_options(config, bootstrap, context.consumer_settings))

    def begin_run(self) -> None:
        # This run's previous one has stopped: what its checkpoint planned is what the task
        # still reads of partitions another task now holds (spark/share_handoff.py).
        if self.checkpoint is not None:
            mark(self.checkpoint, self.count, stopped=False)

    def after_stop(self) -> None:
        if self.checkpoint is not None:
            mark(self.checkpoint, self.count, stopped=True)


class TopicIngest(CheckpointedConnector):
    type = "source"
    task_class = TopicIngestTask
    kafka_clients = frozenset({"consumer"})  # its reader: `consumer.override.*` tune it
    config_defs = [
        ConfigDef("topics", required=True, validate=_valid_topics,
                  documentation="Topics to ingest, comma-separated; their partitions are split among tasks."),
        ConfigDef("output.path", required=True,
                  documentation="Directory of the Parquet output; task n writes task-n below it."),
        ConfigDef("bootstrap.servers", default="", validate=_valid_bootstrap,
                  documentation="Kafka cluster to read from (host:port,...); empty: the worker's."),
        ConfigDef("trigger.interval.ms", "LONG", default="1000", validate=positive_int,
                  documentation="How often a micro-batch starts."),
        # No limit by default, as Spark's Kafka source (maxOffsetsPerTrigger): a task reads a
        # backlog at the pace it can, and each batch takes what has arrived since the last.
        ConfigDef("max.records.per.batch", "LONG", default="0", validate=non_negative_int,
                  documentation="At most this many records per micro-batch and task (0: no limit)."),
        ConfigDef("starting.offsets", default="earliest", validate=_valid_starting,
                  documentation="Where a task with no checkpoint starts: earliest or latest."),
        ConfigDef("partition.discovery.interval.ms", "LONG", default="10000", validate=positive_int,
                  documentation="How old the topics' partition list may be when a batch is planned: "
                                "partitions added to a topic are read within about this long."),
    ]  # fmt: skip

    def task_configs(self, config: Mapping[str, str], max_tasks: int) -> list[dict[str, str]]:
        shared = self.declared(config)
        shared["topics"] = ",".join(_topics(config["topics"]))
        return indexed_task_configs(shared, max_tasks)

    @classmethod
    def offsets(cls, worker: Any, connector: str) -> list[dict[str, Any]]:
        """`GET /connectors/{name}/offsets`: what the tasks' checkpoints record as committed
        (every task that has one: a partition's latest may be in a task tasks.max dropped),
        or, for a partition none has committed since an alter, where the alter set it."""
        return sink_offsets(current_offsets(connector_root(worker.checkpoint_dir, connector)))

    @classmethod
    def alter_offsets(cls, worker: Any, connector: str, changes: OffsetChanges) -> None:
        """KIP-875, as for a sink connector: each named partition to its offset (None: where
        `starting.offsets` says); the others stay where the checkpoints left them."""
        root = connector_root(worker.checkpoint_dir, connector)
        offsets = current_offsets(root)
        for partition, offset in parse_sink_offsets(changes):
            if offset is None:
                offsets.pop(partition, None)
            else:
                offsets[partition] = offset
        begin_generation(root, offsets)


def current_offsets(root: Path) -> dict[Partition, int]:
    """Each partition's position: the highest offset any task's checkpoint has committed (after
    tasks.max changed, a partition's former task still records where it left it), or else
    where the connector's current generation starts it."""
    latest = starting_offsets(root)
    committed: dict[Partition, int] = {}
    for task in task_checkpoints(root):
        for partition, offset in flatten(committed_offsets(root / str(task))).items():
            committed[partition] = max(committed.get(partition, 0), offset)
    return {**latest, **committed}


def sink_offsets(offsets: Mapping[Partition, int]) -> list[dict[str, Any]]:
    """Kafka Connect's offsets of a sink connector, by topic partition."""
    return [
        {"partition": {"kafka_topic": t, "kafka_partition": p}, "offset": {"kafka_offset": offset}}
        for (t, p), offset in sorted(offsets.items())
    ]


def _integer(value: Any, what: str) -> int:
    """Kafka Connect takes both 10 and "10" (Long.parseLong of the value's text): not 1.9,
    "1_000" or " 10 ", which Python's int() would."""
    if isinstance(value, int) and not isinstance(value, bool):
        return value
    if isinstance(value, str) and INTEGER.fullmatch(value):
        return int(value)
    raise OffsetsRefused(
        f"Failed to parse the following Kafka {what} value in the provided offsets: '{value}'. "
        f"{what.capitalize()} values for sink connectors need to be integers."
    )


def parse_sink_offsets(changes: OffsetChanges) -> list[tuple[Partition, int | None]]:
    """KIP-875 offsets of a sink connector, checked with Kafka Connect's messages."""
    parsed: list[tuple[Partition, int | None]] = []
    for partition, offset in changes:
        if "kafka_topic" not in partition or "kafka_partition" not in partition:
            raise OffsetsRefused(
                "The partition for a sink connector offset must contain the keys 'kafka_topic' and "
                "'kafka_partition'"
            )
        topic = partition["kafka_topic"]
        if not isinstance(topic, str) or _valid_topics(topic) is not None:
            raise OffsetsRefused("Kafka topic names must be valid strings and may not be null")
        number = _integer(partition["kafka_partition"], "partition")
        if offset is not None and "kafka_offset" not in offset:
            raise OffsetsRefused(
                "The offset for a sink connector should either be null or contain the key 'kafka_offset'"
            )
        position = None if offset is None else _integer(offset["kafka_offset"], "offset")
        if number < 0 or (position is not None and position < 0):
            raise OffsetsRefused(f"Partitions and offsets cannot be negative: {topic}-{number} at {position}")
        parsed.append(((topic, number), position))
    return parsed


def find_partitions(
    bootstrap: str, topics: Sequence[str], timeout_s: float = 30.0, consumer: Mapping[str, str] | None = None
) -> list[tuple[str, int]]:
    """The topics' partitions, asked of the cluster (with the `consumer` settings, Kafka's
    names); a topic that does not exist is an error."""
    from workers.spark.topic_source import new_consumer

    timeout_ms = int(timeout_s * 1000)
    client = new_consumer(bootstrap, consumer, allow_auto_create_topics=False, request_timeout_ms=timeout_ms)
    try:
        found = []
        for topic in topics:
            partitions = client.partitions_for_topic(topic)
            if not partitions:
                raise ValueError(f"topic {topic!r} does not exist on {bootstrap}")
            found += [(topic, p) for p in partitions]
        return sorted(found)
    finally:
        client.close()


def topic_stream(
    spark: Any,
    config: Mapping[str, str],
    bootstrap: str,
    consumer: Mapping[str, str] | None = None,
    options: Mapping[str, str] | None = None,
) -> Any:
    """The task's streaming DataFrame: its share of the topics' partitions, as they are at
    each batch, read by the `topic` data source (`source_options`)."""
    from workers.spark.topic_source import TopicDataSource

    spark.dataSource.register(TopicDataSource)
    found = source_options(config, bootstrap, consumer, options)
    return spark.readStream.format(TopicDataSource.name()).options(**found).load()


def source_options(
    config: Mapping[str, str],
    bootstrap: str,
    consumer: Mapping[str, str] | None = None,
    options: Mapping[str, str] | None = None,
) -> dict[str, str]:
    """The `topic` source's options for a task: the config's, the consumer's settings (Kafka's
    names) as `kafka.<setting>`, and `options` besides."""
    from workers.spark.topic_source import KAFKA_OPTION

    found = {
        "bootstrap.servers": bootstrap,
        "subscribe": config["topics"],
        "share": f"{config['task.index']}/{config['task.count']}",
        "partitionDiscoveryIntervalMs": config.get("partition.discovery.interval.ms") or "10000",
        "startingOffsets": config.get("starting.offsets") or "earliest",
        **{f"{KAFKA_OPTION}{name}": value for name, value in (consumer or {}).items()},
        **(options or {}),
    }
    limit = int(config.get("max.records.per.batch") or 0)
    if limit > 0:
        found["maxOffsetsPerTrigger"] = str(limit)
    return found

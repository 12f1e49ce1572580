"""TopicIngest: topic partitions on the coordinator (or any Kafka cluster) -> Parquet, with Spark.

Each task runs one Structured Streaming query: the `topic` data source
(`topic_spark_source`) over the task's share of the partitions, into Parquet under
`<output.path>/task-<n>` (one directory per task: a file sink's `_spark_metadata` log has
one writer). The query's offsets live in its checkpoint, so a task that moves to another
worker — after a graceful stop or a crash — resumes after its last committed batch, and
reading the output through Spark gives every record once (`read_output`).

The split needs no lookup when task configs are made (a connector has no cluster to ask
then): each task config names its index and the task count, and the task's query subscribes
to the topics and reads the partitions with `(crc32(topic) + partition) % tasks == index`
(partition_split.py). The query looks for new partitions at every batch (at most
`partition.discovery.interval.ms` behind), so partitions added to a topic while the
connector runs are read, from their first record, by the task they fall to; adding
partitions moves no existing partition to another task, so no checkpoint loses a partition
it had read. A task whose share is empty still runs its query, so that it reads the
partitions that later fall to it. Changing `tasks.max` does move partitions between tasks: a
moved partition is read on from where its former task leaves it, once that task has let go
of it (share_handoff.py: the runs' markers in the checkpoints).
"""

from __future__ import annotations

import re
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

from connect_rebalance.client_security import ClientSecurity

from ..plugins import ConfigDef, Connector, TaskContext, indexed_task_configs, non_negative_int, positive_int
from ..spark_runtime import checkpoint_path
from ..spark_task import SparkTask
from .parquet_output import parquet_sink
from .share_handoff import committed_offsets, flatten, mark, task_checkpoints

STARTING = ("earliest", "latest")
LEGAL_TOPIC = re.compile(r"[a-zA-Z0-9._-]+")


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
    preparable = True  # the `topic` source waits at a start gate (start_gate.py)

    def writer(self, spark: Any, config: Mapping[str, str], context: TaskContext) -> Any:
        worker = context.extra["worker_config"]
        bootstrap = config.get("bootstrap.servers") or context.bootstrap_servers
        # A sink-like reader of topics: the worker's `consumer.*` security, as in Kafka Connect.
        security = worker.client_security("consumer.")
        index, self.count = int(config["task.index"]), int(config["task.count"])
        find_partitions(bootstrap, _topics(config["topics"]), security=security)  # they exist
        for topic in _topics(config["topics"]):
            context.track_topic(topic)
        self.checkpoint = checkpoint_path(worker.checkpoint_dir, context.connector, index)
        handoff = {"handoffCheckpoints": str(Path(self.checkpoint).parent),
                   "initialOffsetsFile": str(Path(self.checkpoint) / "topic-initial-offsets.json"),
                   # a killed worker's task, gone from the layout, holds partitions no longer
                   # than its session: the worker is gone, or stops its work before that
                   "handoffTimeoutMs": str(2 * worker.session_timeout_ms),
                   **self.gate_options()}  # fmt: skip
        return parquet_sink(topic_stream(spark, config, bootstrap, security, handoff), config, index)

    def begin_run(self) -> None:
        # This run's previous one has stopped: what its checkpoint planned is what the task
        # still reads of partitions another task now holds (share_handoff.py).
        if self.checkpoint is not None:
            mark(self.checkpoint, self.count, stopped=False)

    def after_stop(self) -> None:
        if self.checkpoint is not None:
            mark(self.checkpoint, self.count, stopped=True)


class TopicIngest(Connector):
    type = "source"
    task_class = TopicIngestTask
    config_defs = [
        ConfigDef("topics", required=True, validate=_valid_topics,
                  documentation="Topics to ingest, comma-separated; their partitions are split among tasks."),
        ConfigDef("output.path", required=True,
                  documentation="Directory of the Parquet output; task n writes task-n below it."),
        ConfigDef("bootstrap.servers", default="", validate=_valid_bootstrap,
                  documentation="Kafka cluster to read from (host:port,...); empty: the worker's."),
        ConfigDef("trigger.interval.ms", "LONG", default="1000", validate=positive_int,
                  documentation="How often a micro-batch starts."),
        ConfigDef("max.records.per.batch", "LONG", default="10000", validate=non_negative_int,
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
    def checkpoint_offsets(cls, worker: Any, connector: str, tasks: int) -> list[dict[str, Any]]:
        """`GET /connectors/{name}/offsets`: what the tasks' checkpoints record as committed
        (every task that has one: a partition's latest may be in a task tasks.max dropped)."""
        root = Path(checkpoint_path(worker.checkpoint_dir, connector, 0)).parent
        return offsets_of_checkpoints([str(root / str(task)) for task in task_checkpoints(root)])


def offsets_of_checkpoints(checkpoints: Sequence[str]) -> list[dict[str, Any]]:
    """Kafka Connect's offsets (a sink connector's shape) for the given checkpoints: each
    partition's highest committed offset (after tasks.max changed, a partition's former
    task still records where it left it)."""
    latest: dict[tuple[str, int], int] = {}
    for checkpoint in checkpoints:
        for partition, offset in flatten(committed_offsets(checkpoint)).items():
            latest[partition] = max(latest.get(partition, 0), offset)
    return [
        {"partition": {"kafka_topic": t, "kafka_partition": p}, "offset": {"kafka_offset": offset}}
        for (t, p), offset in sorted(latest.items())
    ]


def find_partitions(
    bootstrap: str, topics: Sequence[str], timeout_s: float = 30.0, security: ClientSecurity | None = None
) -> list[tuple[str, int]]:
    """The topics' partitions, asked of the cluster; a topic that does not exist is an error."""
    from .topic_spark_source import new_consumer

    timeout_ms = int(timeout_s * 1000)
    settings = security.settings if security else {}
    consumer = new_consumer(
        bootstrap, settings, allow_auto_create_topics=False, request_timeout_ms=timeout_ms
    )
    try:
        found = []
        for topic in topics:
            partitions = consumer.partitions_for_topic(topic)
            if not partitions:
                raise ValueError(f"topic {topic!r} does not exist on {bootstrap}")
            found += [(topic, p) for p in partitions]
        return sorted(found)
    finally:
        consumer.close()


def topic_stream(
    spark: Any,
    config: Mapping[str, str],
    bootstrap: str,
    security: ClientSecurity | None = None,
    options: Mapping[str, str] | None = None,
) -> Any:
    """The task's streaming DataFrame: its share of the topics' partitions, as they are at
    each batch, read by the `topic` data source (with `options` besides the config's)."""
    from .topic_spark_source import KAFKA_OPTION, TopicDataSource

    spark.dataSource.register(TopicDataSource)
    reader = (
        spark.readStream.format(TopicDataSource.name())
        .option("bootstrap.servers", bootstrap)
        .option("subscribe", config["topics"])
        .option("share", f"{config['task.index']}/{config['task.count']}")
        .option("partitionDiscoveryIntervalMs", config.get("partition.discovery.interval.ms") or "10000")
        .option("startingOffsets", config.get("starting.offsets") or "earliest")
    )
    for name, value in (security.settings if security else {}).items():
        reader = reader.option(f"{KAFKA_OPTION}{name}", value)
    for name, value in (options or {}).items():
        reader = reader.option(name, value)
    limit = int(config.get("max.records.per.batch") or 0)
    if limit > 0:
        reader = reader.option("maxOffsetsPerTrigger", str(limit))
    return reader.load()

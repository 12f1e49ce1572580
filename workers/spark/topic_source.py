"""A PySpark streaming data source over Kafka topic partitions, read with kafka-python.

Spark's own Kafka source needs connector jars the pyspark wheel does not ship; this source
needs only kafka-python, so it reads from the coordinator (or any Kafka cluster) anywhere.

Offsets are Spark streaming offsets, `{"<topic>": {"<partition>": <next offset>}}` (the shape
of Spark's Kafka source), so they live in the query's checkpoint: a query resumed from its
checkpoint — on any worker — reads exactly the records after its last committed batch, and
with a file sink the output is exactly-once. Nothing is committed to a consumer group.

Where the code runs (pyspark-notes §4): `initialOffset`, `latestOffset`, `partitions` and
`commit` run in a planner process the JVM starts for each query; `read` runs in Spark's
Python workers, on a reader that was pickled right after it was constructed. So the reader's
constructor only parses options, the planner's kafka-python consumer is created lazily and
never pickled, and every `read` opens and closes its own consumer. `read` is deterministic:
a batch replayed after a crash reads the same offsets again.

Options (case-insensitive):
- `bootstrap.servers` (required);
- `assign`: the partitions to read, `topic:0,topic:1,other:3`; or `subscribe`: topics,
  comma-separated, all of whose partitions are read (new partitions are found each batch,
  and read from their earliest record);
- `share`: with `subscribe`, `<index>/<count>`: only the partitions that share of the
  topics' partitions holds (partition_split.py: TopicIngest's tasks split them so);
- `partitionDiscoveryIntervalMs`: how old the partition list may be when a batch is planned
  (default 10000): partitions added to a subscribed topic are found within about this long;
- `startingOffsets`: `earliest` (default), `latest`, or offsets as JSON in the offset shape;
- `maxOffsetsPerTrigger`: at most this many records per micro-batch, shared fairly
  among the partitions with a backlog;
- `failOnDataLoss`: `true` (default) fails the query when a record it must read is gone
  (deleted by retention); `false` skips to the earliest record still there;
- `pollTimeoutMs`: how long `read` waits without progress before failing (default 60000);
- `handoffCheckpoints`, `handoffTimeoutMs`: with `share`, the connector's checkpoints, where a
  partition new to the query starts (share_handoff.py);
- `initialOffsetsFile`: where the query's first starting offsets are kept, so that its first
  batch run again after a restart reads the same;
- `startingOffsetsFile`: a JSON file whose `offsets` (the offset shape) override
  `startingOffsets` for the partitions they name, where no other task's checkpoint holds them
  (a connector's offsets altered through KIP-875, checkpoint_generations.py);
- `startGate`, `startGateTimeoutMs`: a query started ahead of its task's assignment waits,
  in its reader's constructor (before Spark reads the checkpoint), until the worker grants
  this gate file (start_gate.py);
- `kafka.<setting>`: the Kafka consumer's settings, as in Spark's Kafka source: its security
  (`kafka.security.protocol`, `kafka.sasl.*`, `kafka.ssl.*`, read by `ClientSecurity`; files
  they name must exist where Spark's Python workers run) and the settings of
  `client_tuning.CONSUMER` (`kafka.client.id`, `kafka.fetch.max.bytes`...); any other is
  refused.
"""

from __future__ import annotations

import json
import time
from collections.abc import Iterator, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from pyspark.sql.datasource import DataSource, DataSourceStreamReader, InputPartition
from pyspark.sql.streaming.datasource import (
    ReadAllAvailable,
    ReadLimit,
    ReadMaxRows,
    SupportsTriggerAvailableNow,
)
from pyspark.sql.types import (
    BinaryType,
    IntegerType,
    LongType,
    StringType,
    StructField,
    StructType,
    TimestampType,
)

from workers.spark.partition_split import parse_share, task_owns
from workers.spark.share_handoff import (
    Handoff,
    flatten,
    handoff,
    unmarked_gone,
    write_atomically,
)
from workers.spark.start_gate import await_grant, granted

SOURCE_NAME = "topic"
SCHEMA = StructType([
    StructField("topic", StringType()),
    StructField("partition", IntegerType()),
    StructField("offset", LongType()),
    StructField("timestamp", TimestampType()),
    StructField("key", BinaryType()),
    StructField("value", BinaryType()),
])  # fmt: skip
KAFKA_OPTION = "kafka."  # options carrying the Kafka consumer's settings

Offsets = dict[str, dict[str, int]]


@dataclass(frozen=True)
class PartitionRange(InputPartition):
    """Records [start, end) of one topic partition: one Spark task's read."""

    topic: str
    partition: int
    start: int
    end: int


def parse_assignment(text: str) -> list[tuple[str, int]]:
    """`topic:0,topic:1` -> [("topic", 0), ("topic", 1)]; a ValueError names a bad entry."""
    assigned = []
    for entry in (e.strip() for e in text.split(",")):
        if not entry:
            continue
        topic, sep, partition = entry.rpartition(":")
        if not sep or not topic or not partition.isdigit():
            raise ValueError(f"assign: {entry!r} is not topic:partition")
        assigned.append((topic, int(partition)))
    return sorted(set(assigned))


def format_assignment(partitions: Sequence[tuple[str, int]]) -> str:
    return ",".join(f"{topic}:{partition}" for topic, partition in partitions)


def nest(offsets: Mapping[tuple[str, int], int]) -> Offsets:
    nested: Offsets = {}
    for (topic, partition), offset in sorted(offsets.items()):
        nested.setdefault(topic, {})[str(partition)] = offset
    return nested


def fair_share(start: Mapping[tuple[str, int], int], latest: Mapping[tuple[str, int], int],
               limit: int) -> dict[tuple[str, int], int]:  # fmt: skip
    """End offsets advancing at most `limit` records in total, split evenly over the backlog."""
    backlog = {tp: max(0, latest[tp] - start.get(tp, latest[tp])) for tp in latest}
    granted = dict.fromkeys(latest, 0)
    remaining = limit
    waiting = sorted((tp for tp in backlog if backlog[tp] > 0), key=lambda tp: backlog[tp])
    while waiting and remaining > 0:
        share = max(1, remaining // len(waiting))
        tp = waiting.pop(0)  # smallest backlog first: what it leaves over goes to the rest
        granted[tp] = min(backlog[tp], share)
        remaining -= granted[tp]
    return {tp: start.get(tp, latest[tp]) + granted[tp] for tp in latest}


class TopicStreamReader(DataSourceStreamReader, SupportsTriggerAvailableNow):
    def __init__(self, options: Mapping[str, str]) -> None:
        # Options are a CaseInsensitiveDict; read them by name, never through dict().
        self.bootstrap = options.get("bootstrap.servers") or ""
        if not self.bootstrap:
            raise ValueError("option bootstrap.servers is required")
        assign, subscribe = options.get("assign"), options.get("subscribe")
        if bool(assign) == bool(subscribe):
            raise ValueError("exactly one of the options assign and subscribe is required")
        self.assigned = parse_assignment(assign) if assign else None
        self.topics = sorted({t.strip() for t in (subscribe or "").split(",") if t.strip()})
        share = options.get("share")
        if share and not subscribe:
            raise ValueError("the option share needs subscribe")
        self.share = parse_share(share) if share else None
        self.handoff_root = options.get("handoffCheckpoints") or None
        if self.handoff_root and not share:
            raise ValueError("the option handoffCheckpoints needs share")
        self.handoff_timeout_s = int(options.get("handoffTimeoutMs", "60000")) / 1000
        self.initial_offsets_file = options.get("initialOffsetsFile") or None
        self.starting_offsets_file = options.get("startingOffsetsFile") or None
        self._unmarked_since: dict[int, float] = {}  # gone tasks with no marker, first seen
        self._clear = False  # this run has seen its whole share clear of other tasks
        self.discovery_interval_s = int(options.get("partitionDiscoveryIntervalMs", "10000")) / 1000
        self._discovered_at: float | None = None  # monotonic: the planner's last partition lookup
        self._existing: set[tuple[str, int]] = set()  # the subscribed topics' partitions, as last seen
        self.starting = options.get("startingOffsets", "earliest")
        self.max_per_trigger = int(options.get("maxOffsetsPerTrigger", "0") or 0)
        self.fail_on_data_loss = options.get("failOnDataLoss", "true").lower() != "false"
        self.poll_timeout_ms = int(options.get("pollTimeoutMs", "60000"))
        # Kafka consumer settings, as given: parsed where a consumer is made (the constructor
        # stays cheap, and Spark's Python workers must start fast).
        self.client_settings = {
            k[len(KAFKA_OPTION) :]: v for k, v in options.items() if k.lower().startswith(KAFKA_OPTION)
        }
        self._consumer: Any = None  # the planner's; created on first use, never pickled
        self._available_now: dict[tuple[str, int], int] | None = None
        self._latest: dict[tuple[str, int], int] | None = None
        gate = options.get("startGate")
        if gate and not granted(gate):  # last: options are checked before the wait
            self._connect_planner()
            await_grant(gate, int(options.get("startGateTimeoutMs", "60000")) / 1000)

    def __getstate__(self) -> dict[str, Any]:
        state = dict(self.__dict__)
        state["_consumer"] = None
        return state

    # -- planner side ---------------------------------------------------------------------

    def _planner_consumer(self) -> Any:
        if self._consumer is None:
            self._consumer = new_consumer(self.bootstrap, self.client_settings)
        return self._consumer

    def _connect_planner(self) -> None:
        """A prepared run's planner connects and learns the partitions and their leaders while
        it waits at its gate (nothing of the checkpoint is read): its first batch is planned
        as fast as any other. What fails here is met again, and reported, when it plans."""
        try:
            tps = self._partitions()
            if tps:
                self._planner_consumer().end_offsets(tps)
        except Exception:  # noqa: BLE001, S110 - the first plan meets it again
            pass

    def _partitions(self) -> list[Any]:
        from kafka import TopicPartition

        if self.assigned is not None:
            return [TopicPartition(t, p) for t, p in self.assigned]
        consumer = self._planner_consumer()
        now = time.monotonic()
        stale = self._discovered_at is not None and now - self._discovered_at >= self.discovery_interval_s
        if stale:
            consumer.topics()  # asks the cluster afresh (partitions_for_topic reads a cache)
        if stale or self._discovered_at is None:
            self._discovered_at = now
        self._existing = {(t, p) for t in self.topics for p in consumer.partitions_for_topic(t) or ()}
        return [
            TopicPartition(topic, partition)
            for topic, partition in sorted(self._existing)
            if self.share is None or task_owns(topic, partition, *self.share)
        ]

    def _bounds(self, earliest: bool) -> dict[tuple[str, int], int]:
        consumer = self._planner_consumer()
        tps = self._partitions()
        if not tps:
            return {}
        found = consumer.beginning_offsets(tps) if earliest else consumer.end_offsets(tps)
        return {(tp.topic, tp.partition): int(offset) for tp, offset in found.items()}

    def _handoff(self, new: set[tuple[str, int]]) -> Handoff:
        """Where partitions new to this query start when another task held them before
        (share_handoff.py); without `handoffCheckpoints`, every one is new to the topic."""
        if self.handoff_root is None or self.share is None or not new:
            return Handoff({}, frozenset())
        index, count = self.share
        now = time.monotonic()
        gone = unmarked_gone(self.handoff_root, count)
        self._unmarked_since = {k: self._unmarked_since.get(k, now) for k in gone}
        overdue = {k for k, since in self._unmarked_since.items() if now - since >= self.handoff_timeout_s}
        return handoff(self.handoff_root, index, count, new, overdue)

    def initialOffset(self) -> Offsets:
        """Where the query starts. Spark asks again when it runs its first batch again after a
        restart, and the answer must be the same then (the partitions and the other tasks'
        checkpoints may have changed meanwhile): with `initialOffsetsFile`, the first answer is
        kept there, as Spark's Kafka source keeps its own in the checkpoint."""
        kept = Path(self.initial_offsets_file) if self.initial_offsets_file else None
        if kept is not None and kept.is_file():
            return json.loads(kept.read_text())  # type: ignore[no-any-return]
        offsets = self._initial_offset()
        if kept is not None:
            write_atomically(kept, offsets)
        return offsets

    def _initial_offset(self) -> Offsets:
        altered = self._within_the_logs(self._starting_offsets_of_file())
        if self.starting in ("earliest", "latest"):
            bounds = self._bounds(earliest=self.starting == "earliest")
            moved = self._handoff(set(bounds))
            return nest({tp: moved.starts.get(tp, altered.get(tp, offset)) for tp, offset in bounds.items()
                         if tp not in moved.waiting})  # fmt: skip
        try:
            given = flatten(json.loads(self.starting))
        except (ValueError, AttributeError, TypeError) as exc:
            raise ValueError(f"startingOffsets: {self.starting!r} is not earliest, latest or JSON") from exc
        # Partitions the JSON leaves out start at their earliest record.
        bounds = self._bounds(earliest=True)
        return nest({**bounds, **given, **{tp: o for tp, o in altered.items() if tp in bounds}})

    def _within_the_logs(self, offsets: dict[tuple[str, int], int]) -> dict[tuple[str, int], int]:
        """Offsets an operator set, moved inside what the partitions hold now: one below the
        log start (deleted since) starts at the first record still there, one past the end at
        the end, where Kafka's consumer would find it out of range and start over."""
        if not offsets:
            return {}
        first, end = self._bounds(earliest=True), self._bounds(earliest=False)
        return {tp: min(max(o, first.get(tp, o)), end.get(tp, o)) for tp, o in offsets.items()}

    def _starting_offsets_of_file(self) -> dict[tuple[str, int], int]:
        if self.starting_offsets_file is None or not Path(self.starting_offsets_file).is_file():
            return {}
        generation = json.loads(Path(self.starting_offsets_file).read_text())
        return flatten(generation.get("offsets"))

    def getDefaultReadLimit(self) -> ReadLimit:
        return ReadMaxRows(self.max_per_trigger) if self.max_per_trigger > 0 else ReadAllAvailable()

    def prepareForTriggerAvailableNow(self) -> None:
        self._available_now = self._bounds(earliest=False)

    def latestOffset(self, start: Offsets, limit: ReadLimit) -> Offsets:
        latest = self._available_now if self._available_now is not None else self._bounds(earliest=False)
        begun = flatten(start)
        gone = sorted(tp for tp in begun if self.assigned is None and tp not in self._existing)
        if gone and self.fail_on_data_loss:
            # As Spark's Kafka source: partitions a subscribed query read are gone (their topic
            # was deleted), and what they held was never read.
            raise ValueError(f"partitions {format_assignment(gone)} no longer exist (topic deleted?)")
        earliest: dict[tuple[str, int], int] = {}
        # Until this run has seen every partition of its share clear of other tasks: a
        # partition another task held since (tasks.max changed) is read on from where that
        # task left it, once it has let go; meanwhile it waits. One this query read before
        # but another task read further since leaves the query for one batch and enters it
        # again where that task stopped.
        check = set(latest) if self.handoff_root is not None and not self._clear else set(latest) - set(begun)
        if check:
            moved = self._handoff(check)
            behind = {tp for tp in begun if tp in latest and moved.starts.get(tp, -1) > begun[tp]}
            self._clear = not moved.waiting and not behind
            latest = {tp: offset for tp, offset in latest.items() if tp not in moved.waiting | behind}
            # A partition new to the topic starts at its earliest record.
            earliest = {**self._bounds(earliest=True), **moved.starts}
        # A partition new to the query enters a batch at its starting offset and is read from
        # the next one on: a batch's ranges then follow from its start and end offsets alone,
        # also when it is run again from the checkpoint.
        entering = {tp: earliest.get(tp, 0) for tp in latest if tp not in begun}
        begun = {tp: begun[tp] for tp in latest if tp in begun}
        self._latest = latest
        if isinstance(limit, ReadMaxRows):
            return nest({**fair_share(begun, {tp: latest[tp] for tp in begun}, limit.max_rows), **entering})
        return nest({**{tp: max(begun[tp], latest[tp]) for tp in begun}, **entering})

    def reportLatestOffset(self) -> Offsets | None:
        return nest(self._latest) if self._latest is not None else None

    def partitions(self, start: Offsets, end: Offsets) -> Sequence[InputPartition]:
        begun = flatten(start)
        ranges = []
        for (topic, partition), stop in sorted(flatten(end).items()):
            first = begun.get((topic, partition), stop)  # entering the query: nothing to read yet
            if stop > first:
                ranges.append(PartitionRange(topic, partition, first, stop))
        return ranges

    def commit(self, end: Offsets) -> None:
        """Nothing to do: the offsets are in Spark's checkpoint (and commit may come late)."""

    def stop(self) -> None:
        if self._consumer is not None:
            self._consumer.close()
            self._consumer = None

    # -- executor side --------------------------------------------------------------------

    def connect_reads(self) -> None:
        """Ready this Python worker's consumer for this source's reads (partition_reads.connect)."""
        from workers.spark.partition_reads import connect

        topics = sorted({t for t, _ in self.assigned}) if self.assigned is not None else self.topics
        connect(self.bootstrap, topics, self.fail_on_data_loss, self.poll_timeout_ms, self.client_settings)

    def read(self, partition: InputPartition) -> Iterator[Any]:
        assert isinstance(partition, PartitionRange)
        from pyspark.sql.pandas.types import to_arrow_schema

        from workers.spark.partition_reads import read_range

        yield from read_range(
            self.bootstrap, partition.topic, partition.partition, partition.start, partition.end,
            self.fail_on_data_loss, self.poll_timeout_ms, self.client_settings,
            to_arrow_schema(SCHEMA, timezone="UTC"),
        )  # fmt: skip


class TopicDataSource(DataSource):
    """`spark.readStream.format("topic")`; register with `spark.dataSource.register(TopicDataSource)`."""

    @classmethod
    def name(cls) -> str:
        return SOURCE_NAME

    def schema(self) -> StructType:
        return SCHEMA

    def streamReader(self, schema: StructType) -> DataSourceStreamReader:
        return TopicStreamReader(self.options)


def new_consumer(bootstrap: str, client_settings: Mapping[str, str] | None = None, **settings: Any) -> Any:
    """A kafka-python consumer with no group: offsets are the query's, not a group's;
    `client_settings` are Kafka's consumer settings (`consumer_options`), `settings` the
    caller's own keyword arguments."""
    from kafka import KafkaConsumer

    return KafkaConsumer(bootstrap_servers=bootstrap.split(","), group_id=None, enable_auto_commit=False,
                         api_version=_newest_api_version(),
                         **{**consumer_options(client_settings or {}), **settings})  # fmt: skip


def consumer_options(client_settings: Mapping[str, str]) -> dict[str, Any]:
    """kafka-python's keyword arguments for Kafka's consumer settings: security and the
    tuning of `client_tuning.CONSUMER` (a ValueError names any other)."""
    from connect_rebalance.client_security import ClientSecurity, is_security_setting
    from connect_rebalance.client_tuning import CONSUMER, kafka_python_tuning

    security = {k: v for k, v in client_settings.items() if is_security_setting(k)}
    tuning = {k: v for k, v in client_settings.items() if not is_security_setting(k)}
    return {"client_id": "topic-spark-source", **kafka_python_tuning(tuning, CONSUMER),
            **ClientSecurity.parse(security, KAFKA_OPTION).kafka_python()}  # fmt: skip


def _newest_api_version() -> tuple[int, ...]:
    """The newest broker version kafka-python knows. Given any version, a consumer still asks
    the broker its ApiVersions and speaks the lower of the two, but it connects on its first
    request instead of in its constructor, and that first metadata request then asks for the
    topics at once; with none it bootstraps with no topics and waits out its retry backoff
    (100 ms) before the request that names them. Every `read` and the planner open a consumer,
    so that wait was paid by every partition of every batch."""
    from kafka.protocol.broker_version_data import BROKER_API_VERSIONS

    return max(BROKER_API_VERSIONS)

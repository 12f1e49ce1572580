"""One topic partition's records [start, end) as Arrow record batches, read with librdkafka.

This is where a TopicIngest task spends its time: Spark's Python workers run `read_range`
for every partition of every micro-batch. librdkafka (confluent-kafka) fetches and decodes
record batches in C, with a fetch always under way while Python turns the last one into
Arrow; kafka-python decodes each record in Python, about four times slower than the
coordinator serves them. The planner (`topic_source`) still asks its few questions
(partitions, offsets) with kafka-python.

A Python worker runs one read after another (Spark reuses it), so it keeps one consumer per
cluster and settings (`_consumers`) and points it at each read's partition, rather than
connecting anew every batch; it is left with no partition between reads, so it fetches
nothing then. A read that fails drops its consumer: the next starts clean.

Reading is deterministic, as a batch replayed after a crash must read the same records:
records are taken by offset, gaps (compaction, transaction markers) are passed by the
consumer's position or, when nothing follows them, by the partition's end
(`enable.partition.eof`), and records at or past `end` are left for the next batch.
"""

from __future__ import annotations

import threading
import time
from collections.abc import Iterator, Mapping
from dataclasses import dataclass, field
from typing import Any

# At most this many records come back from one `consume` call, and go into one Arrow batch.
CONSUME_MAX_RECORDS = 10_000
CONSUME_WAIT_S = 0.5
FETCH_QUEUE_BACKOFF_MS = 10
FETCH_WAIT_MAX_MS = 10
# The consumer never joins its group or commits (it is assigned partitions by offset), but
# librdkafka wants a group id all the same.
GROUP_ID = "connect-rebalance-topic-reads"

_Key = tuple[str, tuple[tuple[str, str], ...]]


@dataclass
class _Cached:
    """A consumer of this process kept between reads, with the topics it has looked up."""

    consumer: Any
    known: set[str] = field(default_factory=set)


_consumers: dict[_Key, _Cached] = {}
_lock = threading.Lock()


class DataLoss(RuntimeError):
    """A record the read must return is gone from the partition (deleted by retention)."""


def librdkafka_settings(
    bootstrap: str, client_settings: Mapping[str, str], fail_on_data_loss: bool
) -> dict[str, Any]:
    """The consumer's librdkafka configuration: Kafka's consumer settings as given
    (`client_security.ClientSecurity`, `client_tuning.CONSUMER`), and what every read needs."""
    from connect_rebalance.client_security import ClientSecurity, is_security_setting
    from connect_rebalance.client_tuning import CONSUMER, librdkafka_tuning

    security = {k: v for k, v in client_settings.items() if is_security_setting(k)}
    tuning = {k: v for k, v in client_settings.items() if not is_security_setting(k)}
    return {
        "bootstrap.servers": bootstrap, "group.id": GROUP_ID, "client.id": "topic-spark-source",
        # A read stops at its range's end, so a fetch has nothing to wait for: at Kafka's 500 ms a
        # fetch still waiting when a read ended held the next read's first fetch (the consumer's
        # next partition) for the rest of it, and every read of a reused consumer took 0.5 s.
        "fetch.wait.max.ms": FETCH_WAIT_MAX_MS,
        **librdkafka_tuning(tuning, CONSUMER), **ClientSecurity.parse(security, "kafka.").librdkafka(),
        "enable.auto.commit": False, "enable.auto.offset.store": False, "enable.partition.eof": True,
        # librdkafka stops fetching a partition for this long whenever its queue holds
        # `queued.min.messages` (100,000) records: with its default of 1 s, a reader that turns
        # records into Arrow slower than they arrive waits out a second in every few, and
        # reads at a fifth of the pace it has with the queue refilled at once.
        "fetch.queue.backoff.ms": FETCH_QUEUE_BACKOFF_MS,
        # As the planner's kafka-python consumer sees the partition: up to its high watermark.
        "isolation.level": "read_uncommitted",
        "auto.offset.reset": "error" if fail_on_data_loss else "earliest",
    }  # fmt: skip


def _consumer(settings: dict[str, Any]) -> tuple[_Key, _Cached]:
    from confluent_kafka import Consumer

    key = (str(settings["bootstrap.servers"]), tuple(sorted((k, str(v)) for k, v in settings.items())))
    with _lock:
        cached = _consumers.pop(key, None)  # one read at a time uses it
    return key, cached if cached is not None else _Cached(Consumer(settings))


def _give_back(key: _Key, cached: _Cached) -> None:
    with _lock:
        spare = _consumers.setdefault(key, cached)
    if spare is not cached:  # another read of this process made one meanwhile
        cached.consumer.close()


def _look_up(cached: _Cached, topic: str, timeout_s: float) -> Any:
    """`topic`'s metadata, asked at once the first time: assigned a partition of a topic it does
    not know, librdkafka waits about a second for its next metadata request before it fetches."""
    if topic in cached.known:
        return None
    metadata = cached.consumer.list_topics(topic, timeout=timeout_s)
    cached.known.add(topic)
    return metadata


def connect(
    bootstrap: str,
    topics: list[str],
    fail_on_data_loss: bool,
    poll_timeout_ms: int,
    client_settings: Mapping[str, str],
) -> None:
    """Ready this process's consumer for reads of `topics` to come: connected to the cluster and
    to each leader of their partitions, the topics looked up. A first read in a Python worker
    otherwise spends 100-250 ms on these round trips, the whole of a small batch's read
    (a prepared run's warm-up, warmup.py, does this in the Python workers that will read)."""
    from confluent_kafka import TopicPartition

    key, cached = _consumer(librdkafka_settings(bootstrap, client_settings, fail_on_data_loss))
    timeout_s = poll_timeout_ms / 1000
    try:
        for topic in topics:
            metadata = _look_up(cached, topic, timeout_s)
            if metadata is None or topic not in metadata.topics:
                continue
            leaders = {p.leader: p.id for p in metadata.topics[topic].partitions.values() if p.leader >= 0}
            for partition in leaders.values():  # a connection to each leader, as a fetch makes
                cached.consumer.get_watermark_offsets(TopicPartition(topic, partition), timeout_s)
    except Exception:
        cached.consumer.close()
        raise
    _give_back(key, cached)


def read_range(
    bootstrap: str,
    topic: str,
    partition: int,
    start: int,
    end: int,
    fail_on_data_loss: bool,
    poll_timeout_ms: int,
    client_settings: Mapping[str, str],
    arrow_schema: Any,
) -> Iterator[Any]:
    """The records of `topic`-`partition` from `start` up to (not including) `end`, as Arrow
    record batches of `arrow_schema` (the `topic` source's schema), in offset order."""
    from confluent_kafka import KafkaError, TopicPartition

    key, cached = _consumer(librdkafka_settings(bootstrap, client_settings, fail_on_data_loss))
    consumer, clean = cached.consumer, False
    try:
        _look_up(cached, topic, poll_timeout_ms / 1000)
        consumer.assign([TopicPartition(topic, partition, start)])
        position, last_progress = start, time.monotonic()
        while position < end:
            taken = []
            # No more than the range still holds: librdkafka returns as soon as that many are
            # there (a small batch does not wait out CONSUME_WAIT_S for more).
            for message in consumer.consume(min(CONSUME_MAX_RECORDS, end - position), CONSUME_WAIT_S):
                if message.partition() != partition or message.topic() != topic:
                    continue  # fetched for the consumer's previous read, of another partition
                error = message.error()
                if error is None:
                    offset = message.offset()
                    if start <= offset < end:
                        taken.append(message)
                    position = max(position, offset + 1)
                elif error.code() == KafkaError._PARTITION_EOF:
                    position = max(position, message.offset())  # gaps up to the end are passed
                elif error.code() in (KafkaError._AUTO_OFFSET_RESET, KafkaError.OFFSET_OUT_OF_RANGE):
                    raise DataLoss(
                        f"{topic}-{partition}: records from offset {position} are gone ({error.str()}); "
                        "failOnDataLoss=false reads on from the earliest"
                    )
                elif error.fatal() or not error.retriable() and error.code() > 0:
                    raise RuntimeError(f"{topic}-{partition}: {error.str()}")
            if taken:
                yield arrow_batch(topic, partition, taken, arrow_schema)
                last_progress = time.monotonic()
            elif time.monotonic() - last_progress > poll_timeout_ms / 1000:
                raise TimeoutError(
                    f"{topic}-{partition}: no records after offset {position} within "
                    f"{poll_timeout_ms} ms (reading up to {end} from {bootstrap})"
                )
        consumer.unassign()
        clean = True
    finally:
        if clean:
            _give_back(key, cached)
        else:
            consumer.close()


def arrow_batch(topic: str, partition: int, messages: list[Any], arrow_schema: Any) -> Any:
    """librdkafka messages of one partition as one Arrow record batch of `arrow_schema`."""
    import pyarrow as pa

    count = len(messages)
    stamps = [m.timestamp()[1] for m in messages]
    timestamps = pa.array(stamps, pa.timestamp("ms", tz="UTC"), mask=_missing(stamps))
    return pa.RecordBatch.from_arrays(
        [pa.repeat(pa.scalar(topic, pa.string()), count),
         pa.repeat(pa.scalar(partition, pa.int32()), count),
         pa.array([m.offset() for m in messages], pa.int64()),
         timestamps.cast(arrow_schema.field("timestamp").type),
         pa.array([m.key() for m in messages], pa.binary()),
         pa.array([m.value() for m in messages], pa.binary())],
        schema=arrow_schema,
    )  # fmt: skip


def _missing(stamps: list[int]) -> Any:
    """Records without a timestamp (-1) are null; None when every record has one."""
    if min(stamps, default=0) >= 0:
        return None
    import pyarrow as pa

    return pa.array([s < 0 for s in stamps], pa.bool_())

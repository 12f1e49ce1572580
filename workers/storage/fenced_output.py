"""What tasks write, fenced by epoch: a cut-off worker's task never writes after its successor starts.

Rules:
- each run of a task begins a run of the task's fence (`InitFencedProducer` on
  `<group>-<connector>-<task>`, the name Kafka Connect gives a task's transactional id) before
  it reads its source offsets or writes anything: from the coordinator's answer on, every
  batch an older run of the task still has buffered or in flight is refused on every
  partition, whichever worker it comes from and however long that worker was frozen;
- a task's records and the source offset they move it to travel in one Produce request,
  which the coordinator checks against the fence and appends without interleaving another
  request: both land or neither does, so the next run reads exactly where this one's output
  ended (every sequence number once: no duplicate, no gap);
- batches are idempotent (a producer id, an epoch and a sequence per partition), so a
  request retried after a lost connection is not stored twice;
- `TaskOutput.close` waits for the run's last write to be answered while the coordinator
  answers, and then sends nothing more; a write the coordinator holds unanswered (it is frozen
  or cut off) may still land after the stop, but never after the task's next run has begun.

IO: one connection per worker (`OutputConnection`, the project's own Kafka client), shared
by every task run; records are partitioned as Kafka's clients partition them (murmur2 of the
key), so a source offset lands on the offset topic partition where the worker's offset log
wrote it before. A cluster that does not offer `InitFencedProducer` (an Apache Kafka
cluster) is refused with a clear error rather than written to unfenced.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import time
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field

from kafka.partitioner.default import murmur2
from kafka.record.default_records import DefaultRecordBatchBuilder

from connect_rebalance.client_security import ClientSecurity
from connect_rebalance.client_tuning import COMPRESSION_CODECS
from connect_rebalance.errors import ErrorCode
from connect_rebalance.protocol.api_keys import ApiKey
from connect_rebalance.protocol.client import ProtocolClient

log = logging.getLogger(__name__)
PRODUCE_VERSION, METADATA_VERSION = 9, 9
RETRIABLE = {
    ErrorCode.UNKNOWN_TOPIC_OR_PARTITION, ErrorCode.LEADER_NOT_AVAILABLE, ErrorCode.NOT_LEADER_OR_FOLLOWER,
    ErrorCode.REQUEST_TIMED_OUT, ErrorCode.KAFKA_STORAGE_ERROR,
}  # fmt: skip
DELIVERY_TIMEOUT_S = 60.0  # as Kafka's producer: give up on a request after this long
# As Kafka's producer (retry.backoff.ms, retry.backoff.max.ms, KIP-580): the wait before a
# retry doubles from 0.1 s up to 1 s, so an outage (a coordinator restarting) is not hammered.
RETRY_BACKOFF_S, RETRY_BACKOFF_MAX_S = 0.1, 1.0
REQUEST_TIMEOUT_S = 30.0
# How long a stopping run waits for its last write to be answered, counted from when it was
# sent: an answer that takes longer means the coordinator is not answering (a partition, a
# frozen coordinator), and the stop must not wait on it; the fence covers that write.
ANSWER_WAIT_S = 1.0


class TaskFenced(Exception):
    """A newer run of this task has begun (on this worker or another): this run writes no more."""


class OutputError(Exception):
    """The coordinator refused the task's output for good; the message says why."""


@dataclass(frozen=True)
class Outgoing:
    """One record to write: to `partition`, or to the partition its key hashes to."""

    topic: str
    key: bytes | None
    value: bytes | None
    partition: int | None = None


def fence_id(group_id: str, connector: str, task: int) -> str:
    """Kafka Connect's transactional id for a source task (KIP-618): one fence per task."""
    return f"{group_id}-{connector}-{task}"


class OutputConnection:
    """The worker's connection for task output: runs begin, records go, topics are looked up."""

    def __init__(self, bootstrap: str, client_id: str, security: ClientSecurity | None = None) -> None:
        self.bootstrap, self.client_id, self.security = bootstrap, client_id, security
        self._client: ProtocolClient | None = None
        self._connecting = asyncio.Lock()
        self._partitions: dict[str, int] = {}

    async def request(self, api_key: int, version: int, fields: dict[str, object]) -> dict[str, object]:
        client = await self._connected()
        try:
            return await asyncio.wait_for(client.request(api_key, version, fields), REQUEST_TIMEOUT_S)
        except (TimeoutError, ConnectionError, OSError):
            await self._drop(client)
            raise

    async def begin_run(self, fence: str, compression: str = "none") -> TaskOutput:
        """A new run of the fence; its batches compressed as `compression` (Kafka's names)."""
        answer = await self.request(ApiKey.INIT_FENCED_PRODUCER, 0, {"fence_id": fence})
        if answer["error_code"] != ErrorCode.NONE:
            raise OutputError(f"InitFencedProducer {fence!r}: {error_text(answer)}")
        producer_id, epoch = int(answer["producer_id"]), int(answer["producer_epoch"])  # type: ignore[call-overload]
        return TaskOutput(self, fence, producer_id, epoch, COMPRESSION_CODECS[compression])

    async def partition_of(self, record: Outgoing) -> int:
        if record.partition is not None:
            return record.partition
        count = await self.partition_count(record.topic)
        if record.key is None:
            return int(time.monotonic_ns()) % count
        return (murmur2(record.key) & 0x7FFFFFFF) % count

    async def partition_count(self, topic: str) -> int:
        """The topic's partitions (Metadata; a missing topic is created, as producers ask)."""
        deadline = time.monotonic() + DELIVERY_TIMEOUT_S
        while topic not in self._partitions:
            answer = await self.request(
                ApiKey.METADATA, METADATA_VERSION,
                {"topics": [{"name": topic}], "allow_auto_topic_creation": True,
                 "include_topic_authorized_operations": False},
            )  # fmt: skip
            [found] = answer["topics"]  # type: ignore[misc]
            if found["error_code"] == ErrorCode.NONE and found["partitions"]:
                self._partitions[topic] = len(found["partitions"])
            elif found["error_code"] not in RETRIABLE or time.monotonic() > deadline:
                raise OutputError(f"topic {topic!r}: {error_text(found)}")
            else:
                await asyncio.sleep(RETRY_BACKOFF_S)
        return self._partitions[topic]

    def forget(self, topic: str) -> None:
        self._partitions.pop(topic, None)

    async def close(self) -> None:
        if self._client is not None:
            await self._drop(self._client)

    async def _connected(self) -> ProtocolClient:
        async with self._connecting:
            if self._client is None or not self._client.connected:
                client = await asyncio.wait_for(
                    ProtocolClient.connect(self.bootstrap, self.client_id, self.security), REQUEST_TIMEOUT_S
                )
                versions = await client.request(ApiKey.API_VERSIONS, 0, {})
                if not any(a["api_key"] == ApiKey.INIT_FENCED_PRODUCER for a in versions["api_keys"]):
                    await client.close()
                    raise OutputError(
                        f"{self.bootstrap} does not offer fenced producers (InitFencedProducer): task "
                        "output needs the connect-rebalance coordinator, which fences a moved task's old run"
                    )
                self._client = client
            return self._client

    async def _drop(self, client: ProtocolClient) -> None:
        if self._client is client:
            self._client = None
        await client.close()


@dataclass
class TaskOutput:
    """One run of a task: its producer id and epoch, and each partition's next sequence."""

    connection: OutputConnection
    fence: str
    producer_id: int
    epoch: int
    codec: int = 0  # COMPRESSION_CODECS
    _sequences: dict[tuple[str, int], int] = field(default_factory=dict)
    _lock: asyncio.Lock = field(default_factory=asyncio.Lock)
    _in_flight: asyncio.Future[None] | None = None
    _sent_at: float = 0.0  # monotonic: when the write in flight began
    _failure: Exception | None = None  # the run can write no more: fenced, or refused for good

    async def write(self, records: Sequence[Outgoing]) -> None:
        """Write `records` in one request: all land, or (an error raised) none does."""
        if not records:
            return
        async with self._lock:
            if self._in_flight is not None:  # a write whose caller was cancelled: it ends first
                with contextlib.suppress(Exception):
                    await asyncio.shield(self._in_flight)
            if self._failure is not None:
                raise self._failure
            # Shielded: a task cancelled while its request is on its way leaves the request to
            # finish, and `close` waits for it, so the run stops with nothing in flight.
            self._in_flight = asyncio.ensure_future(self._deliver(records))
            self._sent_at = time.monotonic()
            await asyncio.shield(self._in_flight)

    async def close(self) -> None:
        """The run writes no more: its last write is waited for while it is answered in time,
        and no retry of it is sent afterwards."""
        self._failure = self._failure or OutputError(f"{self.fence} epoch {self.epoch} is closed")
        in_flight = self._in_flight
        if in_flight is None or in_flight.done():
            return
        wait = ANSWER_WAIT_S - (time.monotonic() - self._sent_at)
        with contextlib.suppress(Exception, asyncio.CancelledError):
            await asyncio.wait_for(asyncio.shield(in_flight), max(wait, 0.0))
        in_flight.cancel()

    async def _deliver(self, records: Sequence[Outgoing]) -> None:
        try:
            await self._deliver_once(records)
        except (TaskFenced, OutputError) as exc:
            self._failure = exc
            raise

    async def _deliver_once(self, records: Sequence[Outgoing]) -> None:
        started = time.monotonic()
        batches = await self._batches(records)
        retries = 0
        while True:
            try:
                answer = await self.connection.request(ApiKey.PRODUCE, PRODUCE_VERSION, _produce(batches))
                retry = self._settle(answer)
            except (TimeoutError, ConnectionError, OSError) as exc:
                retry = f"{exc}"
            if retry is None:
                break
            if time.monotonic() > started + DELIVERY_TIMEOUT_S:
                raise OutputError(f"{self.fence}: not written within {DELIVERY_TIMEOUT_S:.0f} s: {retry}")
            # Said once per write that has to wait, not once per retry.
            (log.debug if retries else log.info)("%s: retrying a write: %s", self.fence, retry)
            await asyncio.sleep(min(RETRY_BACKOFF_S * 2 ** min(retries, 10), RETRY_BACKOFF_MAX_S))
            retries += 1
        if retries:
            log.info("%s: written after %d retries (%.1f s)", self.fence, retries, time.monotonic() - started)
        for (topic, partition), (count, _) in batches.items():
            self._sequences[(topic, partition)] = self._sequences.get((topic, partition), 0) + count

    async def _batches(self, records: Sequence[Outgoing]) -> dict[tuple[str, int], tuple[int, bytes]]:
        grouped: dict[tuple[str, int], list[Outgoing]] = {}
        for record in records:
            grouped.setdefault((record.topic, await self.connection.partition_of(record)), []).append(record)
        now_ms = int(time.time() * 1000)
        batches = {}
        for place, found in grouped.items():
            builder = DefaultRecordBatchBuilder(
                2,
                self.codec,
                False,
                self.producer_id,
                self.epoch,
                self._sequences.get(place, 0),
                batch_size=1 << 30,
            )
            for offset, record in enumerate(found):
                builder.append(offset, now_ms, record.key, record.value, [])
            batches[place] = (len(found), bytes(builder.build()))
        return batches

    def _settle(self, answer: dict[str, object]) -> str | None:
        """None when every batch landed; what to retry for; raises when retrying cannot help."""
        retry = None
        for topic in answer["responses"]:  # type: ignore[attr-defined]
            for part in topic["partition_responses"]:
                code = part["error_code"]
                if code in (ErrorCode.NONE, ErrorCode.DUPLICATE_SEQUENCE_NUMBER):
                    continue
                if code == ErrorCode.INVALID_PRODUCER_EPOCH:
                    log.warning("%s: a write of epoch %d was refused: a newer run of the task has begun",
                                self.fence, self.epoch)  # fmt: skip
                    raise TaskFenced(f"{self.fence} epoch {self.epoch}: {error_text(part)}")
                if code in RETRIABLE:
                    self.connection.forget(topic["name"])
                    retry = f"{topic['name']}-{part['index']}: {error_text(part)}"
                    continue
                raise OutputError(f"{topic['name']}-{part['index']}: {error_text(part)}")
        return retry


def _produce(batches: dict[tuple[str, int], tuple[int, bytes]]) -> dict[str, object]:
    topics: dict[str, list[dict[str, object]]] = {}
    for (topic, partition), (_, records) in batches.items():
        topics.setdefault(topic, []).append({"index": partition, "records": records})
    return {
        "transactional_id": None, "acks": -1, "timeout_ms": int(REQUEST_TIMEOUT_S * 1000),
        "topic_data": [{"name": name, "partition_data": parts} for name, parts in topics.items()],
    }  # fmt: skip


def error_text(answer: Mapping[str, object]) -> str:
    """A Kafka error code of an answer, by name, with its message if it has one."""
    code = int(answer["error_code"])  # type: ignore[call-overload]
    name = ErrorCode(code).name if code in ErrorCode._value2member_map_ else str(code)
    message = answer.get("error_message")
    return f"{name}: {message}" if message else name

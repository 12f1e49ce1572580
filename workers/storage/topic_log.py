"""A worker's view of one internal topic: every record, in order, and writes to it.

Kafka Connect keeps its cluster state in three topics (configs, offsets, statuses) that every
worker reads from the beginning and keeps following. `TopicLog` does that with kafka-python
in a background thread (no consumer group: all partitions assigned, from the start) and
hands records to the event loop in offset order; writes go through one idempotent
`acks=all` producer. `read_to_end()` waits until everything written before the call has
been read — how a worker catches up before it acts on what the log says. Its clients
connect as the worker's Kafka client security settings say (`ClientSecurity`).
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import threading
from collections.abc import Callable, Mapping
from concurrent.futures import ThreadPoolExecutor
from typing import Any

from kafka import KafkaAdminClient, KafkaConsumer, KafkaProducer, TopicPartition
from kafka.admin import NewTopic
from kafka.errors import NoError, TopicAlreadyExistsError, for_code

from connect_rebalance.client_security import ClientSecurity

log = logging.getLogger(__name__)
# key, value, partition, offset, timestamp (ms: the record's, as its producer or the broker set it)
Handler = Callable[[bytes | None, bytes | None, int, int, int], None]
CLOSE_TIMEOUT_S = 2.0
# Segment size of the internal topics a worker creates. A compacted log is cleaned only in
# its sealed segments, so with Kafka's 1 GiB segments nothing is ever compacted and every
# restart reads the whole history of offsets and statuses; in 4 MiB segments (the size of
# `__consumer_offsets` here) a restart reads about the live records.
INTERNAL_SEGMENT_BYTES = 4 * 1024 * 1024
# What one fetch of an internal topic may carry: catching up on a long history then holds
# little memory at a time, rather than kafka-python's 50 MiB, which the allocator keeps.
READ_FETCH_MAX_BYTES, READ_PARTITION_FETCH_MAX_BYTES = 1024 * 1024, 256 * 1024
# How long a fetch of an internal topic waits for records when there are none (Kafka's
# default). A fetch is answered as soon as a record is appended, so this costs no latency;
# it sets how often an idle reader asks again. At 100 ms the three readers' fetches made an
# idle worker use a tenth of a core, and its coordinator a twenty-fifth; at 500 ms, a quarter
# of that. The reader's poll waits as long, so closing it takes at most that.
READ_WAIT_MS = 500


def ensure_topics(
    bootstrap: str,
    topics: Mapping[str, tuple[int, int]],
    compact: bool = True,
    security: ClientSecurity | None = None,
) -> str:
    """Creates the topics (name -> partitions, replication factor) that do not exist yet, in
    one request; returns the cluster's id, read on the same connection (Kafka Connect reports
    it at `GET /`)."""
    admin = KafkaAdminClient(
        bootstrap_servers=bootstrap,
        client_id="connect-worker-admin",
        **(security or ClientSecurity()).kafka_python(),
    )
    try:
        configs = (
            {"cleanup.policy": "compact", "segment.bytes": str(INTERNAL_SEGMENT_BYTES)} if compact else {}
        )
        answer = admin.create_topics(
            [
                NewTopic(name, count, factor, topic_configs=configs)
                for name, (count, factor) in topics.items()
            ],
            raise_errors=False,
        )
        for topic in answer["topics"]:
            error = for_code(topic["error_code"])
            if error not in (NoError, TopicAlreadyExistsError):
                raise error(f"cannot create topic {topic['name']}: {topic.get('error_message')}")
        return str(admin.describe_cluster().get("cluster_id") or "")
    finally:
        admin.close()


class RecordWriter:
    """One idempotent `acks=all` producer whose acknowledgements resolve on the event loop.

    Sends are handed to one thread, in call order (a send may block on metadata); the
    acknowledgement resolves a future on the loop, so no thread waits for it. Opened by
    `open`, or by the first write (a connector's producer: a failure to connect is then the
    task's, not the worker's).
    """

    def __init__(self, bootstrap: str, client_id: str, security: ClientSecurity | None = None) -> None:
        self.bootstrap, self.client_id = bootstrap, client_id
        self.security = security or ClientSecurity()
        self._producer: KafkaProducer | None = None
        self._loop: asyncio.AbstractEventLoop | None = None
        self._sender = ThreadPoolExecutor(1, thread_name_prefix=f"send-{client_id}")
        self._opening = asyncio.Lock()

    def open(self, loop: asyncio.AbstractEventLoop) -> None:
        """Blocking: connects the producer (call it off the loop)."""
        self._loop = loop
        self._producer = KafkaProducer(
            bootstrap_servers=self.bootstrap, client_id=self.client_id, acks="all", enable_idempotence=True,
            linger_ms=0, **self.security.kafka_python(),
        )  # fmt: skip

    async def write(
        self, topic: str, key: bytes | None, value: bytes | None, partition: int | None = None
    ) -> int:
        """Write one record (value None: a tombstone); returns its offset once acknowledged."""
        if self._producer is None:
            async with self._opening:
                if self._producer is None:
                    await asyncio.to_thread(self.open, asyncio.get_running_loop())
        assert self._producer is not None and self._loop is not None
        loop = self._loop
        acknowledged: asyncio.Future[int] = loop.create_future()

        def settle(result: Any, error: BaseException | None) -> None:
            if acknowledged.done():
                return
            if error is not None:
                acknowledged.set_exception(error)
            else:
                acknowledged.set_result(int(result.offset))

        def send() -> None:
            assert self._producer is not None
            try:
                future = self._producer.send(topic, key=key, value=value, partition=partition)
            except Exception as exc:  # noqa: BLE001 - handed back to the caller
                loop.call_soon_threadsafe(settle, None, exc)
                return
            future.add_callback(lambda metadata: loop.call_soon_threadsafe(settle, metadata, None))
            future.add_errback(lambda exc: loop.call_soon_threadsafe(settle, None, exc))

        await loop.run_in_executor(self._sender, send)
        return await asyncio.wait_for(acknowledged, 60)

    def close(self) -> None:
        """Blocking: closes the producer (call it off the loop), sending what it holds for at
        most CLOSE_TIMEOUT_S: a producer whose broker is gone would wait for it forever."""
        self._sender.shutdown(wait=False)
        if self._producer is not None:
            self._producer.close(timeout=CLOSE_TIMEOUT_S)


class TopicLog:
    def __init__(
        self,
        bootstrap: str,
        topic: str,
        handler: Handler,
        client_id: str,
        security: ClientSecurity | None = None,
    ) -> None:
        self.bootstrap, self.topic, self.handler, self.client_id = bootstrap, topic, handler, client_id
        self.security = security or ClientSecurity()
        self._loop: asyncio.AbstractEventLoop | None = None
        self._thread: threading.Thread | None = None
        self._stop = threading.Event()
        self._positions: dict[int, int] = {}  # next offset to read, as the loop has applied
        self._seen: dict[int, int] = {}  # the same, as the reader thread last reported it
        self._probe_lock = threading.Lock()
        self._probe: KafkaConsumer | None = None
        self._waiters: list[tuple[dict[int, int], asyncio.Future[None]]] = []
        self._probe_running: asyncio.Future[dict[int, int]] | None = None
        self._probe_next: asyncio.Future[dict[int, int]] | None = None
        self.writer = RecordWriter(bootstrap, f"{client_id}-{topic}-writer", self.security)
        self._consumer: KafkaConsumer | None = None
        self._partitions: list[TopicPartition] = []
        self.failure: BaseException | None = None

    async def start(self) -> None:
        """Connects the reader, the end-offset probe and the writer side by side (each
        kafka-python client's first topic metadata waits out its retry backoff), then reads
        the topic to its end."""
        self._loop = asyncio.get_running_loop()
        self._consumer, *_ = await asyncio.gather(
            asyncio.to_thread(self._open),
            asyncio.to_thread(self._open_probe),
            asyncio.to_thread(self.writer.open, self._loop),
        )
        self._thread = threading.Thread(target=self._follow, name=f"log-{self.topic}", daemon=True)
        self._thread.start()
        await self.read_to_end()

    def _open(self) -> KafkaConsumer:
        consumer = KafkaConsumer(
            bootstrap_servers=self.bootstrap, client_id=f"{self.client_id}-{self.topic}-reader",
            enable_auto_commit=False, group_id=None, fetch_max_wait_ms=READ_WAIT_MS,
            fetch_max_bytes=READ_FETCH_MAX_BYTES, max_partition_fetch_bytes=READ_PARTITION_FETCH_MAX_BYTES,
            **self.security.kafka_python(),
        )  # fmt: skip
        partitions = consumer.partitions_for_topic(self.topic) or set()
        self._partitions = [TopicPartition(self.topic, p) for p in sorted(partitions)]
        consumer.assign(self._partitions)
        consumer.seek_to_beginning()
        # Where reading starts is known before the first fetch: an empty topic is read to its
        # end at once, not after a fetch that waits for records that never come.
        self._seen = {tp.partition: consumer.position(tp) for tp in self._partitions}
        self._positions = dict(self._seen)
        return consumer

    def _open_probe(self) -> KafkaConsumer:
        with self._probe_lock:
            if self._probe is None:
                probe = KafkaConsumer(
                    bootstrap_servers=self.bootstrap,
                    client_id=f"{self.client_id}-probe",
                    enable_auto_commit=False,  # no group: kafka-python would warn of it each time
                    **self.security.kafka_python(),
                )
                probe.partitions_for_topic(self.topic)  # its metadata, ready for end offsets
                self._probe = probe
            return self._probe

    def _follow(self) -> None:
        assert self._consumer is not None and self._loop is not None
        while not self._stop.is_set():
            try:
                batches = self._consumer.poll(timeout_ms=READ_WAIT_MS)
            except Exception as exc:  # noqa: BLE001 - reported to the owner, then retried
                log.warning("reading %s: %s", self.topic, exc)
                self._stop.wait(0.5)
                continue
            records = sorted(
                (r for rs in batches.values() for r in rs), key=lambda r: (r.partition, r.offset)
            )
            positions = {tp.partition: self._consumer.position(tp) for tp in self._partitions}
            if records or positions != self._seen:
                self._seen = positions
                self._loop.call_soon_threadsafe(self._deliver, records, positions)

    def _deliver(self, records: list[Any], positions: dict[int, int]) -> None:
        for record in records:
            try:
                self.handler(record.key, record.value, record.partition, record.offset, record.timestamp)
            except Exception:  # noqa: BLE001 - a bad record must not stop the log
                log.exception("%s: cannot apply record at %s/%s", self.topic, record.partition, record.offset)
        self._positions.update(positions)
        still = []
        for wanted, future in self._waiters:
            if all(self._positions.get(p, 0) >= end for p, end in wanted.items()):
                if not future.done():
                    future.set_result(None)
            else:
                still.append((wanted, future))
        self._waiters = still

    async def read_to_end(self, timeout: float = 30.0) -> None:
        """Wait until every record written before this call has been handled."""
        assert self._consumer is not None and self._loop is not None
        ends = await self._fresh_end_offsets()
        if all(self._positions.get(p, 0) >= end for p, end in ends.items()):
            return
        future: asyncio.Future[None] = self._loop.create_future()
        self._waiters.append((ends, future))
        await asyncio.wait_for(future, timeout)

    async def _fresh_end_offsets(self) -> dict[int, int]:
        """End offsets read after this call began. Callers arriving while a read is under way
        share the next one, so a thousand tasks starting at once (each reading its source
        offset) cost two reads, not a thousand."""
        if self._probe_next is None:
            self._probe_next = asyncio.ensure_future(self._probe_after(self._probe_running))
        return await asyncio.shield(self._probe_next)

    async def _probe_after(self, previous: asyncio.Future[dict[int, int]] | None) -> dict[int, int]:
        if previous is not None:
            with contextlib.suppress(Exception):
                await previous
        # From here on, new callers arrived after this read began: they wait for the next one.
        self._probe_running, self._probe_next = self._probe_next, None
        return await asyncio.to_thread(self._end_offsets)

    def _end_offsets(self) -> dict[int, int]:
        probe = self._open_probe()
        with self._probe_lock:
            return {tp.partition: end for tp, end in probe.end_offsets(self._partitions).items()}

    async def write(
        self, key: bytes | None, value: bytes | None, partition: int | None = None, topic: str | None = None
    ) -> int:
        """Write one record (value None: a tombstone) to this topic, or through this log's
        producer to `topic`; returns its offset once acknowledged."""
        return await self.writer.write(topic or self.topic, key, value, partition)

    async def close(self) -> None:
        self._stop.set()
        if self._thread is not None:
            await asyncio.to_thread(self._thread.join, 5)
        await asyncio.to_thread(self.writer.close)
        for client in (self._consumer, self._probe):
            if client is not None:
                await asyncio.to_thread(client.close)

"""A CreateTopics of 10,000 partitions against a coordinator process run with `ulimit -n 4096`,
while a confluent-kafka consumer group heartbeats and a probe asks for Metadata over and over:
the topic is created (it failed with "Too many open files" where every partition held its
files open), the group keeps its one generation (no session lost), the probe's p99 stays under
50 ms (the files were made on the event loop, stalling every client for seconds), and every
partition of the new topic takes a record and gives it back."""

from __future__ import annotations

import threading
import time
from collections.abc import Iterator
from pathlib import Path

import pytest
from confluent_kafka import Consumer, Producer, TopicPartition
from confluent_kafka.admin import AdminClient, NewTopic

from connect_rebalance.processes import CoordinatorProcess
from connect_rebalance.protocol.api_keys import ApiKey
from tests.support.wire import RawConnection

pytestmark = pytest.mark.integration
PARTITIONS = 10_000


class Probe:
    """Metadata for one small topic, asked again as soon as answered: (start, latency) of each."""

    def __init__(self, bootstrap: str) -> None:
        self.timings: list[tuple[float, float]] = []
        self._stop = threading.Event()
        self._conn = RawConnection(bootstrap, timeout=30)
        self._thread = threading.Thread(target=self._run, daemon=True)
        self._thread.start()

    def _run(self) -> None:
        request = {"topics": [{"name": "steady", "topic_id": None}], "allow_auto_topic_creation": False}
        while not self._stop.is_set():
            started = time.monotonic()
            self._conn.request(ApiKey.METADATA, 12, request)
            self.timings.append((started, time.monotonic() - started))
            time.sleep(0.005)  # a client's pace between probes, not a synchronisation

    def stop(self) -> None:
        self._stop.set()
        self._thread.join(30)
        self._conn.close()

    def latencies_between(self, start: float, end: float) -> list[float]:
        """Sorted latencies of the probes under way at some point in [start, end]."""
        return sorted(latency for at, latency in self.timings if at < end and at + latency > start)


class Member:
    """A consumer group member polling on a thread; counts the partitions it was assigned and
    revoked (a lost session shows as a revocation and a new assignment)."""

    def __init__(self, bootstrap: str) -> None:
        self.assigned = 0
        self.revoked = 0
        self._stop = threading.Event()
        self._consumer = Consumer({
            "bootstrap.servers": bootstrap, "group.id": "steady-readers", "session.timeout.ms": 6000,
            "heartbeat.interval.ms": 1000, "auto.offset.reset": "earliest",
        })  # fmt: skip
        self._consumer.subscribe(["steady"], on_assign=self._on_assign, on_revoke=self._on_revoke)
        self._thread = threading.Thread(target=self._run, daemon=True)
        self._thread.start()

    def _on_assign(self, consumer: Consumer, partitions: list[TopicPartition]) -> None:
        self.assigned += 1

    def _on_revoke(self, consumer: Consumer, partitions: list[TopicPartition]) -> None:
        self.revoked += 1

    def _run(self) -> None:
        while not self._stop.is_set():
            self._consumer.poll(0.1)

    def stop(self) -> None:
        self._stop.set()
        self._thread.join(30)
        self._consumer.close()


@pytest.fixture
def coordinator(tmp_path: Path) -> Iterator[CoordinatorProcess]:
    process = CoordinatorProcess(
        tmp_path / "data", {"group.initial.rebalance.delay.ms": "0"}, open_files_limit=4096
    ).start()
    try:
        yield process
    finally:
        process.kill()


def test_a_topic_of_10000_partitions_is_created_while_a_group_heartbeats_and_probes_stay_fast(
    coordinator: CoordinatorProcess,
) -> None:
    b = coordinator.bootstrap
    admin = AdminClient({"bootstrap.servers": b})
    admin.create_topics([NewTopic("steady", 1, 1)])["steady"].result(30)
    member = Member(b)
    try:
        deadline = time.monotonic() + 30
        while member.assigned == 0 and time.monotonic() < deadline:
            time.sleep(0.1)  # polling until the first assignment
        assert member.assigned == 1, "the group did not form"
        probe = Probe(b)
        try:
            created_at = time.monotonic()
            admin.create_topics([NewTopic("wide", PARTITIONS, 1)], request_timeout=120)["wide"].result(120)
            created_in = time.monotonic() - created_at
            time.sleep(7)  # past one more session timeout (6 s): a lost session would show by now
            seen = (member.assigned, member.revoked)  # closing the consumer revokes too
        finally:
            probe.stop()
        producer = Producer({"bootstrap.servers": b, "linger.ms": 50})
        for p in range(PARTITIONS):
            producer.produce("wide", value=b"%d" % p, partition=p)
        assert producer.flush(120) == 0
    finally:
        member.stop()
    reader = Consumer({"bootstrap.servers": b, "group.id": "wide-check", "enable.auto.commit": False})
    try:
        watermarks = [
            reader.get_watermark_offsets(TopicPartition("wide", p), timeout=30) for p in (0, 4999, 9999)
        ]
    finally:
        reader.close()

    # The probes under way while the topic was made: a stalled event loop answers few of them late.
    latencies = probe.latencies_between(created_at, created_at + created_in)
    p99 = latencies[int(len(latencies) * 0.99)] * 1000
    assert seen == (1, 0), f"the group member was (assigned, revoked) {seen} times: its session was lost"
    worst = latencies[-1] * 1000
    assert p99 < 50, f"Metadata p99 {p99:.0f} ms (max {worst:.0f} ms); the topic took {created_in:.1f} s"
    assert watermarks == [(0, 1)] * 3, f"partitions 0, 4999, 9999 hold {watermarks}"

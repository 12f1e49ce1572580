"""A topic's `compression.type` over TCP with confluent-kafka: a producer sending uncompressed
batches to an lz4 topic has them stored lz4-compressed (as Kafka rewrites them), a consumer reads
every record back unchanged, and a `producer` topic keeps the producer's codec."""

from __future__ import annotations

import time
from pathlib import Path

import pytest
from confluent_kafka import Consumer, Producer
from confluent_kafka.admin import AdminClient, NewTopic

from connect_rebalance.processes import CoordinatorProcess
from connect_rebalance.protocol.api_keys import ApiKey
from coordinator.storage import batches
from tests.support.wire import RawConnection

pytestmark = pytest.mark.integration


def stored_codec(bootstrap: str, topic: str) -> int:
    """The compression codec of the first batch stored in partition 0."""
    conn = RawConnection(bootstrap)
    try:
        answer = conn.request(ApiKey.FETCH, 11, {
            "replica_id": -1, "max_wait_ms": 0, "min_bytes": 0, "max_bytes": 1 << 20, "isolation_level": 0,
            "session_id": 0, "session_epoch": -1, "rack_id": "", "forgotten_topics_data": [],
            "topics": [{"topic": topic, "partitions": [{"partition": 0, "current_leader_epoch": -1,
                        "fetch_offset": 0, "log_start_offset": -1, "partition_max_bytes": 1 << 20}]}],
        })  # fmt: skip
    finally:
        conn.close()
    return batches.read_header(answer.responses[0].partitions[0].records).compression


def read_back(bootstrap: str, topic: str, count: int) -> list[bytes]:
    consumer = Consumer(
        {"bootstrap.servers": bootstrap, "group.id": f"read-{topic}", "auto.offset.reset": "earliest"}
    )
    values: list[bytes] = []
    try:
        consumer.subscribe([topic])
        deadline = time.monotonic() + 30
        while len(values) < count and time.monotonic() < deadline:
            message = consumer.poll(0.5)
            if message is not None and message.error() is None:
                values.append(message.value())
    finally:
        consumer.close()
    return values


def test_a_topics_compression_type_is_applied_to_what_producers_send(tmp_path: Path) -> None:
    coordinator = CoordinatorProcess(tmp_path / "data").start()
    try:
        b = coordinator.bootstrap
        admin = AdminClient({"bootstrap.servers": b})
        topics = [NewTopic("squeezed", 1, 1, config={"compression.type": "lz4"}), NewTopic("as-sent", 1, 1)]
        for future in admin.create_topics(topics).values():
            future.result(30)
        values = [b"record %d " % i * 30 for i in range(200)]
        producer = Producer({"bootstrap.servers": b, "compression.type": "none", "linger.ms": 20})
        for topic in ("squeezed", "as-sent"):
            for value in values:
                producer.produce(topic, value=value, partition=0)
        assert producer.flush(30) == 0
        codecs = {topic: stored_codec(b, topic) for topic in ("squeezed", "as-sent")}
        squeezed = read_back(b, "squeezed", len(values))
    finally:
        coordinator.kill()
    assert codecs == {"squeezed": batches.CODECS["lz4"], "as-sent": 0}, f"stored codecs {codecs}"
    assert squeezed == values

"""Time retention over TCP with confluent-kafka: a topic nobody writes to any more loses every
record once they are all past `retention.ms`, its active segment's too (as Kafka rolls and
deletes it), and keeps its offsets: the next record produced lands at the old end."""

from __future__ import annotations

import time
from pathlib import Path

import pytest
from confluent_kafka import Consumer, Producer, TopicPartition
from confluent_kafka.admin import AdminClient, NewTopic

from connect_rebalance.processes import CoordinatorProcess

pytestmark = pytest.mark.integration


def watermarks(bootstrap: str) -> tuple[int, int]:
    consumer = Consumer({"bootstrap.servers": bootstrap, "group.id": "retention-watch"})
    try:
        return consumer.get_watermark_offsets(TopicPartition("aging", 0), timeout=10)  # type: ignore[no-any-return]
    finally:
        consumer.close()


def test_a_topic_left_alone_past_retention_ms_is_emptied_and_keeps_its_offsets(tmp_path: Path) -> None:
    coordinator = CoordinatorProcess(tmp_path / "data", {"log.retention.check.interval.ms": "200"}).start()
    try:
        b = coordinator.bootstrap
        admin = AdminClient({"bootstrap.servers": b})
        for future in admin.create_topics(
            [NewTopic("aging", 1, 1, config={"retention.ms": "2000"})]
        ).values():
            future.result(30)
        producer = Producer({"bootstrap.servers": b})
        for i in range(10):
            producer.produce("aging", value=b"%d" % i)
        assert producer.flush(30) == 0
        assert watermarks(b) == (0, 10)
        deadline = time.monotonic() + 60
        while watermarks(b) != (10, 10) and time.monotonic() < deadline:
            time.sleep(0.2)  # polling until the deadline: retention runs every 200 ms
        emptied = watermarks(b)
        producer.produce("aging", value=b"later")
        assert producer.flush(30) == 0
        after = watermarks(b)
    finally:
        coordinator.kill()
    assert emptied == (10, 10), f"watermarks {emptied}: the records past retention.ms were kept"
    assert after == (10, 11), f"watermarks {after}: the next record did not land at the old end"

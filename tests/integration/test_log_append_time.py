"""`message.timestamp.type=LogAppendTime` over TCP with confluent-kafka: the records of such a
topic carry the time the coordinator appended them (the producer's delivery report says so
too, from the produce answer), while a CreateTime topic keeps the producer's timestamps."""

from __future__ import annotations

import time
from pathlib import Path

import pytest
from confluent_kafka import TIMESTAMP_CREATE_TIME, TIMESTAMP_LOG_APPEND_TIME, Producer
from confluent_kafka.admin import AdminClient, NewTopic

from connect_rebalance.processes import CoordinatorProcess
from tests.support.clients import first_message

pytestmark = pytest.mark.integration
PRODUCER_TIME_MS = 1_000_000  # 1970: far from any append time


def produced_and_read(bootstrap: str, topic: str) -> tuple[tuple[int, int], tuple[int, int]]:
    """(type, ms) of the timestamp in the delivery report and in the record read back."""
    reports = []
    producer = Producer({"bootstrap.servers": bootstrap})
    producer.produce(
        topic, value=b"v", timestamp=PRODUCER_TIME_MS, on_delivery=lambda err, msg: reports.append(msg)
    )
    assert producer.flush(30) == 0 and reports and reports[0].error() is None
    message = first_message(bootstrap, topic)
    assert message is not None, f"nothing read back from {topic}"
    return reports[0].timestamp(), message.timestamp()


def test_a_log_append_time_topic_stamps_records_with_the_append_time(tmp_path: Path) -> None:
    coordinator = CoordinatorProcess(tmp_path / "data").start()
    try:
        b = coordinator.bootstrap
        admin = AdminClient({"bootstrap.servers": b})
        topics = [NewTopic("appended", 1, 1, config={"message.timestamp.type": "LogAppendTime"}),
                  NewTopic("created", 1, 1)]  # fmt: skip
        for future in admin.create_topics(topics).values():
            future.result(30)
        before_ms = int(time.time() * 1000)
        reported, read = produced_and_read(b, "appended")
        after_ms = int(time.time() * 1000)
        created = produced_and_read(b, "created")
    finally:
        coordinator.kill()
    assert read[0] == TIMESTAMP_LOG_APPEND_TIME and before_ms <= read[1] <= after_ms, read
    assert reported[0] == TIMESTAMP_LOG_APPEND_TIME and reported[1] == read[1], reported
    assert created[1] == (TIMESTAMP_CREATE_TIME, PRODUCER_TIME_MS), created

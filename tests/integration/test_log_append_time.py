"""`message.timestamp.type=LogAppendTime` over TCP with confluent-kafka: the records of such a
topic carry the time the coordinator appended them (the producer's delivery report says so
too, from the produce answer), while a CreateTime topic keeps the producer's timestamps. A
topic altered to LogAppendTime (IncrementalAlterConfigs) stamps what is appended from then on,
and stops when the config is deleted again; its batches carry the timestamp type (attributes
bit 3) and the append time as their max timestamp, which ListOffsets by time finds."""

from __future__ import annotations

import time
from pathlib import Path

import pytest
from confluent_kafka import (
    TIMESTAMP_CREATE_TIME,
    TIMESTAMP_LOG_APPEND_TIME,
    Consumer,
    Producer,
    TopicPartition,
)
from confluent_kafka.admin import AdminClient, AlterConfigOpType, ConfigEntry, ConfigResource, NewTopic

from connect_rebalance.processes import CoordinatorProcess
from coordinator.storage import batches
from tests.support.clients import first_message
from tests.support.group_scenario import create_topic
from tests.support.wire import RawConnection

pytestmark = pytest.mark.integration
PRODUCER_TIME_MS = 1_000_000  # 1970: far from any append time


def produced(bootstrap: str, topic: str) -> tuple[int, int]:
    """(type, ms) of the timestamp in the delivery report of a record sent with PRODUCER_TIME_MS."""
    reports = []
    producer = Producer({"bootstrap.servers": bootstrap})
    producer.produce(
        topic, value=b"v", timestamp=PRODUCER_TIME_MS, on_delivery=lambda err, msg: reports.append(msg)
    )
    assert producer.flush(30) == 0 and reports and reports[0].error() is None
    return reports[0].timestamp()  # type: ignore[no-any-return]


def produced_and_read(bootstrap: str, topic: str) -> tuple[tuple[int, int], tuple[int, int]]:
    """(type, ms) of the timestamp in the delivery report and in the record read back."""
    reported = produced(bootstrap, topic)
    message = first_message(bootstrap, topic)
    assert message is not None, f"nothing read back from {topic}"
    return reported, message.timestamp()


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


def set_timestamp_type(admin: AdminClient, topic: str, value: str | None) -> None:
    """IncrementalAlterConfigs: message.timestamp.type set to `value`, or deleted (None)."""
    operation = AlterConfigOpType.SET if value is not None else AlterConfigOpType.DELETE
    entry = ConfigEntry("message.timestamp.type", value, incremental_operation=operation)
    resource = ConfigResource("topic", topic, incremental_configs=[entry])
    for future in admin.incremental_alter_configs([resource]).values():
        future.result(30)


def read_timestamps(bootstrap: str, topic: str, count: int) -> tuple[list[tuple[int, int]], int]:
    """(type, ms) of the partition's first `count` records as a consumer reads them, and the
    offset ListOffsets finds for the second one's timestamp."""
    consumer = Consumer(
        {"bootstrap.servers": bootstrap, "group.id": "timestamps", "enable.auto.commit": False}
    )
    read: list[tuple[int, int]] = []
    try:
        consumer.assign([TopicPartition(topic, 0, 0)])
        deadline = time.monotonic() + 30
        while len(read) < count and time.monotonic() < deadline:
            message = consumer.poll(0.2)
            if message is not None and message.error() is None:
                read.append(message.timestamp())
        found = -1
        if len(read) > 1:
            found = consumer.offsets_for_times([TopicPartition(topic, 0, read[1][1])], timeout=30)[0].offset
    finally:
        consumer.close()
    return read, found


def stored_stamps(bootstrap: str, topic: str) -> list[tuple[bool, int]]:
    """(LogAppendTime bit, max timestamp) of each batch stored in partition 0."""
    conn = RawConnection(bootstrap)
    try:
        (records,) = conn.fetch(topic, [(0, 0)])
    finally:
        conn.close()
    stamps, at = [], 0
    while at < len(records):
        header = batches.read_header(records, at)
        stamps.append((bool(header.attributes & batches.LOG_APPEND_TIME), header.max_timestamp))
        at += header.size
    return stamps


def test_a_topic_altered_to_log_append_time_stamps_what_is_appended_from_then_on(tmp_path: Path) -> None:
    coordinator = CoordinatorProcess(tmp_path / "data").start()
    try:
        b = coordinator.bootstrap
        create_topic(b, "switched", 1)
        admin = AdminClient({"bootstrap.servers": b})
        reported = [produced(b, "switched")]
        set_timestamp_type(admin, "switched", "LogAppendTime")
        before_ms = int(time.time() * 1000)
        reported.append(produced(b, "switched"))
        after_ms = int(time.time() * 1000)
        set_timestamp_type(admin, "switched", None)  # back to the default, CreateTime
        reported.append(produced(b, "switched"))
        read, found = read_timestamps(b, "switched", 3)
        stamps = stored_stamps(b, "switched")
    finally:
        coordinator.kill()
    created = (TIMESTAMP_CREATE_TIME, PRODUCER_TIME_MS)
    assert reported[0] == reported[2] == created, reported
    appended = reported[1]
    assert appended[0] == TIMESTAMP_LOG_APPEND_TIME and before_ms <= appended[1] <= after_ms, reported
    assert read == [created, appended, created], read
    assert stamps == [(False, PRODUCER_TIME_MS), (True, appended[1]), (False, PRODUCER_TIME_MS)], stamps
    assert found == 1, "ListOffsets finds the stamped record by its append time"

"""A full disk, over TCP against a coordinator process whose data directory is on a small
filesystem this test mounts: a producer (confluent-kafka) gets KAFKA_STORAGE_ERROR for the
records that do not fit, and keeps its connection; a produce request to two topics is answered
per partition; every acknowledged record is read back by a subscribing consumer group that
commits meanwhile (the group state keeps a reserve of disk); once the filesystem grows, appends
succeed again without a restart, at the offset after the last acknowledged record. The log says
the outage once per partition and state change, with no traceback."""

from __future__ import annotations

import errno
import os
import subprocess
import time
from collections.abc import Iterator
from pathlib import Path

import pytest
from confluent_kafka import Consumer, KafkaError, Message, Producer
from confluent_kafka.admin import AdminClient, NewTopic

from connect_rebalance.errors import ErrorCode
from connect_rebalance.processes import CoordinatorProcess
from connect_rebalance.protocol.api_keys import ApiKey
from tests.support.batches import make_batch
from tests.support.wire import RawConnection

pytestmark = pytest.mark.integration
RECORD = 1024


@pytest.fixture
def small_disk(tmp_path: Path) -> Iterator[Path]:
    """A 12 MiB tmpfs, grown later with `grow`; skipped where mounting is not permitted."""
    mount_point = tmp_path / "disk"
    mount_point.mkdir()
    mounted = subprocess.run(
        ["mount", "-t", "tmpfs", "-o", "size=12m", "tmpfs", str(mount_point)], capture_output=True, text=True
    )
    if mounted.returncode != 0:
        pytest.skip(f"mounting a small filesystem is not permitted here: {mounted.stderr.strip()}")
    try:
        yield mount_point
    finally:
        if subprocess.run(["umount", str(mount_point)], capture_output=True).returncode != 0:
            subprocess.run(["umount", "-l", str(mount_point)], check=False)


def fill_the_rest(mount_point: Path) -> None:
    """Take what space is left, as another program on the same disk would: a batch that did not
    fit leaves room a smaller one may still take."""
    fd = os.open(mount_point / "filler", os.O_WRONLY | os.O_CREAT, 0o644)
    try:
        while True:
            os.write(fd, b"\0" * 4096)
    except OSError as exc:
        assert exc.errno == errno.ENOSPC, exc
    finally:
        os.close(fd)


def grow(mount_point: Path) -> None:
    subprocess.run(["mount", "-o", "remount,size=64m", str(mount_point)], check=True)


def produce_until_full(producer: Producer, count: int) -> tuple[list[bytes], dict[str, int]]:
    """Acknowledged values in offset order, and the errors of the others by name."""
    acked: dict[int, bytes] = {}
    errors: dict[str, int] = {}

    def delivered(err: KafkaError | None, msg: Message) -> None:
        if err is None:
            acked[msg.offset()] = msg.value()
        else:
            errors[err.name()] = errors.get(err.name(), 0) + 1

    for i in range(count):
        value = b"%08d" % i + b"x" * (RECORD - 8)
        while True:
            try:
                producer.produce("full", value=value, on_delivery=delivered)
                break
            except BufferError:
                producer.poll(0.05)
    assert producer.flush(60) == 0
    return [acked[o] for o in sorted(acked)], errors


def produce_to_both(conn: RawConnection) -> dict[str, tuple[int, str | None]]:
    """One produce request to `full` and `reserved`: each topic's error code and message."""
    records = make_batch([b"y" * RECORD] * 16)
    answer = conn.request(ApiKey.PRODUCE, 9, {
        "transactional_id": None, "acks": -1, "timeout_ms": 5000,
        "topic_data": [{"name": name, "partition_data": [{"index": 0, "records": records}]}
                       for name in ("full", "reserved")],
    })  # fmt: skip
    return {
        t.name: (t.partition_responses[0].error_code, t.partition_responses[0].error_message)
        for t in answer.responses
    }


def read_back(bootstrap: str, expected: int) -> list[bytes]:
    """What a subscribing consumer group reads of `full` within 60 s, committing as it goes."""
    consumer = Consumer({
        "bootstrap.servers": bootstrap, "group.id": "readers", "auto.offset.reset": "earliest",
        "enable.auto.commit": False,
    })  # fmt: skip
    values: list[bytes] = []
    try:
        consumer.subscribe(["full"])
        deadline = time.monotonic() + 60
        while len(values) < expected and time.monotonic() < deadline:
            message = consumer.poll(0.5)
            if message is None:
                continue
            assert message.error() is None, message.error()
            values.append(message.value())
            if len(values) % 1000 == 0 or len(values) == expected:
                consumer.commit(message, asynchronous=False)  # raises if the commit is refused
    finally:
        consumer.close()
    return values


def test_a_full_disk_answers_storage_errors_keeps_what_it_acknowledged_and_recovers(small_disk: Path) -> None:
    coordinator = CoordinatorProcess(
        small_disk / "data",
        {"group.initial.rebalance.delay.ms": "0", "log.segment.bytes": "1048576"},
        log_path=small_disk.parent / "coordinator.log",  # not on the disk that fills
    ).start()
    try:
        b = coordinator.bootstrap
        admin = AdminClient({"bootstrap.servers": b})
        topics = [NewTopic("full", 1, 1), NewTopic("reserved", 1, 1, config={"preallocate": "true"})]
        for future in admin.create_topics(topics).values():
            future.result(30)
        producer = Producer({"bootstrap.servers": b, "acks": "all", "retries": 0, "linger.ms": 5})
        acked, errors = produce_until_full(producer, 16_000)
        fill_the_rest(small_disk)

        conn = RawConnection(b)
        try:
            answers = [produce_to_both(conn) for _ in range(20)]
            metadata = conn.request(ApiKey.METADATA, 9, {"topics": None, "allow_auto_topic_creation": False})
        finally:
            conn.close()
        read = read_back(b, len(acked))

        grow(small_disk)
        late: list[tuple[KafkaError | None, int]] = []
        producer.produce(
            "full", value=b"after", on_delivery=lambda err, msg: late.append((err, msg.offset()))
        )
        assert producer.flush(30) == 0
    finally:
        coordinator.kill()
    log_text = coordinator.log_text()

    assert errors, "the 16 MB did not fill the 12 MiB filesystem"
    assert set(errors) == {"KAFKA_STORAGE_ERROR"}, f"records that did not fit ended as {errors}"
    assert 3000 < len(acked) < 16_000, f"{len(acked)} records acknowledged"
    for both in answers:
        assert both["full"][0] == ErrorCode.KAFKA_STORAGE_ERROR and "No space left" in (both["full"][1] or "")
        assert both["reserved"] == (0, None), f"the topic with room was answered {both['reserved']}"
    assert [t.name for t in metadata.topics if t.name == "full"], "the connection was not kept"
    assert read == acked, f"read back {len(read)} of the {len(acked)} acknowledged records, or other ones"
    assert late == [(None, len(acked))], f"once space came back the next record was {late}"
    assert "Traceback" not in log_text
    outage_lines = log_text.count("appends to full-0 fail")
    assert 1 <= outage_lines <= 5, (
        f"the outage was logged {outage_lines} times for {sum(errors.values())} errors"
    )

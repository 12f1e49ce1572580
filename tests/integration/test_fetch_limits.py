"""Fetch's size limits over TCP, as Kafka applies them (KIP-74): an answer carries at most the
request's MaxBytes, and each partition at most its PartitionMaxBytes, of whole batches. Only
the first partition that has data may go over, by its first batch, so that a consumer always
gets on. A confluent-kafka consumer with `fetch.max.bytes` (librdkafka's test 0082) never gets
a larger answer and reads every partition; exact answers are read with a raw Fetch."""

from __future__ import annotations

import re
import time
from pathlib import Path

import pytest
from confluent_kafka import Consumer, Producer, TopicPartition

from connect_rebalance.processes import CoordinatorProcess
from connect_rebalance.protocol.api_keys import ApiKey
from coordinator.storage.batches import LOG_OVERHEAD
from tests.support.batches import make_batch
from tests.support.client_logs import LogLines, client_logger
from tests.support.group_scenario import create_topic
from tests.support.wire import RawConnection

pytestmark = pytest.mark.integration
FETCH_MAX_BYTES = 30_000
# What librdkafka reserves beside fetch.max.bytes for the answer's own fields.
ANSWER_FIELDS = 512
RECORDS_PER_PARTITION = 8  # of 12 KB each, a batch each: ~96 KB a partition, over three times the limit
SIZES = re.compile(r"Received FetchResponse \(v\d+, (\d+) bytes|Invalid response size (\d+)")


def refused(lines: LogLines) -> list[str]:
    return lines.having("Invalid response size")


def read_with_limits(
    bootstrap: str, topic: str, expected: int, partition_max_bytes: int
) -> tuple[list[int], LogLines]:
    """The offsets a consumer with fetch.max.bytes read (by partition), and librdkafka's log of
    the Fetch answers: it stops at `expected` records or at the first answer it refused."""
    logger, lines = client_logger(f"{topic}.{partition_max_bytes}")
    consumer = Consumer({
        "bootstrap.servers": bootstrap, "group.id": f"limits-{partition_max_bytes}",
        "enable.auto.commit": False, "fetch.max.bytes": FETCH_MAX_BYTES, "message.max.bytes": FETCH_MAX_BYTES,
        "receive.message.max.bytes": FETCH_MAX_BYTES + ANSWER_FIELDS,
        "max.partition.fetch.bytes": partition_max_bytes, "debug": "protocol", "logger": logger,
    })  # fmt: skip
    read: list[int] = []
    try:
        consumer.assign([TopicPartition(topic, p, 0) for p in range(3)])
        deadline = time.monotonic() + 30
        while len(read) < expected and not refused(lines) and time.monotonic() < deadline:
            message = consumer.poll(0.2)
            if message is not None and message.error() is None:
                read.append(message.partition())
    finally:
        consumer.close()
    return read, lines


def test_a_consumer_with_fetch_max_bytes_gets_no_larger_answer_and_reads_every_partition(
    tmp_path: Path,
) -> None:
    coordinator = CoordinatorProcess(tmp_path / "data").start()
    try:
        b = coordinator.bootstrap
        create_topic(b, "wide", 3)
        producer = Producer({"bootstrap.servers": b, "linger.ms": 0, "batch.num.messages": 1})
        for partition in range(3):
            for _ in range(RECORDS_PER_PARTITION):
                producer.produce("wide", value=bytes(12_000), partition=partition)
        assert producer.flush(30) == 0
        # max.partition.fetch.bytes at its default (1 MB, over fetch.max.bytes), then at 20 bytes,
        # less than any batch, as librdkafka's test 0082 sets it.
        runs = {
            limit: read_with_limits(b, "wide", 3 * RECORDS_PER_PARTITION, limit) for limit in (1 << 20, 20)
        }
    finally:
        coordinator.kill()
    for limit, (read, lines) in runs.items():
        assert not refused(lines), (
            f"max.partition.fetch.bytes={limit}: answers over the limit: {refused(lines)}"
        )
        sizes = [int(received or refused) for received, refused in SIZES.findall("\n".join(lines.lines))]
        assert sizes and max(sizes) <= FETCH_MAX_BYTES + ANSWER_FIELDS, (limit, sizes)
        assert sorted(read) == sorted(list(range(3)) * RECORDS_PER_PARTITION), f"read {len(read)} records"


def batch_sizes(records: bytes) -> list[int]:
    """The sizes of the whole batches `records` holds; asserts that nothing else is there."""
    sizes, at = [], 0
    while at < len(records):
        size = LOG_OVERHEAD + int.from_bytes(records[at + 8 : at + 12], "big")
        assert at + size <= len(records), f"a partial batch at byte {at}"
        sizes.append(size)
        at += size
    return sizes


def produce(conn: RawConnection, topic: str, partition: int, value_sizes: list[int]) -> None:
    for size in value_sizes:
        answer = conn.request(ApiKey.PRODUCE, 9, {
            "transactional_id": None, "acks": -1, "timeout_ms": 5000,
            "topic_data": [{"name": topic, "partition_data": [
                {"index": partition, "records": make_batch([bytes(size)])}]}],
        })  # fmt: skip
        assert answer.responses[0].partition_responses[0].error_code == 0


# (partitions in request order, MaxBytes, PartitionMaxBytes) -> batches each partition answers.
# Partition 0 is empty, 1 holds a 50 KB batch and then two of 12 KB, 2 three of 12 KB.
CASES = [
    # The first partition with data is 1: its first batch goes out alone, over MaxBytes.
    (([0, 1, 2], 30_000, 1 << 20), [0, 1, 0]),
    # Two of partition 2's batches fit; partition 1's first does not fit in what is left.
    (([2, 1], 30_000, 1 << 20), [2, 0]),
    # PartitionMaxBytes below any batch: partition 2's first batch only, as the first with data.
    (([2, 1], 1 << 20, 20), [1, 0]),
    (([1, 2], 1 << 20, 1 << 20), [3, 3]),
]


def test_only_the_first_partition_with_data_goes_over_the_limits_by_its_first_batch(tmp_path: Path) -> None:
    coordinator = CoordinatorProcess(tmp_path / "data").start()
    try:
        create_topic(coordinator.bootstrap, "probe", 3)
        conn = RawConnection(coordinator.bootstrap)
        try:
            produce(conn, "probe", 1, [50_000, 12_000, 12_000])
            produce(conn, "probe", 2, [12_000] * 3)
            answers = [
                [batch_sizes(r) for r in conn.fetch("probe", [(p, 0) for p in partitions], max_bytes, limit)]
                for (partitions, max_bytes, limit), _ in CASES
            ]
        finally:
            conn.close()
    finally:
        coordinator.kill()
    for (case, expected), sizes in zip(CASES, answers, strict=True):
        assert [len(s) for s in sizes] == expected, f"partitions, MaxBytes, PartitionMaxBytes {case}: {sizes}"
        first_batch = next(s[0] for s in sizes if s)
        assert sum(map(sum, sizes)) <= max(case[1], first_batch), (case, sizes)

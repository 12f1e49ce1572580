"""A worker's internal topics stay short: the offsets a long-running source writes are
compacted down to their latest values, so a worker that restarts reads about the live
records, not the whole history (with Kafka's 1 GiB segments nothing would ever be compacted,
and each restart would read, and hold the memory of, a longer history)."""

from __future__ import annotations

import json
import time
from pathlib import Path

import pytest
from confluent_kafka import Consumer, Producer, TopicPartition

from connect_rebalance.processes import CoordinatorProcess, connect_timings
from tests.support.worker_cluster import WorkerCluster

pytestmark = pytest.mark.integration
WRITTEN = 100_000  # offsets of 4 source partitions, about 13 MB: three 4 MiB segments and more
KEYS = 4


def read_from_start(bootstrap: str, topic: str) -> tuple[int, dict[bytes, bytes]]:
    """What a restarting worker reads of partition 0: (records, the latest value per key)."""
    consumer = Consumer(
        {"bootstrap.servers": bootstrap, "group.id": "history-reader", "enable.auto.commit": False}
    )
    try:
        end = consumer.get_watermark_offsets(TopicPartition(topic, 0), timeout=30)[1]
        consumer.assign([TopicPartition(topic, 0, 0)])
        count, latest = 0, {}
        deadline = time.monotonic() + 60
        position = 0
        while position < end and time.monotonic() < deadline:
            for message in consumer.consume(10_000, 0.5):
                if message.error() is None:
                    count += 1
                    latest[message.key()] = message.value()
                    position = message.offset() + 1
        return count, latest
    finally:
        consumer.close()


def test_a_long_offset_history_is_compacted_to_its_latest_values(tmp_path: Path) -> None:
    coordinator = CoordinatorProcess(
        tmp_path / "data", {**connect_timings(3000), "log.cleaner.backoff.ms": "500"}
    ).start()
    cluster = WorkerCluster(tmp_path, coordinator)
    try:
        cluster.start("w1")
        producer = Producer({"bootstrap.servers": coordinator.bootstrap, "linger.ms": 20})
        last: dict[bytes, bytes] = {}
        for n in range(WRITTEN):
            key = json.dumps(["history", {"source": n % KEYS}]).encode()
            value = json.dumps({"position": n, "note": "x" * 60}).encode()
            while True:
                try:
                    producer.produce("connect-offsets", key=key, value=value, partition=0)
                    break
                except BufferError:
                    producer.poll(0.05)
            last[key] = value
        assert producer.flush(60) == 0
        # The coordinator's cleaner looks every 500 ms: poll what a restart would read until it
        # is short, or the time is up.
        deadline = time.monotonic() + 60
        count, latest = read_from_start(coordinator.bootstrap, "connect-offsets")
        while count >= WRITTEN // 3 and time.monotonic() < deadline:
            time.sleep(1)
            count, latest = read_from_start(coordinator.bootstrap, "connect-offsets")
        print(f"{count:,} of {WRITTEN:,} offset records left to read after compaction")
        assert count < WRITTEN // 3, f"a restarting worker would still read {count:,} of {WRITTEN:,} records"
        assert latest == last, "compaction must keep each source partition's latest offset"
    finally:
        cluster.stop_all()
        coordinator.kill()

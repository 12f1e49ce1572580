"""Produce and fetch throughput through a coordinator process, beside the disk's own rate.

In one run, on one machine:
1. the raw sequential file write rate (1 MiB writes, then fsync) and read rate (after the
   pages are dropped from the cache with posix_fadvise), as the ceiling;
2. confluent-kafka producing fixed-size records to a coordinator subprocess (acks=all,
   no compression), timed from the first send until every record is acknowledged;
3. a confluent-kafka consumer fetching all of them back from offset 0.

Prints a table, saves JSON under bench/results/, and with --update-readme replaces the
table between the README's bench markers.

    python bench/produce_fetch.py [--mib 256] [--record-bytes 1024] [--partitions 3]
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import sys
import tempfile
import time
from pathlib import Path

from confluent_kafka import Consumer, Producer, TopicPartition
from confluent_kafka.admin import AdminClient, NewTopic

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from bench.readme_table import update_readme  # noqa: E402
from connect_rebalance.processes import CoordinatorProcess  # noqa: E402

MIB = 1 << 20


def raw_disk_rates(directory: Path, total_bytes: int) -> tuple[float, float]:
    """(write MB/s, read MB/s) for one sequential file of `total_bytes`."""
    path = directory / "raw-disk-probe"
    block = os.urandom(MIB)
    fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o644)
    started = time.perf_counter()
    for _ in range(total_bytes // MIB):
        os.write(fd, block)
    os.fsync(fd)
    write_seconds = time.perf_counter() - started
    os.posix_fadvise(fd, 0, 0, os.POSIX_FADV_DONTNEED)
    os.close(fd)
    fd = os.open(path, os.O_RDONLY)
    started = time.perf_counter()
    while os.read(fd, MIB):
        pass
    read_seconds = time.perf_counter() - started
    os.close(fd)
    path.unlink()
    return total_bytes / MIB / write_seconds, total_bytes / MIB / read_seconds


def produce(bootstrap: str, topic: str, count: int, record_bytes: int) -> float:
    producer = Producer(
        {
            "bootstrap.servers": bootstrap,
            "acks": "all",
            "linger.ms": 5,
            "batch.size": MIB,
            "queue.buffering.max.kbytes": 262144,
            "compression.type": "none",
        }
    )
    payload = os.urandom(record_bytes)
    failures: list[object] = []

    def on_delivery(err, _msg) -> None:  # type: ignore[no-untyped-def]
        if err is not None:
            failures.append(err)

    started = time.perf_counter()
    for i in range(count):
        while True:
            try:
                producer.produce(topic, value=payload, key=str(i).encode(), on_delivery=on_delivery)
                break
            except BufferError:
                producer.poll(0.01)
        if i % 1000 == 0:
            producer.poll(0)
    remaining = producer.flush(120)
    seconds = time.perf_counter() - started
    if remaining or failures:
        raise RuntimeError(f"{remaining} records undelivered, {len(failures)} failed: {failures[:3]}")
    return seconds


def fetch(bootstrap: str, topic: str, partitions: int, count: int) -> float:
    consumer = Consumer(
        {
            "bootstrap.servers": bootstrap,
            "group.id": "bench-unused",
            "enable.auto.commit": False,
            "fetch.max.bytes": 52428800,
            "max.partition.fetch.bytes": 10485760,
        }
    )
    consumer.assign([TopicPartition(topic, p, 0) for p in range(partitions)])
    received = 0
    started = time.perf_counter()
    deadline = started + 300
    while received < count and time.perf_counter() < deadline:
        # Ask for no more than remain, or the last call waits out its timeout.
        for message in consumer.consume(num_messages=min(10000, count - received), timeout=1.0):
            if message.error() is None:
                received += 1
    seconds = time.perf_counter() - started
    consumer.close()
    if received != count:
        raise RuntimeError(f"fetched {received} of {count} records")
    return seconds


def readme_block(result: dict) -> str:  # type: ignore[type-arg]
    produce = f"{result['produce_mb_s']:.1f} | {result['produce_records_s']:,.0f}"
    fetched = f"{result['fetch_mb_s']:.1f} | {result['fetch_records_s']:,.0f}"
    rows = [
        "| what | MB/s | records/s |",
        "|---|---:|---:|",
        f"| raw sequential file write (fsync at end) | {result['disk_write_mb_s']:.0f} | |",
        f"| raw sequential file read (cold) | {result['disk_read_mb_s']:.0f} | |",
        f"| produce, confluent-kafka, acks=all | {produce} |",
        f"| fetch, confluent-kafka, from offset 0 | {fetched} |",
    ]
    return "\n".join(rows) + (
        f"\n\n{result['records']:,} records of {result['record_bytes']} B ({result['mib']} MiB) "
        f"over {result['partitions']} partitions; {result['machine']}."
    )


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--mib", type=int, default=256, help="data volume to produce and fetch")
    parser.add_argument("--record-bytes", type=int, default=1024)
    parser.add_argument("--partitions", type=int, default=3)
    parser.add_argument("--update-readme", action="store_true")
    args = parser.parse_args()
    count = args.mib * MIB // args.record_bytes
    out_dir = ROOT / "bench" / "results"
    out_dir.mkdir(parents=True, exist_ok=True)

    with tempfile.TemporaryDirectory(prefix="bench-produce-fetch-") as tmp:
        tmp_path = Path(tmp)
        disk_write, disk_read = raw_disk_rates(tmp_path, args.mib * MIB)
        coordinator = CoordinatorProcess(tmp_path / "data").start()
        try:
            admin = AdminClient({"bootstrap.servers": coordinator.bootstrap})
            for future in admin.create_topics([NewTopic("bench", args.partitions, 1)]).values():
                future.result(30)
            del admin  # its connection would outlive the coordinator and log reconnects
            produce_seconds = produce(coordinator.bootstrap, "bench", count, args.record_bytes)
            fetch_seconds = fetch(coordinator.bootstrap, "bench", args.partitions, count)
        finally:
            coordinator.stop()

    megabytes = count * args.record_bytes / MIB
    result = {
        "records": count,
        "record_bytes": args.record_bytes,
        "mib": args.mib,
        "partitions": args.partitions,
        "disk_write_mb_s": disk_write,
        "disk_read_mb_s": disk_read,
        "produce_seconds": produce_seconds,
        "produce_mb_s": megabytes / produce_seconds,
        "produce_records_s": count / produce_seconds,
        "fetch_seconds": fetch_seconds,
        "fetch_mb_s": megabytes / fetch_seconds,
        "fetch_records_s": count / fetch_seconds,
        "machine": f"{os.cpu_count()} cores, Python {platform.python_version()}",
    }
    (out_dir / "produce_fetch.json").write_text(json.dumps(result, indent=2))
    table = readme_block(result)
    print(table)
    if args.update_readme:
        update_readme("produce_fetch", table)
    return 0


if __name__ == "__main__":
    sys.exit(main())

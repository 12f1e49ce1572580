"""`connect-rebalance quickstart`: a coordinator on a local data directory, shown working.

It starts a coordinator process, creates a topic, produces and consumes keyed records with
an ordinary Kafka client (kafka-python), consumes them again as a two-member consumer group
that commits its offsets, kills the coordinator with SIGKILL, restarts it, and reads
everything (and the group's offsets) back, ending with a summary whose counts prove nothing was lost or
duplicated. It exits non-zero if any check fails.
"""

from __future__ import annotations

import argparse
import json
import shutil
import tempfile
import threading
import time
from collections import Counter
from pathlib import Path

from kafka import KafkaAdminClient, KafkaConsumer, KafkaProducer, TopicPartition
from kafka.admin import NewTopic
from kafka.errors import KafkaError

from connect_rebalance.processes import CoordinatorProcess

TOPIC = "quickstart-events"
PARTITIONS = 3


def _step(text: str) -> None:
    print(f"\n==> {text}", flush=True)


def _consume_all(bootstrap: str, expected: int, timeout: float = 60) -> list[tuple[int, int, bytes, bytes]]:
    consumer = KafkaConsumer(
        bootstrap_servers=bootstrap, auto_offset_reset="earliest", enable_auto_commit=False
    )
    consumer.assign([TopicPartition(TOPIC, p) for p in range(PARTITIONS)])
    records: list[tuple[int, int, bytes, bytes]] = []
    deadline = time.monotonic() + timeout
    try:
        while len(records) < expected and time.monotonic() < deadline:
            for batch in consumer.poll(timeout_ms=500).values():
                records.extend((m.partition, m.offset, m.key, m.value) for m in batch)
    finally:
        consumer.close()
    return records


def _show_partitions(records: list[tuple[int, int, bytes, bytes]]) -> None:
    counts = Counter(p for p, *_ in records)
    print("    partition   records   offsets")
    for partition in range(PARTITIONS):
        offsets = [o for p, o, *_ in records if p == partition]
        span = f"{min(offsets)}..{max(offsets)}" if offsets else "-"
        print(f"    {partition:>9}   {counts[partition]:>7}   {span}")


def _consume_as_group(bootstrap: str, group: str, members: int, expected: int) -> dict[str, list[int]]:
    """`members` kafka-python consumers in one group share the topic and commit what they read.

    Returns each member's client id with the partitions it was assigned.
    """
    counts: dict[str, int] = {}
    assigned: dict[str, list[int]] = {}
    lock = threading.Lock()

    def member(name: str) -> None:
        consumer = KafkaConsumer(TOPIC, bootstrap_servers=bootstrap, group_id=group, client_id=name,
                                 auto_offset_reset="earliest", enable_auto_commit=False)  # fmt: skip
        deadline = time.monotonic() + 60
        try:
            while time.monotonic() < deadline:
                with lock:
                    if sum(counts.values()) >= expected:
                        break
                records = consumer.poll(timeout_ms=300)
                got = sum(len(batch) for batch in records.values())
                if got:
                    try:
                        consumer.commit()
                    except KafkaError:  # a rebalance took the partitions; their owner re-reads them
                        got = 0
                with lock:
                    counts[name] = counts.get(name, 0) + got
                    assigned[name] = sorted(tp.partition for tp in consumer.assignment())
        finally:
            consumer.close()

    threads = [threading.Thread(target=member, args=(f"reader-{i}",)) for i in range(members)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    for name in sorted(counts):
        print(f"    {name}: partitions {assigned.get(name, [])}, {counts[name]} records, offsets committed")
    return assigned


def _committed_total(bootstrap: str, group: str) -> int:
    admin = KafkaAdminClient(bootstrap_servers=bootstrap)
    try:
        offsets = admin.list_group_offsets({group: None}).get(group, {})
        return sum(meta.offset for meta in offsets.values())
    finally:
        admin.close()


def run(args: argparse.Namespace) -> int:
    owned_dir = args.data_dir is None
    root = (
        Path(tempfile.mkdtemp(prefix="connect-rebalance-quickstart-")) if owned_dir else Path(args.data_dir)
    )
    # Groups start at once here; a production coordinator waits 3 s for members to gather.
    coordinator = CoordinatorProcess(
        root / "data", {"group.initial.rebalance.delay.ms": "0"}, log_path=root / "coordinator.log"
    )
    total = args.records
    checks: list[tuple[str, bool]] = []
    try:
        _step(f"Starting a coordinator (data directory {root / 'data'})")
        coordinator.start()
        bootstrap = coordinator.bootstrap
        print(f"    listening on {bootstrap}; its log is {coordinator.log_path}")

        _step(f"Creating topic {TOPIC!r} with {PARTITIONS} partitions")
        admin = KafkaAdminClient(bootstrap_servers=bootstrap)
        admin.create_topics([NewTopic(TOPIC, PARTITIONS, 1)], raise_errors=False)
        admin.close()

        _step(f"Producing {total} keyed JSON records with kafka-python (acks=all, idempotent, zstd)")
        producer = KafkaProducer(bootstrap_servers=bootstrap, acks="all", compression_type="zstd")
        started = time.monotonic()
        futures = [
            producer.send(
                TOPIC,
                key=f"user-{i % 10}".encode(),
                value=json.dumps({"id": i, "event": "click", "page": f"/p/{i % 7}"}).encode(),
            )
            for i in range(total)
        ]
        producer.flush()
        acknowledged = sum(1 for f in futures if f.get(timeout=30) is not None)
        producer.close()
        elapsed = time.monotonic() - started
        print(f"    {acknowledged} acknowledged in {elapsed:.2f}s ({acknowledged / elapsed:,.0f} records/s)")

        _step("Consuming everything back")
        first = _consume_all(bootstrap, total)
        _show_partitions(first)
        for partition, offset, key, value in sorted(first)[:3]:
            print(f"    e.g. partition {partition} offset {offset}: {key.decode()} -> {value.decode()}")

        _step("Consuming as a consumer group of two kafka-python members, committing offsets")
        _consume_as_group(bootstrap, "quickstart-readers", 2, total)
        committed_before = _committed_total(bootstrap, "quickstart-readers")
        print(f"    group quickstart-readers committed offsets summing to {committed_before}")

        _step("Killing the coordinator with SIGKILL and starting it again on the same data")
        coordinator.kill()
        coordinator.start()
        after_restart = _consume_all(coordinator.bootstrap, total)
        print(f"    {len(after_restart)} records read back after the restart")
        committed_after = _committed_total(coordinator.bootstrap, "quickstart-readers")
        print(f"    the group's committed offsets still sum to {committed_after}")

        ids_first = [json.loads(v)["id"] for *_, v in first]
        ids_after = [json.loads(v)["id"] for *_, v in after_restart]
        checks = [
            (f"produced and acknowledged: {acknowledged} of {total}", acknowledged == total),
            (
                f"consumed: {len(ids_first)}, distinct ids: {len(set(ids_first))}",
                sorted(ids_first) == list(range(total)),
            ),
            (
                f"after kill -9 and restart: {len(ids_after)}, distinct ids: {len(set(ids_after))}",
                sorted(ids_after) == list(range(total)),
            ),
            ("same keys on the same partitions after the restart", sorted(first) == sorted(after_restart)),
            (
                f"group offsets committed: {committed_before}, after the restart: {committed_after}",
                committed_before == committed_after == total,
            ),
        ]
    finally:
        coordinator.stop()
        if owned_dir:
            shutil.rmtree(root, ignore_errors=True)

    _step("Summary")
    for text, ok in checks:
        print(f"    [{'ok' if ok else 'FAILED'}] {text}")
    passed = bool(checks) and all(ok for _, ok in checks)
    print("\n    Nothing lost, nothing duplicated." if passed else "\n    Some checks FAILED.")
    return 0 if passed else 1

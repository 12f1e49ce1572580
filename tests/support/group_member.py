"""One consumer-group member as its own process, for integration tests and benchmarks.

    python -m tests.support.group_member --client confluent-kafka --assignor range \
        --bootstrap 127.0.0.1:PORT --group g --topic t --out member.jsonl

It subscribes, polls, and commits each batch synchronously. A record counts as consumed
only once its offset commit succeeded: it is then appended to `--out` as a JSON line
{"p", "o", "v"}. A batch whose commit fails (the group moved on) is not counted, and the
member seeks back so that it re-reads the batch if it still owns the partition. With that
accounting, "every record consumed exactly once" is checkable across members. SIGTERM
makes the member leave the group gracefully (close), committing what it has.

Each line also carries "t", the wall time it was written. The confluent-kafka and
kafka-python members also write `<out>.held`: JSON lines {"e": "assigned" | "revoked" |
"stopped", "ps": [partitions], "t"} from their rebalance callbacks ("revoked" after the
revoked partitions' commit; "stopped" once polling ended), so a test can check that no
partition was held by two members at the same time. A confluent-kafka member's "revoked"
also says "lost": true when librdkafka gave the partitions up as lost (its generation or
session gone), not in a rebalance.

kcat cannot commit on demand, so its member prints what it consumed and relies on
librdkafka's commit on revocation and on close (auto-commit).
"""

from __future__ import annotations

import argparse
import asyncio
import json
import signal
import subprocess
import sys
import threading
import time
from typing import IO

STOP = threading.Event()


def _record(out: IO[str], rows: list[tuple[int, int, bytes]]) -> None:
    for partition, offset, value in rows:
        out.write(json.dumps({"p": partition, "o": offset, "v": value.decode(), "t": time.time()}) + "\n")
    out.flush()


def _held(args: argparse.Namespace, event: str, partitions: list[int], lost: bool = False) -> None:
    row = {"e": event, "ps": sorted(partitions), "t": time.time(), **({"lost": True} if lost else {})}
    with open(args.out + ".held", "a") as held:
        held.write(json.dumps(row) + "\n")


def _next_offsets(rows: list[tuple[int, int, bytes]]) -> dict[int, int]:
    offsets: dict[int, int] = {}
    for partition, offset, _ in rows:
        offsets[partition] = max(offsets.get(partition, -1), offset + 1)
    return offsets


def _first_offsets(rows: list[tuple[int, int, bytes]]) -> dict[int, int]:
    offsets: dict[int, int] = {}
    for partition, offset, _ in rows:
        offsets.setdefault(partition, offset)
    return offsets


def run_confluent(args: argparse.Namespace, out: IO[str]) -> None:
    from confluent_kafka import Consumer, KafkaException, TopicPartition

    config = {"bootstrap.servers": args.bootstrap, "group.id": args.group, "enable.auto.commit": False,
              "auto.offset.reset": "earliest", "client.id": args.client_id}  # fmt: skip
    if args.instance_id:
        config["group.instance.id"] = args.instance_id
    if args.client == "confluent-kafka-consumer":
        # KIP-848: the coordinator assigns and times the session; clients may only pick an assignor.
        config.update({"group.protocol": "consumer", "group.remote.assignor": args.assignor})
    else:
        config.update({"group.protocol": "classic", "partition.assignment.strategy": args.assignor,
                       "session.timeout.ms": args.session_timeout_ms,
                       "heartbeat.interval.ms": max(args.session_timeout_ms // 10, 100)})  # fmt: skip
    consumer = Consumer(config)
    pending: list[tuple[int, int, bytes]] = []

    def commit_pending() -> None:
        nonlocal pending
        if not pending:
            return
        rows, pending = pending, []
        offsets = [TopicPartition(args.topic, p, o) for p, o in _next_offsets(rows).items()]
        try:
            consumer.commit(offsets=offsets, asynchronous=False)
            _record(out, rows)
        except KafkaException:
            owned = {tp.partition for tp in consumer.assignment()}
            for partition, offset in _first_offsets(rows).items():
                if partition in owned:
                    consumer.seek(TopicPartition(args.topic, partition, offset))

    def on_revoke(c, partitions, lost: bool = False) -> None:  # type: ignore[no-untyped-def]
        commit_pending()
        _held(args, "revoked", [tp.partition for tp in partitions], lost)

    def on_lost(c, partitions) -> None:  # type: ignore[no-untyped-def]
        on_revoke(c, partitions, lost=True)  # what librdkafka calls instead of on_revoke when lost

    def on_assign(c, partitions) -> None:  # type: ignore[no-untyped-def]
        _held(args, "assigned", [tp.partition for tp in partitions])

    consumer.subscribe([args.topic], on_assign=on_assign, on_revoke=on_revoke, on_lost=on_lost)
    while not STOP.is_set():
        for message in consumer.consume(num_messages=500, timeout=0.2):
            if message.error() is None:
                pending.append((message.partition(), message.offset(), message.value()))
        commit_pending()
    commit_pending()
    _held(args, "stopped", [])
    consumer.close()


def run_kafka_python(args: argparse.Namespace, out: IO[str]) -> None:
    from kafka import ConsumerRebalanceListener, KafkaConsumer, OffsetAndMetadata, TopicPartition
    from kafka.coordinator.assignors.cooperative_sticky import CooperativeStickyAssignor
    from kafka.coordinator.assignors.range import RangePartitionAssignor
    from kafka.errors import KafkaError

    assignor = {"range": RangePartitionAssignor, "cooperative-sticky": CooperativeStickyAssignor}
    consumer = KafkaConsumer(
        bootstrap_servers=args.bootstrap, group_id=args.group, enable_auto_commit=False,
        auto_offset_reset="earliest", partition_assignment_strategy=[assignor[args.assignor]],
        session_timeout_ms=args.session_timeout_ms, client_id=args.client_id,
        heartbeat_interval_ms=max(args.session_timeout_ms // 10, 100), group_instance_id=args.instance_id,
    )  # fmt: skip
    pending: list[tuple[int, int, bytes]] = []

    def commit_pending() -> None:
        nonlocal pending
        if not pending:
            return
        rows, pending = pending, []
        offsets = {
            TopicPartition(args.topic, p): OffsetAndMetadata(o, "", -1)
            for p, o in _next_offsets(rows).items()
        }
        try:
            consumer.commit(offsets)
            _record(out, rows)
        except KafkaError:
            owned = {tp.partition for tp in consumer.assignment()}
            for partition, offset in _first_offsets(rows).items():
                if partition in owned:
                    consumer.seek(TopicPartition(args.topic, partition), offset)

    class CommitOnRevoke(ConsumerRebalanceListener):
        def on_partitions_revoked(self, revoked) -> None:  # type: ignore[no-untyped-def]
            commit_pending()
            _held(args, "revoked", [tp.partition for tp in revoked])

        def on_partitions_assigned(self, assigned) -> None:  # type: ignore[no-untyped-def]
            _held(args, "assigned", [tp.partition for tp in assigned])

    consumer.subscribe([args.topic], listener=CommitOnRevoke())
    while not STOP.is_set():
        for batch in consumer.poll(timeout_ms=200, max_records=500).values():
            pending.extend((m.partition, m.offset, m.value) for m in batch)
        commit_pending()
    commit_pending()
    _held(args, "stopped", [])
    consumer.close()


async def run_aiokafka(args: argparse.Namespace, out: IO[str]) -> None:
    from aiokafka import AIOKafkaConsumer, ConsumerRebalanceListener, TopicPartition
    from aiokafka.errors import KafkaError

    consumer = AIOKafkaConsumer(
        bootstrap_servers=args.bootstrap, group_id=args.group, enable_auto_commit=False,
        auto_offset_reset="earliest", session_timeout_ms=args.session_timeout_ms,
        heartbeat_interval_ms=max(args.session_timeout_ms // 10, 100), client_id=args.client_id,
    )  # fmt: skip
    pending: list[tuple[int, int, bytes]] = []

    async def commit_pending() -> None:
        nonlocal pending
        if not pending:
            return
        rows, pending = pending, []
        offsets = {TopicPartition(args.topic, p): o for p, o in _next_offsets(rows).items()}
        try:
            await consumer.commit(offsets)
            _record(out, rows)
        except KafkaError:
            owned = {tp.partition for tp in consumer.assignment()}
            for partition, offset in _first_offsets(rows).items():
                if partition in owned:
                    consumer.seek(TopicPartition(args.topic, partition), offset)

    class CommitOnRevoke(ConsumerRebalanceListener):
        async def on_partitions_revoked(self, revoked) -> None:  # type: ignore[no-untyped-def]
            await commit_pending()

        async def on_partitions_assigned(self, assigned) -> None:  # type: ignore[no-untyped-def]
            pass

    await consumer.start()
    consumer.subscribe([args.topic], listener=CommitOnRevoke())
    try:
        while not STOP.is_set():
            for batch in (await consumer.getmany(timeout_ms=200, max_records=500)).values():
                pending.extend((m.partition, m.offset, m.value) for m in batch)
            await commit_pending()
        await commit_pending()
    finally:
        await consumer.stop()


def run_kcat(args: argparse.Namespace, out: IO[str]) -> None:
    command = [
        "kcat", "-b", args.bootstrap, "-G", args.group, args.topic, "-q", "-u", "-f", "%p\t%o\t%s\n",
        "-X", "auto.offset.reset=earliest", "-X", f"partition.assignment.strategy={args.assignor}",
        "-X", f"session.timeout.ms={args.session_timeout_ms}", "-X", f"client.id={args.client_id}",
    ]  # fmt: skip
    process = subprocess.Popen(command, stdout=subprocess.PIPE)
    assert process.stdout is not None

    def forward_stop() -> None:
        STOP.wait()
        process.terminate()

    threading.Thread(target=forward_stop, daemon=True).start()
    for line in process.stdout:
        partition, offset, value = line.rstrip(b"\n").split(b"\t", 2)
        _record(out, [(int(partition), int(offset), value)])
    process.wait()


def main() -> int:
    parser = argparse.ArgumentParser()
    parser.add_argument(
        "--client",
        required=True,
        choices=["confluent-kafka", "confluent-kafka-consumer", "kafka-python", "aiokafka", "kcat"],
    )
    parser.add_argument("--assignor", default="range")
    parser.add_argument("--bootstrap", required=True)
    parser.add_argument("--group", required=True)
    parser.add_argument("--topic", required=True)
    parser.add_argument("--out", required=True)
    parser.add_argument("--client-id", default="member")
    parser.add_argument("--session-timeout-ms", type=int, default=10000)
    parser.add_argument(
        "--instance-id", help="group.instance.id: a static member (confluent-kafka, kafka-python)"
    )
    args = parser.parse_args()
    signal.signal(signal.SIGTERM, lambda *_: STOP.set())
    signal.signal(signal.SIGINT, lambda *_: STOP.set())
    with open(args.out, "a") as out:
        if args.client.startswith("confluent-kafka"):
            run_confluent(args, out)
        elif args.client == "kafka-python":
            run_kafka_python(args, out)
        elif args.client == "aiokafka":
            asyncio.run(run_aiokafka(args, out))
        else:
            run_kcat(args, out)
    return 0


if __name__ == "__main__":
    sys.exit(main())

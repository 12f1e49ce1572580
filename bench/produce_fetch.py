"""Produce and fetch throughput through a coordinator process, beside the disk's own rate.

In one run, on one machine:
1. the raw sequential file write rate (1 MiB writes, then fsync) and read rate (after the
   pages are dropped from the cache with posix_fadvise), as the ceiling;
2. confluent-kafka producing fixed-size records to a coordinator subprocess (acks=all,
   no compression), timed from the first send until every record is acknowledged;
3. a confluent-kafka consumer fetching all of them back from offset 0;
4. a plain socket fetching them all back from offset 0 (Fetch v11, 10 MiB per partition a
   request), reading each answer's bytes without decoding the records: what the coordinator's
   fetch path serves when the client is not the bottleneck (confluent-kafka's Python consumer
   spends microseconds per record, so with 1 KiB records it measures itself);
5. a plain socket producing the same volume again as 1 MiB batches built once (acks=all,
   four requests in flight), to another topic: the coordinator's produce path, likewise.

With `--before DIR` the coordinator of another checkout (a `git worktree` of an earlier
commit) is measured the same way in the same run, right after this one.

Prints a table, saves JSON under bench/results/, and with --update-readme replaces the
table between the README's bench markers.

    python bench/produce_fetch.py [--mib 256] [--record-bytes 1024] [--partitions 3] [--before DIR]
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import socket
import struct
import subprocess
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
from connect_rebalance.protocol import codec  # noqa: E402
from connect_rebalance.protocol.api_keys import ApiKey  # noqa: E402
from connect_rebalance.protocol.codec import RequestHeader  # noqa: E402
from tests.support.batches import make_batch  # noqa: E402

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


def _read_exactly(sock: socket.socket, count: int) -> bytearray:
    buffer = bytearray(count)
    view, got = memoryview(buffer), 0
    while got < count:
        n = sock.recv_into(view[got:])
        if n == 0:
            raise ConnectionError("the coordinator closed the connection")
        got += n
    return buffer


def _next_offset(records: memoryview, offset: int) -> int:
    """The offset after the last whole batch (its header only: base offset, length, delta)."""
    position = 0
    while position + 27 <= len(records):
        base, length = struct.unpack_from(">qi", records, position)
        if position + 12 + length > len(records):
            break
        offset = base + struct.unpack_from(">i", records, position + 23)[0] + 1
        position += 12 + length
    return offset


def fetch_raw(port: int, topic: str, partitions: int, count: int) -> float:
    """Seconds to fetch every record back over a plain socket, records left undecoded."""
    sock = socket.create_connection(("127.0.0.1", port))
    offsets, fetched, correlation = [0] * partitions, 0, 0
    started = time.perf_counter()
    deadline = started + 300
    try:
        while fetched < count and time.perf_counter() < deadline:
            for p in range(partitions):
                correlation += 1
                body = codec.build_request(ApiKey.FETCH, 11, {
                    "replica_id": -1, "max_wait_ms": 0, "min_bytes": 0, "max_bytes": 50 * MIB,
                    "isolation_level": 0, "session_id": 0, "session_epoch": -1, "rack_id": "",
                    "forgotten_topics_data": [],
                    "topics": [{"topic": topic, "partitions": [{"partition": p, "current_leader_epoch": -1,
                                "fetch_offset": offsets[p], "log_start_offset": -1,
                                "partition_max_bytes": 10 * MIB}]}],
                })  # fmt: skip
                sock.sendall(
                    codec.encode_request_frame(RequestHeader(ApiKey.FETCH, 11, correlation, "raw"), body)
                )
                (size,) = struct.unpack(">i", _read_exactly(sock, 4))
                frame = memoryview(_read_exactly(sock, size))
                # v11, one topic of one partition: the records are the answer's last field.
                name_length = struct.unpack_from(">h", frame, 18)[0]
                at = 20 + name_length + 4 + 4 + 2 + 8 + 8 + 8
                aborted = struct.unpack_from(">i", frame, at)[0]
                at += 4 + max(aborted, 0) * 16 + 4
                records_length = struct.unpack_from(">i", frame, at)[0]
                records = frame[at + 4 : at + 4 + max(records_length, 0)]
                before = offsets[p]
                offsets[p] = _next_offset(records, before)
                fetched += offsets[p] - before
    finally:
        sock.close()
    seconds = time.perf_counter() - started
    if fetched != count:
        raise RuntimeError(f"fetched {fetched} of {count} records over the plain socket")
    return seconds


def produce_raw(port: int, topic: str, partitions: int, count: int, record_bytes: int) -> float:
    """Seconds to produce `count` records as 1 MiB batches over a plain socket, 4 in flight."""
    per_batch = max(1, (MIB - 4096) // (record_bytes + 16))  # under max.message.bytes (1 MiB + 12)
    batch = make_batch([os.urandom(record_bytes)] * per_batch)
    requests = []
    for p in range(partitions):
        body = codec.build_request(ApiKey.PRODUCE, 9, {
            "transactional_id": None, "acks": -1, "timeout_ms": 30000,
            "topic_data": [{"name": topic, "partition_data": [{"index": p, "records": batch}]}],
        })  # fmt: skip
        requests.append(body)
    total = -(-count // per_batch)
    sock = socket.create_connection(("127.0.0.1", port))
    started = time.perf_counter()
    sent = answered = 0
    try:
        while answered < total:
            while sent < total and sent - answered < 4:
                header = RequestHeader(ApiKey.PRODUCE, 9, sent + 1, "raw")
                sock.sendall(codec.encode_request_frame(header, requests[sent % partitions]))
                sent += 1
            (size,) = struct.unpack(">i", _read_exactly(sock, 4))
            _, answer = codec.decode_response_body(ApiKey.PRODUCE, 9, bytes(_read_exactly(sock, size)))
            error = answer.responses[0].partition_responses[0].error_code
            if error:
                raise RuntimeError(f"plain-socket produce refused: error {error}")
            answered += 1
    finally:
        sock.close()
    return time.perf_counter() - started


def measure(base: Path, args: argparse.Namespace, count: int, code_dir: Path | None) -> dict[str, float]:
    """Produce, then fetch with confluent-kafka and with a plain socket: seconds each."""
    coordinator = CoordinatorProcess(base / "data", code_dir=code_dir).start()
    try:
        admin = AdminClient({"bootstrap.servers": coordinator.bootstrap})
        topics = [NewTopic(name, args.partitions, 1) for name in ("bench", "bench-raw")]
        for future in admin.create_topics(topics).values():
            future.result(30)
        del admin  # its connection would outlive the coordinator and log reconnects
        return {
            "produce_seconds": produce(coordinator.bootstrap, "bench", count, args.record_bytes),
            "fetch_seconds": fetch(coordinator.bootstrap, "bench", args.partitions, count),
            "fetch_raw_seconds": fetch_raw(coordinator.port, "bench", args.partitions, count),
            "produce_raw_seconds": produce_raw(coordinator.port, "bench-raw", args.partitions, count,
                                               args.record_bytes),
        }  # fmt: skip
    finally:
        coordinator.stop()


def rates(seconds: dict[str, float], count: int, record_bytes: int) -> dict[str, float]:
    megabytes = count * record_bytes / MIB
    out: dict[str, float] = {}
    for what in ("produce", "produce_raw", "fetch", "fetch_raw"):
        out[f"{what}_mb_s"] = round(megabytes / seconds[f"{what}_seconds"], 1)
        out[f"{what}_records_s"] = round(count / seconds[f"{what}_seconds"])
    return out


def readme_block(result: dict) -> str:  # type: ignore[type-arg]
    write, read = result["disk_write_mb_s"], result["disk_read_mb_s"]
    before = result.get("before")
    header = "| what | goal | MB/s | records/s | of the disk's rate |"
    rule = "|---|---|---:|---:|---:|"
    if before:
        header += f" before ({result['before_commit']}): MB/s, of the disk's |"
        rule += "---:|"
    spare = " |" if before else ""
    rows = [header, rule, f"| raw sequential file write (fsync at end) | | {write:.0f} | | |{spare}",
            f"| raw sequential file read (cold) | | {read:.0f} | | |{spare}"]  # fmt: skip
    measured = [
        ("produce, plain socket, 1 MiB batches, acks=all", "produce_raw", write, "≥ 0.5 of the write"),
        ("produce, confluent-kafka, acks=all", "produce", write, "(bound by the client's per-record cost)"),
        ("fetch from offset 0, plain socket (records not decoded)", "fetch_raw", read, "≥ 0.5 of the read"),
        (
            "fetch from offset 0, confluent-kafka consumer",
            "fetch",
            read,
            "(bound by the client's per-record cost)",
        ),
    ]
    for label, key, disk, goal in measured:
        now = result["now"]
        row = (f"| {label} | {goal} | {now[f'{key}_mb_s']:.1f} | {now[f'{key}_records_s']:,} "
               f"| {now[f'{key}_mb_s'] / disk:.2f} |")  # fmt: skip
        if before:
            row += f" {before[f'{key}_mb_s']:.1f}, {before[f'{key}_mb_s'] / disk:.2f} |"
        rows.append(row)
    return "\n".join(rows) + (
        f"\n\n{result['records']:,} records of {result['record_bytes']} B ({result['mib']} MiB) "
        f"over {result['partitions']} partitions; {result['machine']}."
    )


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--mib", type=int, default=256, help="data volume to produce and fetch")
    parser.add_argument("--record-bytes", type=int, default=1024)
    parser.add_argument("--partitions", type=int, default=3)
    parser.add_argument("--before", type=Path, help="a checkout whose coordinator is measured too")
    parser.add_argument("--update-readme", action="store_true")
    args = parser.parse_args()
    count = args.mib * MIB // args.record_bytes
    out_dir = ROOT / "bench" / "results"
    out_dir.mkdir(parents=True, exist_ok=True)
    result: dict = {"records": count, "record_bytes": args.record_bytes, "mib": args.mib,  # type: ignore[type-arg]
                    "partitions": args.partitions,
                    "machine": f"{os.cpu_count()} cores, Python {platform.python_version()}"}  # fmt: skip
    with tempfile.TemporaryDirectory(prefix="bench-produce-fetch-") as tmp:
        tmp_path = Path(tmp)
        result["disk_write_mb_s"], result["disk_read_mb_s"] = raw_disk_rates(tmp_path, args.mib * MIB)
        result["now"] = rates(measure(tmp_path / "now", args, count, None), count, args.record_bytes)
        print("now", result["now"], flush=True)
        if args.before:
            before = measure(tmp_path / "before", args, count, args.before)
            result["before"] = rates(before, count, args.record_bytes)
            result["before_commit"] = subprocess.run(
                ["git", "-C", str(args.before), "rev-parse", "--short", "HEAD"],
                capture_output=True,
                text=True,
                check=False,
            ).stdout.strip()
            print("before", result["before"], flush=True)
    (out_dir / "produce_fetch.json").write_text(json.dumps(result, indent=2))
    table = readme_block(result)
    print(table)
    if args.update_readme:
        update_readme("produce_fetch", table)
    return 0


if __name__ == "__main__":
    sys.exit(main())

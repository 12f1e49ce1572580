"""What log compaction costs the requests that arrive while it runs.

One coordinator process (`log.cleaner.backoff.ms` 200) and three phases, in one run:
(a) `delete`: a one-partition topic with `cleanup.policy=delete` is filled by one producer
    connection with keyed records (2,000 keys rewritten over and over, 20 records of 100
    bytes per batch, acks=all, one request at a time): the baseline, nothing compacted;
(b) `compact`: the same fill of a topic with `cleanup.policy=compact` and `segment.bytes`
    16 MiB, so its sealed segments are compacted several times while it is being written;
(c) `offsets`: OffsetCommits of 100 partitions (50 groups in turn) fill `__consumer_offsets`
    (`offsets.topic.segment.bytes` 16 MiB), which is compacted the same way.
All the while, another connection sends ApiVersions every 20 ms (the probe: any request the
event loop holds). Each produce's or commit's latency is taken from its write to its answer.
The coordinator's log says when each compaction ran, so the figures during compactions are
given apart from the rest.

    python bench/compaction_stalls.py [--mib 48] [--update-readme]

Prints a table and saves bench/results/compaction_stalls.json.
"""

from __future__ import annotations

import argparse
import asyncio
import platform
import re
import sys
import tempfile
import time
from datetime import datetime
from pathlib import Path
from typing import Any

from kafka.record.default_records import DefaultRecordBatchBuilder

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from bench.readme_table import publish  # noqa: E402
from connect_rebalance.processes import CoordinatorProcess  # noqa: E402
from connect_rebalance.protocol.api_keys import ApiKey  # noqa: E402
from connect_rebalance.protocol.client import ProtocolClient  # noqa: E402

MIB = 1 << 20
SEGMENT_BYTES = 16 * MIB
KEYS = 2000
RECORDS_PER_BATCH = 20
VALUE = b"v" * 100
PROBE_PERIOD_S = 0.02
PHASES = ("delete", "compact", "offsets")
GOAL_MS = 100  # nothing waits for a compaction: the slowest answer during one, as without one


def keyed_batch(first: int) -> bytes:
    builder = DefaultRecordBatchBuilder(2, 0, False, -1, -1, -1, batch_size=1 << 30)
    now = int(time.time() * 1000)
    for i in range(RECORDS_PER_BATCH):
        builder.append(i, now, b"key-%05d" % ((first + i) % KEYS), VALUE, [])
    return bytes(builder.build())


def percentile(values: list[float], fraction: float) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, int(len(ordered) * fraction))] if ordered else 0.0


async def create_topic(
    client: ProtocolClient, name: str, configs: dict[str, str], partitions: int = 1
) -> None:
    answer = await client.request(ApiKey.CREATE_TOPICS, 5, {
        "topics": [{"name": name, "num_partitions": partitions, "replication_factor": 1, "assignments": [],
                    "configs": [{"name": k, "value": v} for k, v in configs.items()]}],
        "timeout_ms": 10000, "validate_only": False,
    })  # fmt: skip
    error = answer["topics"][0]["error_code"]
    assert error == 0, f"CreateTopics {name}: error {error}"


async def produce_fill(client: ProtocolClient, topic: str, total_bytes: int) -> list[tuple[float, float]]:
    """(start time, latency) of each produce until `total_bytes` of batches were acknowledged."""
    timings, written, first = [], 0, 0
    while written < total_bytes:
        records = keyed_batch(first)
        started = time.time()
        answer = await client.request(ApiKey.PRODUCE, 9, {
            "transactional_id": None, "acks": -1, "timeout_ms": 30000,
            "topic_data": [{"name": topic, "partition_data": [{"index": 0, "records": records}]}],
        })  # fmt: skip
        timings.append((started, time.time() - started))
        error = answer["responses"][0]["partition_responses"][0]["error_code"]
        assert error == 0, f"produce to {topic}: error {error}"
        written += len(records)
        first += RECORDS_PER_BATCH
    return timings


async def commit_fill(client: ProtocolClient, total_bytes: int) -> list[tuple[float, float]]:
    """OffsetCommits of 100 partitions, 50 groups in turn, until about `total_bytes` of records."""
    timings, written, n = [], 0, 0
    partitions = [{"partition_index": i, "committed_offset": 0, "committed_leader_epoch": -1,
                   "committed_metadata": "m" * 20} for i in range(100)]  # fmt: skip
    while written < total_bytes:
        for p in partitions:
            p["committed_offset"] = n
        started = time.time()
        answer = await client.request(ApiKey.OFFSET_COMMIT, 8, {
            "group_id": f"g{n % 50}", "generation_id_or_member_epoch": -1, "member_id": "",
            "group_instance_id": None, "topics": [{"name": "orders", "partitions": partitions}],
        })  # fmt: skip
        timings.append((started, time.time() - started))
        errors = {p["error_code"] for p in answer["topics"][0]["partitions"]}
        assert errors == {0}, f"OffsetCommit: errors {errors}"
        written += 100 * 60  # about 60 bytes of key and value per committed partition
        n += 1
    return timings


async def probe(client: ProtocolClient, stop: asyncio.Event) -> list[tuple[float, float]]:
    timings = []
    fields = {"client_software_name": "probe", "client_software_version": "1"}
    while not stop.is_set():
        started = time.time()
        await client.request(ApiKey.API_VERSIONS, 3, fields)
        timings.append((started, time.time() - started))
        await asyncio.sleep(PROBE_PERIOD_S)
    return timings


def compactions(log_text: str, topic: str, since: float) -> list[tuple[float, float]]:
    """(start, end) of each compaction of `topic` the coordinator logged after `since`: it logs
    when each one ended and how long it took."""
    spans = []
    for line in log_text.splitlines():
        found = re.search(r"^(\S+ \S+) .*compacted (\S+)-\d+ in (\d+) ms: (\d+) bytes freed", line)
        if found is None or found.group(2) != topic:
            continue
        end = datetime.strptime(found.group(1), "%Y-%m-%d %H:%M:%S,%f").timestamp()
        if end >= since:
            spans.append((end - int(found.group(3)) / 1000, end))
    return spans


def figures(timings: list[tuple[float, float]], spans: list[tuple[float, float]]) -> dict[str, Any]:
    def during(start: float, latency: float) -> bool:
        return any(s <= start + latency and start <= e for s, e in spans)

    inside = [lat for start, lat in timings if during(start, lat)]
    outside = [lat for start, lat in timings if not during(start, lat)]
    ms = 1000
    return {
        "count": len(timings),
        "during_count": len(inside),
        "p50_ms": round(percentile([lat for _, lat in timings], 0.5) * ms, 2),
        "p99_ms": round(percentile([lat for _, lat in timings], 0.99) * ms, 2),
        "max_ms": round(max((lat for _, lat in timings), default=0) * ms, 2),
        "during_p99_ms": round(percentile(inside, 0.99) * ms, 2),
        "during_max_ms": round(max(inside, default=0) * ms, 2),
        "outside_max_ms": round(max(outside, default=0) * ms, 2),
    }


async def phase(coordinator: CoordinatorProcess, name: str, total_bytes: int) -> dict[str, Any]:
    writer = await ProtocolClient.connect(coordinator.bootstrap, "writer")
    prober = await ProtocolClient.connect(coordinator.bootstrap, "probe")
    try:
        topic = {"delete": "baseline", "compact": "changelog", "offsets": "__consumer_offsets"}[name]
        if name == "offsets":
            await create_topic(writer, "orders", {}, partitions=100)  # the topic commits name
        else:
            await create_topic(writer, topic, {"cleanup.policy": name, "segment.bytes": str(SEGMENT_BYTES)})
        stop = asyncio.Event()
        probing = asyncio.create_task(probe(prober, stop))
        started = time.time()
        timings = await (commit_fill(writer, total_bytes) if name == "offsets" else
                         produce_fill(writer, topic, total_bytes))  # fmt: skip
        filled = time.time() - started
        await asyncio.sleep(3)  # a compaction started near the end runs while the probe goes on
        stop.set()
        probes = await probing
    finally:
        await writer.close()
        await prober.close()
    spans = compactions(coordinator.log_text(), topic, started)
    return {
        "phase": name,
        "topic": topic,
        "fill_s": round(filled, 1),
        "compactions": len(spans),
        "compaction_s": round(sum(e - s for s, e in spans), 1),
        "writes": figures(timings, spans),
        "probe": figures(probes, spans),
    }


async def run(mib: int, names: list[str]) -> list[dict[str, Any]]:
    with tempfile.TemporaryDirectory() as tmp:
        overrides = {"log.cleaner.backoff.ms": "200", "offsets.topic.segment.bytes": str(SEGMENT_BYTES)}
        coordinator = CoordinatorProcess(Path(tmp) / "data", overrides).start()
        try:
            return [await phase(coordinator, name, mib * MIB) for name in names]
        finally:
            coordinator.stop()


def readme_block(results: dict[str, Any]) -> str:
    rows = [
        "| phase | compactions (time) | writes p99 / max, ms | writes during compaction, max ms |"
        " probe p99 / max, ms | probe during compaction, max ms | goal |",
        "|---|---|---:|---:|---:|---:|---|",
    ]
    labels = {
        "delete": "produce, `cleanup.policy=delete` (baseline)",
        "compact": "produce, `cleanup.policy=compact`",
        "offsets": "OffsetCommit (`__consumer_offsets`)",
    }
    for p in results["phases"]:
        w, pr = p["writes"], p["probe"]
        during = p["compactions"] > 0
        goal = "" if p["phase"] == "delete" else f"max during compaction < {GOAL_MS} ms"
        rows.append(
            f"| {labels[p['phase']]} | {p['compactions']} ({p['compaction_s']} s)"
            f" | {w['p99_ms']} / {w['max_ms']} | {w['during_max_ms'] if during else '-'}"
            f" | {pr['p99_ms']} / {pr['max_ms']} | {pr['during_max_ms'] if during else '-'} | {goal} |"
        )
    return "\n".join(rows) + f"\n\n{results['mib']} MiB written per phase; {results['environment']}."


def main() -> None:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--mib", type=int, default=48)
    parser.add_argument("--phases", nargs="+", default=list(PHASES), choices=PHASES)
    parser.add_argument("--update-readme", action="store_true")
    args = parser.parse_args()
    phases = asyncio.run(run(args.mib, args.phases))
    results = {
        "mib": args.mib,
        "environment": f"{platform.machine()}, Python {platform.python_version()}",
        "phases": phases,
    }
    print(publish("compaction_stalls", results, args.update_readme))


if __name__ == "__main__":
    main()

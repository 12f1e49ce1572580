"""What describing a big consumer group costs the coordinator's other clients.

    python bench/describe_stalls.py [--members 2000] [--describes 10] [--before DIR]
                                    [--update-readme]

A coordinator process holds a Stable consumer group of `--members` members over 200 topics
of 10 partitions, in two shapes: each member subscribed to 20 of the topics (drawn at
random, so nearly every member's subscription is its own), and every member subscribed to
all 200 (one subscription shared by all). The members join with raw ConsumerGroupHeartbeat
v1 and reconcile until the group is Stable. Then 20 members of a small probe group heartbeat
every 100 ms each (from a process of their own, one connection each) while an admin
connection asks ConsumerGroupDescribe v1 of the big group `--describes` times, one every
0.5 s, as a monitoring exporter polls it.

Figures: the size of the answer, the time from the describe's write to its last byte's
arrival (its bytes are read, not decoded: decoding is the client's cost), and the probe's
heartbeat latencies while the describes run, beside the probe's in the two seconds before.
`--before DIR` runs the same measurement first against the coordinator of another checkout
(e.g. a `git worktree` of an earlier commit), so both columns come from one run.

Saves bench/results/describe_stalls.json and prints the table; `--update-readme` writes it
into the README.
"""

from __future__ import annotations

import argparse
import asyncio
import random
import sys
import tempfile
import time
import uuid
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from bench.heartbeats import (  # noqa: E402 - the sibling bench's members, probe and helpers
    ConsumerFleet,
    ConsumerMember,
    Probe,
    close_all,
    create_topics,
    environment,
    frame,
    percentile,
)
from bench.readme_table import publish  # noqa: E402
from connect_rebalance.processes import CoordinatorProcess  # noqa: E402
from connect_rebalance.protocol import codec  # noqa: E402
from connect_rebalance.protocol.api_keys import ApiKey  # noqa: E402
from connect_rebalance.protocol.client import ProtocolClient  # noqa: E402

BIG_GROUP, PROBE_GROUP = "bench-big", "probe"
TOPICS = {f"t{t:03d}": 10 for t in range(200)}
SHAPES = {"20 of 200 topics each": 20, "all 200 topics": 200}
# The probe's p99 while a big group forms (bench/heartbeats.py) holds here too; a poll of an
# unchanged group is answered from what the coordinator kept.
GOAL = "probe p99 < 50 ms; repeated < 10 ms"


async def timed_describe(host: str, port: int, request: bytes) -> tuple[float, bytes]:
    """One describe on a connection of its own: seconds until the answer's last byte, and it."""
    reader, writer = await asyncio.open_connection(host, port)
    try:
        sent = time.perf_counter()
        writer.write(request)
        size = int.from_bytes(await reader.readexactly(4), "big")
        answer = await reader.readexactly(size)
        return time.perf_counter() - sent, answer
    finally:
        writer.close()


async def measure(code_dir: Path | None, members: int, per_member: int, describes: int) -> dict[str, Any]:
    with tempfile.TemporaryDirectory() as tmp:
        coordinator = CoordinatorProcess(Path(tmp) / "data", code_dir=code_dir).start()
        try:
            return await _measure(coordinator.bootstrap, members, per_member, describes)
        finally:
            coordinator.stop()


async def _measure(bootstrap: str, members: int, per_member: int, describes: int) -> dict[str, Any]:
    await create_topics(bootstrap, {**TOPICS, "probe": 20})
    admin = await ProtocolClient.connect(bootstrap, "bench-admin")
    rng = random.Random(848)
    names = sorted(TOPICS)
    subscriptions = [sorted(rng.sample(names, per_member)) for _ in range(members)]
    big = ConsumerFleet(
        bootstrap,
        BIG_GROUP,
        [ConsumerMember(str(uuid.UUID(int=i + 1)), s) for i, s in enumerate(subscriptions)],
        100,
    )
    probe = ConsumerFleet(
        bootstrap, PROBE_GROUP, [ConsumerMember(f"probe-{i:02d}", ["probe"]) for i in range(20)], 20
    )
    probing = None
    try:
        await big.start()
        await big.wait_stable(admin, timeout=600)
        await big.halt()  # Stable, and stays so for the session timeout (45 s): long enough
        await probe.start()
        await probe.wait_stable(admin, timeout=60)
        await probe.halt()
        probing = Probe(bootstrap, probe.heartbeat_frames())
        await asyncio.sleep(2.0)  # the probe alone: the baseline
        request = frame(ApiKey.CONSUMER_GROUP_DESCRIBE, 1, {"group_ids": [BIG_GROUP]})
        host, port = bootstrap.rsplit(":", 1)
        started = time.perf_counter()
        took, answer = [], b""
        for _ in range(describes):
            seconds, answer = await timed_describe(host, int(port), request)
            took.append(seconds)
            await asyncio.sleep(0.5)
        ended = time.perf_counter()
        seen = await probing.finish()
    finally:
        await close_all(probing, big, probe, admin)
    _, body = codec.decode_response_body(ApiKey.CONSUMER_GROUP_DESCRIBE, 1, answer)
    described = codec.response_fields(body)["groups"][0]
    assert described["group_state"] == "Stable" and len(described["members"]) == members, described[
        "group_state"
    ]
    samples = [(sent, latency) for member in seen for sent, latency, _ in member]
    before = sorted(latency for sent, latency in samples if sent < started)
    during = sorted(latency for sent, latency in samples if started <= sent <= ended)
    repeated = sorted(took[1:])  # the group unchanged since the first
    return {
        "answer_bytes": len(answer) + 4,
        "describe_first_ms": round(took[0] * 1000, 1),
        "describe_repeated_p50_ms": round(percentile(repeated, 0.5) * 1000, 1),
        "describe_repeated_max_ms": round(repeated[-1] * 1000, 1),
        "probe_before_p99_ms": round(percentile(before, 0.99) * 1000, 1),
        "probe_p99_ms": round(percentile(during, 0.99) * 1000, 1),
        "probe_max_ms": round(during[-1] * 1000, 1),
        "probe_heartbeats_during": len(during),
    }


def readme_block(results: dict[str, Any]) -> str:
    runs = [r for r in ("before", "now") if any(r in s for s in results["shapes"])]
    describe_heads = "".join(f" describe first / repeated p50 / max, ms ({r}) |" for r in runs)
    probe_heads = "".join(f" probe p99 / max during describes, ms ({r}) |" for r in runs)
    lines = [
        f"| subscriptions ({results['members']:,} members) | answer |{describe_heads}{probe_heads}"
        " probe p99 alone, ms | goal |",
        "|---|---:|" + "---:|" * (2 * len(runs)) + "---:|---|",
    ]
    for shape in results["shapes"]:
        cells = [
            f"{r['describe_first_ms']} / {r['describe_repeated_p50_ms']} / {r['describe_repeated_max_ms']}"
            for r in (shape[run] for run in runs)
        ]
        cells += [f"{r['probe_p99_ms']} / {r['probe_max_ms']}" for r in (shape[run] for run in runs)]
        lines.append(
            f"| {shape['shape']} | {shape['now']['answer_bytes'] / 2**20:.1f} MiB | {' | '.join(cells)} "
            f"| {shape['now']['probe_before_p99_ms']} | {GOAL} |"
        )
    lines += [
        "",
        f"ConsumerGroupDescribe v1 of the big group {results['describes']} times, one every 0.5 s (the "
        f"group unchanged after the first); 20 probe members heartbeating every 100 ms; "
        f"{results['environment']}.",
    ]
    return "\n".join(lines)


async def run(args: argparse.Namespace) -> dict[str, Any]:
    results: dict[str, Any] = {
        "members": args.members, "describes": args.describes, "environment": environment(), "shapes": [],
    }  # fmt: skip
    for shape, per_member in SHAPES.items():
        entry: dict[str, Any] = {"shape": shape, "topics_per_member": per_member}
        for name, code_dir in (("before", args.before), ("now", None)):
            if name == "before" and code_dir is None:
                continue
            entry[name] = await measure(code_dir, args.members, per_member, args.describes)
            print(f"{shape}, {name}: {entry[name]}", flush=True)
        results["shapes"].append(entry)
    return results


def main() -> int:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--members", type=int, default=2000)
    parser.add_argument("--describes", type=int, default=10)
    parser.add_argument("--before", type=Path, help="a checkout whose coordinator is measured first")
    parser.add_argument("--update-readme", action="store_true")
    args = parser.parse_args()
    print(publish("describe_stalls", asyncio.run(run(args)), args.update_readme))
    return 0


if __name__ == "__main__":
    sys.exit(main())

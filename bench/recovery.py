"""What a coordinator restart costs its clients, against the history `__consumer_offsets` holds.

For each size (offset commits written before the crash), in one run:
- a coordinator on a fresh data directory gets `size` committed offsets
  (tests/support/offset_history.py: OffsetCommits of all 1,000 partitions of one of 50
  groups at a time, 50,000 live offsets whatever the history), a data topic, and one classic
  group member (session 45 s, a consumer's default) that joined before the crash;
- it is killed with SIGKILL and started again on the same data directory and ports;
- from the new process's spawn: when ApiVersions is answered, when a Produce (acks=all) and a
  Fetch of what it wrote succeed, and when the member's Heartbeat succeeds (the group is
  served and the member kept its session across the restart);
- then every committed offset of the 50 groups is read back and compared.
An empty data directory's start is measured the same way first: the baseline of the goals.

    python bench/recovery.py [--sizes 100000,1000000,5000000] [--before DIR] [--update-readme]

`--before DIR` measures the coordinator of another checkout (e.g. a `git worktree` of an
earlier commit) the same way in the same run, each size right after this one's.

Prints a table and saves bench/results/recovery.json.
"""

from __future__ import annotations

import argparse
import asyncio
import os
import platform
import subprocess
import sys
import tempfile
import threading
import time
from datetime import datetime
from pathlib import Path
from typing import Any

from kafka.record.default_records import DefaultRecordBatch

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from bench.readme_table import publish  # noqa: E402
from connect_rebalance.processes import CoordinatorProcess  # noqa: E402
from connect_rebalance.protocol.api_keys import ApiKey  # noqa: E402
from connect_rebalance.protocol.client import ProtocolClient  # noqa: E402
from tests.support.batches import make_batch  # noqa: E402
from tests.support.offset_history import create_topic, offsets_read_back_wrong, write_history  # noqa: E402

DATA_TOPIC, PROBE_GROUP = "data", "probe-group"
SESSION_MS = 45000
POLL_S = 0.02
DATA_GOAL_S = 1.0  # data requests served within this of an empty coordinator's start
GROUP_GOAL_S = 3.0  # group requests served within this of the spawn


async def join_probe_member(client: ProtocolClient) -> tuple[str, int]:
    fields = {"group_id": PROBE_GROUP, "session_timeout_ms": SESSION_MS, "rebalance_timeout_ms": 10000,
              "member_id": "", "group_instance_id": None, "protocol_type": "consumer",
              "protocols": [{"name": "range", "metadata": b""}], "reason": None}  # fmt: skip
    answer = await client.request(ApiKey.JOIN_GROUP, 8, fields)
    if answer["error_code"] == 79:  # MEMBER_ID_REQUIRED: join again with the id it gave
        answer = await client.request(ApiKey.JOIN_GROUP, 8, {**fields, "member_id": answer["member_id"]})
    assert answer["error_code"] == 0, f"JoinGroup: {answer}"
    member, generation = answer["member_id"], answer["generation_id"]
    synced = await client.request(ApiKey.SYNC_GROUP, 5, {
        "group_id": PROBE_GROUP, "generation_id": generation, "member_id": member, "group_instance_id": None,
        "protocol_type": "consumer", "protocol_name": "range",
        "assignments": [{"member_id": member, "assignment": b""}],
    })  # fmt: skip
    assert synced["error_code"] == 0, f"SyncGroup: {synced}"
    return member, generation


async def produce_and_fetch(client: ProtocolClient) -> bool:
    """A Produce (acks=all) to the data topic, then a Fetch that reads it back."""
    value = b"after-restart-%d" % time.monotonic_ns()
    batch = make_batch([value], [int(time.time() * 1000)])
    answer = await client.request(ApiKey.PRODUCE, 9, {
        "transactional_id": None, "acks": -1, "timeout_ms": 10000,
        "topic_data": [{"name": DATA_TOPIC, "partition_data": [{"index": 0, "records": batch}]}],
    })  # fmt: skip
    produced = answer["responses"][0]["partition_responses"][0]
    if produced["error_code"] != 0:
        return False
    fetched = await client.request(ApiKey.FETCH, 11, {
        "replica_id": -1, "max_wait_ms": 0, "min_bytes": 1, "max_bytes": 1 << 20, "isolation_level": 0,
        "session_id": 0, "session_epoch": -1, "rack_id": "", "forgotten_topics_data": [],
        "topics": [{"topic": DATA_TOPIC, "partitions": [{"partition": 0, "current_leader_epoch": -1,
                    "fetch_offset": produced["base_offset"], "log_start_offset": -1,
                    "partition_max_bytes": 1 << 20}]}],
    })  # fmt: skip
    partition = fetched["responses"][0]["partitions"][0]
    records = partition["records"] or b""
    values = [bytes(r.value) for r in DefaultRecordBatch(bytearray(records))] if records else []
    return partition["error_code"] == 0 and value in values


async def heartbeat(client: ProtocolClient, member: str, generation: int) -> int:
    answer = await client.request(ApiKey.HEARTBEAT, 4, {
        "group_id": PROBE_GROUP, "generation_id": generation, "member_id": member, "group_instance_id": None,
    })  # fmt: skip
    return int(answer["error_code"])


async def when_served(port: int, spawned: float, member: tuple[str, int] | None) -> dict[str, float]:
    """Seconds from the spawn until ApiVersions, produce + fetch, and the member's heartbeat
    first succeed (polled every 20 ms, each on a connection made as soon as the port accepts)."""
    client: ProtocolClient | None = None
    found: dict[str, float] = {}
    deadline = spawned + 300
    while time.monotonic() < deadline and len(found) < (3 if member else 2):
        try:
            if client is None:
                client = await ProtocolClient.connect(f"127.0.0.1:{port}", "recovery-bench")
            if "api_versions" not in found:
                await client.request(ApiKey.API_VERSIONS, 3, {"client_software_name": "bench",
                                                              "client_software_version": "1"})  # fmt: skip
                found["api_versions"] = time.monotonic() - spawned
            if "produce_fetch" not in found and await produce_and_fetch(client):
                found["produce_fetch"] = time.monotonic() - spawned
            if member and "heartbeat" not in found:
                code = await heartbeat(client, *member)
                if code == 0:
                    found["heartbeat"] = time.monotonic() - spawned
                elif code not in (14, 15, 16):  # LOAD_IN_PROGRESS, NOT_AVAILABLE, NOT_COORDINATOR
                    raise AssertionError(f"the member's heartbeat after the restart: error {code}")
        except OSError:
            if client is not None:
                await client.close()
            client = None
        await asyncio.sleep(POLL_S)
    if client is not None:
        await client.close()
    return found


def start_timed(
    coordinator: CoordinatorProcess, port: int, member: tuple[str, int] | None
) -> dict[str, float]:
    """Start the coordinator process on a thread and time it from here (its spawn)."""
    failure: list[BaseException] = []

    def start() -> None:
        try:
            coordinator.start(timeout=300)
        except BaseException as exc:  # noqa: BLE001 - reported below
            failure.append(exc)

    spawned = time.monotonic()
    thread = threading.Thread(target=start)
    thread.start()
    found = asyncio.run(when_served(port, spawned, member))
    thread.join()
    if failure:
        raise failure[0]
    return found


def measure(size: int, base: Path, code_dir: Path | None = None) -> dict[str, Any]:
    coordinator = CoordinatorProcess(
        base / f"data-{size}-{'before' if code_dir else 'now'}", code_dir=code_dir
    )
    coordinator.start()
    port = coordinator.port

    async def prepare() -> tuple[float, tuple[str, int]]:
        rate = await write_history(coordinator.bootstrap, size) if size else 0.0
        client = await ProtocolClient.connect(coordinator.bootstrap, "recovery-bench")
        try:
            await create_topic(client, DATA_TOPIC, 1)
            return rate, await join_probe_member(client)
        finally:
            await client.close()

    try:
        rate, member = asyncio.run(prepare())
        offsets_log = coordinator.data_dir / "topics" / "__consumer_offsets"
        log_bytes = sum(f.stat().st_size for f in offsets_log.glob("*/*.log"))
        coordinator.kill()
        served = start_timed(coordinator, port, member)

        wrong = asyncio.run(offsets_read_back_wrong(coordinator.bootstrap, size)) if size else 0
    finally:
        coordinator.stop()
    return {"commits": size, "fill_commits_per_s": round(rate),
            "offsets_log_mib": round(log_bytes / 2**20, 1), **{k: round(v, 2) for k, v in served.items()},
            "offsets_read_back_wrong": wrong}  # fmt: skip


def baseline(base: Path) -> float:
    """Seconds from the spawn of a coordinator with nothing but a data topic until ApiVersions
    is answered."""
    coordinator = CoordinatorProcess(base / "data-empty")
    coordinator.start()
    port = coordinator.port

    async def data_topic() -> None:
        client = await ProtocolClient.connect(coordinator.bootstrap, "recovery-bench")
        try:
            await create_topic(client, DATA_TOPIC, 1)
        finally:
            await client.close()

    asyncio.run(data_topic())
    coordinator.kill()
    try:
        return round(start_timed(coordinator, port, None)["api_versions"], 2)
    finally:
        coordinator.stop()


def readme_block(results: dict[str, Any]) -> str:
    empty = results["empty_start_s"]
    lines = [
        f"Coordinator restart after `kill -9` ({results['machine']}, {results['date']}; "
        f"empty data directory: ApiVersions after {empty:.2f} s; 50 groups × 1,000 partitions, "
        "50,000 live offsets). Seconds from the new process's spawn:",
        "",
        "| offset commits in history | `__consumer_offsets` | ApiVersions "
        f"| produce + fetch (goal ≤ {empty + DATA_GOAL_S:.1f}) "
        f"| member's heartbeat (goal ≤ {GROUP_GOAL_S:.0f}) | offsets read back wrong (goal 0) |",
        "|---:|---:|---:|---:|---:|---:|",
    ]
    before = {row["commits"]: row for row in results.get("before") or []}
    for row in results["rows"]:
        lines.append(_row(f"{row['commits']:,}", row))
        if row["commits"] in before:
            lines.append(
                _row(f"{row['commits']:,} before ({results['before_commit']})", before[row["commits"]])
            )
    return "\n".join(lines)


def _row(label: str, row: dict[str, Any]) -> str:
    return (
        f"| {label} | {row['offsets_log_mib']} MiB | {row['api_versions']:.2f} "
        f"| {row['produce_fetch']:.2f} | {row['heartbeat']:.2f} | {row['offsets_read_back_wrong']} |"
    )


def _commit_of(checkout: Path | None) -> str | None:
    if checkout is None:
        return None
    found = subprocess.run(["git", "-C", str(checkout), "rev-parse", "--short", "HEAD"], capture_output=True,
                           text=True, check=False)  # fmt: skip
    return found.stdout.strip() or str(checkout)


def main() -> None:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--sizes", default="100000,1000000,5000000")
    parser.add_argument("--before", type=Path, help="a checkout whose coordinator is measured too")
    parser.add_argument("--update-readme", action="store_true")
    args = parser.parse_args()
    sizes = [int(s) for s in args.sizes.split(",")]
    with tempfile.TemporaryDirectory(prefix="recovery-bench-") as tmp:
        empty = baseline(Path(tmp))
        print(f"empty data directory: ApiVersions after {empty:.2f} s", flush=True)
        rows, before = [], []
        for size in sizes:
            row = measure(size, Path(tmp))
            print(row, flush=True)
            rows.append(row)
            if args.before:
                row = measure(size, Path(tmp), args.before)
                print("before:", row, flush=True)
                before.append(row)
    results = {"machine": f"{platform.machine()}, {os.cpu_count()} cores",
               "date": datetime.now().strftime("%Y-%m-%d"), "empty_start_s": empty, "rows": rows,
               "before": before, "before_commit": _commit_of(args.before)}  # fmt: skip
    print(publish("recovery", results, args.update_readme))


if __name__ == "__main__":
    main()

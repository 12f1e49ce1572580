"""100,000 partitions on one coordinator run with `ulimit -n 4096`.

In one run, against a coordinator process started with that limit:
- 10 topics of 10,000 partitions are created one CreateTopics each (timed);
- one record is produced to every partition (Produce requests of 1,000 partitions, acks=1),
  then every partition is fetched from offset 0 (Fetch requests of 1,000 partitions) and the
  records read back are counted;
- the coordinator is killed with SIGKILL and started again on the same data: seconds from the
  spawn until ApiVersions is answered, then until a Fetch of the last partition is;
- throughout, a probe asks for one small topic's Metadata every 10 ms on its own connection
  (its latencies, per phase), and the process's open descriptors (/proc/<pid>/fd) and resident
  memory are sampled every 100 ms.

    python bench/partitions.py [--topics 10] [--partitions 10000] [--open-files 4096]
                               [--before DIR] [--update-readme]

`--before DIR` runs the coordinator of another checkout (a `git worktree` of an earlier
commit) the same way in the same run; where it fails, the failure is the figure.

Prints a table and saves bench/results/partitions.json.
"""

from __future__ import annotations

import argparse
import os
import platform
import re
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
from tests.support.batches import make_batch  # noqa: E402
from tests.support.wire import RawConnection  # noqa: E402

PROBE_TOPIC = "probe"
CHUNK = 1000  # partitions per Produce or Fetch request
P99_GOAL_MS = 50


class Sampler:
    """The probe's Metadata latencies by phase, and the process's descriptors and RSS."""

    def __init__(self, coordinator: CoordinatorProcess) -> None:
        self.coordinator = coordinator
        self.phase = "idle"
        self.latencies: dict[str, list[float]] = {}
        self.most_fds = 0
        self.most_rss_mb = 0.0
        self._stop = threading.Event()
        self._threads = [threading.Thread(target=self._probe, daemon=True),
                         threading.Thread(target=self._resources, daemon=True)]  # fmt: skip
        for thread in self._threads:
            thread.start()

    def _probe(self) -> None:
        request = {"topics": [{"name": PROBE_TOPIC, "topic_id": None}], "allow_auto_topic_creation": False}
        conn: RawConnection | None = None
        while not self._stop.is_set():
            started = time.monotonic()
            try:
                conn = conn or RawConnection(self.coordinator.bootstrap, timeout=60)
                conn.request(ApiKey.METADATA, 12, request)
            except (OSError, AssertionError):  # the coordinator restarting
                conn = None
                time.sleep(0.05)
                continue
            self.latencies.setdefault(self.phase, []).append(time.monotonic() - started)
            time.sleep(0.01)

    def _resources(self) -> None:
        while not self._stop.is_set():
            process = self.coordinator.process
            if process is not None and process.poll() is None:
                try:
                    self.most_fds = max(self.most_fds, len(os.listdir(f"/proc/{process.pid}/fd")))
                    status = Path(f"/proc/{process.pid}/status").read_text()
                    rss = next(
                        int(line.split()[1]) for line in status.splitlines() if line.startswith("VmRSS")
                    )
                    self.most_rss_mb = max(self.most_rss_mb, rss / 1024)
                except (OSError, StopIteration):
                    pass
            time.sleep(0.1)

    def stop(self) -> None:
        self._stop.set()
        for thread in self._threads:
            thread.join(60)

    def percentiles(self) -> dict[str, dict[str, float]]:
        out = {}
        for phase, values in self.latencies.items():
            ordered = sorted(values)
            out[phase] = {"count": len(ordered), "p50_ms": round(ordered[len(ordered) // 2] * 1000, 1),
                          "p99_ms": round(ordered[int(len(ordered) * 0.99)] * 1000, 1),
                          "max_ms": round(ordered[-1] * 1000, 1)}  # fmt: skip
        return out


def create_topic(conn: RawConnection, name: str, partitions: int) -> None:
    answer = conn.request(ApiKey.CREATE_TOPICS, 7, {
        "topics": [{"name": name, "num_partitions": partitions, "replication_factor": 1, "assignments": [],
                    "configs": []}],
        "timeout_ms": 600000, "validate_only": False,
    })  # fmt: skip
    result = answer.topics[0]
    if result.error_code:
        raise RuntimeError(f"CreateTopics {name}: error {result.error_code}: {result.error_message}")


def produce_everywhere(conn: RawConnection, topics: list[str], partitions: int) -> int:
    """One record per partition; the number of partitions that refused it."""
    failed = 0
    for topic in topics:
        for first in range(0, partitions, CHUNK):
            data = [{"index": p, "records": make_batch([b"%s-%d" % (topic.encode(), p)])}
                    for p in range(first, min(first + CHUNK, partitions))]  # fmt: skip
            answer = conn.request(ApiKey.PRODUCE, 9, {
                "transactional_id": None, "acks": 1, "timeout_ms": 30000,
                "topic_data": [{"name": topic, "partition_data": data}],
            })  # fmt: skip
            failed += sum(1 for p in answer.responses[0].partition_responses if p.error_code)
    return failed


def fetch_everywhere(conn: RawConnection, topics: list[str], partitions: int) -> int:
    """Records read back from offset 0 of every partition."""
    read = 0
    for topic in topics:
        for first in range(0, partitions, CHUNK):
            wanted = [{"partition": p, "current_leader_epoch": -1, "fetch_offset": 0, "log_start_offset": -1,
                       "partition_max_bytes": 4096}
                      for p in range(first, min(first + CHUNK, partitions))]  # fmt: skip
            answer = conn.request(ApiKey.FETCH, 11, {
                "replica_id": -1, "max_wait_ms": 0, "min_bytes": 0, "max_bytes": 64 << 20,
                "isolation_level": 0,
                "session_id": 0, "session_epoch": -1, "rack_id": "", "forgotten_topics_data": [],
                "topics": [{"topic": topic, "partitions": wanted}],
            })  # fmt: skip
            for part in answer.responses[0].partitions:
                if part.error_code == 0 and part.records:
                    read += sum(1 for _ in DefaultRecordBatch(bytearray(part.records)))
    return read


def until_served(coordinator: CoordinatorProcess, topic: str, partition: int) -> tuple[float, float]:
    """Kill -9, start again: seconds from the spawn to ApiVersions and to a Fetch of `partition`."""
    coordinator.kill()
    spawned = time.monotonic()
    coordinator.start(timeout=600)
    conn = RawConnection(coordinator.bootstrap, timeout=60)
    try:
        conn.request(
            ApiKey.API_VERSIONS, 3, {"client_software_name": "bench", "client_software_version": "1"}
        )
        api_versions = time.monotonic() - spawned
        answer = conn.request(ApiKey.FETCH, 11, {
            "replica_id": -1, "max_wait_ms": 0, "min_bytes": 0, "max_bytes": 1 << 20, "isolation_level": 0,
            "session_id": 0, "session_epoch": -1, "rack_id": "", "forgotten_topics_data": [],
            "topics": [{"topic": topic, "partitions": [{"partition": partition, "current_leader_epoch": -1,
                        "fetch_offset": 0, "log_start_offset": -1, "partition_max_bytes": 4096}]}],
        })  # fmt: skip
        assert answer.responses[0].partitions[0].error_code == 0, answer
        return api_versions, time.monotonic() - spawned
    finally:
        conn.close()


def measure(
    base: Path, topics: int, partitions: int, open_files: int, code_dir: Path | None
) -> dict[str, Any]:
    base.mkdir(parents=True)
    coordinator = CoordinatorProcess(base / "data", open_files_limit=open_files, code_dir=code_dir)
    coordinator.start()
    sampler = Sampler(coordinator)
    result: dict[str, Any] = {"open_files_limit": open_files}
    conn = RawConnection(coordinator.bootstrap, timeout=600)
    names = [f"wide-{i}" for i in range(topics)]
    try:
        create_topic(conn, PROBE_TOPIC, 1)
        sampler.phase = "create"
        started = time.monotonic()
        for count, name in enumerate(names):
            try:
                create_topic(conn, name, partitions)
            except RuntimeError as exc:
                result["failed"] = f"after {count * partitions:,} partitions: {exc}"
                return result
        result["create_s"] = round(time.monotonic() - started, 1)
        sampler.phase = "produce"
        started = time.monotonic()
        result["produce_refused"] = produce_everywhere(conn, names, partitions)
        result["produce_s"] = round(time.monotonic() - started, 1)
        sampler.phase = "fetch"
        started = time.monotonic()
        result["records_read_back"] = fetch_everywhere(conn, names, partitions)
        result["fetch_s"] = round(time.monotonic() - started, 1)
        conn.close()
        sampler.phase = "restart"
        api_versions, fetched = until_served(coordinator, names[-1], partitions - 1)
        result.update(restart_api_versions_s=round(api_versions, 2), restart_fetch_s=round(fetched, 2))
        sampler.phase = "idle"
        return result
    finally:
        conn.close()
        sampler.stop()
        coordinator.kill()
        result.update(partitions=topics * partitions, most_descriptors=sampler.most_fds,
                      most_rss_mb=round(sampler.most_rss_mb), probe=sampler.percentiles())  # fmt: skip


def readme_block(results: dict[str, Any]) -> str:
    now, before = results["now"], results.get("before")
    lines = [
        f"{now['partitions']:,} partitions (10 topics of 10,000) on one coordinator under `ulimit -n "
        f"{now['open_files_limit']}` ({results['machine']}, {results['date']}); a probe asks for one "
        "topic's Metadata every 10 ms throughout:",
        "",
        "| | goal | now |" + (f" before ({results['before_commit']}) |" if before else ""),
        "|---|---|---|" + ("---|" if before else ""),
    ]
    goal_ms = f"p99 < {P99_GOAL_MS} ms"
    rows = [
        ("partitions created", f"{now['partitions']:,}", _created),
        ("probe Metadata p99 / max while creating", goal_ms, lambda r: _probe(r, "create")),
        ("one record to every partition: refused, time", "0 refused", _produced),
        ("probe p99 / max while producing", goal_ms, lambda r: _probe(r, "produce")),
        ("records fetched back from offset 0", f"{now['partitions']:,}", _fetched),
        ("probe p99 / max while fetching", goal_ms, lambda r: _probe(r, "fetch")),
        (
            "descriptors open, most at once",
            f"≤ {now['open_files_limit']:,}",
            lambda r: f"{r['most_descriptors']:,}",
        ),
        ("resident memory, most", "", lambda r: f"{r['most_rss_mb']:,} MB"),
        ("start after kill -9: ApiVersions / a Fetch of the last partition", "", _restarted),
    ]
    for label, goal, cell in rows:
        lines.append(f"| {label} | {goal} | {cell(now)} |" + (f" {cell(before)} |" if before else ""))
    return "\n".join(lines)


def _created(row: dict[str, Any]) -> str:
    if "failed" in row:  # "after N partitions: CreateTopics ...: [Errno 24] Too many open files: '<path>'"
        reason = re.search(r"\[Errno \d+\][^:']*", row["failed"])
        return f"failed {row['failed'].split(':')[0]}: {reason[0].strip() if reason else row['failed']}"
    return f"{row['partitions']:,} in {row['create_s']} s"


def _produced(row: dict[str, Any]) -> str:
    return "—" if "failed" in row else f"{row['produce_refused']} refused, {row['produce_s']} s"


def _fetched(row: dict[str, Any]) -> str:
    return "—" if "failed" in row else f"{row['records_read_back']:,} in {row['fetch_s']} s"


def _restarted(row: dict[str, Any]) -> str:
    return "—" if "failed" in row else f"{row['restart_api_versions_s']} s / {row['restart_fetch_s']} s"


def _probe(row: dict[str, Any], phase: str) -> str:
    found = row.get("probe", {}).get(phase)
    return f"{found['p99_ms']} / {found['max_ms']} ms" if found else "—"


def main() -> None:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--topics", type=int, default=10)
    parser.add_argument("--partitions", type=int, default=10000)
    parser.add_argument("--open-files", type=int, default=4096)
    parser.add_argument("--before", type=Path, help="a checkout whose coordinator is measured too")
    parser.add_argument("--update-readme", action="store_true")
    args = parser.parse_args()
    results: dict[str, Any] = {"machine": f"{os.cpu_count()} cores, Python {platform.python_version()}",
                               "date": datetime.now().strftime("%Y-%m-%d")}  # fmt: skip
    with tempfile.TemporaryDirectory(prefix="partitions-bench-") as tmp:
        results["now"] = measure(Path(tmp) / "now", args.topics, args.partitions, args.open_files, None)
        print(results["now"])
        if args.before:
            results["before"] = measure(Path(tmp) / "before", args.topics, args.partitions, args.open_files,
                                        args.before)  # fmt: skip
            results["before_commit"] = subprocess.run(
                ["git", "-C", str(args.before), "rev-parse", "--short", "HEAD"],
                capture_output=True,
                text=True,
                check=False,
            ).stdout.strip()
            print(results["before"])
    print(publish("partitions", results, args.update_readme))


if __name__ == "__main__":
    main()

"""The README's summary of headline figures, each read from its benchmark's saved results.

Not a benchmark of its own: `readme_block` picks one or two figures from each of the other
benchmarks' JSON (`bench/results/<name>.json`, written by their latest runs), with the goal
each is measured against, so that the README's first view of performance is as checked as
the full tables in docs/performance.md (`tests/unit/test_readme_figures.py`).
Run `python -m bench.headline` to rewrite the block after any of those benchmarks ran.
"""

from __future__ import annotations

import statistics
from typing import Any

from bench.librdkafka_suite import summary_line
from bench.readme_table import results_of, update_readme


def _connect(protocol: str, event: str) -> dict[str, Any]:
    runs = results_of("connect_rebalance")["results"]
    return next(
        r for r in runs if (r["protocol"], r["workers"], r["tasks"], r["event"]) == (protocol, 3, 100, event)
    )


def _handoff_gap(kind: str, connector: str = "TopicIngest") -> float:
    moves = results_of("ingest")["handoffs"]
    return statistics.median(m["gap_s"] for m in moves if m["kind"] == kind and m["master"] == "local[2]"
                             and m.get("connector", "TopicIngest") == connector)  # fmt: skip


def readme_block(_results: None = None) -> str:
    heartbeats = results_of("heartbeats")["consumer"]
    produce_fetch = results_of("produce_fetch")
    now = produce_fetch["now"]
    [restart] = [row for row in results_of("recovery")["rows"] if row["commits"] == 1_000_000]
    partitions = results_of("partitions")["now"]
    join, eager = _connect("connect + incremental", "join"), _connect("connect + eager", "join")
    soak = results_of("soak")
    densities = results_of("density")
    density = next(r for r in densities["runs"] if r["tasks"] == 16 and r["connector"] == "TopicIngest")
    density_reference = densities["reference_rows_per_s"]
    write_share = now["produce_raw_mb_s"] / produce_fetch["disk_write_mb_s"]
    read_share = now["fetch_raw_mb_s"] / produce_fetch["disk_read_mb_s"]
    lost = sum(soak["acked_not_consumed"].values())
    rows = [
        ("ConsumerGroupHeartbeat answered per second, a 1,000-member group over TCP", "≥ 20,000",
         f"{heartbeats['per_second']:,}, p99 {heartbeats['p99_ms']} ms"),
        ("produce, acks=all, 1 MiB batches: MB/s, and share of the disk's write rate", "≥ 0.5",
         f"{now['produce_raw_mb_s']:,.0f} MB/s, {write_share:.2f}"),
        ("fetch from offset 0: MB/s, and share of the disk's cold read rate", "≥ 0.5",
         f"{now['fetch_raw_mb_s']:,.0f} MB/s, {read_share:.2f}"),
        ("restart after kill -9 with 1,000,000 offset commits: a member's heartbeat answered after", "≤ 3 s",
         f"{restart['heartbeat']} s"),
        ("100,000 partitions on one node: created in, Metadata p99 meanwhile", "p99 < 50 ms",
         f"{partitions['create_s']} s, {partitions['probe']['create']['p99_ms']} ms"),
        ("a worker joins 3 workers x 100 tasks: connectors and tasks stopped, balanced in",
         "only what moves",
         f"{join['stopped']} in {join['seconds']} s (eager: {eager['stopped']} in {eager['seconds']} s)"),
        ("a Spark task handed to a joining worker: rows not read for (TopicIngest, FileIngest)", "≤ 1 s",
         f"{_handoff_gap('join'):.2f} s, {_handoff_gap('join', 'FileIngest'):.2f} s"),
        (f"{density['tasks']} TopicIngest tasks on one 2-core worker: tasks ever FAILED, reading a backlog "
         "against one raw confluent-kafka consumer", "0, ≥ 0.5",
         f"{len(density['failed'])}, {density['rows_per_s'] / density_reference:.2f}"),
        (f"soak, {soak['minutes']:.0f} minutes: acknowledged records never consumed, workers' sequence gaps",
         "0, 0", f"{lost} of {soak['records_acked']:,}, {soak['worker_sequence_gaps']}"),
        ("librdkafka's own broker tests, unchanged ([docs/conformance.md](docs/conformance.md)): passed, "
         "per group protocol", "all but transactions and more than one node",
         summary_line(results_of("librdkafka_suite"))),
    ]  # fmt: skip
    lines = ["| | goal | latest run |", "|---|---|---|"]
    lines += [f"| {what} | {goal} | {now_} |" for what, goal, now_ in rows]
    return "\n".join(lines)


def main() -> None:
    block = readme_block()
    update_readme("headline", block)
    print(block)


if __name__ == "__main__":
    main()

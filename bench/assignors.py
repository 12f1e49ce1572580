"""Server-side assignors at the shapes of Apache Kafka's ServerSideAssignorBenchmark.

Shapes (Kafka's jmh-benchmarks ServerSideAssignorBenchmark and AssignorBenchmarkUtils): members
100 / 1,000 / 5,000 / 10,000; 10 partitions per member spread evenly over 100 or 1,000 topics;
homogeneous (everyone subscribes to every topic) or heterogeneous (members and topics cut into
5 buckets, each bucket's members subscribing to its topics); full (no member holds anything) or
incremental (the target of M - 1 members, then one member joins: all topics for homogeneous,
the previous member's subscription for heterogeneous). No racks.

Two figures per shape, each the median CPU time of repeated runs:
- `assignor`: `assignor.target(spec)` plus the per-member partition view of the result
  (`MemberPartitions`), from a `GroupSpec` built before timing. This is what Kafka's benchmark
  times: its assignor is handed a prebuilt GroupSpec (members, subscriptions, the current target
  and its inverted index) and returns each member's partitions.
- `coordinator call`: `assignor.assign(members, partitions_of)`, as the consumer-group core calls
  it, from `AssignmentMember`s holding frozensets of `(topic, partition)` to such frozensets
  per member: both conversions included. Members of a bucket share one subscription object
  (Kafka's benchmark also shares one topic list); the incremental members hold the sets the
  previous assignment returned, as the coordinator does.

Kafka's figures are the JMH averages published in Apache Kafka's pull requests (source named
per figure); shapes without a published figure are marked so. Goals: at or below Kafka's
figure for homogeneous shapes; heterogeneous within 10x of homogeneous at the same size; no
shape over 1 s.

    python bench/assignors.py [--quick] [--update-readme]

Prints a table, saves bench/results/assignors.json and bench/results/assignors.png.
"""

from __future__ import annotations

import argparse
import json
import math
import os
import platform
import statistics
import sys
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from bench.readme_table import update_readme  # noqa: E402
from coordinator.assignors import (  # noqa: E402
    ASSIGNORS,
    AssignmentMember,
    MemberPartitions,
    group_spec,
)

MEMBERS = (100, 1000, 5000, 10000)
TOPICS = (100, 1000)
PARTITIONS_PER_MEMBER = 10
BUCKETS = 5  # Kafka's MAX_BUCKET_COUNT for heterogeneous subscriptions
SUBSCRIPTIONS = ("homogeneous", "heterogeneous")
EVENTS = ("full", "incremental")
CEILING_MS = 1000.0
HETEROGENEOUS_FACTOR = 10

PR_16504 = "apache/kafka#16504 (KAFKA-16944, range rewrite, 2024-07)"
PR_17133 = "apache/kafka#17133 (KAFKA-17495, 2024-09)"
PR_17385 = "apache/kafka#17385 (KAFKA-17710, heterogeneous rework, 2024-10)"
PR_19677 = "apache/kafka#19677 (KAFKA-18688, 2025-05)"

# (assignor, subscriptions, event, members, topics) -> (ms/op, where Kafka published it).
# ServerSideAssignorBenchmark.doAssignment, partitionsToMemberRatio 10, isRackAware false.
KAFKA: dict[tuple[str, str, str, int, int], tuple[float, str]] = {
    ("uniform", "homogeneous", "full", 100, 100): (0.037, PR_19677),
    ("uniform", "homogeneous", "full", 100, 1000): (0.129, PR_19677),
    ("uniform", "homogeneous", "full", 5000, 1000): (1.705, PR_17133),
    ("uniform", "homogeneous", "full", 10000, 100): (2.884, PR_19677),
    ("uniform", "homogeneous", "full", 10000, 1000): (3.158, PR_19677),
    ("uniform", "heterogeneous", "full", 100, 100): (0.271, PR_17385),
    ("range", "homogeneous", "incremental", 100, 100): (0.052, PR_16504),
    ("range", "homogeneous", "incremental", 100, 1000): (0.454, PR_16504),
    ("range", "homogeneous", "incremental", 1000, 100): (0.476, PR_16504),
    ("range", "homogeneous", "incremental", 1000, 1000): (3.102, PR_16504),
    ("range", "homogeneous", "incremental", 10000, 100): (5.640, PR_16504),
}


def group_members(
    members: int, topics: int, heterogeneous: bool, partitions_for: int | None = None
) -> tuple[dict[str, AssignmentMember], dict[str, int]]:
    """Kafka's benchmark group: topic-i with `partitions_for` (default: members) x 10 / topics
    partitions each."""
    names = [f"topic-{i}" for i in range(topics)]
    partitions_of = dict.fromkeys(names, (partitions_for or members) * PARTITIONS_PER_MEMBER // topics)
    buckets = min(BUCKETS, members) if heterogeneous else 1
    topics_per_bucket, members_per_bucket = math.ceil(topics / buckets), math.ceil(members / buckets)
    group: dict[str, AssignmentMember] = {}
    for bucket in range(buckets):
        subscribed = frozenset(names[bucket * topics_per_bucket : (bucket + 1) * topics_per_bucket])
        for i in range(bucket * members_per_bucket, min((bucket + 1) * members_per_bucket, members)):
            group[f"member{i}"] = AssignmentMember(f"member{i}", subscribed)
    return group, partitions_of


def event_members(
    name: str, members: int, topics: int, subscriptions: str, event: str
) -> tuple[dict[str, AssignmentMember], dict[str, int]]:
    heterogeneous = subscriptions == "heterogeneous"
    if event == "full":
        return group_members(members, topics, heterogeneous)
    # Incremental, as Kafka's benchmark: M - 1 members hold their target, one more joins.
    group, partitions_of = group_members(members - 1, topics, heterogeneous, partitions_for=members)
    held = ASSIGNORS[name].assign(group, partitions_of)
    joined = {m: AssignmentMember(m, spec.subscribed, held[m]) for m, spec in group.items()}
    newcomer = group[f"member{members - 2}"].subscribed if heterogeneous else frozenset(partitions_of)
    joined["newMember"] = AssignmentMember("newMember", newcomer)
    return joined, partitions_of


def median_ms(run: Callable[[], object], budget_s: float) -> float:
    """Median CPU time of this thread per run: on a shared machine, wall time would also count
    the time other processes hold the cores (the run is single-threaded)."""
    run()  # warm-up: layout tuples and caches built once, as in a running coordinator
    times: list[float] = []
    deadline = time.perf_counter() + budget_s
    while len(times) < 5 or (time.perf_counter() < deadline and len(times) < 200):
        start = time.thread_time()
        run()
        times.append(time.thread_time() - start)
    return statistics.median(times) * 1000


def measure(
    name: str, members: int, topics: int, subscriptions: str, event: str, budget_s: float
) -> dict[str, Any]:
    assignor = ASSIGNORS[name]
    group, partitions_of = event_members(name, members, topics, subscriptions, event)
    spec, _ = group_spec(group, partitions_of)

    def core() -> None:
        MemberPartitions(assignor.target(spec), spec.member_count)

    def call() -> None:
        assignor.assign(group, partitions_of)

    result = assignor.assign(group, partitions_of)
    kept = sum(len(result[m] & s.current_target) for m, s in group.items())
    sizes = [len(p) for p in result.values()]
    kafka = KAFKA.get((name, subscriptions, event, members, topics))
    return {
        "assignor": name, "subscriptions": subscriptions, "event": event, "members": members,
        "topics": topics, "partitions": sum(partitions_of.values()),
        "assignor_ms": median_ms(core, budget_s), "call_ms": median_ms(call, budget_s),
        "kafka_ms": kafka[0] if kafka else None, "kafka_source": kafka[1] if kafka else None,
        "sizes": [min(sizes), max(sizes)], "kept": kept,
        "moved": sum(len(s.current_target) for s in group.values()) - kept,
    }  # fmt: skip


def with_goals(results: list[dict[str, Any]]) -> None:
    """Each row's goal (ms) and whether it is met, judged on the assignor figure."""
    homogeneous = {
        (r["assignor"], r["event"], r["members"], r["topics"]): r["assignor_ms"]
        for r in results
        if r["subscriptions"] == "homogeneous"
    }
    for r in results:
        goal, why = CEILING_MS, "1 s"
        if r["subscriptions"] == "homogeneous" and r["kafka_ms"] is not None:
            goal, why = r["kafka_ms"], "Kafka"
        elif r["subscriptions"] == "heterogeneous":
            same = homogeneous.get((r["assignor"], r["event"], r["members"], r["topics"]))
            if same is not None:
                goal, why = min(CEILING_MS, HETEROGENEOUS_FACTOR * same), "10x homogeneous"
        r["goal_ms"], r["goal"] = goal, why
        r["met"] = r["assignor_ms"] <= goal and r["call_ms"] <= CEILING_MS


def figure(ms: float | None) -> str:
    if ms is None:
        return "—"
    return f"{ms:.3f}" if ms < 1 else f"{ms:.2f}" if ms < 10 else f"{ms:.0f}"


def table(results: list[dict[str, Any]]) -> str:
    lines = [
        "| assignor | subscriptions | event | members | topics | assignor (ms) | goal (ms) | met "
        "| Kafka (ms) | coordinator call (ms) |",
        "|---|---|---|---:|---:|---:|---:|:-:|---:|---:|",
    ]
    for r in results:
        goal = f"≤ {figure(r['goal_ms'])} ({r['goal']})"
        lines.append(
            f"| {r['assignor']} | {r['subscriptions']} | {r['event']} | {r['members']:,} | {r['topics']:,} "
            f"| {figure(r['assignor_ms'])} | {goal} | {'yes' if r['met'] else '**no**'} "
            f"| {figure(r['kafka_ms'])} | {figure(r['call_ms'])} |"
        )
    return "\n".join(lines)


def readme_block(summary: dict[str, Any]) -> str:
    sources = sorted({r["kafka_source"] for r in summary["results"] if r["kafka_source"]})
    met = sum(r["met"] for r in summary["results"])
    return (
        f"{summary['machine']}; median CPU time of repeated runs; 10 partitions per member, no racks. "
        f"{met} of {len(summary['results'])} shapes meet their goal. Kafka's figures: JMH averages "
        f"from {', '.join(sources)}; — where none was published.\n\n{table(summary['results'])}"
    )


def plot(results: list[dict[str, Any]], path: Path) -> None:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    panels = [(a, s, e) for a in ASSIGNORS for s in SUBSCRIPTIONS for e in EVENTS]
    fig, axes = plt.subplots(2, 4, figsize=(20, 8), squeeze=False)
    for ax, (name, subscriptions, event) in zip(axes.flat, panels, strict=True):
        rows = [
            r
            for r in results
            if (r["assignor"], r["subscriptions"], r["event"]) == (name, subscriptions, event)
        ]
        labels = [f"{r['members']}/{r['topics']}" for r in rows]
        x = range(len(rows))
        ax.bar([i - 0.2 for i in x], [r["assignor_ms"] for r in rows], 0.4, label="assignor")
        ax.bar([i + 0.2 for i in x], [r["call_ms"] for r in rows], 0.4, label="coordinator call")
        kafka = [(i, r["kafka_ms"]) for i, r in zip(x, rows, strict=True) if r["kafka_ms"] is not None]
        if kafka:
            ax.scatter([i for i, _ in kafka], [k for _, k in kafka], color="black", marker="_", s=300,
                       zorder=3, label="Kafka (published)")  # fmt: skip
        ax.set_yscale("log")
        ax.set_xticks(list(x), labels, rotation=45, fontsize=7)
        ax.set_title(f"{name}, {subscriptions}, {event}", fontsize=9)
        ax.set_ylabel("ms")
        ax.legend(fontsize=7)
    fig.suptitle("Server-side assignors at Kafka's ServerSideAssignorBenchmark shapes (members/topics)")
    fig.tight_layout()
    fig.savefig(path)


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--quick", action="store_true", help="100 and 1,000 members only")
    parser.add_argument("--budget", type=float, default=1.0, help="seconds of repeats per figure")
    parser.add_argument("--update-readme", action="store_true", help="rewrite the README's table")
    args = parser.parse_args()
    members = MEMBERS[:2] if args.quick else MEMBERS
    results: list[dict[str, Any]] = []
    for name in ASSIGNORS:
        for subscriptions in SUBSCRIPTIONS:
            for event in EVENTS:
                for count in members:
                    for topics in TOPICS:
                        r = measure(name, count, topics, subscriptions, event, args.budget)
                        results.append(r)
                        print(f"{name:8} {subscriptions:13} {event:11} {count:>6} x {topics:>4}: "
                              f"assignor {r['assignor_ms']:8.3f} ms, call {r['call_ms']:8.2f} ms, "
                              f"Kafka {figure(r['kafka_ms']):>6}, sizes {r['sizes']}, moved {r['moved']}",
                              flush=True)  # fmt: skip
    with_goals(results)
    load = ", ".join(f"{x:.1f}" for x in os.getloadavg())
    machine = f"{os.cpu_count()} cores (load average {load} at the end), Python {platform.python_version()}"
    summary = {"machine": machine, "results": results}
    out = ROOT / "bench" / "results"
    out.mkdir(parents=True, exist_ok=True)
    (out / "assignors.json").write_text(json.dumps(summary, indent=2))
    plot(results, out / "assignors.png")
    print("\n" + table(results))
    if args.update_readme:
        update_readme("assignors", readme_block(summary))
    return 0


if __name__ == "__main__":
    sys.exit(main())

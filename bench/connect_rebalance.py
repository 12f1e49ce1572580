"""Worker rebalances side by side: the connect protocol against Kafka Connect's classic ones.

Real processes: a coordinator and `connect-rebalance worker`s running lightweight tasks
(the built-in VerifiableSource with throughput 0: a task that only runs). For each
protocol — connect group + incremental assignor, connect group + eager assignor
(connect.protocol=eager), classic + incremental cooperative (connect.protocol=sessioned),
classic + eager — and each size (workers x tasks), the cluster is brought to balance and
then, one at a time:
- join: a new worker starts;
- leave: that worker stops gracefully (SIGTERM);
- crash: a worker is killed (SIGKILL) for good;
- bounce: a worker is killed and started again at once with the same worker id.
Measured from the start of the event (so a starting worker's start-up and a leaving
worker's graceful stop count; for a join also from when the coordinator first counted the
new member, which is what the protocol costs): seconds until every task runs again with the workers within
one of each other (for bounce also: whether the bounced worker got exactly its own work
back), the connectors and tasks stopped and started during it, from the workers'
/metrics (a worker gone meanwhile stopped what it ran; a new process started what it did),
and the heartbeats per second the coordinator answered the workers' group during it and
while the group was settled before the join, from the coordinator's /metrics (the cost of
the heartbeat intervals it hands out).

Kafka Connect's session and heartbeat defaults (10 s, 3 s: with a thousand tasks starting
on two cores a heartbeat may take seconds to be answered, and a shorter session would
fence workers that are merely busy) and a scheduled.rebalance.max.delay.ms of 10 s instead
of 5 minutes, so a crash is over in a reasonable time; all are printed with the figures.
An event that does not settle within 180 s is recorded as such and the run goes on.

    python bench/connect_rebalance.py [--quick] [--sizes 3x100,10x1000]

Prints a table, saves bench/results/connect_rebalance.json and .png.
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import sys
import tempfile
import threading
import time
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from bench.readme_table import update_readme  # noqa: E402
from connect_rebalance.processes import CoordinatorProcess, connect_timings  # noqa: E402
from workers.harness.cluster import WorkerCluster, metrics, rest  # noqa: E402
from workers.harness.process import WorkerProcess  # noqa: E402

SESSION_MS, HEARTBEAT_MS, DELAY_MS = 10000, 3000, 10000
SETTLE_S = 180
PROTOCOLS = {
    "connect + incremental": {"group.protocol": "connect"},
    "connect + eager": {"group.protocol": "connect", "connect.protocol": "eager"},
    "classic + incremental": {"group.protocol": "classic", "connect.protocol": "sessioned"},
    "classic + eager": {"group.protocol": "classic", "connect.protocol": "eager"},
}
EVENTS = ("join", "leave", "crash", "bounce")
CONNECTOR = "load"
GROUP = "connect-cluster"  # the workers' group.id (the default)
STEADY_S = 6.0  # two heartbeat intervals of a settled group


def counters(cluster: WorkerCluster) -> dict[str, tuple[int, int, int]]:
    """Per live worker process (by its pid): tasks started, stopped, and running now."""
    out = {}
    for worker in cluster.running():
        values = metrics(worker.url)
        label = f'{{connector="{CONNECTOR}"}}'
        out[str(worker.process.pid)] = (
            int(values.get(f"connect_worker_work_started_total{label}", 0)),
            int(values.get(f"connect_worker_work_stopped_total{label}", 0)),
            int(values.get(f"connect_worker_running{label}", 0)),
        )  # fmt: skip
    return out


def group_figure(coordinator: CoordinatorProcess, family: str) -> int:
    """A figure of the workers' group from the coordinator's /metrics (of whichever type the
    group is: heartbeats answered, members)."""
    label = f'group="{GROUP}"'
    return int(sum(v for k, v in metrics(coordinator.admin_url).items()
                   if k.startswith(f"connect_rebalance_group_{family}{{") and label in k))  # fmt: skip


class JoinSeen(threading.Thread):
    """When the coordinator first counts one more member in the workers' group (polled every
    50 ms): a join's time from there on is the protocol's, before it the process's start-up."""

    def __init__(self, coordinator: CoordinatorProcess) -> None:
        super().__init__(daemon=True)
        self.coordinator, self.members = coordinator, group_figure(coordinator, "members")
        self.at: float | None = None
        self.done = threading.Event()

    def run(self) -> None:
        while not self.done.is_set() and self.at is None:
            if group_figure(self.coordinator, "members") > self.members:
                self.at = time.monotonic()
            self.done.wait(0.05)


def churn(before: dict[str, tuple[int, int, int]], after: dict[str, tuple[int, int, int]]) -> tuple[int, int]:
    """(stopped, started) between two snapshots: on workers present in both, the change; a
    worker gone meanwhile stopped what it ran; a worker new meanwhile started what it did."""
    stopped = sum(after[p][1] - before[p][1] for p in before if p in after)
    stopped += sum(before[p][2] for p in before if p not in after)
    started = sum(after[p][0] - before[p][0] for p in before if p in after)
    started += sum(after[p][0] for p in after if p not in before)
    return stopped, started


def wait(predicate: Any, timeout: float, what: str) -> float:
    started = time.monotonic()
    while not predicate():
        if time.monotonic() - started > timeout:
            raise TimeoutError(f"{what}: not after {timeout:.0f} s")
        time.sleep(0.1)
    return time.monotonic() - started


def run_size(protocol: str, workers: int, tasks: int, base: Path, results: list[dict[str, Any]]) -> None:
    """Runs the four events on one fresh cluster, appending a row per event to `results`."""
    settings = {**PROTOCOLS[protocol], "session.timeout.ms": str(SESSION_MS),
                "heartbeat.interval.ms": str(HEARTBEAT_MS), "rebalance.timeout.ms": "20000",
                "scheduled.rebalance.max.delay.ms": str(DELAY_MS)}  # fmt: skip
    overrides = {**connect_timings(SESSION_MS, HEARTBEAT_MS), "group.min.session.timeout.ms": "1000",
                 "group.initial.rebalance.delay.ms": "0"}  # fmt: skip
    coordinator = CoordinatorProcess(base / "data", overrides).start()
    cluster = WorkerCluster(base, coordinator, **settings)
    items = tasks + 1  # the connector instance is assigned too
    try:
        for i in range(workers - 1):
            cluster.start(f"w{i}")
        bouncer = {**cluster.properties, "worker.id": "bouncer"}
        cluster.workers["bouncer"] = WorkerProcess(bouncer, base / "workers", "bouncer").start()
        config = {"connector.class": "VerifiableSource", "topic": "load-out", "tasks.max": str(tasks),
                  "throughput": "0"}  # fmt: skip
        first = cluster.running()[0]
        assert rest("POST", f"{first.url}/connectors", {"name": CONNECTOR, "config": config})[0] == 201
        wait(lambda: cluster.balanced(CONNECTOR, items), SETTLE_S, "the first assignment")

        beats, began = group_figure(coordinator, "heartbeats_total"), time.monotonic()
        wait(lambda: time.monotonic() - began >= STEADY_S, STEADY_S + 1, "a settled interval")
        steady = (group_figure(coordinator, "heartbeats_total") - beats) / (time.monotonic() - began)

        def measure(event: str, action: Any, done: Any) -> None:
            before, beats = counters(cluster), group_figure(coordinator, "heartbeats_total")
            seen = JoinSeen(coordinator)
            began = time.monotonic()  # the event's own time counts (a graceful stop, a start)
            if event == "join":
                seen.start()
            action()
            row = {"protocol": protocol, "workers": workers, "tasks": tasks, "event": event}
            try:
                wait(done, SETTLE_S, f"{protocol} {workers}x{tasks} {event}")
            except TimeoutError as exc:
                results.append({**row, "failed": str(exc)})
                raise
            seconds = time.monotonic() - began
            seen.done.set()
            if seen.at is not None:
                row["after_joining_s"] = round(seconds - (seen.at - began), 2)
            stopped, started = churn(before, counters(cluster))
            beats = group_figure(coordinator, "heartbeats_total") - beats
            results.append({**row, "seconds": round(seconds, 2), "stopped": stopped, "started": started,
                            "heartbeats_per_s": round(beats / seconds, 1),
                            "steady_heartbeats_per_s": round(steady, 1)})  # fmt: skip
            last = results[-1]
            joined = f" ({row['after_joining_s']:.1f} s from its join)" if "after_joining_s" in row else ""
            print(f"  {protocol:<22} {workers:>2}x{tasks:<5} {event:<6} {seconds:6.1f} s{joined}  "
                  f"stopped {last['stopped']:>5}  started {last['started']:>5}  "
                  f"heartbeats/s {last['heartbeats_per_s']:g} (settled {steady:.1f})",
                  flush=True)  # fmt: skip

        balanced = lambda: cluster.balanced(CONNECTOR, items)  # noqa: E731
        measure("join", lambda: cluster.start("joiner"), balanced)
        measure("leave", lambda: cluster.workers["joiner"].stop(), balanced)
        before = cluster.placement(CONNECTOR)

        def bounce() -> None:
            cluster.workers["bouncer"].kill()
            cluster.workers["bouncer"] = WorkerProcess(bouncer, base / "workers", "bouncer").start()

        def bounced_back() -> bool:
            # The status topic may still name the bouncer for work it ran before the kill, so
            # the bounce is over once the new process runs what the statuses give it.
            placed = sum(1 for worker in cluster.placement(CONNECTOR).values() if worker == "bouncer")
            values = metrics(cluster.workers["bouncer"].url)
            runs = int(values.get(f'connect_worker_work_started_total{{connector="{CONNECTOR}"}}', 0))
            return balanced() and runs >= placed > 0

        measure("bounce", bounce, bounced_back)
        after = cluster.placement(CONNECTOR)
        results[-1]["same_work_back"] = {k for k, v in before.items() if v == "bouncer"} == {
            k for k, v in after.items() if v == "bouncer"
        }
        measure("crash", lambda: cluster.workers["bouncer"].kill(), balanced)
    finally:
        cluster.stop_all()
        coordinator.kill()


def table(results: list[dict[str, Any]]) -> str:
    lines = ["| workers x tasks | event | protocol | balanced (s) | from the join request (s) "
             "| stopped | started | own work back | coordinator heartbeats/s: during, settled |",
             "|---|---|---|---:|---:|---:|---:|---|---:|"]  # fmt: skip
    for r in sorted(results, key=lambda r: (r["workers"], r["tasks"], EVENTS.index(r["event"]))):
        if "failed" in r:
            lines.append(f"| {r['workers']} x {r['tasks']} | {r['event']} | {r['protocol']} "
                         f"| not settled: {r['failed']} | | | | | |")  # fmt: skip
            continue
        back = {True: "yes", False: "no"}.get(r.get("same_work_back"), "")  # type: ignore[call-overload]
        joined = f"{r['after_joining_s']:.1f}" if "after_joining_s" in r else ""
        lines.append(f"| {r['workers']} x {r['tasks']} | {r['event']} | {r['protocol']} | {r['seconds']:.1f} "
                     f"| {joined} | {r['stopped']} | {r['started']} | {back} "
                     f"| {r.get('heartbeats_per_s', 0):.1f}, "
                     f"{r.get('steady_heartbeats_per_s', 0):.1f} |")  # fmt: skip
    return "\n".join(lines)


def readme_block(summary: dict[str, Any]) -> str:
    seconds = {k: summary[k] / 1000 for k in ("session_ms", "heartbeat_ms", "scheduled_delay_ms")}
    timings = (
        f"Session {seconds['session_ms']:g} s, heartbeat {seconds['heartbeat_ms']:g} s, "
        f"scheduled.rebalance.max.delay.ms {seconds['scheduled_delay_ms']:g} s; {summary['machine']}."
    )
    return f"{timings}\n\n{table(summary['results'])}"


def plot(results: list[dict[str, Any]], path: Path) -> None:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    sizes = sorted({(r["workers"], r["tasks"]) for r in results})
    fig, axes = plt.subplots(2, len(sizes), figsize=(5 * len(sizes), 7), squeeze=False)
    found = {(r["workers"], r["tasks"], r["event"], r["protocol"]): r for r in results}
    for column, (workers, tasks) in enumerate(sizes):
        for row, (measure, title) in enumerate((("stopped", "stopped"), ("seconds", "seconds to balance"))):
            ax = axes[row][column]
            width = 0.8 / len(PROTOCOLS)
            for offset, protocol in enumerate(PROTOCOLS):
                values = [found.get((workers, tasks, e, protocol), {}).get(measure, 0) for e in EVENTS]
                ax.bar([i + offset * width for i in range(len(EVENTS))], values, width, label=protocol)
            ax.set_xticks([i + 0.4 - width / 2 for i in range(len(EVENTS))], EVENTS)
            ax.set_title(f"{workers} workers, {tasks} tasks: {title}")
            ax.legend(fontsize=7)
    fig.tight_layout()
    fig.savefig(path)


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--quick", action="store_true", help="3 workers x 100 tasks only")
    parser.add_argument("--sizes", default="3x100,3x1000,10x100,10x1000")
    parser.add_argument("--update-readme", action="store_true", help="rewrite the README's table")
    args = parser.parse_args()
    sizes = [(3, 100)] if args.quick else [tuple(map(int, s.split("x"))) for s in args.sizes.split(",")]
    results: list[dict[str, Any]] = []
    out = ROOT / "bench" / "results"
    out.mkdir(parents=True, exist_ok=True)
    machine = f"{os.cpu_count()} cores, Python {platform.python_version()}"
    summary = {"session_ms": SESSION_MS, "heartbeat_ms": HEARTBEAT_MS, "scheduled_delay_ms": DELAY_MS,
               "machine": machine, "results": results}  # fmt: skip
    for workers, tasks in sizes:
        for protocol in PROTOCOLS:
            with tempfile.TemporaryDirectory(prefix="bench-connect-") as tmp:
                done = len(results)
                try:
                    run_size(protocol, workers, tasks, Path(tmp), results)
                except TimeoutError as exc:
                    print(f"  {protocol:<22} {workers:>2}x{tasks:<5} {exc}", flush=True)
                    if len(results) == done:  # the cluster never balanced: no event ran
                        results.append({"protocol": protocol, "workers": workers, "tasks": tasks,
                                        "event": "join", "failed": str(exc)})  # fmt: skip
            # Saved after each cluster, so an interrupted run keeps what it measured.
            (out / "connect_rebalance.json").write_text(json.dumps(summary, indent=2))
    plot(results, out / "connect_rebalance.png")
    print("\n" + table(results))
    if args.update_readme:
        update_readme("connect_rebalance", readme_block(summary))
    return 0


if __name__ == "__main__":
    sys.exit(main())

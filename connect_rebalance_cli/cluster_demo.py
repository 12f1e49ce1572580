"""`connect-rebalance quickstart`: a worker cluster ingesting files with PySpark, shown working.

It starts a coordinator and three workers on this machine (in a temporary directory),
creates a FileIngest connector with 4 tasks over the sample data shipped in
`examples/data`, lands more files while it runs, and shows each task's progress live. Then
one worker leaves and another joins, and it prints which tasks moved and which kept running
without a stop — the incremental rebalance; the web view whose URL it prints (`/ui` on a
worker) shows the leave and the join as they happen. It ends with a summary whose row counts, read
back from the committed Parquet output, prove nothing was lost or duplicated, and exits
non-zero if a check fails. Every process it started is stopped, also on Ctrl-C.
"""

from __future__ import annotations

import argparse
import shutil
import tempfile
import time
from collections import Counter
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from rich import box
from rich.console import Console
from rich.live import Live
from rich.table import Table

from connect_rebalance.processes import CoordinatorProcess, connect_timings
from connect_rebalance.properties import read_properties
from workers.harness.cluster import WorkerCluster, metrics, rest
from workers.harness.spark_jvm import SHORT_LIVED_JVM_OPTIONS
from workers.spark.parquet_output import committed_column
from workers.spark.runtime import SESSION_STARTING

from . import sample_data

EXAMPLES = Path(__file__).resolve().parent.parent / "examples"
CONNECTOR = "orders-ingest"
TASKS = 4
# Small Spark sessions: four share this machine with the coordinator.
SPARK = {"spark.master": "local[1]", "spark.ui.enabled": "false", "spark.driver.memory": "512m",
         "spark.sql.shuffle.partitions": "1", "spark.session.warmup": "true",
         "spark.driver.extraJavaOptions": SHORT_LIVED_JVM_OPTIONS}  # fmt: skip


@dataclass
class Frame:
    """What the quickstart shows at one moment: the phase, a row per task, the output so far."""

    phase: str
    tasks: list[tuple[int, str, str, dict[str, Any]]]  # index, worker name, state, progress
    note: str | None
    rows_out: int
    expected: int

    def table(self) -> Table:
        """The live table a terminal redraws in place."""
        table = Table(title=self.phase, title_justify="left", caption_justify="left",
                      caption=self._caption(), box=box.SIMPLE_HEAD)  # fmt: skip
        for column in ("task", "worker", "state", "rows (run)", "rows/s", "batches"):
            table.add_column(column, justify="left" if column in ("worker", "state") else "right")
        for index, worker, state, progress in self.tasks:
            style = {"RUNNING": "green", "FAILED": "bold red", "UNASSIGNED": "yellow"}.get(state, "")
            table.add_row(str(index), worker, f"[{style}]{state}[/]" if style else state,
                          f"{progress.get('rows', 0):,}", f"{progress.get('processed_rows_per_second', 0):,}",
                          f"{progress.get('batches', 0):,}")  # fmt: skip
        return table

    def _caption(self) -> str:
        committed = f"committed rows in the output: {self.rows_out:,} of {self.expected:,}"
        return f"{self.note}\n{committed}" if self.note else committed

    def line(self) -> str:
        """One line for a log or a pipe: task 0 w1 RUNNING 250 rows; ..."""
        parts = [f"task {i} {worker} {state} {progress.get('rows', 0)} rows"
                 for i, worker, state, progress in self.tasks]  # fmt: skip
        parts += [self.note] if self.note else []
        return "; ".join([*parts, f"output {self.rows_out}/{self.expected} rows"])


class Display:
    """Task progress as a live table on a terminal (rich); a line every few seconds otherwise."""

    def __init__(self, console: Console | None = None) -> None:
        self.console = console or Console()
        self.tty = self.console.is_terminal
        self.live: Live | None = None
        self.last_plain = 0.0

    def show(self, frame: Frame) -> None:
        if self.tty:
            if self.live is None:
                self.live = Live(frame.table(), console=self.console, auto_refresh=False)
                self.live.start()
            self.live.update(frame.table(), refresh=True)
        elif time.monotonic() - self.last_plain >= 5:
            print("    " + frame.line(), flush=True)
            self.last_plain = time.monotonic()

    def done(self) -> None:
        if self.live is not None:
            self.live.stop()  # the last table stays on the screen
            self.live = None


class Demo:
    def __init__(self, root: Path, coordinator: CoordinatorProcess) -> None:
        self.root, self.coordinator = root, coordinator
        self.input, self.output = root / "input", root / "output"
        self.cluster: WorkerCluster  # once the coordinator listens (`start_cluster`)
        self.names: dict[str, str] = {}  # worker id -> w1, w2, ...
        self.display = Display()
        self.expected = 0

    # -- what the cluster says --------------------------------------------------------------

    def start_cluster(self, names: list[str]) -> None:
        """Workers configured as examples/worker-1.properties, on this coordinator and free ports."""
        template = read_properties(EXAMPLES / "worker-1.properties")
        settings = {k: v for k, v in template.items() if k not in ("bootstrap.servers", "listeners")}
        settings.update(SPARK, **{"checkpoint.dir": str(self.root / "checkpoints")})
        self.cluster = WorkerCluster(self.root, self.coordinator, **settings)
        for name in names:
            self.start_worker(name)

    def start_worker(self, name: str) -> None:
        worker = self.cluster.start(name)
        self.names[worker.worker_id] = name

    def statuses(self) -> dict[int, dict[str, Any]]:
        """Each task's status, with progress from the worker that runs it."""
        tasks: dict[int, dict[str, Any]] = {}
        for worker in self.cluster.running():
            code, body = rest("GET", f"{worker.url}/connectors/{CONNECTOR}/status")
            if code != 200:
                continue
            for task in body["tasks"]:
                if task["id"] not in tasks or "progress" in task:
                    tasks[task["id"]] = task
        return tasks

    def placement(self) -> dict[str, str]:
        """Where the connector ("C") and each task ("0", "1", ...) run."""
        return self.cluster.placement(CONNECTOR)

    def stops(self) -> dict[str, int]:
        key = f'connect_worker_work_stopped_total{{connector="{CONNECTOR}"}}'
        return {self.names[w.worker_id]: int(metrics(w.url).get(key, 0)) for w in self.cluster.running()}

    def rows_out(self) -> list[int]:
        try:
            return [int(i) for i in committed_column(str(self.output), "id")]
        except (OSError, ValueError):  # a batch being committed: read again next time
            return []

    def balanced(self) -> bool:
        """The connector and every task running, spread evenly over the live workers."""
        return self.cluster.balanced(CONNECTOR, TASKS + 1)

    # -- showing it ---------------------------------------------------------------------------

    def frame(self, phase: str, rows_out: int) -> Frame:
        """The phase, a row per task, and the output so far."""
        tasks = sorted(self.statuses().items())
        # A task assigned to a worker whose Spark session is still starting says so in its trace.
        waiting = sorted(
            {
                self.names.get(t["worker_id"], "-")
                for _, t in tasks
                if t["state"] == "UNASSIGNED" and SESSION_STARTING in t.get("trace", "")
            }
        )
        note = (f"waiting for the Spark session of {', '.join(waiting)}: its tasks start once it is ready"
                if waiting else None)  # fmt: skip
        rows = [(i, self.names.get(t["worker_id"], "-"), t["state"], t.get("progress", {})) for i, t in tasks]
        return Frame(phase, rows, note, rows_out, self.expected)

    def session_starts(self) -> str:
        """How long each worker's Spark session took to start (from its `/`)."""
        started = []
        for worker in self.cluster.running():
            code, body = rest("GET", f"{worker.url}/")
            runtime = body.get("spark_runtime", {}) if code == 200 else {}
            seconds = runtime.get("start_seconds")
            shown = f"{seconds} s" if seconds is not None else runtime.get("state", "?").lower()
            started.append(f"{self.names.get(worker.worker_id, worker.name)} {shown}")
        return ", ".join(started)

    def watch(self, phase: str, until: Callable[[], bool], timeout: float) -> None:
        """Redraw progress until `until()` holds; fail after `timeout` seconds."""
        deadline = time.monotonic() + timeout
        while True:
            done = until()
            self.display.show(self.frame(phase, len(self.rows_out())))
            if done:
                self.display.done()
                return
            if time.monotonic() > deadline:
                self.display.done()
                raise TimeoutError(f"timed out after {timeout:.0f}s: {phase}")
            time.sleep(1)

    def view_shows(self, change: str, name: str, timeout: float = 10.0) -> bool:
        """Whether w2's web view has an epoch on its timeline at which worker `name` "joined"
        or "left" (its `/ui/state`, what the page draws), within `timeout` seconds."""
        worker_id = self.cluster.workers[name].worker_id
        deadline = time.monotonic() + timeout
        while True:
            code, state = rest("GET", f"{self.cluster.workers['w2'].url}/ui/state")
            entries = state["timeline"]["entries"] if code == 200 else []
            if any(worker_id in e.get(change, []) for e in entries if e["kind"] == "epoch"):
                return True
            if time.monotonic() > deadline:
                return False
            time.sleep(0.5)

    def rebalance(self, what: str, event: Callable[[], None]) -> dict[str, Any]:
        """Run `event`, wait until the tasks are balanced again; say what moved and what kept running."""
        before, stops_before = self.placement(), self.stops()
        event()
        self.watch(f"{what}: rebalancing", self.balanced, 180)
        after, stops_after = self.placement(), self.stops()
        moved = sorted(i for i in after if before.get(i) != after[i])
        kept = sorted(i for i in after if before.get(i) == after[i])
        stayed = sorted(set(stops_before) & set(stops_after))
        stopped = {w: stops_after[w] - stops_before[w] for w in stayed}
        name = self.names.get
        moves = [f"{_item(i)} {name(before.get(i, ''), '-')} -> {name(after[i], '-')}" for i in moved]
        print(f"    moved: {', '.join(moves) or 'nothing'}")
        print(f"    kept running where they were: {', '.join(_item(i) for i in kept) or 'none'}")
        stops_text = ", ".join(f"{w} {n}" for w, n in sorted(stopped.items())) or "none"
        print(f"    stops on the workers that stayed: {stops_text}")
        return {"moved": moved, "kept": kept, "stopped": stopped}


def _item(key: str) -> str:
    return "the connector" if key == "C" else f"task {key}"


def _step(text: str) -> None:
    print(f"\n==> {text}", flush=True)


def run(args: argparse.Namespace) -> int:
    owned = args.dir is None
    root = Path(tempfile.mkdtemp(prefix="connect-rebalance-quickstart-")) if owned else Path(args.dir)
    root.mkdir(parents=True, exist_ok=True)
    coordinator = CoordinatorProcess(
        root / "data", {"group.initial.rebalance.delay.ms": "0", **connect_timings(6000)},
        log_path=root / "coordinator.log",
    )  # fmt: skip
    demo = Demo(root, coordinator)
    checks: list[tuple[str, bool]] = []
    started = time.monotonic()
    try:
        _step(f"Starting a coordinator and three workers (everything under {root})")
        coordinator.start()
        demo.start_cluster(["w1", "w2", "w3"])
        print(f"    coordinator {coordinator.bootstrap}, admin {coordinator.admin_url}")
        for worker in demo.cluster.running():
            print(f"    worker {worker.name} ({worker.worker_id}): REST {worker.url}, log {worker.log_path}")
        view = demo.cluster.workers["w2"]
        print(f"    web view: {view.url}/ui  (served by every worker; w2's stays up throughout: open it")
        print("    to watch the connector's tasks, w1's leave and w4's join on the rebalance timeline)")

        _step(f"Creating connector {CONNECTOR}: FileIngest, {TASKS} tasks, over examples/data")
        shutil.copytree(EXAMPLES / "data", demo.input)
        demo.expected = sum(len(f.read_text().splitlines()) for f in demo.input.glob("*/*.json"))
        config = {"connector.class": "FileIngest", "tasks.max": str(TASKS), "input.path": str(demo.input),
                  "format": "json", "schema": sample_data.SCHEMA, "output.path": str(demo.output),
                  "max.files.per.trigger": "2", "trigger.interval.ms": "1000"}  # fmt: skip
        code, body = rest(
            "POST", f"{demo.cluster.running()[0].url}/connectors", {"name": CONNECTOR, "config": config}
        )
        if code != 201:
            raise RuntimeError(f"creating the connector failed: {code} {body}")
        print("    Each worker starts one SparkSession (a JVM) and warms it with a throw-away query")
        print("    before its first task; on a small machine that takes several seconds, and until")
        print("    then its tasks show UNASSIGNED, with the reason in their status.")
        demo.watch("tasks starting (each worker's Spark session warms up)",
                   lambda: demo.balanced() and len(demo.rows_out()) > 0, 300)  # fmt: skip
        print(f"    Spark sessions started in: {demo.session_starts()}")

        _step("More files land while the tasks run")
        next_id = sample_data.write_files(demo.input, demo.expected, 1)
        demo.expected = next_id

        _step("Worker w1 leaves the cluster (SIGTERM: it stops its tasks and leaves the group)")
        leave = demo.rebalance("w1 left", lambda: demo.cluster.workers["w1"].stop())
        checks.append(
            ("only w1's tasks moved; w2 and w3 stopped nothing", not any(leave["stopped"].values()))
        )
        checks.append(("the web view showed w1 leave", demo.view_shows("left", "w1")))

        _step("Worker w4 joins")
        next_id = sample_data.write_files(demo.input, next_id, 1)
        demo.expected = next_id
        join = demo.rebalance("w4 joined", lambda: demo.start_worker("w4"))
        checks.append(("a join moved only what balance needs (one item)", len(join["moved"]) == 1))
        checks.append(("the web view showed w4 join", demo.view_shows("joined", "w4")))

        _step("Ingesting the rest")
        demo.watch("catching up", lambda: len(demo.rows_out()) >= demo.expected, 300)
        rows = demo.rows_out()
        counts = Counter(rows)
        duplicates = sum(n - 1 for n in counts.values() if n > 1)
        missing = demo.expected - len(counts)
        checks += [
            (f"rows in the output: {len(rows)} of {demo.expected}", len(rows) == demo.expected),
            (f"distinct ids: {len(counts)}, duplicates: {duplicates}, missing: {missing}",
             duplicates == 0 and missing == 0 and set(counts) == set(range(demo.expected))),
        ]  # fmt: skip
    except Exception as exc:  # noqa: BLE001 - the summary says what went wrong; the logs stay
        checks.append((f"the run did not finish: {type(exc).__name__}: {exc}", False))
    except KeyboardInterrupt:
        checks.append(("interrupted", False))
    finally:
        if hasattr(demo, "cluster"):
            demo.cluster.stop_all()
        coordinator.stop()

    _step(f"Summary ({time.monotonic() - started:.0f} s)")
    for text, ok in checks:
        print(f"    [{'ok' if ok else 'FAILED'}] {text}")
    passed = bool(checks) and all(ok for _, ok in checks)
    print("\n" + ("Nothing lost, nothing duplicated." if passed else "Some checks failed; logs are kept."))
    if passed and owned:
        shutil.rmtree(root, ignore_errors=True)
    elif not passed:
        print(f"    logs: {root}")
    return 0 if passed else 1

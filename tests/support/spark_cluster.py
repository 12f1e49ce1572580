"""What end-to-end tests read from workers running Spark tasks: query journals and JVMs.

Each worker's Spark runtime journals every query start and stop in its log
(`spark-query {json}`, with wall-clock times), which survives a SIGKILL. From those lines
a test rebuilds when each task's query may have been active on each worker and checks
that no two ever overlapped; a killed worker's queries end when its JVM is gone. A run
prepared ahead of its task's assignment (`prepared`, then `starting` at its release) is
active from its release, or from its first batch's trigger if that came earlier: it read.
"""

from __future__ import annotations

import contextlib
import math
import os
import signal
import time
from collections.abc import Iterator
from dataclasses import dataclass, field
from datetime import datetime
from pathlib import Path
from typing import Any

from connect_rebalance.processes import CoordinatorProcess, connect_timings
from tests.support.worker_cluster import WorkerCluster
from workers.harness.process import WorkerProcess
from workers.harness.spark_jvm import SHORT_LIVED_JVM_OPTIONS, class_archive_path, driver_options
from workers.spark.runtime import SparkRuntime

# The tests' Spark drivers map one class archive, built before the first e2e test
# (tests/e2e/conftest.py) and kept between runs, as a build cache is.
CLASS_ARCHIVE = class_archive_path(Path(__file__).resolve().parents[2] / ".cache")

# Small Spark sessions: several share a 2-core machine in these tests.
WORKER_SPARK = {"spark.master": "local[1]", "spark.ui.enabled": "false",
                "spark.ui.showConsoleProgress": "false", "spark.sql.shuffle.partitions": "1",
                "spark.driver.memory": "512m", "spark.session.warmup": "true",
                "spark.driver.extraJavaOptions": driver_options(CLASS_ARCHIVE),
                "spark.executor.extraJavaOptions": SHORT_LIVED_JVM_OPTIONS,
                # A killed worker's tasks move soon after its session expires.
                "scheduled.rebalance.max.delay.ms": "3000"}  # fmt: skip
# Short enough that a SIGKILLed worker's tasks move within seconds, long enough that a
# worker busy starting its JVM on a loaded 2-core machine keeps its session.
SPARK_SESSION_MS = 6000
# The trigger interval of tasks that run on through a scenario's churn. A micro-batch takes
# about half a second of CPU (Spark's planning and logs, the Python reader), so four tasks
# batching every 500 ms want four cores: on two, the batches fell behind and starved what
# the scenario waited for (a joining worker's JVM took 1-2 minutes to start). Every 2 s they
# want one.
CHURN_TRIGGER_MS = "2000"


@contextlib.contextmanager
def spark_worker_cluster(
    base: Path, session_ms: int = SPARK_SESSION_MS, **settings: str
) -> Iterator[WorkerCluster]:
    """A coordinator and (not yet started) Spark workers under `base`; all killed on exit."""
    coordinator = CoordinatorProcess(base / "data", connect_timings(session_ms)).start()
    cluster = WorkerCluster(
        base, coordinator, **{"checkpoint.dir": str(base / "checkpoints"), **WORKER_SPARK, **settings}
    )
    try:
        yield cluster
    finally:
        cluster.stop_all()
        coordinator.kill()


def journal(worker: WorkerProcess) -> list[dict[str, Any]]:
    """The worker's query journal, in the order it wrote it."""
    return SparkRuntime.read_journal(worker.log_text())


@dataclass
class Run:
    """One run of a task's query on one worker: when it may have been active, and what it did."""

    query: str
    worker: str
    start: float
    end: float = math.inf
    first_batch: dict[str, Any] | None = None
    last_batch: dict[str, Any] | None = None
    stopped: bool = False  # stopped by its worker (else: the worker died with it running)
    entries: list[dict[str, Any]] = field(default_factory=list)  # its journal's entries, for messages


def runs(workers: list[WorkerProcess], died_at: dict[str, float]) -> dict[str, list[Run]]:
    """Every task's query runs, by query name, in start order (`runs_of_journals`)."""
    return runs_of_journals({worker.worker_id: journal(worker) for worker in workers}, died_at)


def runs_of_journals(
    journals: dict[str, list[dict[str, Any]]], died_at: dict[str, float]
) -> dict[str, list[Run]]:
    """Every task's query runs, by query name, in start order, from each worker's journal.

    A run not journalled as stopped ends when its worker died (`died_at[worker_id]`, once its
    JVM was gone), or never if the worker still runs. A batch belongs to the run started on
    its worker; only with none open there is it a prepared run's, read before its release. A
    prepared run that could not be released is cancelled beside the run started in its place,
    and its stop (`prepared_only`) may be journalled after that run's first batch.
    """
    by_query: dict[str, list[Run]] = {}
    for worker_id, entries in journals.items():
        open_runs: dict[str, Run] = {}
        prepared: dict[str, Run] = {}  # started, held at the gate: not active until it reads
        unreleased: set[str] = set()  # open runs that are prepared runs seen reading, not released
        for entry in entries:
            name, event = entry["query"], entry["event"]
            if event == "prepared":
                prepared[name] = Run(name, entry["worker"], math.inf, entries=[entry])
            elif event == "starting":
                # A prepared run's release; it may have been seen reading already (open).
                run = (prepared.pop(name, None) or open_runs.get(name)) if entry.get("prepared") else None
                assert run is not None or name not in open_runs, f"{name} started twice on {worker_id}"
                run = run or Run(name, entry["worker"], entry["at"])
                run.start = min(run.start, entry["at"])
                run.entries.append(entry)
                unreleased.discard(name)
                if name not in open_runs:
                    open_runs[name] = run
                    by_query.setdefault(name, []).append(run)
            elif event == "first-batch" and (name in open_runs or name in prepared):
                if name not in open_runs:  # a prepared run read before its release
                    open_runs[name] = prepared.pop(name)
                    unreleased.add(name)
                    by_query.setdefault(name, []).append(open_runs[name])
                run = open_runs[name]
                run.entries.append(entry)
                run.first_batch = {k: entry[k] for k in ("batch", "start", "end")}
                run.start = min(run.start, _seconds(entry["trigger"]))
            elif event == "stopped" and entry.get("prepared_only") and name not in unreleased:
                if name in prepared:  # cancelled at its gate: it never read
                    prepared.pop(name).entries.append(entry)
            elif event in ("stopped", "ended") and name in open_runs:
                run = open_runs.pop(name)
                unreleased.discard(name)
                run.entries.append(entry)
                run.end = entry["at"]
                if event == "stopped":
                    run.stopped, run.last_batch = True, entry.get("last_batch")
                    # Spark's listener may have dropped the first batch's event (a py4j callback
                    # that failed); the stop's summary reads the stopped query's own record.
                    run.first_batch = run.first_batch or entry.get("first_batch")
            elif event == "ended" and name in prepared:  # ended by itself at its gate: it never read
                prepared.pop(name).entries.append(entry)
        for run in open_runs.values():
            run.end = died_at.get(worker_id, math.inf)
    return {name: sorted(found, key=lambda r: r.start) for name, found in by_query.items()}


def _seconds(iso: str) -> float:
    """Spark's progress timestamp (UTC, ISO 8601 with milliseconds) as epoch seconds."""
    return datetime.strptime(iso, "%Y-%m-%dT%H:%M:%S.%f%z").timestamp()


def overlaps(task_runs: dict[str, list[Run]]) -> list[tuple[Run, Run]]:
    """Pairs of runs of one task on different workers whose active intervals overlap."""
    found = []
    for found_runs in task_runs.values():
        for i, a in enumerate(found_runs):
            for b in found_runs[i + 1 :]:
                if a.worker != b.worker and a.start < b.end and b.start < a.end:
                    found.append((a, b))
    return found


def processes(field: str) -> Iterator[tuple[int, bytes]]:
    """Each live process's pid and its /proc/<pid>/`field` (Linux), skipping those gone meanwhile."""
    for entry in Path("/proc").iterdir():
        if entry.name.isdigit():
            try:
                yield int(entry.name), (entry / field).read_bytes()
            except OSError:
                continue


def children(pid: int) -> list[int]:
    """The pids whose parent is `pid`."""
    return [child for child, stat in processes("stat") if int(stat.rsplit(b")", 1)[1].split()[1]) == pid]


def descendants(pid: int) -> set[int]:
    """Every process below `pid`: its children, theirs, and so on."""
    found, frontier = set(), [pid]
    while frontier:
        for child in children(frontier.pop()):
            found.add(child)
            frontier.append(child)
    return found


def freeze_with_jvm(worker: WorkerProcess) -> list[int]:
    """SIGSTOP the worker and every process below it (its JVM, Spark's Python workers), as a
    paused machine is frozen; returns them, parents first. Each parent is stopped before its
    children are listed, so none is started behind the freeze."""
    assert worker.process is not None
    frozen: list[int] = []
    frontier = [worker.process.pid]
    while frontier:
        pid = frontier.pop(0)
        with contextlib.suppress(ProcessLookupError):
            os.kill(pid, signal.SIGSTOP)
            frozen.append(pid)
            frontier.extend(children(pid))
    worker.paused = True
    return frozen


def thaw(worker: WorkerProcess, frozen: list[int]) -> None:
    """SIGCONT what `freeze_with_jvm` froze, children first."""
    for pid in reversed(frozen):
        with contextlib.suppress(ProcessLookupError):
            os.kill(pid, signal.SIGCONT)
    worker.paused = False


def sigterm_and_time(worker: WorkerProcess, give_up_after_s: float) -> float:
    """SIGTERM the worker; the seconds it took to exit (give_up_after_s if it did not)."""
    assert worker.process is not None
    sent = time.monotonic()
    worker.process.send_signal(signal.SIGTERM)
    while worker.process.poll() is None and time.monotonic() - sent < give_up_after_s:
        time.sleep(0.05)
    return time.monotonic() - sent


def jvm_of(worker: WorkerProcess) -> int | None:
    """The Spark JVM the worker started (a child process running java), if any."""
    assert worker.process is not None
    for pid in children(worker.process.pid):
        try:
            command = Path(f"/proc/{pid}/cmdline").read_bytes().split(b"\0")
        except OSError:
            continue
        if command and command[0].endswith(b"java"):
            return pid
    return None


def alive(pid: int) -> bool:
    try:
        state = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[0]
    except OSError:
        return False
    return state != "Z"


def kill_with_jvm(worker: WorkerProcess, timeout: float = 30.0) -> float:
    """SIGKILL the worker; returns the wall-clock time by which its JVM had exited too."""
    assert worker.process is not None
    jvm = jvm_of(worker)
    assert jvm is not None, f"worker {worker.name} runs no Spark JVM"
    os.kill(worker.process.pid, signal.SIGKILL)
    worker.process.wait(10)
    deadline = time.monotonic() + timeout
    while alive(jvm):
        assert time.monotonic() < deadline, f"the JVM of {worker.name} outlived it by {timeout:.0f} s"
        time.sleep(0.05)
    return time.time()

"""The handoff gap: how long a moved Spark task (TopicIngest or FileIngest) ingests nothing.

Worker processes on a coordinator with its default connect-group timings, and one connector
of two tasks fed a steady stream: a TopicIngest with a producer writing records, or a
FileIngest with a file landing in each of its input directories at the same pace. A second
worker joins (one task moves to it) and then leaves gracefully (SIGTERM: the task moves
back), `rounds` times. For each move, from the moved task's checkpoint and the workers' query journals:
- gap: from the old owner's last committed batch to the new owner's first (the commit
  files' times), the time the task's partitions were read by nobody;
- stop: from the old owner's stop of the query (its journal) back to its last commit, and
  the start: from the new owner's start of the query (a prepared one's release, its journal
  `starting`; workers/distributed/warm_handoff.py) to its first commit;
- of the start: until the first batch's trigger (the checkpoint read; for a query not
  prepared, also its planner process and its source), and the first batch itself;
- the steady interval between two commits of the task before the move, for scale.

Used by bench/ingest.py, which runs it for each Spark master.
"""

from __future__ import annotations

import threading
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager, suppress
from datetime import datetime
from pathlib import Path
from typing import Any

from confluent_kafka import Producer
from confluent_kafka.admin import AdminClient, NewTopic

from connect_rebalance.processes import CoordinatorProcess
from connect_rebalance_cli import sample_data
from workers.harness.cluster import WorkerCluster, rest
from workers.harness.process import WorkerProcess
from workers.spark.runtime import SparkRuntime, checkpoint_path

TOPIC, CONNECTOR = "handoff", "handoff-ingest"


@contextmanager
def steady_stream(bootstrap: str, partitions: int, per_second: int, topic: str = TOPIC) -> Iterator[None]:
    """A producer writing `per_second` records of 100 B to a new topic, spread over its
    partitions, until exit."""
    admin = AdminClient({"bootstrap.servers": bootstrap})
    for future in admin.create_topics([NewTopic(topic, partitions, 1)]).values():
        future.result(30)
    stop = threading.Event()

    def produce() -> None:
        producer = Producer({"bootstrap.servers": bootstrap, "linger.ms": 20})
        sent, began = 0, time.monotonic()
        while not stop.is_set():
            due = int((time.monotonic() - began) * per_second)
            for i in range(sent, due):
                producer.produce(topic, value=str(i).encode().ljust(100), partition=i % partitions)
            sent = max(sent, due)
            producer.poll(0.05)
        producer.flush(30)

    with running(produce, stop, "steady-stream"):
        yield


FILES_EVERY_S = 0.25  # as often as a 500 ms trigger finds new files each batch


@contextmanager
def steady_files(root: Path, per_second: int) -> Iterator[None]:
    """Sample orders landing at `per_second` rows a second until exit: a file in each of the
    sample's input directories every FILES_EVERY_S."""
    stop = threading.Event()
    rows = max(1, round(per_second * FILES_EVERY_S / sample_data.SHARDS))
    next_id = sample_data.write_files(root, 0, 1, rows)  # the directories exist before a task starts

    def land() -> None:
        nonlocal next_id
        while not stop.wait(FILES_EVERY_S):
            next_id = sample_data.write_files(root, next_id, 1, rows)

    with running(land, stop, "steady-files"):
        yield


@contextmanager
def running(work: Callable[[], None], stop: threading.Event, name: str) -> Iterator[None]:
    """`work` on a thread of its own while the block runs; `stop` is its sign to end."""
    thread = threading.Thread(target=work, name=name, daemon=True)
    thread.start()
    try:
        yield
    finally:
        stop.set()
        thread.join(60)


def journal(worker: WorkerProcess) -> list[dict[str, Any]]:
    return SparkRuntime.read_journal(worker.log_text())


def placement(cluster: WorkerCluster, connector: str) -> dict[str, str]:
    """Where the connector ("C") and its tasks run; empty while no worker knows it yet."""
    try:
        return cluster.placement(connector)
    except (AssertionError, OSError):
        return {}


def commit_times(checkpoint: Path) -> dict[int, float]:
    """Each committed batch of a checkpoint and when its commit was written (wall clock)."""
    folder = checkpoint / "commits"
    if not folder.is_dir():
        return {}
    times = {}
    for path in folder.iterdir():
        if path.name.isdigit():
            # Spark deletes a log's files older than its last 100 batches, maybe meanwhile.
            with suppress(FileNotFoundError):
                times[int(path.name)] = path.stat().st_mtime
    return times


def wait(predicate: Callable[[], bool], timeout: float, what: str, every_s: float = 0.01) -> float:
    """Poll until `predicate` holds, every `every_s`; the time it held, from time.monotonic()."""
    deadline = time.monotonic() + timeout
    while not predicate():
        if time.monotonic() > deadline:
            raise RuntimeError(f"timed out after {timeout:.0f}s waiting for {what}")
        time.sleep(every_s)
    return time.monotonic()


class Handoffs:
    """A two-task connector (TopicIngest or FileIngest) on worker w1, and w2 joining and leaving it."""

    def __init__(
        self,
        base: Path,
        coordinator: CoordinatorProcess,
        master: str,
        trigger_ms: int,
        settings: dict[str, str],
        connector: str = "TopicIngest",
    ) -> None:
        self.base, self.connector = base, connector
        self.checkpoints = base / "checkpoints"
        spark = {"spark.master": master, "spark.session.warmup": "true", "spark.ui.enabled": "false",
                 "spark.ui.showConsoleProgress": "false", "spark.sql.shuffle.partitions": "1",
                 "spark.driver.memory": "512m", "checkpoint.dir": str(self.checkpoints),
                 **settings}  # fmt: skip
        self.cluster = WorkerCluster(base, coordinator, **spark)
        self.trigger_ms = trigger_ms
        self.w1 = self.cluster.start("w1")

    def create(self, bootstrap: str) -> None:
        config = {"connector.class": self.connector, "tasks.max": "2", "output.path": str(self.base / "out"),
                  "trigger.interval.ms": str(self.trigger_ms)}  # fmt: skip
        if self.connector == "TopicIngest":
            config.update({"topics": TOPIC, "bootstrap.servers": bootstrap})
        else:
            files = {"input.path": str(self.base / "in"), "format": "json", "schema": sample_data.SCHEMA}
            config.update(files)
        code, body = rest("POST", f"{self.w1.url}/connectors", {"name": CONNECTOR, "config": config})
        if code != 201:
            raise RuntimeError(f"creating the connector failed: {code} {body}")
        wait(lambda: self.placement().get("0") == self.placement().get("1") == self.w1.worker_id, 300,
             "both tasks running on w1")  # fmt: skip
        for task in (0, 1):
            wait(lambda task=task: len(commit_times(self.checkpoint(task))) >= 3, 300, "batches committed")

    def placement(self) -> dict[str, str]:
        return placement(self.cluster, CONNECTOR)

    def checkpoint(self, task: int) -> Path:
        return Path(checkpoint_path(self.checkpoints, CONNECTOR, task))

    def join(self) -> dict[str, float]:
        """w2 joins; a task moves w1 -> w2."""
        before = self.placement()
        w2 = self.cluster.start("w2")
        wait(lambda: w2.worker_id in self.placement().values(), 300, "a task moving to w2")
        moved = next(int(t) for t, w in self.placement().items() if t != "C" and w == w2.worker_id)
        assert before.get(str(moved)) == self.w1.worker_id
        return self.measure(moved, old=self.w1, new=w2)

    def leave(self) -> dict[str, float]:
        """w2 leaves (SIGTERM: a graceful leave); its task moves back to w1."""
        w2 = self.cluster.workers["w2"]
        moved = next(int(t) for t, w in self.placement().items() if t != "C" and w == w2.worker_id)
        w2.stop()
        wait(lambda: self.placement().get(str(moved)) == self.w1.worker_id, 300, "the task back on w1")
        return self.measure(moved, old=w2, new=self.w1)

    def measure(self, task: int, old: WorkerProcess, new: WorkerProcess) -> dict[str, float]:
        name = f"{CONNECTOR}-{task}"
        began = max(e["at"] for e in journal(new) if e["query"] == name and e["event"] == "starting")
        wait(lambda: any(e["query"] == name and e["event"] == "first-batch" and e["at"] >= began
                         for e in journal(new)), 300, "the new owner's first batch")  # fmt: skip
        first = next(e for e in journal(new) if e["query"] == name and e["event"] == "first-batch"
                     and e["at"] >= began)  # fmt: skip
        stopped = max(e["at"] for e in journal(old) if e["query"] == name and e["event"] == "stopped")
        batch = int(first["batch"])
        wait(lambda: batch in commit_times(self.checkpoint(task)), 60, "the first batch's commit")
        commits = commit_times(self.checkpoint(task))
        last_old = max(at for b, at in commits.items() if b < batch)
        steady = sorted(at for b, at in commits.items() if b < batch)[-4:]
        trigger = datetime.strptime(first["trigger"], "%Y-%m-%dT%H:%M:%S.%f%z").timestamp()
        return {
            "gap_s": commits[batch] - last_old,
            "new_start_to_first_trigger_s": trigger - began,
            "first_batch_s": first["durations"].get("triggerExecution", 0) / 1000,
            "first_batch_ms": {k: int(v) for k, v in first["durations"].items()},
            "old_stop_after_last_commit_s": stopped - last_old,
            "new_start_to_first_commit_s": commits[batch] - began,
            "steady_interval_s": (steady[-1] - steady[0]) / max(1, len(steady) - 1),
        }

    def close(self) -> None:
        self.cluster.stop_all()


def measure_handoffs(
    base: Path, master: str, rounds: int, partitions: int, per_second: int, trigger_ms: int,
    report: Callable[[str], None] = print, settings: dict[str, str] | None = None,
    connector: str = "TopicIngest",
) -> list[dict[str, Any]]:  # fmt: skip
    """`rounds` joins and graceful leaves on `master`; one figure set per move. FileIngest's
    stream: as many rows a second as TopicIngest's records, in files landing every 0.25 s."""
    base.mkdir(parents=True, exist_ok=True)
    coordinator = CoordinatorProcess(base / "data").start()
    handoffs = None
    if connector == "TopicIngest":
        stream = steady_stream(coordinator.bootstrap, partitions, per_second)
    else:
        stream = steady_files(base / "in", per_second)
    try:
        with stream:
            handoffs = Handoffs(base, coordinator, master, trigger_ms, settings or {}, connector)
            handoffs.create(coordinator.bootstrap)
            results = []
            for round_ in range(rounds):
                for kind, move in (("join", handoffs.join), ("leave", handoffs.leave)):
                    figures = {"kind": kind, "round": round_, "master": master, "connector": connector,
                               **move()}  # fmt: skip
                    results.append(figures)
                    old_stop = figures["old_stop_after_last_commit_s"]
                    first = figures["new_start_to_first_commit_s"]
                    report(f"{master} {connector} round {round_} {kind:>5}: gap {figures['gap_s']:.2f} s "
                           f"(old stop {old_stop:.2f} s after its last commit, new start -> first commit "
                           f"{first:.2f} s, steady {figures['steady_interval_s']:.2f} s)")  # fmt: skip
            return results
    finally:
        if handoffs is not None:
            handoffs.close()
        coordinator.stop()

"""What running an ingestion query as a worker task costs, against the same query in plain
PySpark, and how long a task that moves between workers ingests nothing — for each Spark master.

For each master (`local[2]`, and a standalone cluster of a master and two Spark workers started
from the installed PySpark), one warm SparkSession (the worker runtime's, in this process) and a
coordinator process holding a topic with a backlog. The same query — the `topic` data source
over every partition -> Parquet, the same trigger — runs
- directly: `spark.readStream...start()` / `query.stop()`;
- through the runtime: a TopicIngest task started and stopped as a worker does on assignment
  and revocation,
alternating which goes first, and each is measured:
- rows/s: from start until the checkpoint records every record as committed;
- assignment -> first committed batch: a start on a new checkpoint, with batches of
  `--first-batch` records (what a moved task finds waiting, not a whole backlog);
- revocation -> stopped: a stop while the second batch runs, as a revocation stops it (the
  runtime lets the batch under way commit; plain PySpark's stop throws it away).
Then the handoff gap (bench/handoff_gap.py): worker processes on that master, a worker joining
and leaving a two-task TopicIngest fed a steady stream of records, and a two-task FileIngest
fed files at the same pace.

    python bench/ingest.py [--masters local[2],standalone] [--rounds 5] [--handoff-rounds 5]
                           [--records 100000] [--batch 50000] [--first-batch 2000]
                           [--handoff-connectors TopicIngest,FileIngest] [--update-readme]

Prints a table, saves bench/results/ingest.json, and with --update-readme replaces the
table between the bench:ingest markers in README.md.
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import json
import os
import platform
import statistics
import sys
import tempfile
import time
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from confluent_kafka import Producer  # noqa: E402
from confluent_kafka.admin import AdminClient, NewTopic  # noqa: E402

from bench.handoff_gap import measure_handoffs, placement, steady_stream, wait  # noqa: E402
from bench.readme_table import update_readme  # noqa: E402
from connect_rebalance.processes import CoordinatorProcess  # noqa: E402
from tests.support.spark_standalone import spark_standalone  # noqa: E402
from workers.config.worker import WorkerConfig  # noqa: E402
from workers.connectors.topic_ingest import TopicIngestTask  # noqa: E402
from workers.harness.cluster import WorkerCluster, rest  # noqa: E402
from workers.plugins.api import TaskContext  # noqa: E402
from workers.spark.runtime import SparkRuntime  # noqa: E402
from workers.spark.share_handoff import committed_offsets  # noqa: E402

TOPIC = "ingest"
TRIGGER_MS = 1000


def produce(bootstrap: str, records: int, partitions: int) -> None:
    admin = AdminClient({"bootstrap.servers": bootstrap})
    for future in admin.create_topics([NewTopic(TOPIC, partitions, 1)]).values():
        future.result(30)
    producer = Producer({"bootstrap.servers": bootstrap, "linger.ms": 20})
    for i in range(records):
        value = str(i).encode().ljust(100)
        producer.produce(TOPIC, key=str(i).encode(), value=value, partition=i % partitions)
        if i % 10_000 == 0:
            producer.poll(0)
    assert producer.flush(60) == 0, "not every record was acknowledged"


def committed(checkpoint: Path) -> int:
    offsets = committed_offsets(str(checkpoint)) or {}
    return sum(o for by_partition in offsets.values() for o in by_partition.values())


def first_commit(checkpoint: Path) -> bool:
    commits = checkpoint / "commits"
    return commits.is_dir() and any(p.name.isdigit() for p in commits.iterdir())


class Side:
    """One way of running the query: start it on a checkpoint, stop it, say if it is active."""

    name = ""

    def start(self, checkpoint: Path, output: Path, batch: int) -> None:
        raise NotImplementedError

    def where(self, checkpoint: Path) -> Path:
        """Where the query's checkpoint really is, given the one `start` was asked for."""
        return checkpoint

    def stop(self) -> None:
        raise NotImplementedError

    def active(self) -> bool:
        raise NotImplementedError


class Direct(Side):
    name = "plain PySpark"

    def __init__(self, spark: Any, bootstrap: str, partitions: int) -> None:
        self.spark, self.bootstrap = spark, bootstrap
        self.assign = ",".join(f"{TOPIC}:{p}" for p in range(partitions))
        self.query: Any = None

    def start(self, checkpoint: Path, output: Path, batch: int) -> None:
        frame = (
            self.spark.readStream.format("topic")
            .option("bootstrap.servers", self.bootstrap)
            .option("assign", self.assign)
            .option("maxOffsetsPerTrigger", str(batch))
            .load()
        )
        self.query = (
            frame.writeStream.format("parquet")
            .option("path", str(output))
            .option("checkpointLocation", str(checkpoint))
            .queryName(f"direct-{checkpoint.name}")
            .trigger(processingTime=f"{TRIGGER_MS} milliseconds")
            .start()
        )

    def stop(self) -> None:
        self.query.stop()

    def active(self) -> bool:
        return bool(self.query.isActive)


def measure(side: Side, base: Path, records: int, run: str, batch: int, first_batch: int) -> dict[str, Any]:
    """Throughput on a fresh checkpoint, then a start (`measure_start`)."""
    asked, output = base / run / "ckpt", base / run / "out"
    checkpoint = side.where(asked)
    started = time.monotonic()
    side.start(asked, output, batch)
    done = wait(lambda: committed(checkpoint) >= records, 600, f"{side.name}: every record")
    side.stop()
    return {"rows_per_s": records / (done - started), **measure_start(side, base, run, first_batch)}


def measure_start(side: Side, base: Path, run: str, first_batch: int) -> dict[str, Any]:
    """A start on a fresh checkpoint with batches of `first_batch` records (what a moved task
    finds waiting), timed to its first commit, and stopped while its second batch runs (a
    revocation)."""
    asked, output = base / run / "ckpt-start", base / run / "out-start"
    checkpoint = side.where(asked)
    assigned = time.monotonic()
    side.start(asked, output, first_batch)
    first = wait(lambda: first_commit(checkpoint), 300, f"{side.name}: a first batch")
    wait(lambda: (checkpoint / "offsets" / "1").exists(), 300, f"{side.name}: a second batch to start")
    stop_at = time.monotonic()
    side.stop()
    stopped = wait(lambda: not side.active(), 60, f"{side.name}: the query to stop")
    return {
        "first_batch_s": first - assigned,
        "stop_s": stopped - stop_at,
        "stopped_mid_batch": not (checkpoint / "commits" / "1").exists(),
    }


@contextlib.contextmanager
def busy_workers(
    base: Path, coordinator: CoordinatorProcess, master: str, extra: dict[str, str]
) -> Iterator[None]:
    """Two worker processes on this machine, each running a TopicIngest task over a steady
    stream, for as long as the block runs."""
    cluster = WorkerCluster(base / "busy", coordinator, **{
        "spark.master": master, "spark.session.warmup": "true", "spark.ui.enabled": "false",
        "spark.sql.shuffle.partitions": "1", "spark.driver.memory": "512m",
        "checkpoint.dir": str(base / "busy" / "checkpoints"), **extra})  # fmt: skip
    try:
        with steady_stream(coordinator.bootstrap, 4, 2_000, topic="busy"):
            workers = [cluster.start("busy-1"), cluster.start("busy-2")]
            config = {"connector.class": "TopicIngest", "tasks.max": "2", "topics": "busy",
                      "output.path": str(base / "busy" / "out"), "trigger.interval.ms": "500"}  # fmt: skip
            rest("POST", f"{workers[0].url}/connectors", {"name": "busy", "config": config})
            both = {"C", "0", "1"}  # the connector and both tasks running, the tasks apart
            wait(lambda: set(placement(cluster, "busy")) == both and placement(cluster, "busy")["0"]
                 != placement(cluster, "busy")["1"], 300, "both busy workers ingesting")  # fmt: skip
            yield
    finally:
        cluster.stop_all()


FIGURES = ("rows_per_s", "first_batch_s", "stop_s")
GOALS = {"ratio": "≥ 0.95", "first_batch_s": "≤ 2", "gap": "≤ 1"}


def spread(values: list[float], fmt: str) -> str:
    """The median of `values`, with the lowest and highest in brackets."""
    if not values:
        return "–"
    low, mid, high = min(values), statistics.median(values), max(values)
    return f"{mid:{fmt}} ({low:{fmt}}–{high:{fmt}})"


def readme_block(result: dict[str, Any]) -> str:
    """Per master, medians over the rounds with their range; runtime / plain is each round's own
    ratio (the two sides of a round run one after the other), so a busy round does not skew it."""
    masters = result["masters"]
    connectors = result.get("handoff_connectors", ["TopicIngest"])

    def column(master: str, key: str, side: str, fmt: str) -> str:
        return spread([r[key] for r in result["runs"] if r["master"] == master and r["side"] == side], fmt)

    def ratio(master: str, key: str) -> str:
        runs = [r for r in result["runs"] if r["master"] == master and key in r]
        by_round = {(r["side"], r["round"]): r[key] for r in runs}
        rounds = sorted({r["round"] for r in runs})
        return spread([by_round["runtime", n] / by_round["direct", n] for n in rounds], ".2f")

    def gap(
        master: str, kind: str | None, key: str | Callable[[dict[str, Any]], float] = "gap_s",
        connector: str = "TopicIngest",
    ) -> str:  # fmt: skip
        """A handoff figure (a key, or a function of a move's figures) of `connector`'s moves over
        the joins or the leaves (`kind`), or over both (None)."""
        moves = [h for h in result["handoffs"] if h["master"] == master and kind in (None, h["kind"])
                 and h.get("connector", "TopicIngest") == connector]  # fmt: skip
        return spread([key(h) if callable(key) else h[key] for h in moves], ".2f")

    def both(master: str, kind: str | None, key: str | Callable[[dict[str, Any]], float] = "gap_s") -> str:
        """A handoff figure of TopicIngest's moves, and FileIngest's after a slash."""
        return " / ".join(gap(master, kind, key, c) for c in connectors)

    def reading_again(move: dict[str, Any]) -> float:
        """From the old owner's last commit until the new owner's first batch reads: the gap
        less that batch (its commit ends the gap)."""
        return float(move["gap_s"] - move["first_batch_s"])

    def row(what: str, goal: str, cell: Callable[[str], str]) -> str:
        return f"| {what} | {goal} | " + " | ".join(cell(m) for m in masters) + " |"

    rows = [
        "| one TopicIngest task | goal | " + " | ".join(result["labels"][m] for m in masters) + " |",
        "|---|---|" + "---:|" * len(masters),
        row("rows/s, runtime / plain PySpark", GOALS["ratio"], lambda m: ratio(m, "rows_per_s")),
        row("rows/s through the runtime", "", lambda m: column(m, "rows_per_s", "runtime", ",.0f")),
        row("rows/s, plain PySpark", "", lambda m: column(m, "rows_per_s", "direct", ",.0f")),
        row("assignment -> first committed batch, s", GOALS["first_batch_s"],
            lambda m: column(m, "first_batch_s", "runtime", ".2f")),
        row("same, plain PySpark, s", "", lambda m: column(m, "first_batch_s", "direct", ".2f")),
        row("assignment -> first committed batch, two busy workers beside, s", GOALS["first_batch_s"],
            lambda m: column(m, "first_batch_s", "runtime-loaded", ".2f")),
        row("same, plain PySpark, s", "", lambda m: column(m, "first_batch_s", "direct-loaded", ".2f")),
        row("revocation -> query stopped, s", "", lambda m: column(m, "stop_s", "runtime", ".3f")),
        *[row(f"handoff gap of a {c} task, a worker joins, s", GOALS["gap"],
              lambda m, c=c: gap(m, "join", connector=c)) for c in connectors],
        *[row(f"handoff gap of a {c} task, a worker leaves (SIGTERM), s", GOALS["gap"],
              lambda m, c=c: gap(m, "leave", connector=c)) for c in connectors],
        row(f"of which ({' / '.join(connectors)}): nothing read (until the new owner's first batch begins), "
            "joins and leaves, s", "", lambda m: both(m, None, reading_again)),
        row("of which: old owner's last commit -> its query stopped, s", "",
            lambda m: both(m, None, "old_stop_after_last_commit_s")),
        row("of which: new owner's start -> first trigger, s", "",
            lambda m: both(m, None, "new_start_to_first_trigger_s")),
        row("of which: the first batch, s", "", lambda m: both(m, None, "first_batch_s")),
        row("for scale: between two commits, steady, s", "", lambda m: both(m, None, "steady_interval_s")),
    ]  # fmt: skip
    return "\n".join(rows) + (
        f"\n\nMedian of {result['rounds']} rounds (handoffs: {result['handoff_rounds']} joins and "
        f"{result['handoff_rounds']} leaves), lowest–highest in brackets; runtime / plain is the median of "
        f"each round's own ratio. Per-round figures in `bench/results/ingest.json`. Rows/s: "
        f"{result['records']:,} records of 100 B in {result['partitions']} partitions, at most "
        f"{result['batch']:,} per batch; first batch: batches of {result['first_batch']:,} records (what a "
        f"moved task finds waiting); {result['trigger_ms']} ms trigger, one warm session. Handoffs: worker "
        f"processes on a coordinator with its default timings, {result['handoff_rate']:,} records/s over "
        f"{result['partitions']} partitions into a two-task TopicIngest, or as many rows/s in files landing "
        f"in 6 directories every 0.25 s into a two-task FileIngest, with a {result['handoff_trigger_ms']} ms "
        f"trigger. {result['machine']}."
    )


class ThroughRuntime(Side):
    """A TopicIngest task, started and stopped through the plugin API as a worker does."""

    name = "through the runtime"

    def __init__(self, worker: WorkerConfig, bootstrap: str) -> None:
        self.worker, self.bootstrap = worker, bootstrap
        self.runtime = SparkRuntime(worker.spark_master, worker.spark_settings, worker.checkpoint_dir,
                                    worker.task_shutdown_graceful_timeout_ms, "bench")  # fmt: skip
        self.loop = asyncio.new_event_loop()
        self.task: TopicIngestTask | None = None
        self.failures: list[BaseException] = []

    def where(self, checkpoint: Path) -> Path:
        return checkpoint / "0"  # the runtime's <checkpoint.dir>/<connector>/<task>

    def start(self, checkpoint: Path, output: Path, batch: int) -> None:
        # Connector `ckpt...` under checkpoint.dir = the run's directory: task 0's checkpoint is where().
        connector = checkpoint.name
        self.runtime.checkpoint_dir = checkpoint.parent
        worker = self.worker
        config = {"topics": TOPIC, "output.path": str(output), "bootstrap.servers": self.bootstrap,
                  "trigger.interval.ms": str(TRIGGER_MS), "max.records.per.batch": str(batch),
                  "starting.offsets": "earliest", "task.index": "0", "task.count": "1"}  # fmt: skip
        context = TaskContext(
            connector, 0, "bench", self.bootstrap, read_offset=_no_offset, write_offset=_ignore,
            fail=self.failures.append, extra={"worker_config": worker, "spark": self.runtime},
        )  # fmt: skip
        self.task = TopicIngestTask()
        self.loop.run_until_complete(self.task.start(config, context))

    def stop(self) -> None:
        assert self.task is not None  # as a revocation does: the batch under way commits first
        self.loop.run_until_complete(self.task.stop(finish_batch=True))

    def active(self) -> bool:
        return self.task is not None and self.task.query is not None and bool(self.task.query.isActive)


async def _no_offset(partition: Any) -> None:
    return None


async def _ignore(partition: Any, offset: Any) -> None:
    return None


def session_settings(coordinator: CoordinatorProcess, base: Path, master: str) -> dict[str, str]:
    return {
        "bootstrap.servers": coordinator.bootstrap, "group.id": "bench", "config.storage.topic": "c",
        "offset.storage.topic": "o", "status.storage.topic": "s", "spark.master": master,
        "checkpoint.dir": str(base / "checkpoints"), "spark.ui.enabled": "false",
        "spark.ui.showConsoleProgress": "false", "spark.sql.shuffle.partitions": "2",
    }  # fmt: skip


def one_master(
    args: argparse.Namespace, base: Path, master: str, extra: dict[str, str]
) -> list[dict[str, Any]]:
    """Both sides, alternating, `args.rounds` times, on one warm session of `master`."""
    results: list[dict[str, Any]] = []
    base.mkdir(parents=True, exist_ok=True)
    coordinator = CoordinatorProcess(base / "data").start()
    runtime = None
    try:
        produce(coordinator.bootstrap, args.records, args.partitions)
        worker = WorkerConfig.from_settings({**session_settings(coordinator, base, master), **extra})
        runtime = ThroughRuntime(worker, coordinator.bootstrap)
        runtime.runtime.warm()  # as a worker does when it starts
        # The same query, directly, on the session the runtime started (same JVM, same settings).
        direct = Direct(runtime.runtime.session(), coordinator.bootstrap, args.partitions)
        warm = base / "warm-up"  # each side once: JIT, Python workers
        for side in (runtime, direct):
            measure(side, warm, args.records, side.name[:6], args.batch, args.first_batch)
        for round_ in range(args.rounds):
            order = (direct, runtime) if round_ % 2 == 0 else (runtime, direct)
            for side in order:
                key = "direct" if side is direct else "runtime"
                figures = measure(side, base, args.records, f"{key}-{round_}", args.batch, args.first_batch)
                results.append({"master": master, "side": key, "round": round_, **figures})
                print(f"{master} round {round_} {side.name:>20}: {figures['rows_per_s']:,.0f} rows/s, "
                      f"first batch {figures['first_batch_s']:.2f} s, stop {figures['stop_s']:.3f} s",
                      flush=True)  # fmt: skip
        # The start again, with two busy worker processes beside this one.
        with busy_workers(base, coordinator, master, extra):
            for round_ in range(args.rounds):
                order = (direct, runtime) if round_ % 2 == 0 else (runtime, direct)
                for side in order:
                    key = "direct" if side is direct else "runtime"
                    figures = measure_start(side, base, f"{key}-loaded-{round_}", args.first_batch)
                    results.append({"master": master, "side": f"{key}-loaded", "round": round_, **figures})
                    print(f"{master} round {round_} {side.name:>20}, two busy workers beside: first batch "
                          f"{figures['first_batch_s']:.2f} s", flush=True)  # fmt: skip
        assert not runtime.failures, runtime.failures
    finally:
        if runtime is not None:
            runtime.runtime.close()
        coordinator.stop()
    return results


# Each connect worker on the standalone cluster is one application holding one executor
# core: two fit the cluster's two Spark workers; executors call their driver on loopback.
ON_THE_CLUSTER = {"spark.cores.max": "1", "spark.executor.cores": "1", "spark.executor.memory": "512m",
                  "spark.driver.host": "127.0.0.1", "spark.driver.bindAddress": "127.0.0.1"}  # fmt: skip
LABELS = {"local[2]": "local[2]", "standalone": "standalone cluster (2 Spark workers)"}


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--records", type=int, default=100_000)
    parser.add_argument("--partitions", type=int, default=4)
    parser.add_argument("--batch", type=int, default=50_000, help="at most this many records per batch")
    parser.add_argument("--first-batch", type=int, default=2_000, help="batch size for the start figures")
    parser.add_argument("--rounds", type=int, default=5, help="each runs both sides; medians need 3+")
    parser.add_argument("--handoff-rounds", type=int, default=5, help="joins and leaves per master")
    parser.add_argument("--handoff-rate", type=int, default=1_000, help="records/s during the handoffs")
    parser.add_argument("--handoff-trigger-ms", type=int, default=500)
    parser.add_argument("--masters", default="local[2],standalone", help="local[N] and/or standalone")
    parser.add_argument("--handoff-connectors", default="TopicIngest,FileIngest")
    parser.add_argument("--update-readme", action="store_true")
    args = parser.parse_args()
    masters = [m.strip() for m in args.masters.split(",") if m.strip()]
    connectors = [c.strip() for c in args.handoff_connectors.split(",") if c.strip()]
    runs: list[dict[str, Any]] = []
    handoffs: list[dict[str, Any]] = []
    with tempfile.TemporaryDirectory(prefix="bench-ingest-") as tmp:
        for master in masters:
            base = Path(tmp) / master.replace("[", "-").replace("]", "")
            with contextlib.ExitStack() as stack:
                url, extra = master, {}
                if master == "standalone":
                    url = stack.enter_context(spark_standalone(base / "spark-cluster", workers=2)).master_url
                    extra = ON_THE_CLUSTER
                runs += [{**r, "master": master} for r in one_master(args, base / "runs", url, extra)]
                for connector in connectors:
                    moved = measure_handoffs(
                        base / f"handoffs-{connector}", url, args.handoff_rounds, args.partitions,
                        args.handoff_rate, args.handoff_trigger_ms, settings=extra, connector=connector,
                    )  # fmt: skip
                    handoffs += [{**h, "master": master} for h in moved]
    result = {
        "records": args.records, "partitions": args.partitions, "batch": args.batch,
        "first_batch": args.first_batch, "rounds": args.rounds, "handoff_rounds": args.handoff_rounds,
        "handoff_rate": args.handoff_rate, "handoff_trigger_ms": args.handoff_trigger_ms,
        "handoff_connectors": connectors,
        "masters": masters, "labels": {m: LABELS.get(m, m) for m in masters}, "trigger_ms": TRIGGER_MS,
        "machine": f"{os.cpu_count()} cores, Python {platform.python_version()}",
        "runs": runs, "handoffs": handoffs,
    }  # fmt: skip
    out = ROOT / "bench" / "results" / "ingest.json"
    out.parent.mkdir(parents=True, exist_ok=True)
    out.write_text(json.dumps(result, indent=2))
    table = readme_block(result)
    print("\n" + table)
    if args.update_readme:
        update_readme("ingest", table)
    return 0


if __name__ == "__main__":
    sys.exit(main())

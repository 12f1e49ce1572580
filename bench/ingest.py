"""What running an ingestion query as a worker task costs, against the same query in plain PySpark.

One run, one warm SparkSession (the worker runtime's, in this process), a coordinator
process holding a topic with a backlog of records. The same query — the `topic` data source
over every partition -> Parquet, the same trigger and batch limit — runs
- directly: `spark.readStream...start()` / `query.stop()`;
- through the runtime: a TopicIngest task started and stopped as a worker does on
  assignment and revocation.
and each is measured, alternating which goes first:
- rows/s: from start until the checkpoint records every record as committed;
- assignment -> first committed batch: from start until the first batch is committed;
- revocation -> stopped: from the stop call, made while a batch is running, until the query
  is no longer active.

    python bench/ingest.py [--records 100000] [--partitions 4] [--batch 50000] [--rounds 5]
                           [--update-readme]

Prints a table, saves bench/results/ingest.json, and with --update-readme replaces the
table between the bench:ingest markers in README.md.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import platform
import statistics
import sys
import tempfile
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from confluent_kafka import Producer  # noqa: E402
from confluent_kafka.admin import AdminClient, NewTopic  # noqa: E402

from bench.readme_table import update_readme  # noqa: E402
from connect_rebalance.processes import CoordinatorProcess  # noqa: E402
from workers.connectors.share_handoff import committed_offsets  # noqa: E402
from workers.connectors.topic_ingest import TopicIngestTask  # noqa: E402
from workers.plugins import TaskContext  # noqa: E402
from workers.spark_runtime import SparkRuntime  # noqa: E402
from workers.worker_config import WorkerConfig  # noqa: E402

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


def wait(predicate: Callable[[], bool], timeout: float, what: str) -> float:
    """Poll until `predicate` holds; the time it held, from time.monotonic()."""
    deadline = time.monotonic() + timeout
    while not predicate():
        if time.monotonic() > deadline:
            raise RuntimeError(f"timed out after {timeout:.0f}s waiting for {what}")
        time.sleep(0.01)
    return time.monotonic()


class Side:
    """One way of running the query: start it on a checkpoint, stop it, say if it is active."""

    name = ""

    def start(self, checkpoint: Path, output: Path) -> None:
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

    def __init__(self, spark: Any, bootstrap: str, partitions: int, batch: int) -> None:
        self.spark, self.bootstrap, self.batch = spark, bootstrap, batch
        self.assign = ",".join(f"{TOPIC}:{p}" for p in range(partitions))
        self.query: Any = None

    def start(self, checkpoint: Path, output: Path) -> None:
        frame = (
            self.spark.readStream.format("topic")
            .option("bootstrap.servers", self.bootstrap)
            .option("assign", self.assign)
            .option("maxOffsetsPerTrigger", str(self.batch))
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


def measure(side: Side, base: Path, records: int, run: str) -> dict[str, float]:
    """Throughput and time to first commit on a fresh checkpoint; then a stop mid-batch."""
    asked, output = base / run / "ckpt", base / run / "out"
    checkpoint = side.where(asked)
    started = time.monotonic()
    side.start(asked, output)
    first = wait(lambda: first_commit(checkpoint), 300, f"{side.name}: a first batch")
    done = wait(lambda: committed(checkpoint) >= records, 600, f"{side.name}: every record")
    side.stop()
    # A second run on a new checkpoint, stopped while its first batch is running.
    asked, output = base / run / "ckpt-stop", base / run / "out-stop"
    checkpoint = side.where(asked)
    side.start(asked, output)
    wait(lambda: (checkpoint / "offsets" / "0").exists(), 300, f"{side.name}: a batch to start")
    stop_at = time.monotonic()
    side.stop()
    stopped = wait(lambda: not side.active(), 60, f"{side.name}: the query to stop")
    return {
        "rows_per_s": records / (done - started),
        "first_batch_s": first - started,
        "stop_s": stopped - stop_at,
        "stopped_mid_batch": not first_commit(checkpoint),
    }


FIGURES = ("rows_per_s", "first_batch_s", "stop_s")


def summary(results: list[dict[str, Any]], side: str) -> dict[str, float]:
    runs = [r for r in results if r["side"] == side]
    return {key: statistics.median(r[key] for r in runs) for key in FIGURES}


def spread(values: list[float], fmt: str) -> str:
    """The median of `values`, with the lowest and highest in brackets."""
    low, mid, high = min(values), statistics.median(values), max(values)
    return f"{mid:{fmt}} ({low:{fmt}}–{high:{fmt}})"


def readme_block(result: dict[str, Any]) -> str:
    """Medians over the rounds with their range; runtime / plain is each round's own ratio (the
    two sides of a round run one after the other), so a busy round does not skew it."""
    runs = result["runs"]
    side = {s: {k: [r[k] for r in runs if r["side"] == s] for k in FIGURES} for s in ("direct", "runtime")}
    rounds = sorted({r["round"] for r in runs})
    by_round = {(r["side"], r["round"]): r for r in runs}

    def ratio(key: str) -> str:
        return spread([by_round["runtime", n][key] / by_round["direct", n][key] for n in rounds], ".2f")

    def both(key: str, fmt: str) -> str:
        return f"{spread(side['direct'][key], fmt)} | {spread(side['runtime'][key], fmt)}"

    rows = [
        "| one task, warm session | plain PySpark | through the runtime | runtime / plain |",
        "|---|---:|---:|---:|",
        f"| rows/s (topic -> Parquet) | {both('rows_per_s', ',.0f')} | {ratio('rows_per_s')} |",
        f"| start (assignment) -> first committed batch, s | {both('first_batch_s', '.2f')} "
        f"| {ratio('first_batch_s')} |",
        f"| stop (revocation) mid-batch -> query stopped, s | {both('stop_s', '.3f')} | |",
    ]
    return "\n".join(rows) + (
        f"\n\nMedian of {len(rounds)} rounds, lowest–highest in brackets; runtime / plain is the median "
        f"of each round's own ratio. Per-round figures in `bench/results/ingest.json`. "
        f"{result['records']:,} records of 100 B in {result['partitions']} partitions, at most "
        f"{result['batch']:,} per batch, {result['trigger_ms']} ms trigger, spark.master {result['master']}; "
        f"{result['machine']}."
    )


class ThroughRuntime(Side):
    """A TopicIngest task, started and stopped through the plugin API as a worker does."""

    name = "through the runtime"

    def __init__(self, worker: WorkerConfig, bootstrap: str, batch: int) -> None:
        self.worker, self.bootstrap, self.batch = worker, bootstrap, batch
        self.runtime = SparkRuntime(worker.spark_master, worker.spark_settings, worker.checkpoint_dir,
                                    worker.task_shutdown_graceful_timeout_ms, "bench")  # fmt: skip
        self.loop = asyncio.new_event_loop()
        self.task: TopicIngestTask | None = None
        self.failures: list[BaseException] = []

    def where(self, checkpoint: Path) -> Path:
        return checkpoint / "0"  # the runtime's <checkpoint.dir>/<connector>/<task>

    def start(self, checkpoint: Path, output: Path) -> None:
        # Connector `ckpt...` under checkpoint.dir = the run's directory: task 0's checkpoint is where().
        connector = checkpoint.name
        self.runtime.checkpoint_dir = checkpoint.parent
        worker = self.worker
        config = {"topics": TOPIC, "output.path": str(output), "bootstrap.servers": self.bootstrap,
                  "trigger.interval.ms": str(TRIGGER_MS), "max.records.per.batch": str(self.batch),
                  "starting.offsets": "earliest", "task.index": "0", "task.count": "1"}  # fmt: skip
        context = TaskContext(
            connector, 0, "bench", self.bootstrap, read_offset=_no_offset, write_offset=_ignore,
            fail=self.failures.append, extra={"worker_config": worker, "spark": self.runtime},
        )  # fmt: skip
        self.task = TopicIngestTask()
        self.loop.run_until_complete(self.task.start(config, context))

    def stop(self) -> None:
        assert self.task is not None
        self.loop.run_until_complete(self.task.stop())

    def active(self) -> bool:
        return self.task is not None and self.task.query is not None and bool(self.task.query.isActive)


async def _no_offset(partition: Any) -> None:
    return None


async def _ignore(partition: Any, offset: Any) -> None:
    return None


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--records", type=int, default=100_000)
    parser.add_argument("--partitions", type=int, default=4)
    parser.add_argument("--batch", type=int, default=50_000, help="at most this many records per batch")
    parser.add_argument("--rounds", type=int, default=5, help="each runs both sides; medians need 3+")
    parser.add_argument("--master", default="local[2]")
    parser.add_argument("--update-readme", action="store_true")
    args = parser.parse_args()
    results: list[dict[str, Any]] = []
    with tempfile.TemporaryDirectory(prefix="bench-ingest-") as tmp:
        base = Path(tmp)
        coordinator = CoordinatorProcess(base / "data").start()
        try:
            produce(coordinator.bootstrap, args.records, args.partitions)
            worker = WorkerConfig.from_settings({
                "bootstrap.servers": coordinator.bootstrap, "group.id": "bench", "config.storage.topic": "c",
                "offset.storage.topic": "o", "status.storage.topic": "s", "spark.master": args.master,
                "checkpoint.dir": str(base / "checkpoints"), "spark.ui.enabled": "false",
                "spark.ui.showConsoleProgress": "false", "spark.sql.shuffle.partitions": "2",
            })  # fmt: skip
            runtime = ThroughRuntime(worker, coordinator.bootstrap, args.batch)
            # Warm-up: the session starts, and each side runs once (JIT, Python workers).
            warm = base / "warm-up"
            measure(runtime, warm, args.records, "runtime")
            # The same query, directly, on the session the runtime started (same JVM, same settings).

            spark = runtime.runtime.session()
            direct = Direct(spark, coordinator.bootstrap, args.partitions, args.batch)
            measure(direct, warm, args.records, "direct")
            for round_ in range(args.rounds):
                order = (direct, runtime) if round_ % 2 == 0 else (runtime, direct)
                for side in order:
                    key = "direct" if side is direct else "runtime"
                    figures = measure(side, base, args.records, f"{key}-{round_}")
                    results.append({"side": key, "round": round_, **figures})
                    print(
                        f"round {round_} {side.name:>20}: {figures['rows_per_s']:,.0f} rows/s, first batch "
                        f"{figures['first_batch_s']:.2f} s, stop {figures['stop_s']:.3f} s",
                        flush=True,
                    )
            assert not runtime.failures, runtime.failures
        finally:
            coordinator.stop()
    result = {
        "records": args.records, "partitions": args.partitions, "batch": args.batch, "rounds": args.rounds,
        "master": args.master, "trigger_ms": TRIGGER_MS,
        "machine": f"{os.cpu_count()} cores, Python {platform.python_version()}",
        "median": {"direct": summary(results, "direct"), "runtime": summary(results, "runtime")},
        "runs": results,
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

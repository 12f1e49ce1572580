"""How many Spark tasks one worker carries, and what each costs: N TopicIngest tasks on one worker.

One coordinator holding 32 one-partition topics, each with a backlog of `--records` records
of 100 B. For each N (1, 4, 8, 16, 32): a fresh worker process (`spark.master=local[2]`, its
session warmed before the tasks come, every other setting Spark's and the worker's default)
and N TopicIngest connectors of one task each, with default settings, each over its own
topic, all created at once (a thread per create, as a burst of users would). Measured, for
each N, in the same run:
- start: from the creates until every task is RUNNING;
- rows/s: all the tasks' records over the time from the first task RUNNING until the last
  task's output holds its backlog (its checkpoint's commit log); with N=1, one task from
  the moment it runs, over the raw client's own topic (below), like for like;
- against the raw client: a confluent-kafka consumer with default settings, assigned a
  1,000,000-record topic of the same records, timed from its creation to its last record,
  run before the first N and after the last (their mean is the reference);
- every output read back (the committed Parquet files, with pyarrow): every record once;
- RSS and PSS (shared pages divided among the processes sharing them) of all of the
  worker's processes (the worker, its JVM, Spark's Python daemon and workers, the planner
  host) once everything is read, and the RSS each task adds: over the same worker with its
  session ready and no task;
- processes in the worker's tree while the tasks run, by kind;
- idle CPU per task: the worker's processes' CPU over 20 s, from 30 s after everything was
  read, divided by N; and what each task adds over the same worker's idle CPU with no task
  (measured the same way before the connectors are created);
- failures seen: tasks seen FAILED in any status poll (every 0.25 s), and starts again after
  Spark's machinery failed (the worker's log).
Then the same for FileIngest (`--file-tasks`, default 16 and 32): N connectors of one task,
each over its own input directory of `--files` JSON files of 250 rows, created at once.

    python bench/density.py [--tasks 1,4,8,16,32] [--records 200000] [--file-tasks 16,32]
                            [--files 40] [--update-readme]

Prints a table, saves bench/results/density.json and density.png, and with --update-readme
rewrites the density block of docs/performance.md.
"""

from __future__ import annotations

import argparse
import concurrent.futures
import os
import platform
import statistics
import sys
import tempfile
import threading
import time
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from confluent_kafka import Consumer, Producer, TopicPartition  # noqa: E402
from confluent_kafka.admin import AdminClient, NewTopic  # noqa: E402

from bench.handoff_gap import wait  # noqa: E402
from bench.readme_table import RESULTS, publish  # noqa: E402
from connect_rebalance.processes import CoordinatorProcess  # noqa: E402
from connect_rebalance_cli import sample_data  # noqa: E402
from workers.harness.cluster import WorkerCluster, rest  # noqa: E402
from workers.spark.parquet_output import committed_column  # noqa: E402
from workers.spark.runtime import checkpoint_path  # noqa: E402
from workers.spark.share_handoff import committed_offsets  # noqa: E402

REFERENCE_RECORDS = 1_000_000
TOPICS = 32
IDLE_AFTER_S, IDLE_FOR_S = 30.0, 20.0
GOALS = {"ratio": 0.5, "idle_core_per_task": 0.02}
RETRY_LINE = "Spark's own processes failed"
POLL_S = 0.05  # the polls' own load stays small beside the tasks being measured
TICK = os.sysconf("SC_CLK_TCK")


def value(i: int) -> bytes:
    return str(i).encode().ljust(100)


def produce(bootstrap: str, topic: str, records: int) -> None:
    producer = Producer({"bootstrap.servers": bootstrap, "linger.ms": 20})
    for i in range(records):
        while True:
            try:
                producer.produce(topic, key=str(i).encode(), value=value(i), partition=0)
                break
            except BufferError:  # the client's queue is full: let it send
                producer.poll(0.05)
    assert producer.flush(120) == 0, f"{topic}: not every record was acknowledged"


def raw_client_rate(bootstrap: str, topic: str, records: int) -> float:
    """Records/s of a plain confluent-kafka consumer with default settings, from its creation
    to its last record."""
    began = time.monotonic()
    consumer = Consumer({"bootstrap.servers": bootstrap, "group.id": f"reference-{began}",
                         "enable.auto.commit": False})  # fmt: skip
    consumer.assign([TopicPartition(topic, 0, 0)])
    read = 0
    try:
        while read < records:
            read += sum(1 for m in consumer.consume(10_000, 1.0) if m.error() is None)
        return records / (time.monotonic() - began)
    finally:
        consumer.close()


# -- a process tree, from /proc -----------------------------------------------------------------


def parent(pid: int) -> int | None:
    """The parent of `pid` (None once it is gone), from /proc/<pid>/stat."""
    try:
        return int(Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[1])
    except OSError:
        return None


def tree(root: int) -> list[int]:
    children: dict[int | None, list[int]] = {}
    for entry in os.listdir("/proc"):
        if entry.isdigit():
            children.setdefault(parent(int(entry)), []).append(int(entry))
    found, todo = [], [root]
    while todo:
        pid = todo.pop()
        found.append(pid)
        todo += children.get(pid, [])
    return found


def cpu_seconds(pids: list[int]) -> float:
    total = 0.0
    for pid in pids:
        try:
            fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
        except OSError:
            continue
        total += (int(fields[11]) + int(fields[12])) / TICK
    return total


def memory_mib(pids: list[int]) -> dict[str, float]:
    """RSS and PSS summed over `pids`, in MiB."""
    rss = pss = 0
    for pid in pids:
        try:
            for line in Path(f"/proc/{pid}/smaps_rollup").read_text().splitlines():
                name, _, rest = line.partition(":")
                if name in ("Rss", "Pss"):
                    kib = int(rest.split()[0])
                    rss, pss = (rss + kib, pss) if name == "Rss" else (rss, pss + kib)
        except OSError:
            continue
    return {"rss_mib": round(rss / 1024, 1), "pss_mib": round(pss / 1024, 1)}


def kinds(pids: list[int]) -> dict[str, int]:
    """How many of `pids` are of each kind: the worker, its JVM, its planner host, Spark's Python
    daemon and the Python workers it forked."""
    lines, parents = {}, {}
    for pid in pids:
        try:
            lines[pid] = Path(f"/proc/{pid}/cmdline").read_bytes().replace(b"\0", b" ").decode()
        except OSError:
            continue
        parents[pid] = parent(pid)
    found: dict[str, int] = {}
    for pid, line in lines.items():
        if "java" in line.split(" ")[0]:
            kind = "JVM"
        elif "spark_planner_host" in line:
            kind = "planner host"
        elif "pyspark.daemon" in line:
            forked = "pyspark.daemon" in lines.get(parents[pid] or 0, "")
            kind = "Python worker" if forked else "Python daemon"
        elif "connect_rebalance_cli" in line:
            kind = "worker"
        else:
            kind = "other"
        found[kind] = found.get(kind, 0) + 1
    return found


def idle_core(root: int, seconds: float) -> float:
    """The cores the process tree of `root` used over `seconds`."""
    before = cpu_seconds(tree(root))
    time.sleep(seconds)
    return (cpu_seconds(tree(root)) - before) / seconds


# -- one N ----------------------------------------------------------------------------------------


class StatusWatch:
    """Every task's state, polled every 0.25 s from the creates on: when each first ran, and
    every FAILED seen."""

    def __init__(self, url: str, connectors: list[str]) -> None:
        self.url, self.connectors = url, connectors
        self.running_at: dict[str, float] = {}
        self.failed: dict[str, str] = {}
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._watch, daemon=True)
        self._thread.start()

    def _watch(self) -> None:
        while not self._stop.is_set():
            code, body = rest("GET", f"{self.url}/connectors?expand=status")
            now = time.monotonic()
            if code == 200:
                for name, entry in body.items():
                    for task in entry["status"]["tasks"]:
                        if task["state"] == "RUNNING":
                            self.running_at.setdefault(name, now)
                        elif task["state"] == "FAILED":
                            self.failed.setdefault(name, task.get("trace", "").splitlines()[0][:300])
            self._stop.wait(0.25)

    def stop(self) -> None:
        self._stop.set()
        self._thread.join(10)


def one_n(base: Path, coordinator: CoordinatorProcess, connector: str, n: int, size: int) -> dict[str, Any]:
    """N tasks of `connector` on a fresh worker: start, rows/s, output, memory, processes, idle
    CPU, failures. `size`: each TopicIngest task's backlog in records, or each FileIngest
    task's input in files."""
    work = base / f"{connector}-{n}"
    checkpoints = work / "checkpoints"
    group = f"density-{connector.lower()}-{n}"
    cluster = WorkerCluster(work, coordinator, **{
        "group.id": group, "config.storage.topic": f"{group}-configs",
        "offset.storage.topic": f"{group}-offsets", "status.storage.topic": f"{group}-status",
        "spark.master": "local[2]", "spark.session.warmup": "true", "checkpoint.dir": str(checkpoints),
    })  # fmt: skip
    names = [f"ingest-{i:02d}" for i in range(n)]
    if connector == "TopicIngest" and n == 1:  # like for like with the raw client: its topic
        rows_each = REFERENCE_RECORDS
        inputs = {names[0]: {"topics": "reference"}}
    elif connector == "TopicIngest":
        rows_each = size
        inputs = {name: {"topics": f"backlog-{i:02d}"} for i, name in enumerate(names)}
    else:
        rows_each = size * sample_data.ROWS_PER_FILE
        inputs = {name: {"input.path": str(work / "in" / name), "format": "json",
                         "schema": sample_data.SCHEMA} for name in names}  # fmt: skip
        for name in names:  # one input directory of `size` files each
            sample_data.write_files(work / "in" / name, 0, size, shards=1)
    try:
        worker = cluster.start("w1")
        assert worker.process is not None
        wait(lambda: rest("GET", f"{worker.url}/")[1]["spark_runtime"]["state"] == "READY", 300,
             "the worker's Spark session", POLL_S)  # fmt: skip
        time.sleep(5)  # the session's warm-up work settles
        before = memory_mib(tree(worker.process.pid))
        idle_before = idle_core(worker.process.pid, IDLE_FOR_S)

        def create(name: str) -> int:
            config = {"connector.class": connector, "tasks.max": "1", "output.path": str(work / "out" / name),
                      **inputs[name]}  # fmt: skip
            return rest("POST", f"{worker.url}/connectors", {"name": name, "config": config})[0]

        created = time.monotonic()
        watch = StatusWatch(worker.url, names)
        with concurrent.futures.ThreadPoolExecutor(n) as pool:
            codes = list(pool.map(create, names))
        assert codes == [201] * n, codes
        all_running = wait(lambda: len(watch.running_at) == n, 600, f"{n} tasks RUNNING", POLL_S)
        read_at: dict[str, float] = {}

        def everything_read() -> bool:
            for name in names:
                if name not in read_at and read_all(connector, checkpoints, work / "out", name, rows_each):
                    read_at[name] = time.monotonic()
            return len(read_at) == n

        wait(everything_read, 1800, f"{n} inputs read", POLL_S)
        pids = tree(worker.process.pid)
        first_run = min(watch.running_at.values())
        rows_per_s = n * rows_each / (max(read_at.values()) - first_run)
        each = [rows_each / (read_at[m] - watch.running_at[m]) for m in names]
        complete = all(every_row_once(connector, work / "out" / m, rows_each) for m in names)
        time.sleep(IDLE_AFTER_S)
        idle = idle_core(worker.process.pid, IDLE_FOR_S)
        memory = memory_mib(tree(worker.process.pid))
        watch.stop()
        return {
            "connector": connector, "tasks": n, "rows_per_task": rows_each,
            "start_s": round(all_running - created, 2),
            "all_read_s": round(max(read_at.values()) - created, 2),
            "rows_per_s": round(rows_per_s), "task_rows_per_s_median": round(statistics.median(each)),
            "outputs_complete": complete,
            "rss_mib": memory["rss_mib"], "pss_mib": memory["pss_mib"],
            "rss_mib_no_task": before["rss_mib"], "pss_mib_no_task": before["pss_mib"],
            "rss_mib_per_task": round((memory["rss_mib"] - before["rss_mib"]) / n, 1),
            "pss_mib_per_task": round((memory["pss_mib"] - before["pss_mib"]) / n, 1),
            "processes": len(pids), "process_kinds": kinds(pids),
            "idle_core": round(idle, 4), "idle_core_no_task": round(idle_before, 4),
            "idle_core_per_task": round(idle / n, 4),
            "idle_core_added_per_task": round((idle - idle_before) / n, 4),
            "failed": watch.failed, "machinery_retries": worker.log_text().count(RETRY_LINE),
        }  # fmt: skip
    finally:
        cluster.stop_all()


def read_all(connector: str, checkpoints: Path, out: Path, name: str, rows_each: int) -> bool:
    """Whether the task's committed batches hold its whole input."""
    if connector == "TopicIngest":
        offsets = committed_offsets(checkpoint_path(checkpoints, name, 0)) or {}
        return sum(o for by_partition in offsets.values() for o in by_partition.values()) >= rows_each
    try:
        return len(committed_column(str(out / name), "id")) >= rows_each
    except (OSError, ValueError):  # a batch being committed
        return False


def every_row_once(connector: str, output: Path, rows_each: int) -> bool:
    """The task's committed output, read back: every input row once."""
    column = "offset" if connector == "TopicIngest" else "id"
    return sorted(committed_column(str(output), column)) == list(range(rows_each))


# -- the report -----------------------------------------------------------------------------------


def readme_block(result: dict[str, Any]) -> str:
    reference = result["reference_rows_per_s"]
    rows = [
        "| connector | tasks on one worker | all RUNNING after, s | all read after, s | rows/s, all tasks | "
        "against the raw client (goal ≥ 0.5) | outputs: every row once | worker RSS, MiB | "
        "RSS per task, MiB | PSS per task, MiB | processes | idle CPU per task, cores (goal ≤ 0.02) | "
        "of which the task's own | tasks ever FAILED | starts again after Spark's machinery failed |",
        "|---|---:|---:|---:|---:|---:|---|---:|---:|---:|---:|---:|---:|---:|---:|",
    ]
    for r in result["runs"]:
        ratio = f"{r['rows_per_s'] / reference:.2f}" if r["connector"] == "TopicIngest" else "–"
        rows.append(
            f"| {r['connector']} | {r['tasks']} | {r['start_s']:.1f} | {r['all_read_s']:.1f} | "
            f"{r['rows_per_s']:,} | {ratio} | {'yes' if r['outputs_complete'] else 'NO'} | "
            f"{r['rss_mib']:,.0f} | {r['rss_mib_per_task']:.0f} | {r['pss_mib_per_task']:.0f} | "
            f"{r['processes']} | {r['idle_core_per_task']:.3f} | {r['idle_core_added_per_task']:.3f} | "
            f"{len(r['failed'])} | {r['machinery_retries']} |"
        )
    runs = ", ".join(f"{r:,.0f}" for r in result["reference_runs"])
    last = result["runs"][-1]
    processes = ", ".join(f"{count} {kind}" for kind, count in sorted(last["process_kinds"].items()))
    return "\n".join(rows) + (
        "\n\nThe raw client: one confluent-kafka consumer with default settings reading a "
        f"{result['reference_records']:,}-record topic of the same records from the same coordinator, "
        f"from its creation to its last record: {reference:,.0f} records/s (the mean of a run before the "
        f"tasks and one after, {runs}). Each TopicIngest task: default settings, its own one-partition "
        f"topic holding {result['records']:,} records of 100 B (one task alone: the raw client's topic, "
        f"{result['reference_records']:,} records); each FileIngest task: its own input "
        f"directory of {result['files']} JSON files of {sample_data.ROWS_PER_FILE} rows. The connectors "
        "are created at once on one worker (`spark.master=local[2]`, its session warmed, every other "
        "setting the default). Rows/s: from the first task RUNNING until the last output holds its "
        "input. Per task: over the same worker with its session ready and no task. Idle CPU: the "
        f"worker's processes over {IDLE_FOR_S:.0f} s, {IDLE_AFTER_S:.0f} s after everything was read, "
        "divided by the tasks; the task's own: less the same worker's with no task. Processes (the "
        f"last row): {processes}. {result['machine']}. `bench/density.py`, "
        "`bench/results/density.json`, `bench/results/density.png`."
    )


def draw(result: dict[str, Any], path: Path) -> None:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    runs = [r for r in result["runs"] if r["connector"] == "TopicIngest"]
    ns = [r["tasks"] for r in runs]
    reference = result["reference_rows_per_s"]
    figure, (rate, idle) = plt.subplots(1, 2, figsize=(11, 4.2))
    rate.plot(ns, [r["rows_per_s"] for r in runs], "o-", label="all tasks on one worker")
    rate.axhline(reference, color="gray", linestyle="--", label="raw confluent-kafka consumer")
    rate.axhline(GOALS["ratio"] * reference, color="red", linestyle=":", label="goal: half of it")
    rate.set(xscale="log", xticks=ns, xticklabels=[str(n) for n in ns], xlabel="TopicIngest tasks",
             ylabel="records/s", title="Reading a backlog", ylim=(0, None))  # fmt: skip
    rate.legend()
    idle.plot(ns, [r["idle_core_per_task"] for r in runs], "o-", label="idle CPU per task")
    idle.plot(ns, [r["idle_core_added_per_task"] for r in runs], "s--", label="of which the task's own")
    idle.axhline(GOALS["idle_core_per_task"], color="red", linestyle=":", label="goal")
    idle.set(xscale="log", xticks=ns, xticklabels=[str(n) for n in ns], xlabel="TopicIngest tasks",
             ylabel="cores", title="Once the backlogs are read")  # fmt: skip
    idle.legend()
    figure.tight_layout()
    figure.savefig(path, dpi=110)


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--tasks", default="1,4,8,16,32", help="the values of N, comma-separated")
    parser.add_argument("--records", type=int, default=200_000, help="each TopicIngest task's backlog")
    parser.add_argument("--file-tasks", default="16,32", help="FileIngest's values of N (none: '')")
    parser.add_argument("--files", type=int, default=40, help="each FileIngest task's input files")
    parser.add_argument("--update-readme", action="store_true")
    args = parser.parse_args()
    counts = [int(n) for n in args.tasks.split(",") if n]
    file_counts = [int(n) for n in args.file_tasks.split(",") if n]
    assert max(counts) <= TOPICS, f"at most {TOPICS} tasks"
    runs: list[dict[str, Any]] = []
    with tempfile.TemporaryDirectory(prefix="bench-density-") as tmp:
        base = Path(tmp)
        coordinator = CoordinatorProcess(base / "data").start()
        try:
            bootstrap = coordinator.bootstrap
            topics = [f"backlog-{i:02d}" for i in range(max(counts))] + ["reference"]
            admin = AdminClient({"bootstrap.servers": bootstrap})
            for future in admin.create_topics([NewTopic(t, 1, 1) for t in topics]).values():
                future.result(60)
            for topic in topics[:-1]:
                produce(bootstrap, topic, args.records)
            produce(bootstrap, "reference", REFERENCE_RECORDS)
            references = [raw_client_rate(bootstrap, "reference", REFERENCE_RECORDS)]
            print(f"raw client: {references[0]:,.0f} records/s", flush=True)
            for connector, ns, size in (
                ("TopicIngest", counts, args.records),
                ("FileIngest", file_counts, args.files),
            ):
                for n in ns:
                    run = one_n(base, coordinator, connector, n, size)
                    runs.append(run)
                    print(f"{connector} N={n}: {run}", flush=True)
            references.append(raw_client_rate(bootstrap, "reference", REFERENCE_RECORDS))
            print(f"raw client: {references[1]:,.0f} records/s", flush=True)
        finally:
            coordinator.stop()
    result = {
        "records": args.records, "files": args.files, "reference_records": REFERENCE_RECORDS,
        "reference_runs": [round(r) for r in references],
        "reference_rows_per_s": round(statistics.mean(references)),
        "machine": f"{os.cpu_count()} cores, Python {platform.python_version()}", "runs": runs,
    }  # fmt: skip
    print(publish("density", result, args.update_readme))
    draw(result, RESULTS / "density.png")
    return 0


if __name__ == "__main__":
    sys.exit(main())

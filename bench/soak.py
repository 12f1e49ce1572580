"""A soak run: a mixed workload against one coordinator for a bounded time, watched over time.

For `--minutes` (30 by default), all at once:
- two confluent-kafka producers, each writing `--rate` records/s (acks=all) to a topic of 6
  partitions: `soak-848` read by a KIP-848 consumer group of two members, `soak-classic` by a
  classic group of two; every 3 minutes one member of each group is closed and a new one joins;
- a worker cluster of two workers running a VerifiableSource connector (4 tasks, 50 records/s
  each) into `soak-workers`; every 2 minutes one worker is stopped and started again, in turn;
- a probe asking for Metadata every 100 ms.

Every 10 s: the coordinator's and the workers' resident memory and open descriptors, the
probe's and the producers' acknowledgement p99 over the interval, and records acknowledged
against records consumed. At the end the producers stop, the groups drain, and every
acknowledged record (topic, partition, offset) must have been consumed; each VerifiableSource
task's sequence numbers must have no gap.

    python bench/soak.py [--minutes 30] [--rate 1000] [--update-readme]

Saves bench/results/soak.json and bench/results/soak.png.
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
from collections import defaultdict
from datetime import datetime
from pathlib import Path
from typing import Any

from confluent_kafka import Consumer, Producer, TopicPartition
from confluent_kafka.admin import AdminClient, NewTopic

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from bench.readme_table import RESULTS, publish  # noqa: E402
from connect_rebalance.processes import CoordinatorProcess, connect_timings  # noqa: E402
from connect_rebalance.protocol.api_keys import ApiKey  # noqa: E402
from tests.support.wire import RawConnection  # noqa: E402
from workers.harness.cluster import WorkerCluster, rest  # noqa: E402

SAMPLE_S = 10
GROUP_CHURN_S = 180
WORKER_CHURN_S = 120
TOPICS = {"soak-848": "consumer", "soak-classic": "classic"}


def rss_and_fds(pid: int) -> tuple[float, int]:
    try:
        status = Path(f"/proc/{pid}/status").read_text()
        rss = next(int(line.split()[1]) for line in status.splitlines() if line.startswith("VmRSS")) / 1024
        return rss, len(os.listdir(f"/proc/{pid}/fd"))
    except (OSError, StopIteration):
        return 0.0, 0


def p99(values: list[float]) -> float:
    return round(sorted(values)[int(len(values) * 0.99)] * 1000, 1) if values else 0.0


class Soak:
    def __init__(self, bootstrap: str, rate: int) -> None:
        self.bootstrap, self.rate = bootstrap, rate
        self.stop = threading.Event()
        self.stop_producing = threading.Event()
        self.lock = threading.Lock()
        self.acked: dict[str, set[tuple[int, int]]] = {t: set() for t in TOPICS}
        self.consumed: dict[str, set[tuple[int, int]]] = {t: set() for t in TOPICS}
        self.ack_latencies: list[float] = []
        self.probe_latencies: list[float] = []
        self.produce_errors = 0
        self.threads: list[threading.Thread] = []

    def spawn(self, target: Any, *args: Any) -> None:
        thread = threading.Thread(target=target, args=args, daemon=True)
        thread.start()
        self.threads.append(thread)

    def produce(self, topic: str) -> None:
        producer = Producer({"bootstrap.servers": self.bootstrap, "acks": "all", "linger.ms": 5})

        def delivered(err: Any, msg: Any, sent: float) -> None:
            with self.lock:
                if err is None:
                    self.acked[topic].add((msg.partition(), msg.offset()))
                    self.ack_latencies.append(time.monotonic() - sent)
                else:
                    self.produce_errors += 1

        next_at, i = time.monotonic(), 0
        while not self.stop_producing.is_set():
            sent = time.monotonic()
            producer.produce(topic, value=b"%d" % i, on_delivery=lambda e, m, s=sent: delivered(e, m, s))
            i += 1
            next_at += 1 / self.rate
            producer.poll(max(0.0, next_at - time.monotonic()))
        producer.flush(60)

    def consume(self, topic: str, protocol: str, generation: threading.Event) -> None:
        """One member until `generation` is set (then it leaves) or the soak ends."""
        settings = {"bootstrap.servers": self.bootstrap, "group.id": f"{topic}-readers",
                    "auto.offset.reset": "earliest", "group.protocol": protocol}  # fmt: skip
        if protocol == "classic":
            settings["session.timeout.ms"] = 10000
        consumer = Consumer(settings)
        consumer.subscribe([topic])
        seen = self.consumed[topic]
        while not (self.stop.is_set() or generation.is_set()):
            for message in consumer.consume(500, 0.2):
                if message.error() is None:
                    with self.lock:
                        seen.add((message.partition(), message.offset()))
        consumer.close()

    def probe(self) -> None:
        conn: RawConnection | None = None
        while not self.stop.is_set():
            started = time.monotonic()
            try:
                conn = conn or RawConnection(self.bootstrap, timeout=30)
                conn.request(ApiKey.METADATA, 12, {"topics": None, "allow_auto_topic_creation": False})
                with self.lock:
                    self.probe_latencies.append(time.monotonic() - started)
            except (OSError, AssertionError):
                conn = None
            time.sleep(0.1)

    def group_churn(self) -> None:
        """Two members per group; every GROUP_CHURN_S the older one leaves and a new one joins."""
        members: dict[str, list[threading.Event]] = defaultdict(list)
        for topic, protocol in TOPICS.items():
            for _ in range(2):
                members[topic].append(threading.Event())
                self.spawn(self.consume, topic, protocol, members[topic][-1])
        while not self.stop.wait(GROUP_CHURN_S):
            for topic, protocol in TOPICS.items():
                members[topic].pop(0).set()
                members[topic].append(threading.Event())
                self.spawn(self.consume, topic, protocol, members[topic][-1])


def worker_gaps(bootstrap: str) -> tuple[int, int]:
    """(records, sequence gaps) of the VerifiableSource tasks in `soak-workers`."""
    consumer = Consumer(
        {"bootstrap.servers": bootstrap, "group.id": "soak-check", "enable.auto.commit": False}
    )
    metadata = consumer.list_topics("soak-workers", timeout=30).topics["soak-workers"]
    ends = {p: consumer.get_watermark_offsets(TopicPartition("soak-workers", p), timeout=30)[1]
            for p in metadata.partitions}  # fmt: skip
    consumer.assign([TopicPartition("soak-workers", p, 0) for p in ends])
    seqs: dict[str, set[int]] = defaultdict(set)
    read, want = 0, sum(ends.values())
    deadline = time.monotonic() + 300
    while read < want and time.monotonic() < deadline:
        for message in consumer.consume(1000, 1.0):
            if message.error() is None:
                read += 1
                record = json.loads(message.value())
                seqs[f"{record['connector']}-{record['task']}"].add(record["seq"])
    consumer.close()
    gaps = sum((max(s) - min(s) + 1) - len(s) for s in seqs.values() if s)
    return read, gaps


def run(minutes: float, rate: int, base: Path) -> dict[str, Any]:
    coordinator = CoordinatorProcess(base / "data", connect_timings(10000, 3000)).start()
    assert coordinator.process is not None
    admin = AdminClient({"bootstrap.servers": coordinator.bootstrap})
    for future in admin.create_topics([NewTopic(t, 6, 1) for t in [*TOPICS, "soak-workers"]]).values():
        future.result(30)
    cluster = WorkerCluster(base, coordinator)
    workers = [cluster.start("w1"), cluster.start("w2")]
    config = {"connector.class": "VerifiableSource", "topic": "soak-workers", "tasks.max": "4",
              "throughput": "50", "keys.per.task": "6"}  # fmt: skip
    connector = {"name": "soak-source", "config": config}
    assert rest("POST", f"{workers[0].url}/connectors", connector)[0] == 201
    soak = Soak(coordinator.bootstrap, rate)
    for topic in TOPICS:
        soak.spawn(soak.produce, topic)
    soak.spawn(soak.group_churn)
    soak.spawn(soak.probe)
    samples: list[dict[str, Any]] = []
    started = time.monotonic()
    next_churn, turn = started + WORKER_CHURN_S, 0
    try:
        while time.monotonic() - started < minutes * 60:
            time.sleep(SAMPLE_S)
            if time.monotonic() >= next_churn:
                worker = workers[turn % 2]
                worker.stop()
                workers[turn % 2] = cluster.start(worker.name)
                turn, next_churn = turn + 1, next_churn + WORKER_CHURN_S
            with soak.lock:
                probes, acks = soak.probe_latencies, soak.ack_latencies
                soak.probe_latencies, soak.ack_latencies = [], []
                acked = sum(len(s) for s in soak.acked.values())
                consumed = sum(len(s) for s in soak.consumed.values())
            rss, fds = rss_and_fds(coordinator.process.pid)
            worker_use = [rss_and_fds(w.process.pid) for w in workers if w.process is not None]
            samples.append({"t": round(time.monotonic() - started), "coordinator_rss_mb": round(rss, 1),
                            "coordinator_fds": fds, "workers_rss_mb": round(sum(r for r, _ in worker_use), 1),
                            "workers_fds": sum(f for _, f in worker_use), "probe_p99_ms": p99(probes),
                            "ack_p99_ms": p99(acks), "acked": acked, "consumed": consumed})  # fmt: skip
            print(samples[-1], flush=True)
        soak.stop_producing.set()
        drain_deadline = time.monotonic() + 120
        while time.monotonic() < drain_deadline:
            with soak.lock:
                missing = sum(len(soak.acked[t] - soak.consumed[t]) for t in TOPICS)
            if missing == 0:
                break
            time.sleep(1)
        soak.stop.set()
        with soak.lock:
            acked_total = sum(len(s) for s in soak.acked.values())
            lost = {t: len(soak.acked[t] - soak.consumed[t]) for t in TOPICS}
        worker_records, gaps = worker_gaps(coordinator.bootstrap)
    finally:
        soak.stop.set()
        soak.stop_producing.set()
        cluster.stop_all()
        coordinator.stop()
    return {"minutes": minutes, "rate_per_producer": rate, "samples": samples, "records_acked": acked_total,
            "acked_not_consumed": lost, "produce_errors": soak.produce_errors,
            "worker_records": worker_records, "worker_sequence_gaps": gaps,
            "coordinator_tracebacks": coordinator.log_text().count("Traceback")}  # fmt: skip


def drift(samples: list[dict[str, Any]], key: str) -> tuple[float, float]:
    """(after warm-up, at the end): medians of the second tenth and of the last tenth."""
    tenth = max(1, len(samples) // 10)
    early = sorted(s[key] for s in samples[tenth : 2 * tenth])
    late = sorted(s[key] for s in samples[-tenth:])
    return early[len(early) // 2], late[len(late) // 2]


def chart(results: dict[str, Any], path: Path) -> None:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    samples = results["samples"]
    minutes = [s["t"] / 60 for s in samples]
    figure, axes = plt.subplots(4, 1, figsize=(9, 11), sharex=True)
    panels = [
        ("resident memory (MB)", ["coordinator_rss_mb", "workers_rss_mb"]),
        ("open descriptors", ["coordinator_fds", "workers_fds"]),
        ("p99 over 10 s (ms)", ["probe_p99_ms", "ack_p99_ms"]),
        ("records", ["acked", "consumed"]),
    ]
    for axis, (title, keys) in zip(axes, panels, strict=True):
        for key in keys:
            axis.plot(minutes, [s[key] for s in samples], label=key)
        axis.set_title(title)
        axis.legend(loc="upper left")
        axis.grid(alpha=0.3)
    axes[-1].set_xlabel("minutes")
    figure.suptitle(f"soak: {results['minutes']:g} min, {results['machine']}")
    figure.tight_layout()
    figure.savefig(path, dpi=80)


def readme_block(results: dict[str, Any]) -> str:
    samples = results["samples"]
    rows = [
        f"Soak run ({results['machine']}, {results['date']}): {results['minutes']:g} minutes of two "
        f"producers at {results['rate_per_producer']:,} records/s each, a KIP-848 and a classic group (a "
        "member replaced every 3 min), two workers running a VerifiableSource (one restarted every 2 min), "
        "a Metadata probe. Chart: `bench/results/soak.png`.",
        "",
        "| | goal | after warm-up → at the end |",
        "|---|---|---|",
    ]
    for label, key, unit in (("coordinator resident memory", "coordinator_rss_mb", " MB"),
                             ("coordinator open descriptors", "coordinator_fds", ""),
                             ("workers' resident memory", "workers_rss_mb", " MB"),
                             ("workers' open descriptors", "workers_fds", "")):  # fmt: skip
        early, late = drift(samples, key)
        rows.append(f"| {label} | flat | {early:g}{unit} → {late:g}{unit} |")
    probe = max(s["probe_p99_ms"] for s in samples)
    acks = max(s["ack_p99_ms"] for s in samples)
    lost = sum(results["acked_not_consumed"].values())
    rows += [
        f"| worst 10 s p99: Metadata probe / produce acknowledgement | | {probe} ms / {acks} ms |",
        f"| records acknowledged, and of them not consumed | all consumed | {results['records_acked']:,}, "
        f"{lost} |",
        f"| VerifiableSource records, sequence gaps | 0 gaps | {results['worker_records']:,}, "
        f"{results['worker_sequence_gaps']} |",
    ]
    return "\n".join(rows)


def main() -> None:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--minutes", type=float, default=30)
    parser.add_argument("--rate", type=int, default=1000)
    parser.add_argument("--update-readme", action="store_true")
    args = parser.parse_args()
    with tempfile.TemporaryDirectory(prefix="soak-bench-") as tmp:
        results = run(args.minutes, args.rate, Path(tmp))
    results.update(machine=f"{os.cpu_count()} cores, Python {platform.python_version()}",
                   date=datetime.now().strftime("%Y-%m-%d"))  # fmt: skip
    chart(results, RESULTS / "soak.png")
    print(publish("soak", results, args.update_readme))


if __name__ == "__main__":
    main()

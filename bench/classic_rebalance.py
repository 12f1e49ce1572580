"""The cost of a rebalance on the classic protocol: the baseline KIP-848 groups must beat.

For groups of 10 and 50 confluent-kafka consumers (group.protocol=classic), with the eager
(range) and the cooperative-sticky assignor, one run measures two events:
- join:  one more consumer subscribes to a stable group;
- leave: one consumer closes (LeaveGroup) in a stable group.
and reports for each
- converged: time from the event until every partition is being consumed by its final
  owner again (its first record received after the owner's last assignment change);
- paused: summed over the members that kept at least one partition through the event, the
  time from the member's first revocation until it was again receiving every partition it
  kept (0 for a member never revoked).

All consumers are threads of this process (librdkafka releases the GIL while it waits),
so one clock times everything; the coordinator is its own process; a producer writes
every partition continuously (every partition gets a record about every 20 ms).

    python bench/classic_rebalance.py [--sizes 10 50] [--partitions 100] [--update-readme]

Prints a table and saves bench/results/classic_rebalance.json; `--update-readme` renders the
README's block from it.
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
from dataclasses import dataclass, field
from pathlib import Path

from confluent_kafka import Consumer, Producer, version
from confluent_kafka.admin import AdminClient, NewTopic

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from bench.readme_table import update_readme  # noqa: E402
from connect_rebalance.processes import CoordinatorProcess  # noqa: E402

QUIET_SECONDS = 3.0
SESSION_MS, HEARTBEAT_MS = 10000, 1000
RESULTS = ROOT / "bench" / "results" / "classic_rebalance.json"


@dataclass
class MemberLog:
    """What one consumer saw, with times from one monotonic clock."""

    name: str
    owned: set[int] = field(default_factory=set)
    events: list[tuple[float, str, frozenset[int]]] = field(default_factory=list)
    last_record: dict[int, float] = field(default_factory=dict)
    first_after: dict[int, float] = field(default_factory=dict)  # partition -> first record after last assign


class Member(threading.Thread):
    def __init__(
        self, name: str, bootstrap: str, group: str, topic: str, assignor: str, lock: threading.Lock
    ):
        super().__init__(daemon=True)
        self.log = MemberLog(name)
        self.stop_event = threading.Event()
        self.lock = lock
        self.consumer = Consumer({
            "bootstrap.servers": bootstrap, "group.id": group, "group.protocol": "classic",
            "partition.assignment.strategy": assignor, "enable.auto.commit": True,
            "auto.offset.reset": "latest", "session.timeout.ms": SESSION_MS,
            "heartbeat.interval.ms": HEARTBEAT_MS, "client.id": name, "fetch.wait.max.ms": 50,
        })  # fmt: skip
        self.topic = topic
        self.cooperative = assignor == "cooperative-sticky"

    def _assigned(self, consumer, partitions) -> None:  # type: ignore[no-untyped-def]
        ids = frozenset(p.partition for p in partitions)
        with self.lock:
            self.log.events.append((time.monotonic(), "assign", ids))
            self.log.owned |= ids
            for p in ids:
                self.log.first_after.pop(p, None)
        if self.cooperative:
            consumer.incremental_assign(partitions)
        else:
            consumer.assign(partitions)

    def _revoked(self, consumer, partitions) -> None:  # type: ignore[no-untyped-def]
        ids = frozenset(p.partition for p in partitions)
        with self.lock:
            self.log.events.append((time.monotonic(), "revoke", ids))
            self.log.owned -= ids
        if self.cooperative:
            consumer.incremental_unassign(partitions)
        else:
            consumer.unassign()

    def run(self) -> None:
        self.consumer.subscribe([self.topic], on_assign=self._assigned, on_revoke=self._revoked,
                                on_lost=self._revoked)  # fmt: skip
        while not self.stop_event.is_set():
            for message in self.consumer.consume(num_messages=1000, timeout=0.05):
                if message.error() is None:
                    now = time.monotonic()
                    with self.lock:
                        self.log.last_record[message.partition()] = now
                        self.log.first_after.setdefault(message.partition(), now)
        self.consumer.close()


class Load(threading.Thread):
    def __init__(self, bootstrap: str, topic: str, partitions: int, per_partition_hz: int) -> None:
        super().__init__(daemon=True)
        self.producer = Producer({"bootstrap.servers": bootstrap, "linger.ms": 5, "acks": 1})
        self.topic, self.partitions, self.hz = topic, partitions, per_partition_hz
        self.stop_event = threading.Event()

    def run(self) -> None:
        period = 1.0 / self.hz
        while not self.stop_event.is_set():
            started = time.monotonic()
            for p in range(self.partitions):
                self.producer.produce(self.topic, value=b"x" * 100, partition=p)
            self.producer.poll(0)
            time.sleep(max(0.0, period - (time.monotonic() - started)))
        self.producer.flush(10)


def settled(members: list[Member], partitions: int, lock: threading.Lock) -> bool:
    """Every partition owned once, each owner receiving it, no assignment change for a while."""
    now = time.monotonic()
    with lock:
        owners = [p for m in members for p in m.log.owned]
        if sorted(owners) != list(range(partitions)):
            return False
        last_change = max((e[0] for m in members for e in m.log.events), default=now)
        receiving = all(p in m.log.first_after for m in members for p in m.log.owned)
    return receiving and now - last_change >= QUIET_SECONDS


def wait_settled(members: list[Member], partitions: int, lock: threading.Lock, timeout: float = 180) -> None:
    deadline = time.monotonic() + timeout
    while not settled(members, partitions, lock):
        if time.monotonic() > deadline:
            with lock:
                owned = {m.log.name: sorted(m.log.owned) for m in members}
                waiting = {m.log.name: sorted(set(m.log.owned) - set(m.log.first_after)) for m in members}
            raise RuntimeError(f"the group did not settle: owned {owned}, not yet receiving {waiting}")
        time.sleep(0.1)


def measure(
    members: list[Member], event_at: float, kept_before: dict[str, set[int]], lock: threading.Lock
) -> dict:
    with lock:
        converged_at = event_at
        for m in members:
            last_assign = max((t for t, kind, _ in m.log.events if kind == "assign"), default=0.0)
            for p in m.log.owned:
                first = m.log.first_after[p]
                if last_assign > event_at:
                    converged_at = max(converged_at, first)
        paused_total = 0.0
        paused_members = 0
        for m in members:
            kept = kept_before.get(m.log.name, set()) & m.log.owned
            if not kept:
                continue
            paused_members += 1
            revokes = [
                t for t, kind, ids in m.log.events if kind == "revoke" and t >= event_at and ids & kept
            ]
            if revokes:
                resumed = max(m.log.first_after[p] for p in kept)
                paused_total += max(0.0, resumed - revokes[0])
    return {
        "converged_s": converged_at - event_at,
        "paused_total_s": paused_total,
        "members_kept": paused_members,
    }


def run_scenario(bootstrap: str, size: int, assignor: str, event: str, partitions: int, run_id: str) -> dict:
    topic, group = f"bench-{run_id}", f"group-{run_id}"
    admin = AdminClient({"bootstrap.servers": bootstrap})
    for future in admin.create_topics([NewTopic(topic, partitions, 1)]).values():
        future.result(30)
    lock = threading.Lock()
    load = Load(bootstrap, topic, partitions, per_partition_hz=50)
    load.start()
    members = [Member(f"m{i}", bootstrap, group, topic, assignor, lock) for i in range(size)]
    for member in members:
        member.start()
    try:
        wait_settled(members, partitions, lock)
        kept_before = {m.log.name: set(m.log.owned) for m in members}
        event_at = time.monotonic()
        if event == "join":
            newcomer = Member(f"m{size}", bootstrap, group, topic, assignor, lock)
            members.append(newcomer)
            newcomer.start()
            moved = newcomer.log.owned
        else:
            leaver = members.pop(0)
            leaver.stop_event.set()
            leaver.join(30)
            moved = kept_before[leaver.log.name]
        # First the event must take effect (the moved partitions have a new owner), then settle.
        deadline = time.monotonic() + 120
        while not (moved and all(any(p in m.log.owned for m in members) for p in moved)):
            if time.monotonic() > deadline:
                raise RuntimeError("the rebalance never happened")
            time.sleep(0.02)
            moved = newcomer.log.owned if event == "join" else moved
        wait_settled(members, partitions, lock)
        return {"size": size, "assignor": assignor, "event": event,
                **measure(members, event_at, kept_before, lock)}  # fmt: skip
    finally:
        for member in members:
            member.stop_event.set()
        for member in members:
            member.join(30)
        load.stop_event.set()
        load.join(30)


def readme_block(summary: dict) -> str:  # type: ignore[type-arg]
    lines = [
        "| members | assignor | event | converged (s) "
        "| paused, summed over members that kept partitions (s) |",
        "|---:|---|---|---:|---:|",
    ]
    for r in summary["results"]:
        lines.append(f"| {r['size']} | {r['assignor']} | {r['event']} | {r['converged_s']:.2f} "
                     f"| {r['paused_total_s']:.2f} |")  # fmt: skip
    return "\n".join(lines) + (
        f"\n\n{summary['client']} consumers, {summary['heartbeat_ms'] / 1000:g} s heartbeat interval, "
        f"{summary['partitions']} partitions; {summary['machine']}."
    )


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--sizes", type=int, nargs="+", default=[10, 50])
    parser.add_argument("--partitions", type=int, default=100)
    parser.add_argument("--update-readme", action="store_true")
    args = parser.parse_args()
    results = []
    with tempfile.TemporaryDirectory(prefix="bench-classic-") as tmp:
        coordinator = CoordinatorProcess(Path(tmp) / "data").start()
        try:
            for size in args.sizes:
                for assignor in ("range", "cooperative-sticky"):
                    for event in ("join", "leave"):
                        run_id = f"{size}-{assignor}-{event}"
                        result = run_scenario(
                            coordinator.bootstrap, size, assignor, event, args.partitions, run_id
                        )
                        results.append(result)
                        print(f"{run_id}: converged {result['converged_s']:.2f}s, "
                              f"paused {result['paused_total_s']:.2f}s over {result['members_kept']} members",
                              flush=True)  # fmt: skip
        finally:
            coordinator.stop()
    summary = {
        "partitions": args.partitions, "client": f"confluent-kafka {version()}",
        "heartbeat_ms": HEARTBEAT_MS, "results": results,
        "machine": f"{os.cpu_count()} cores, Python {platform.python_version()}",
    }  # fmt: skip
    RESULTS.parent.mkdir(parents=True, exist_ok=True)
    RESULTS.write_text(json.dumps(summary, indent=2) + "\n")
    block = readme_block(summary)
    print("\n" + block)
    if args.update_readme:
        update_readme("classic_rebalance", block)
    return 0


if __name__ == "__main__":
    sys.exit(main())

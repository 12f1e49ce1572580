"""What one coordinator process does for a connect group of 100 workers and 1,000 tasks.

Two measurements, each on a virtual clock (the pure core in this process, no IO) and over
TCP (a coordinator subprocess, workers as asyncio tasks of this process, one connection
each):
- throughput: ConnectGroupHeartbeat answers per second for a stable group, every worker
  heartbeating back to back;
- a worker joining a stable group: heartbeat rounds (heartbeats handled / workers) and time
  from the join until every worker is at the new epoch running exactly its target.

Simulated workers behave as the draft says a worker does: they apply every assignment at
once (stop what is gone, start what is new), heartbeat again at once after a revocation,
otherwise after the interval the coordinator returns, and the worker told to compute runs a
sticky balancing assignor (keep what you have up to your share; hand out the rest) and
installs its result. Work is 100 connectors with 10 tasks each (1,100 items).

    python bench/connect_group.py [--workers 100] [--connectors 100] [--tasks-per-connector 10]
                                  [--update-readme]

Prints a table and saves bench/results/connect_group.json; `--update-readme` renders the
README's block from it.
"""

from __future__ import annotations

import argparse
import asyncio
import heapq
import itertools
import sys
import tempfile
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from bench.readme_table import publish  # noqa: E402
from connect_rebalance.processes import CoordinatorProcess  # noqa: E402
from connect_rebalance.protocol import codec  # noqa: E402
from connect_rebalance.protocol.api_keys import ApiKey  # noqa: E402
from connect_rebalance.protocol.client import ProtocolClient  # noqa: E402
from connect_rebalance.protocol.connect_group import (  # noqa: E402
    ClientAssignor,
    InstalledMember,
    heartbeat_fields,
    install_fields,
)
from connect_rebalance.work import CONNECTOR, Work, work_of  # noqa: E402
from coordinator.groups.coordinator import GroupCoordinator  # noqa: E402
from coordinator.groups.requests import GroupRequest  # noqa: E402
from coordinator.groups.settings import GroupSettings  # noqa: E402

GROUP = "bench-connect"
ASSIGNOR = ClientAssignor("sticky-balance", 1, 1, 1)


def balanced_plan(
    members: list[str], current: dict[str, frozenset[Work]], work: frozenset[Work]
) -> dict[str, frozenset[Work]]:
    """A sticky, balanced target: members keep what they have up to their share."""
    members = sorted(members)
    base, extra = divmod(len(work), len(members))
    quota = {m: base + (1 if i < extra else 0) for i, m in enumerate(members)}
    plan: dict[str, set[Work]] = {m: set() for m in members}
    taken: set[Work] = set()
    for m in members:
        for item in sorted(current.get(m, frozenset()) & work):
            if len(plan[m]) < quota[m] and item not in taken:
                plan[m].add(item)
                taken.add(item)
    free = iter(sorted(work - taken))
    for m in members:
        while len(plan[m]) < quota[m]:
            plan[m].add(next(free))
    return {m: frozenset(items) for m, items in plan.items()}


@dataclass
class SimWorker:
    """A worker's view: its epoch and what it runs; it applies answers at once."""

    name: str
    epoch: int = 0
    runs: frozenset[Work] = frozenset()
    joined: bool = False
    heartbeats: int = 0
    stops: int = 0
    starts: int = 0

    def heartbeat(self) -> dict[str, Any]:
        if not self.joined:
            return heartbeat_fields(
                GROUP, self.name, 0, url=f"http://{self.name}:8083", rebalance_timeout_ms=60000,
                assignors=[ASSIGNOR], owned=[],
            )  # fmt: skip
        return heartbeat_fields(GROUP, self.name, self.epoch, owned=self.runs)

    def answered(self, answer: dict[str, Any]) -> float:
        """Apply a heartbeat answer; returns the delay in ms until the next heartbeat."""
        self.heartbeats += 1
        if answer["error_code"] != 0:
            raise RuntimeError(f"{self.name}: {answer['error_code']} {answer['error_message']}")
        self.joined = True
        self.epoch = answer["member_epoch"]
        if answer["assignment"] is None:
            return answer["heartbeat_interval_ms"]
        given = work_of(answer["assignment"]["connectors_and_tasks"])
        revoked, started = self.runs - given, given - self.runs
        self.stops += len(revoked)
        self.starts += len(started)
        self.runs = given
        return 0 if revoked else answer["heartbeat_interval_ms"]

    def plan_install(self, prepared: dict[str, Any], work: frozenset[Work]) -> dict[str, Any]:
        members = [m["member_id"] for m in prepared["members"]]
        current = {m["member_id"]: work_of(m["target_connectors_and_tasks"]) for m in prepared["members"]}
        plan = balanced_plan(members, current, work)
        return install_fields(
            GROUP, self.name, self.epoch, prepared["group_epoch"], work,
            [InstalledMember(m, items) for m, items in plan.items()],
        )  # fmt: skip


def all_work(connectors: int, tasks: int) -> frozenset[Work]:
    return frozenset(
        (f"c{c:03d}", t) for c in range(connectors) for t in itertools.chain([CONNECTOR], range(tasks))
    )


def settled(group: dict[str, Any]) -> bool:
    return group["group_state"] == "Stable" and all(
        work_of(m["assignment"]) == work_of(m["target_assignment"]) for m in group["members"]
    )


# -- on a virtual clock --------------------------------------------------------------------


class VirtualCluster:
    """The pure core and simulated workers, scheduled by the intervals the core returns."""

    def __init__(self, work: frozenset[Work]) -> None:
        self.core = GroupCoordinator(GroupSettings(), lambda _: None)
        self.work = work
        self.now = 0.0
        self.ids = itertools.count(1)
        self.queue: list[tuple[float, int, SimWorker]] = []
        self.workers: dict[str, SimWorker] = {}
        self.handled = 0

    def call(self, api_key: int, fields: dict[str, Any]) -> dict[str, Any]:
        request_id = next(self.ids)
        body = codec.build_request(api_key, 0, fields)
        outcome = self.core.handle(
            GroupRequest(request_id, api_key, 0, body, "bench", "/127.0.0.1"), int(self.now)
        )
        self.handled += api_key == ApiKey.CONNECT_GROUP_HEARTBEAT
        return outcome.replies[request_id]

    def add(self, name: str) -> SimWorker:
        worker = SimWorker(name)
        self.workers[name] = worker
        heapq.heappush(self.queue, (self.now, next(self.ids), worker))
        return worker

    def step(self) -> None:
        self.now, _, worker = heapq.heappop(self.queue)
        self.core.on_timer(int(self.now))  # deadlines up to now fire first
        answer = self.call(ApiKey.CONNECT_GROUP_HEARTBEAT, worker.heartbeat())
        delay = worker.answered(answer)
        if answer["should_compute_assignment"]:
            prepared = self.call(
                ApiKey.CONNECT_GROUP_PREPARE_ASSIGNMENT,
                {"group_id": GROUP, "member_id": worker.name, "member_epoch": worker.epoch},
            )
            installed = self.call(
                ApiKey.CONNECT_GROUP_INSTALL_ASSIGNMENT, worker.plan_install(prepared, self.work)
            )
            assert installed["error_code"] == 0, installed
            delay = 0
        heapq.heappush(self.queue, (self.now + delay, next(self.ids), worker))

    def describe(self) -> dict[str, Any]:
        return self.call(ApiKey.CONNECT_GROUP_DESCRIBE, {"group_ids": [GROUP]})["groups"][0]

    def run_until_settled(self, limit_ms: float = 600_000) -> None:
        start = self.now
        while not (settled(self.describe()) and all(w.joined for w in self.workers.values())):
            self.step()
            if self.now - start > limit_ms:
                raise RuntimeError("the group did not settle")


def virtual_clock(workers: int, work: frozenset[Work]) -> dict[str, Any]:
    cluster = VirtualCluster(work)
    for i in range(workers):
        cluster.add(f"w{i:03d}")
    cluster.run_until_settled()
    # Throughput: every worker heartbeats back to back, answers applied.
    rounds = 20
    started = time.perf_counter()
    for _ in range(rounds):
        for worker in cluster.workers.values():
            worker.answered(cluster.call(ApiKey.CONNECT_GROUP_HEARTBEAT, worker.heartbeat()))
    per_second = rounds * workers / (time.perf_counter() - started)
    # A worker joins.
    before = {w.name: (w.stops, w.starts) for w in cluster.workers.values()}
    cluster.handled = 0
    joined_at = cluster.now
    wall = time.perf_counter()
    cluster.add(f"w{workers:03d}")
    cluster.run_until_settled()
    stops = sum(w.stops - before.get(w.name, (0, 0))[0] for w in cluster.workers.values())
    starts = sum(w.starts - before.get(w.name, (0, 0))[1] for w in cluster.workers.values())
    return {
        "heartbeats_per_second": round(per_second),
        "join_rounds": round(cluster.handled / (workers + 1), 2),
        "join_heartbeats": cluster.handled,
        "join_virtual_ms": round(cluster.now - joined_at),
        "join_wall_ms": round((time.perf_counter() - wall) * 1000, 1),
        "join_stops": stops,
        "join_starts": starts,
    }


# -- over TCP ------------------------------------------------------------------------------


class TcpCluster:
    def __init__(self, bootstrap: str, work: frozenset[Work]) -> None:
        self.bootstrap, self.work = bootstrap, work
        self.workers: dict[str, tuple[SimWorker, ProtocolClient]] = {}
        self.tasks: list[asyncio.Task[None]] = []
        self.handled = 0
        self.paced = True

    async def add(self, name: str) -> None:
        client = await ProtocolClient.connect(self.bootstrap, name)
        self.workers[name] = (SimWorker(name), client)
        self.tasks.append(asyncio.create_task(self._loop(name)))

    async def _loop(self, name: str) -> None:
        worker, client = self.workers[name]
        while True:
            answer = await client.request(ApiKey.CONNECT_GROUP_HEARTBEAT, 0, worker.heartbeat())
            self.handled += 1
            delay = worker.answered(answer)
            if answer["should_compute_assignment"]:
                prepared = await client.request(
                    ApiKey.CONNECT_GROUP_PREPARE_ASSIGNMENT,
                    0,
                    {"group_id": GROUP, "member_id": name, "member_epoch": worker.epoch},
                )
                if prepared["error_code"] == 0:
                    await client.request(
                        ApiKey.CONNECT_GROUP_INSTALL_ASSIGNMENT, 0, worker.plan_install(prepared, self.work)
                    )
                delay = 0
            if self.paced and delay:
                await asyncio.sleep(delay / 1000)

    async def describe(self, client: ProtocolClient) -> dict[str, Any]:
        return (await client.request(ApiKey.CONNECT_GROUP_DESCRIBE, 0, {"group_ids": [GROUP]}))["groups"][0]

    async def wait_settled(self, admin: ProtocolClient, timeout: float = 300) -> None:
        deadline = time.monotonic() + timeout
        while True:
            failed = [t for t in self.tasks if t.done()]
            if failed:
                raise RuntimeError(f"a worker stopped: {failed[0].exception()!r}")
            group = await self.describe(admin)
            if settled(group) and len(group["members"]) == len(self.workers):
                return
            if time.monotonic() > deadline:
                raise RuntimeError("the group did not settle")
            await asyncio.sleep(0.02)

    async def close(self) -> None:
        for task in self.tasks:
            task.cancel()
        await asyncio.gather(*self.tasks, return_exceptions=True)
        for _, client in self.workers.values():
            await client.close()


async def over_tcp(bootstrap: str, workers: int, work: frozenset[Work]) -> dict[str, Any]:
    admin = await ProtocolClient.connect(bootstrap, "bench-admin")
    cluster = TcpCluster(bootstrap, work)
    try:
        for i in range(workers):
            await cluster.add(f"w{i:03d}")
        await cluster.wait_settled(admin)
        # Throughput: unpaced, every worker's next heartbeat goes out as its answer arrives.
        cluster.paced = False
        await asyncio.sleep(1.0)
        counted, started = cluster.handled, time.perf_counter()
        await asyncio.sleep(5.0)
        per_second = (cluster.handled - counted) / (time.perf_counter() - started)
        cluster.paced = True
        await asyncio.sleep(4.0)  # back to the intervals the coordinator asks for
        before = {n: (w.stops, w.starts) for n, (w, _) in cluster.workers.items()}
        counted, started = cluster.handled, time.perf_counter()
        await cluster.add(f"w{workers:03d}")
        await cluster.wait_settled(admin)
        elapsed = time.perf_counter() - started
        stops = sum(w.stops - before.get(n, (0, 0))[0] for n, (w, _) in cluster.workers.items())
        starts = sum(w.starts - before.get(n, (0, 0))[1] for n, (w, _) in cluster.workers.items())
        handled = cluster.handled - counted
        return {
            "heartbeats_per_second": round(per_second),
            "join_rounds": round(handled / (workers + 1), 2),
            "join_heartbeats": handled,
            "join_wall_ms": round(elapsed * 1000),
            "join_stops": stops,
            "join_starts": starts,
        }
    finally:
        await cluster.close()
        await admin.close()


def readme_block(results: dict[str, Any]) -> str:
    virtual, tcp = results["virtual_clock"], results["tcp"]

    def moved(side: dict[str, Any]) -> str:
        return f"{side['join_stops']} / {side['join_starts']}"

    return "\n".join([
        "| | virtual clock | TCP |",
        "|---|---:|---:|",
        f"| heartbeats answered per second (stable group) | {virtual['heartbeats_per_second']:,} "
        f"| {tcp['heartbeats_per_second']:,} |",
        f"| join: heartbeat rounds (heartbeats / workers) | {virtual['join_rounds']:.2f} "
        f"| {tcp['join_rounds']:.2f} |",
        f"| join: time until every worker is at the new epoch "
        f"| {virtual['join_virtual_ms'] / 1000:.1f} s (virtual) | {tcp['join_wall_ms'] / 1000:.1f} s |",
        f"| join: connectors and tasks stopped / started | {moved(virtual)} | {moved(tcp)} |",
    ])  # fmt: skip


def main() -> int:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--workers", type=int, default=100)
    parser.add_argument("--connectors", type=int, default=100)
    parser.add_argument("--tasks-per-connector", type=int, default=10)
    parser.add_argument("--update-readme", action="store_true")
    args = parser.parse_args()
    work = all_work(args.connectors, args.tasks_per_connector)
    print(f"{args.workers} workers, {len(work)} connectors and tasks; worker {args.workers + 1} joins")
    results: dict[str, Any] = {"workers": args.workers, "items": len(work)}
    results["virtual_clock"] = virtual_clock(args.workers, work)
    with tempfile.TemporaryDirectory() as tmp:
        coordinator = CoordinatorProcess(Path(tmp) / "data").start()
        try:
            results["tcp"] = asyncio.run(over_tcp(coordinator.bootstrap, args.workers, work))
        finally:
            coordinator.stop()
    rows = [
        ("heartbeats/s (stable group)", "heartbeats_per_second"),
        ("join: heartbeat rounds", "join_rounds"),
        ("join: heartbeats handled", "join_heartbeats"),
        ("join: time to all at new epoch (ms)", "join_wall_ms"),
        ("join: connectors/tasks stopped", "join_stops"),
        ("join: connectors/tasks started", "join_starts"),
    ]
    print(f"{'':40} {'virtual clock':>14} {'TCP':>10}")
    for label, key in rows:
        virtual = results["virtual_clock"][key]
        if key == "join_wall_ms":
            virtual = f"{results['virtual_clock']['join_virtual_ms']} (v)"
        print(f"{label:40} {virtual!s:>14} {results['tcp'][key]!s:>10}")
    publish("connect_group", results, args.update_readme)
    return 0


if __name__ == "__main__":
    sys.exit(main())

"""A worker's connect-group membership against a coordinator process: work is stopped before
it is started elsewhere (revoke first), a graceful leave hands work over at once, fencing
makes a worker stop everything and rejoin, and a worker cut off from the coordinator stops
its work before its session can expire (no zombies).

The workers are ConnectMembership instances in this process (one event loop), so a single
registry sees every start and stop in order and can assert that no connector or task ever
runs on two workers at once.
"""

from __future__ import annotations

import asyncio
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from connect_rebalance.processes import CoordinatorProcess, connect_timings
from connect_rebalance.protocol.connect_group import ClientAssignor, InstalledMember
from connect_rebalance.work import Work, work_of
from tests.support.connect_driver import work
from workers.distributed.membership.connect import ConnectMembership, InstallPlan
from workers.distributed.membership.machine import Assignment

pytestmark = pytest.mark.integration
ALL = work("AC0 AT1 AT2 AT3 BC0 BT1 BT2 CC0 CT1")
SESSION_MS = 3000
# The coordinator answered the workers' last heartbeats at most a heartbeat interval before it
# was stopped, so their sessions can expire from CUT_OFF_SESSION_MS - CUT_OFF_HEARTBEAT_MS after.
CUT_OFF_SESSION_MS, CUT_OFF_HEARTBEAT_MS = 6000, 500


class Registry:
    """Where every connector and task runs; fails the moment one would run twice."""

    def __init__(self, stop_s: float = 0.0) -> None:
        self.stop_s = stop_s  # how long stopping takes (work runs until it is over)
        self.runner: dict[Work, str] = {}
        self.events: list[tuple[float, str, str, Work]] = []
        self.violations: list[str] = []

    def listener(self, name: str) -> Any:
        registry = self

        class Listener:
            async def start_work(self, items: frozenset[Work], assignment: Assignment) -> None:
                for item in items:
                    if item in registry.runner:
                        registry.violations.append(
                            f"{item} started on {name}, runs on {registry.runner[item]}"
                        )
                    registry.runner[item] = name
                    registry.events.append((time.monotonic(), "start", name, item))

            async def stop_work(self, items: frozenset[Work], at_once: bool = False) -> None:
                await asyncio.sleep(registry.stop_s)
                for item in items:
                    if registry.runner.get(item) == name:
                        del registry.runner[item]
                    registry.events.append((time.monotonic(), "stop", name, item))

        return Listener()

    def on(self, name: str) -> frozenset[Work]:
        return frozenset(i for i, n in self.runner.items() if n == name)


async def sticky_even_plan(prepared: dict[str, Any]) -> InstallPlan:
    """Keep what each member has up to its share, then deal the rest out (test assignor)."""
    members = sorted(m["member_id"] for m in prepared["members"])
    current = {m["member_id"]: set(work_of(m["target_connectors_and_tasks"])) for m in prepared["members"]}
    share = -(-len(ALL) // len(members))
    plan: dict[str, set[Work]] = {m: set(sorted(current[m])[:share]) for m in members}
    free = sorted(ALL - set().union(*plan.values()))
    for item in free:
        min(members, key=lambda m: (len(plan[m]), m))
        plan[min(members, key=lambda m: (len(plan[m]), m))].add(item)
    return InstallPlan(ALL, [InstalledMember(m, frozenset(items)) for m, items in plan.items()])


def member(coordinator: CoordinatorProcess, registry: Registry, name: str) -> ConnectMembership:
    return ConnectMembership(
        coordinator.bootstrap, "workers", name, f"http://{name}:8083", registry.listener(name),
        sticky_even_plan, lambda: [ClientAssignor("test-sticky", 1, 1, 1)],
        session_timeout_ms=SESSION_MS, rebalance_timeout_ms=10000, request_timeout_ms=1000,
    )  # fmt: skip


def running_coordinator(tmp_path: Path, session_ms: int, heartbeat_ms: int) -> Iterator[CoordinatorProcess]:
    process = CoordinatorProcess(tmp_path / "data", connect_timings(session_ms, heartbeat_ms))
    process.start()
    try:
        yield process
    finally:
        process.resume() if process.is_running() else None
        process.kill()


@pytest.fixture
def coordinator(tmp_path: Path) -> Iterator[CoordinatorProcess]:
    yield from running_coordinator(tmp_path, SESSION_MS, 1000)


async def until(predicate: Any, timeout: float, what: str) -> None:
    deadline = time.monotonic() + timeout
    while not predicate():
        if time.monotonic() > deadline:
            raise AssertionError(f"timed out after {timeout}s waiting for {what}")
        await asyncio.sleep(0.05)


def balanced(registry: Registry, names: list[str]) -> bool:
    counts = [len(registry.on(n)) for n in names]
    return set(registry.runner) == ALL and max(counts) - min(counts) <= 1


def test_joins_move_only_what_balance_needs_and_a_graceful_leave_hands_over_at_once(
    coordinator: CoordinatorProcess,
) -> None:
    async def scenario() -> None:
        registry = Registry()
        members = {n: member(coordinator, registry, n) for n in ("w1", "w2", "w3")}
        tasks = {"w1": asyncio.create_task(members["w1"].run())}
        await until(lambda: set(registry.runner) == ALL, 20, "w1 to run everything")
        for name in ("w2", "w3"):
            before = {n: registry.on(n) for n in tasks}
            stops_before = sum(1 for e in registry.events if e[1] == "stop")
            tasks[name] = asyncio.create_task(members[name].run())
            await until(lambda: balanced(registry, list(tasks)), 20, f"balance with {name}")
            stops = sum(1 for e in registry.events if e[1] == "stop") - stops_before
            assert stops == len(registry.on(name)), "only the work that moved to the new worker stopped"
            for n, had in before.items():
                assert registry.on(n) <= had, f"{n} kept its work, gained nothing"
        moved_from = registry.on("w2")
        leave_started = time.monotonic()
        await members["w2"].leave()
        await tasks.pop("w2")
        await until(lambda: balanced(registry, list(tasks)), 10, "w2's work to move")
        assert time.monotonic() - leave_started < SESSION_MS / 1000, "handed over without waiting"
        assert moved_from <= registry.on("w1") | registry.on("w3")
        for n in tasks:
            await members[n].leave()
        await asyncio.gather(*tasks.values())
        assert not registry.violations, registry.violations

    asyncio.run(scenario())


@pytest.fixture
def cut_off_coordinator(tmp_path: Path) -> Iterator[CoordinatorProcess]:
    yield from running_coordinator(tmp_path, CUT_OFF_SESSION_MS, CUT_OFF_HEARTBEAT_MS)


def test_a_worker_cut_off_from_the_coordinator_stops_its_work_before_its_session_can_expire(
    cut_off_coordinator: CoordinatorProcess,
) -> None:
    coordinator = cut_off_coordinator

    async def scenario() -> None:
        registry = Registry()
        members = {n: member(coordinator, registry, n) for n in ("w1", "w2")}
        tasks = {n: asyncio.create_task(m.run()) for n, m in members.items()}
        await until(lambda: balanced(registry, ["w1", "w2"]), 20, "two balanced workers")
        coordinator.pause()  # SIGSTOP: nothing is answered
        paused_at = time.monotonic()
        # Waited for past the session, so that a late stop is measured, not timed out on.
        await until(
            lambda: not registry.runner, 3 * CUT_OFF_SESSION_MS / 1000, "every worker to stop its work"
        )
        stopped_after = time.monotonic() - paused_at
        assert stopped_after < (CUT_OFF_SESSION_MS - CUT_OFF_HEARTBEAT_MS) / 1000, (
            f"stopped {stopped_after:.1f}s after the coordinator stopped answering"
        )
        await asyncio.sleep(CUT_OFF_SESSION_MS / 1000)  # past the session timeout
        coordinator.resume()
        await until(lambda: balanced(registry, ["w1", "w2"]), 30, "the workers to rejoin and resume")
        assert sum(m.zombie_stops for m in members.values()) == 2
        for n, m in members.items():
            await m.leave()
            await tasks[n]
        assert not registry.violations, registry.violations

    asyncio.run(scenario())


def test_a_worker_answered_again_while_it_stops_for_want_of_answers_gets_its_work_back(
    coordinator: CoordinatorProcess,
) -> None:
    """The coordinator comes back before the session expires, while the worker is still
    stopping its work: heartbeats answered during the stop find nothing to change (the work
    still runs), so the one after the stop must ask for the whole assignment again."""

    async def scenario() -> None:
        registry = Registry(stop_s=1.5)
        w1 = member(coordinator, registry, "w1")
        task = asyncio.create_task(w1.run())
        await until(lambda: registry.on("w1") == ALL, 20, "w1 to run everything")
        coordinator.pause()
        await until(lambda: w1.zombie_stops == 1, SESSION_MS / 1000, "the watchdog to stop w1's work")
        coordinator.resume()  # about 2 s after the last answer: the session (3 s) has not expired

        def runs() -> int:
            return sum(1 for _, kind, _, _ in registry.events if kind == "start")

        await until(lambda: runs() == 2 * len(ALL) and registry.on("w1") == ALL, 15, "w1 to run it again")
        stops = [item for _, kind, _, item in registry.events if kind == "stop"]
        assert sorted(stops) == sorted(ALL) and w1.zombie_stops == 1
        await w1.leave()
        await task
        assert not registry.violations, registry.violations

    asyncio.run(scenario())

"""Carries a MemberMachine's actions out against the herder, for both group protocols.

The machine (machine.py) decides; this is its IO: `Stop` awaits the herder's
`stop_work` (and any start of the same work still under way, so nothing outlives its stop),
`Start` runs the herder's `start_work` in the background, and `Beat` and `Rejoin` are the
protocol driver's. `watchdog` is the one no-zombie loop both protocols run: it feeds the
machine the time, so the deadline holds whatever else is blocked (the heartbeat loop, a
rebalance round, a frozen process that just resumed).
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import time
from collections.abc import Callable, Sequence
from typing import Protocol

from connect_rebalance.work import CONNECTOR, Work, describe_work
from workers.distributed.membership.machine import (
    Action,
    Assignment,
    Beat,
    MemberMachine,
    MemberState,
    Rejoin,
    Start,
    Stop,
)
from workers.distributed.membership.session_watch import SessionWatch
from workers.observe.rebalance_clock import RebalanceClock

log = logging.getLogger(__name__)
IDLE_POLL_S = 0.1  # how often the watchdog looks again when nothing is due sooner


class WorkListener(Protocol):
    async def stop_work(self, work: frozenset[Work], at_once: bool = False) -> None: ...
    async def start_work(self, work: frozenset[Work], assignment: Assignment) -> None: ...


class MachineView:
    """What the herder, the metrics and the tests read of a membership: its machine's."""

    machine: MemberMachine

    @property
    def state(self) -> MemberState:
        return self.machine.state

    @property
    def epoch(self) -> int:
        return self.machine.epoch

    @property
    def runs(self) -> frozenset[Work]:
        return self.machine.runs

    @property
    def assignment(self) -> Assignment | None:
        return self.machine.assignment

    @property
    def rebalances(self) -> int:
        return self.machine.rebalances

    @property
    def clock(self) -> RebalanceClock:
        return self.machine.clock

    @property
    def session(self) -> SessionWatch:
        return self.machine.session

    @property
    def zombie_stops(self) -> int:
        return self.machine.session.zombie_stops


class MemberDriver:
    def __init__(
        self,
        machine: MemberMachine,
        listener: WorkListener,
        beat: Callable[[], None],
        rejoin: Callable[[Rejoin], None],
        who: Callable[[], str],
        *,
        serial: bool = False,
    ) -> None:
        self.machine, self.listener = machine, listener
        self._beat, self._rejoin, self._who = beat, rejoin, who
        self._starting: dict[asyncio.Task[None], frozenset[Work]] = {}
        self._changing: set[asyncio.Task[None]] = set()  # revocations beside the heartbeats
        self._stops: dict[asyncio.Task[None], frozenset[Work]] = {}  # stops under way, and their work
        # A protocol that changes what runs one round at a time (classic) holds this lock
        # around each round; the watchdog takes it too.
        self._serial = asyncio.Lock() if serial else None
        self._told_epoch: int | None = None  # the latest assignment the log has told of

    def _tell_assignment(self, work: frozenset[Work], assignment: Assignment) -> None:
        """One line per new assignment, as Kafka Connect's "Joined group at generation N ...
        with assignment": the epoch, everything assigned, and what of it starts here now."""
        if assignment.epoch == self._told_epoch and not work:
            return
        self._told_epoch = assignment.epoch
        connectors = sorted(item for item in assignment.work if item[1] == CONNECTOR)
        tasks = sorted(item for item in assignment.work if item[1] != CONNECTOR)
        log.info(
            "%s: assignment at epoch %d: connectors [%s], tasks [%s]; starting [%s]", self._who(),
            assignment.epoch, describe_work(connectors), describe_work(tasks), describe_work(work),
        )  # fmt: skip

    async def carry_out(self, actions: Sequence[Action]) -> None:
        """In order: a Stop is complete before the next action is carried out."""
        for action in actions:
            match action:
                case Stop(work, at_once):
                    await self._stop(work, at_once)
                case Start(work, assignment):
                    self._tell_assignment(work, assignment)
                    self.machine.starting(work)
                    task = asyncio.create_task(self._start(work, assignment))
                    self._starting[task] = work
                    task.add_done_callback(lambda t: self._starting.pop(t, None))
                case Beat():
                    self._beat()
                case Rejoin():
                    self._rejoin(action)

    async def beside_heartbeats(self, actions: Sequence[Action]) -> None:
        """Carried out so that the heartbeats go on: a list with a Stop (a revocation) runs in
        the background, the heartbeats reporting the work as owned until it has stopped;
        anything else (starts run in the background anyway) at once."""
        if not any(isinstance(action, Stop) for action in actions):
            await self.carry_out(actions)
            return
        task = asyncio.create_task(self.carry_out(actions))
        self._changing.add(task)
        task.add_done_callback(self._changing.discard)

    async def _stop(self, work: frozenset[Work], at_once: bool = False) -> None:
        under_way = [task for task, starting in self._starting.items() if starting & work]
        if under_way:
            await asyncio.gather(*under_way, return_exceptions=True)
        stopping = [task for task, items in self._stops.items() if items & work]
        fresh = work - frozenset().union(*(self._stops[task] for task in stopping))
        if fresh:
            stop = asyncio.create_task(self._stop_for_real(fresh, at_once))
            self._stops[stop] = fresh
            stop.add_done_callback(lambda done: self._stops.pop(done, None))
            stopping.append(stop)
        for task in stopping:
            # Shielded: a stop outlives a caller cancelled meanwhile (a leave, the watchdog's end).
            await asyncio.shield(task)

    async def _stop_for_real(self, work: frozenset[Work], at_once: bool) -> None:
        """The herder stops `work`; only then does the machine hear it stopped."""
        began = time.monotonic()
        log.info("%s: revoked [%s]: stopping%s", self._who(), describe_work(work),
                 " at once (the session or generation is gone)" if at_once else "")  # fmt: skip
        try:
            await self.listener.stop_work(work, at_once)
        finally:
            self.machine.stopped(work)
            log.info(
                "%s: stopped [%s] in %.0f ms",
                self._who(),
                describe_work(work),
                (time.monotonic() - began) * 1000,
            )

    async def _start(self, work: frozenset[Work], assignment: Assignment) -> None:
        began = time.monotonic()
        await self.listener.start_work(work, assignment)
        if work:
            log.info("%s: finished starting [%s] in %.0f ms", self._who(), describe_work(work),
                     (time.monotonic() - began) * 1000)  # fmt: skip
        await self.carry_out(self.machine.started(time.monotonic(), work))

    async def watchdog(self, stopping: Callable[[], bool]) -> None:
        """Until `stopping()`: the machine is given the time whenever something is due."""
        while not stopping():
            due = self.machine.next_tick()
            now = time.monotonic()
            if due is None or now < due:
                await asyncio.sleep(IDLE_POLL_S if due is None else min(due - now, IDLE_POLL_S))
                continue
            async with self.one_change():
                actions = self.machine.tick(time.monotonic())
                if any(isinstance(a, Stop) for a in actions):
                    log.warning("%s: no heartbeat answered for too long; stopping all work", self._who())
                await self.carry_out(actions)

    def one_change(self) -> contextlib.AbstractAsyncContextManager[object]:
        """One change of what runs at a time, where the protocol wants that."""
        return self._serial if self._serial is not None else contextlib.nullcontext()

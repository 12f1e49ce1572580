"""The member state machine both group protocols run (workers/distributed/membership/machine.py), driven
by events on a virtual clock: what a worker stops, starts, tells and rejoins, and when.

Each test plays the part of a driver: it feeds the machine an answer or the time and
carries the actions out by hand (`stopped`/`starting`/`started`), as distributed/membership/driver.py does.
"""

from __future__ import annotations

import asyncio

import pytest

from connect_rebalance.work import CONNECTOR, Work
from workers.distributed.membership.driver import MemberDriver
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

pytestmark = pytest.mark.unit

SESSION_MS = 9000  # deadline: sent + 9 s - 3 s
A, B, C = (("a", CONNECTOR), ("a", 0), ("b", 0))


def connect() -> MemberMachine:
    return MemberMachine(SessionWatch(SESSION_MS), acknowledges=True)


def classic() -> MemberMachine:
    return MemberMachine(SessionWatch(SESSION_MS), acknowledges=False, epoch=-1)


def given(epoch: int, *work: Work) -> Assignment:
    return Assignment(epoch, frozenset(work))


def carry_out(machine: MemberMachine, actions: list[Action], now: float) -> list[Action]:
    """What a driver does: stops complete, starts begin and finish; returns the actions
    with every follow-up the machine asked for."""
    done: list[Action] = []
    for action in actions:
        done.append(action)
        if isinstance(action, Stop):
            machine.stopped(action.work)
        elif isinstance(action, Start):
            machine.starting(action.work)
            done += machine.started(now, action.work)
    return done


def test_a_connect_member_stops_revoked_work_and_acknowledges_before_it_starts_anything_new() -> None:
    m = connect()
    assert carry_out(m, m.heartbeat_answered(0.0, 0.0, 1, SESSION_MS, given(1, A, B)), 0.1) == [
        Start(frozenset({A, B}), given(1, A, B)),
        Beat(),
    ]
    assert m.runs == {A, B} and m.state == MemberState.STABLE
    # The target moves B away and brings C: B stops first, the answer brings no start.
    actions = m.heartbeat_answered(1.0, 1.0, 2, SESSION_MS, given(2, A, C))
    assert actions == [Stop(frozenset({B})), Beat()]
    assert m.state == MemberState.RECONCILING and m.runs == {A, B}  # still owned until stopped
    # A heartbeat answered while B is still stopping asks for nothing more.
    assert m.heartbeat_answered(1.5, 1.5, 2, SESSION_MS, given(2, A, C)) == []
    m.stopped(frozenset({B}))
    assert m.runs == {A}
    actions = m.heartbeat_answered(2.0, 2.0, 2, SESSION_MS, given(2, A, C))
    assert actions == [Start(frozenset({C}), given(2, A, C))]
    assert carry_out(m, actions, 2.5)[-1] == Beat()
    assert m.runs == {A, C} and m.rebalances == 2


def test_a_fenced_connect_member_stops_everything_and_rejoins_at_epoch_zero() -> None:
    m = connect()
    carry_out(m, m.heartbeat_answered(0.0, 0.0, 3, SESSION_MS, given(3, A, B)), 0.0)
    actions = m.fenced(1.0)
    # At once: the work may already run elsewhere, so no batch under way is let commit.
    assert actions == [Stop(frozenset({A, B}), at_once=True), Rejoin(as_new=True, kept_work=False)]
    assert (m.epoch, m.assignment, m.state) == (0, None, MemberState.JOINING)


def test_no_zombies_work_stops_once_before_the_session_can_expire_and_not_while_answers_come() -> None:
    m = connect()
    carry_out(m, m.heartbeat_answered(0.5, 0.0, 1, SESSION_MS, given(1, A)), 0.5)
    assert m.next_tick() == pytest.approx(6.0)  # sent at 0 + 9 s - 3 s
    assert m.tick(5.9) == []
    # An answer to a heartbeat sent later moves the deadline.
    m.heartbeat_answered(5.95, 5.0, 1, SESSION_MS, None)
    assert m.tick(6.0) == [] and m.next_tick() == pytest.approx(11.0)
    # Frozen: nothing answered past the deadline; everything stops, once.
    assert m.tick(11.0) == [Stop(frozenset({A}), at_once=True), Rejoin(kept_work=False)]
    assert m.tick(11.5) == [] and m.session.zombie_stops == 1
    m.stopped(frozenset({A}))
    assert m.runs == frozenset() and m.next_tick() is None


def test_the_deadline_is_the_coordinators_session_timeout_once_it_has_said_it() -> None:
    m = connect()
    carry_out(m, m.heartbeat_answered(0.0, 0.0, 1, 30000, given(1, A)), 0.0)
    assert m.next_tick() == pytest.approx(20.0)  # 30 s - 10 s


def test_a_member_with_no_work_never_stops_anything_for_its_session() -> None:
    m = connect()
    m.heartbeat_answered(0.0, 0.0, 1, SESSION_MS, given(1))
    assert m.next_tick() is None and m.tick(100.0) == []


def test_an_eager_classic_member_stops_everything_before_it_joins_and_runs_the_whole_assignment() -> None:
    m = classic()
    carry_out(m, m.synced(1, frozenset({A, B}), frozenset(), 0, True, given(1, A, B), 0.0), 0.0)
    assert m.runs == {A, B} and m.epoch == 1
    assert m.joining(1.0, eager=True) == [Stop(frozenset({A, B}))]
    m.stopped(frozenset({A, B}))
    actions = m.synced(2, frozenset({B, C}), frozenset(), 0, True, given(2, B, C), 2.0)
    assert actions == [Start(frozenset({B, C}), given(2, B, C))]  # no Beat: classic reports at a join


def test_an_incremental_classic_member_joins_with_its_work_and_rejoins_after_a_revocation() -> None:
    m = classic()
    carry_out(m, m.synced(1, frozenset({A, B}), frozenset(), 0, False, given(1, A, B), 0.0), 0.0)
    assert m.joining(1.0, eager=False) == []
    actions = m.synced(2, frozenset(), frozenset({B}), 0, False, given(2), 1.5)
    assert actions == [Stop(frozenset({B})), Start(frozenset(), given(2)), Rejoin()]
    assert m.state == MemberState.RECONCILING
    carry_out(m, actions, 1.6)
    assert m.runs == {A} and m.clock.rebalancing  # not converged until the follow-up round
    m.joining(2.0, eager=False)
    carry_out(m, m.synced(3, frozenset({C}), frozenset(), 0, False, given(3, C), 2.5), 2.6)
    assert m.runs == {A, C} and not m.clock.rebalancing and m.clock.last_s == pytest.approx(1.6)


def test_a_classic_assignment_starts_work_again_only_after_the_watchdogs_stop_of_it_ended() -> None:
    m = classic()
    carry_out(m, m.synced(1, frozenset({A, B}), frozenset(), 0, True, given(1, A, B), 0.0), 0.0)
    m.session.answered(0.0)
    assert m.tick(100.0)[0] == Stop(frozenset({A, B}), at_once=True)  # the watchdog is stopping both
    actions = m.synced(2, frozenset({A, B}), frozenset(), 0, True, given(2, A, B), 100.5)
    assert actions[0] == Stop(frozenset({A, B}))  # waited for before A and B start again


def test_a_classic_delay_schedules_the_next_round_for_when_it_ends() -> None:
    m = classic()
    m.synced(1, frozenset(), frozenset(), 5000, False, given(1), 10.0)
    assert m.next_tick() == pytest.approx(15.0)
    assert m.tick(14.9) == []
    assert m.tick(15.0) == [Rejoin()] and m.next_tick() is None


def test_a_classic_member_a_generation_behind_keeps_its_work_only_on_an_incremental_protocol() -> None:
    m = classic()
    carry_out(m, m.synced(4, frozenset({A}), frozenset(), 0, False, given(4, A), 0.0), 0.0)
    assert m.generation_lost(1.0, keep_work=True, forget_member=False) == [Rejoin()]
    assert m.runs == {A} and m.epoch == -1
    assert m.generation_lost(2.0, keep_work=False, forget_member=True) == [
        Stop(frozenset({A}), at_once=True),
        Rejoin(as_new=True, kept_work=False),
    ]


def test_leaving_or_a_lost_session_stops_everything_also_what_is_already_stopping() -> None:
    """The driver waits for a stop already under way: a Stop of it is complete only then."""
    m = connect()
    carry_out(m, m.heartbeat_answered(0.0, 0.0, 1, SESSION_MS, given(1, A, B)), 0.0)
    m.heartbeat_answered(1.0, 1.0, 2, SESSION_MS, given(2, A))  # B is being stopped
    assert m.fenced(1.5)[0] == Stop(frozenset({A, B}), at_once=True)
    # A leave is graceful: what it stops may let its batch under way commit.
    assert m.leave() == [Stop(frozenset({A, B}))] and m.state == MemberState.LEFT


def test_one_rebalance_is_timed_from_the_first_news_to_the_last_start() -> None:
    m = connect()
    carry_out(m, m.heartbeat_answered(0.0, 0.0, 1, SESSION_MS, given(1, A, B)), 0.5)
    assert m.clock.count == 1 and m.clock.last_s == pytest.approx(0.5)
    m.heartbeat_answered(10.0, 10.0, 2, SESSION_MS, given(2, A))
    m.stopped(frozenset({B}))
    carry_out(m, m.heartbeat_answered(11.0, 11.0, 2, SESSION_MS, given(2, A)), 11.5)
    assert m.clock.count == 2 and m.clock.last_s == pytest.approx(1.5)


class SlowListener:
    """The herder's side, in process: a stop finishes when the test lets it."""

    def __init__(self) -> None:
        self.release = asyncio.Event()
        self.stopping = asyncio.Event()
        self.stops: list[frozenset[Work]] = []

    async def stop_work(self, work: frozenset[Work], at_once: bool = False) -> None:
        self.stops.append(work)
        self.stopping.set()
        await self.release.wait()

    async def start_work(self, work: frozenset[Work], assignment: Assignment) -> None:
        return None


async def test_a_rejoin_after_a_lost_session_waits_for_the_watchdogs_stop_under_way() -> None:
    """Seen before: a worker thawed past its session rejoined while its watchdog was still
    stopping its Spark tasks, and reported them UNASSIGNED under its new epoch, hiding the
    RUNNING of the worker that had taken one over (the status stayed wrong)."""
    m = connect()
    listener, rejoins = SlowListener(), []
    driver = MemberDriver(m, listener, lambda: None, rejoins.append, lambda: "w1")
    await driver.carry_out(m.heartbeat_answered(0.0, 0.0, 4, SESSION_MS, given(4, A, B)))
    watchdog = asyncio.create_task(driver.carry_out(m.tick(100.0)))  # thawed long past the deadline
    await listener.stopping.wait()
    fenced = asyncio.create_task(driver.carry_out(m.fenced(100.1)))
    done, _ = await asyncio.wait({fenced}, timeout=0.2)
    assert not done and rejoins == [], "rejoined while the work was still stopping"
    listener.release.set()
    await asyncio.gather(watchdog, fenced)
    assert listener.stops == [frozenset({A, B})]  # stopped once, not twice
    assert rejoins[-1] == Rejoin(as_new=True, kept_work=False) and m.runs == frozenset()

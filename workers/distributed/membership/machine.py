"""The member state machine both group protocols run: events in, actions out.

What a worker runs, and when it may run it, is one question on a `connect` group (KIP-848
heartbeats) and on a classic group (JoinGroup/SyncGroup, Kafka Connect's WorkerCoordinator):
- work given up is stopped *before* anyone can be told it stopped (a revocation, a lost
  session, an eager join);
- work given is started after what had to stop has stopped;
- no zombies: once the session may expire, everything stops before the coordinator can hand
  it to another worker (the deadline rule is `SessionWatch`, session_watch.py);
- a lost session means rejoining, as a new member or keeping the member id and what runs.

This module answers it without IO and without a clock of its own, in the manner of h11's
`_state.py`: a driver feeds events (an answer, the time, a stop or start that finished) and
carries out the actions it gets back, in order: a `Stop` is complete before the next action,
including the stop of work some earlier `Stop` is still stopping (a rejoin after a lost
session waits for the watchdog's stop, so nothing of the old assignment is reported under the
new epoch).
The drivers, connect.py and classic.py, only speak their protocol;
driver.py carries actions out against the herder for both.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from enum import StrEnum

from connect_rebalance.work import Work
from workers.distributed.membership.session_watch import SessionWatch
from workers.observe.rebalance_clock import RebalanceClock


class MemberState(StrEnum):
    UNJOINED = "unjoined"
    JOINING = "joining"
    STABLE = "stable"
    RECONCILING = "reconciling"
    UNREACHABLE = "unreachable"
    LEFT = "left"


@dataclass(frozen=True)
class Assignment:
    """What the coordinator last gave this worker, with the assignor's metadata for it."""

    epoch: int
    work: frozenset[Work]
    error: int = 0
    metadata_version: int = 0
    metadata: bytes = b""


@dataclass(frozen=True)
class Stop:
    """Stop this work for real (or wait for a stop of it already under way); only then may
    anything say it stopped."""

    work: frozenset[Work]
    # The session or generation is gone, and the work may already run elsewhere: it stops
    # at once. Otherwise (a revocation, a leave) a Spark task lets its batch under way commit.
    at_once: bool = False


@dataclass(frozen=True)
class Start:
    """Start this work (in the background: heartbeats go on meanwhile). Called with no work
    as well, so that the herder always knows the computing worker's metadata."""

    work: frozenset[Work]
    assignment: Assignment


@dataclass(frozen=True)
class Beat:
    """Tell the coordinator at once (a connect heartbeat): a stop or start finished."""


@dataclass(frozen=True)
class Rejoin:
    """Join again at once. `as_new`: the coordinator forgot this member (join with no member
    id or epoch 0). `kept_work`: what runs was kept and is reported; otherwise it stopped and
    the coordinator is told everything afresh."""

    as_new: bool = False
    kept_work: bool = True


Action = Stop | Start | Beat | Rejoin


@dataclass
class MemberMachine:
    """A worker's membership, protocol-neutral. `acknowledges`: the protocol reports each
    finished stop and start at once (connect heartbeats); classic reports at the next join."""

    session: SessionWatch
    acknowledges: bool
    epoch: int = 0
    state: MemberState = MemberState.UNJOINED
    runs: frozenset[Work] = frozenset()
    stopping: frozenset[Work] = frozenset()  # Stop issued, not yet finished
    assignment: Assignment | None = None
    rebalances: int = 0
    rejoin_at: float | None = None  # a scheduled rebalance (classic `delay`)
    clock: RebalanceClock = field(default_factory=RebalanceClock)

    # -- a connect group's heartbeat answer -------------------------------------------------

    def heartbeat_answered(
        self, now: float, sent_at: float, epoch: int, session_timeout_ms: int, given: Assignment | None
    ) -> list[Action]:
        """A heartbeat sent at `sent_at` was answered at `epoch`, with the whole assignment
        (`given`) or none (nothing changed). Revocations come first: new work is started
        from a later answer, once what was revoked has stopped and been acknowledged."""
        self.session.answered(sent_at)
        self.session.session_timeout_ms = session_timeout_ms  # the coordinator's, which counts
        if epoch != self.epoch or (given is not None and given.work != self.runs):
            self.clock.begin(now)
        self.epoch = epoch
        if given is None:
            return []
        self.assignment = given
        revoked, added = self.runs - given.work, given.work - self.runs
        if revoked:
            self.state = MemberState.RECONCILING
            fresh = revoked - self.stopping
            return [self._stop(fresh), Beat()] if fresh else []
        if added:
            self.rebalances += 1
        self.state = MemberState.STABLE
        return [Start(added, given)]

    def fenced(self, now: float) -> list[Action]:
        """UNKNOWN_MEMBER_ID or FENCED_MEMBER_EPOCH: the session is gone, and what ran may
        already run elsewhere. Everything stops; the worker joins again with epoch 0."""
        self.clock.begin(now)
        self.epoch, self.assignment, self.state = 0, None, MemberState.JOINING
        return [self._stop(self.runs, at_once=True), Rejoin(as_new=True, kept_work=False)]

    # -- a classic group's rounds ---------------------------------------------------------------

    def joining(self, now: float, eager: bool) -> list[Action]:
        """A JoinGroup is about to be sent. Eager: everything stops before it."""
        self.clock.begin(now)
        self.state = MemberState.JOINING
        return [self._stop(self.runs)] if eager else []

    def synced(
        self,
        generation: int,
        assigned: frozenset[Work],
        revoked: frozenset[Work],
        delay_ms: int,
        eager: bool,
        given: Assignment,
        now: float,
    ) -> list[Action]:
        """SyncGroup handed this worker its part. Eager: the whole of what to run. Incremental
        cooperative: what to stop and what to start; a revocation asks for the follow-up round
        at once, a `delay` schedules one for everyone."""
        self.rebalances += 1
        self.epoch = generation
        gone = self.runs if eager else revoked & self.runs
        self.assignment = given
        self.rejoin_at = now + delay_ms / 1000 if delay_ms > 0 else None
        actions: list[Action] = [self._stop(gone)] if gone else []
        actions.append(Start(assigned - (self.runs - gone), given))
        if revoked and not eager:
            self.state = MemberState.RECONCILING
            actions.append(Rejoin())  # revoke, then assign: the follow-up round
        else:
            self.state = MemberState.STABLE
        return actions

    def generation_lost(self, now: float, *, keep_work: bool, forget_member: bool) -> list[Action]:
        """The classic session or generation is gone. `keep_work` (ILLEGAL_GENERATION on an
        incremental protocol): the member is still in the group, so it rejoins reporting
        what it runs and the leader decides what moves. Otherwise everything stops first."""
        self.clock.begin(now)
        self.state, self.epoch = MemberState.JOINING, -1
        if keep_work:
            return [Rejoin()]
        return [self._stop(self.runs, at_once=True), Rejoin(as_new=forget_member, kept_work=False)]

    # -- both ------------------------------------------------------------------------------

    def starting(self, work: frozenset[Work]) -> None:
        """A Start is being carried out: the work counts as run (and owned) from now."""
        self.runs = self.runs | work

    def started(self, now: float, work: frozenset[Work]) -> list[Action]:
        """A start finished. Converged if nothing else is pending; a connect worker
        acknowledges new work at once (the rest of its target may be free by now)."""
        if self.state == MemberState.STABLE:
            self.clock.end(now)
        return [Beat()] if work and self.acknowledges else []

    def stopped(self, work: frozenset[Work]) -> None:
        """A Stop finished: only now is the work no longer run (nor reported owned)."""
        self.runs, self.stopping = self.runs - work, self.stopping - work

    def unreachable(self) -> None:
        self.state = MemberState.UNREACHABLE

    def tick(self, now: float) -> list[Action]:
        """The time passed. No zombies: past the session's deadline with work running and no
        newer answer, everything stops and the coordinator is told afresh. A scheduled
        rebalance that is due rejoins."""
        deadline = self.session.deadline()
        running = self.runs - self.stopping
        if running and deadline is not None and now >= deadline:
            self.session.zombie_stops += 1
            self.clock.begin(now)
            return [self._stop(self.runs, at_once=True), Rejoin(kept_work=False)]
        if self.rejoin_at is not None and now >= self.rejoin_at:
            self.rejoin_at = None
            return [Rejoin()]
        return []

    def next_tick(self) -> float | None:
        """When `tick` next has something to do, if nothing else happens before."""
        deadline = self.session.deadline() if self.runs - self.stopping else None
        due = [t for t in (deadline, self.rejoin_at) if t is not None]
        return min(due) if due else None

    def leave(self) -> list[Action]:
        """Leaving for good: everything stops before the coordinator is told."""
        self.state = MemberState.LEFT
        self.rejoin_at = None
        return [self._stop(self.runs)]

    def _stop(self, work: frozenset[Work], at_once: bool = False) -> Stop:
        self.stopping = self.stopping | work
        return Stop(work, at_once)

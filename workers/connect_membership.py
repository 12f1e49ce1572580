"""A worker's membership in a `connect` group: the heartbeat loop and its state machine.

The member state machine of KIP-848's consumer (specs/consumer-member-state-machine-design
.txt), adapted to connectors and tasks as the connect group protocol draft says a worker
behaves:
- join with epoch 0 and every field; afterwards send only what changed;
- on an assignment: stop what is no longer assigned first, heartbeat at once to acknowledge
  it, then start what is new (the coordinator only hands out work once its previous owner
  has said it stopped it) and heartbeat at once again when it has started, as a KIP-848
  consumer acknowledges a reconciled assignment: more of the target may have been released
  meanwhile;
- when told to compute (`ShouldComputeAssignment`): ConnectGroupPrepareAssignment, the
  worker's assignor, ConnectGroupInstallAssignment, then a heartbeat at once (the new target
  usually asks this worker to revoke something);
- on UNKNOWN_MEMBER_ID or FENCED_MEMBER_EPOCH: stop everything and rejoin with epoch 0;
  while the coordinator is loading or moving, retry; any other error (UNSUPPORTED_ASSIGNOR:
  the group's workers share no assignor with this one) ends the membership with the
  coordinator's message (`MembershipRefused`), and the worker exits with it;
- no zombies: if no heartbeat has been answered for long enough that the coordinator may
  expire the session, stop everything *before* it can, so that no task ever runs on two
  workers at once. The deadline counts from when the last answered heartbeat was *sent*,
  which is no later than when the coordinator refreshed the session.

IO is one ProtocolClient connection; the work itself is the listener's (the herder).
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import time
from collections.abc import Awaitable, Callable
from dataclasses import dataclass
from enum import StrEnum
from typing import Any, Protocol

from connect_rebalance.client_security import ClientSecurity
from connect_rebalance.errors import ErrorCode
from connect_rebalance.protocol.client import ProtocolClient
from connect_rebalance.protocol.connect_group import (
    LEAVE_EPOCH,
    ClientAssignor,
    ConnectGroupApi,
    InstalledMember,
)
from connect_rebalance.work import Work, work_of

from .rebalance_clock import RebalanceClock
from .session_watch import SessionWatch, watch

log = logging.getLogger(__name__)
REJOIN_ERRORS = (ErrorCode.UNKNOWN_MEMBER_ID, ErrorCode.FENCED_MEMBER_EPOCH)
RETRY_ERRORS = (
    ErrorCode.COORDINATOR_LOAD_IN_PROGRESS, ErrorCode.COORDINATOR_NOT_AVAILABLE, ErrorCode.NOT_COORDINATOR
)  # fmt: skip


class MembershipRefused(RuntimeError):
    """The coordinator refused this worker's heartbeat for good; the message says why."""


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
class InstallPlan:
    """An assignor's answer to ConnectGroupPrepareAssignment."""

    covered: frozenset[Work]
    members: list[InstalledMember]
    error: int = 0


class WorkListener(Protocol):
    async def stop_work(self, work: frozenset[Work]) -> None: ...
    async def start_work(self, work: frozenset[Work], assignment: Assignment) -> None: ...


Compute = Callable[[dict[str, Any]], Awaitable[InstallPlan]]


class ConnectMembership:
    def __init__(
        self,
        bootstrap: str,
        group_id: str,
        member_id: str,
        url: str,
        listener: WorkListener,
        compute: Compute,
        assignors: Callable[[], list[ClientAssignor]],
        *,
        instance_id: str | None = None,
        rebalance_timeout_ms: int = 60000,
        session_timeout_ms: int = 10000,  # until the coordinator says what it applies
        request_timeout_ms: int = 5000,
        security: ClientSecurity | None = None,
    ) -> None:
        self.bootstrap, self.group_id, self.member_id, self.url = bootstrap, group_id, member_id, url
        self.security = security
        self.listener, self.compute, self.assignors = listener, compute, assignors
        self.instance_id = instance_id
        self.rebalance_timeout_ms = rebalance_timeout_ms
        self.request_timeout_ms = request_timeout_ms
        self.state = MemberState.UNJOINED
        self.epoch = 0
        self.runs: frozenset[Work] = frozenset()
        self.assignment: Assignment | None = None
        self._client: ProtocolClient | None = None
        self._full = True  # the next heartbeat sends every field
        self._sent_assignors: list[ClientAssignor] | None = None
        self._wake = asyncio.Event()
        self._stopping = False
        self.session = SessionWatch(session_timeout_ms)  # no zombies (session_watch.py)
        self.rebalances = 0
        self.clock = RebalanceClock()
        self._starting: set[asyncio.Task[None]] = set()
        self._revoking: frozenset[Work] = frozenset()  # being stopped beside the heartbeats
        self._computing: asyncio.Task[None] | None = None
        self._connecting = asyncio.Lock()
        self._resync = False  # the next heartbeat is a full one (after a zombie stop)

    # -- what the herder calls ------------------------------------------------------------

    def heartbeat_now(self) -> None:
        """Send the next heartbeat at once (e.g. the assignors' reason or metadata changed)."""
        self._wake.set()

    async def run(self) -> None:
        """Heartbeat until `leave()`; reconnects and rejoins as needed."""
        watchdog = asyncio.create_task(
            watch(
                self.session, lambda: bool(self.runs), self._give_up, lambda: self._stopping, self.member_id
            )
        )
        try:
            while not self._stopping:
                # Cleared before the heartbeat, not after: a wake-up while it is on its way
                # (a revocation or a start finishing meanwhile) is news it did not carry.
                self._wake.clear()
                delay_ms = await self._beat_once()
                with contextlib.suppress(asyncio.TimeoutError):
                    await asyncio.wait_for(self._wake.wait(), max(delay_ms, 0) / 1000)
        finally:
            watchdog.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await watchdog

    async def leave(self) -> None:
        """Stop all work and leave the group for good (its work is reassigned at once)."""
        self._stopping = True
        self._wake.set()
        if self._computing is not None:
            self._computing.cancel()
        await self._stop(self.runs)
        if self._client is not None and self.state not in (MemberState.UNJOINED, MemberState.UNREACHABLE):
            with contextlib.suppress(ConnectionError, asyncio.TimeoutError):
                await self._request(lambda api: api.heartbeat(self.group_id, self.member_id, LEAVE_EPOCH))
        self.state = MemberState.LEFT
        await self._disconnect()

    # -- the loop -------------------------------------------------------------------------

    async def _beat_once(self) -> int:
        """One heartbeat and everything it asks for; returns the delay until the next one."""
        try:
            sent_at = time.monotonic()
            fields = self._heartbeat_fields()
            answer = await self._request(
                lambda api: api.heartbeat(self.group_id, self.member_id, self.epoch, **fields)
            )
        except (TimeoutError, ConnectionError, OSError) as exc:
            log.warning("heartbeat to %s failed: %s", self.bootstrap, exc)
            self.state = MemberState.UNREACHABLE
            self._full = True
            await self._disconnect()
            return 500
        code = answer["error_code"]
        if code in REJOIN_ERRORS:
            log.info("%s: %s; stopping all work and rejoining", self.member_id, answer["error_message"])
            self.clock.begin(time.monotonic())
            await self._stop(self.runs)
            self.epoch, self.assignment, self._full = 0, None, True
            self.state = MemberState.JOINING
            return 0
        if code in RETRY_ERRORS:
            log.warning("heartbeat: %s: %s; retrying", ErrorCode(code).name, answer["error_message"])
            return 500
        if code != ErrorCode.NONE:
            name = ErrorCode(code).name if code in ErrorCode._value2member_map_ else str(code)
            raise MembershipRefused(f"the coordinator refused to let this worker in: {name}: "
                                    f"{answer['error_message']}")  # fmt: skip
        self.session.answered(sent_at)
        log.debug(
            "heartbeat at epoch %s answered in %.0f ms: %s",
            self.epoch,
            (time.monotonic() - sent_at) * 1000,
            {
                k: answer[k]
                for k in ("member_epoch", "error_code", "session_timeout_ms", "heartbeat_interval_ms")
            },
        )
        self.session.session_timeout_ms = answer["session_timeout_ms"]  # the coordinator's, which counts
        self._full = False
        given = (
            None if answer["assignment"] is None else work_of(answer["assignment"]["connectors_and_tasks"])
        )
        if answer["member_epoch"] != self.epoch or (given is not None and given != self.runs):
            self.clock.begin(time.monotonic())
        self.epoch = answer["member_epoch"]
        delay = answer["heartbeat_interval_ms"]
        if answer["assignment"] is not None:
            delay = await self._reconcile(answer["assignment"], delay)
        if answer["should_compute_assignment"] and (self._computing is None or self._computing.done()):
            # Computed beside the heartbeats (reading the config and status topics may take
            # a while), so the session stays alive meanwhile.
            self._computing = asyncio.create_task(self._compute_logged())
        return delay

    def _heartbeat_fields(self) -> dict[str, Any]:
        assignors = self.assignors()
        changed = assignors != self._sent_assignors
        full, self._resync = self._full or self._resync, False
        fields: dict[str, Any] = {"owned": self.runs}
        if full or changed:
            fields["assignors"] = assignors
            self._sent_assignors = assignors
        if full:
            fields.update(
                url=self.url, instance_id=self.instance_id, rebalance_timeout_ms=self.rebalance_timeout_ms
            )
            if self.epoch == 0:
                fields["owned"] = frozenset()
        if self.state == MemberState.UNJOINED:
            self.state = MemberState.JOINING
        return fields

    async def _reconcile(self, field: dict[str, Any], interval_ms: int) -> int:
        given = work_of(field["connectors_and_tasks"])
        self.assignment = Assignment(
            self.epoch, given, field["error"], field["metadata_version"], field["metadata"]
        )
        revoked, added = self.runs - given, given - self.runs
        self.state = MemberState.RECONCILING if revoked or added else MemberState.STABLE
        if revoked:
            # Stopped beside the heartbeats, as a KIP-848 consumer runs its revocation: the
            # heartbeats go on reporting the work as owned until it has stopped, and the one
            # after that acknowledges at once. New work (if any) comes with a later answer.
            fresh = revoked - self._revoking
            if fresh:
                self._revoking |= fresh
                self._starting.add(asyncio.create_task(self._revoke(fresh)))
            return interval_ms
        if added:
            # Started in the background: heartbeats go on while connectors and tasks start.
            # (Stopping is awaited: the coordinator must only hear "stopped" once it is true.)
            self.rebalances += 1
            self.runs = self.runs | added
        # Called with nothing new as well, so the listener always knows the computing
        # worker's metadata (who leads, at which config offset).
        self._starting.add(asyncio.create_task(self._start(added, self.assignment)))
        self._starting = {t for t in self._starting if not t.done()}
        self.state = MemberState.STABLE
        return interval_ms

    async def _revoke(self, work: frozenset[Work]) -> None:
        try:
            await self._stop(work)
        finally:
            self._revoking -= work
        self.heartbeat_now()

    async def _start(self, work: frozenset[Work], assignment: Assignment) -> None:
        await self.listener.start_work(work, assignment)
        if self.state == MemberState.STABLE:
            self.clock.end(time.monotonic())
        if work:
            self.heartbeat_now()  # acknowledges it; the rest of the target may be free by now

    async def _compute_logged(self) -> None:
        """A failed computation is logged, not raised: the coordinator re-selects a worker
        (or asks this one again) when no target is installed within the rebalance timeout."""
        try:
            await self._compute()
        except (TimeoutError, ConnectionError, OSError) as exc:
            log.warning("computing the assignment failed: %s", exc)
        except Exception:
            log.exception("computing the assignment failed")

    async def _compute(self) -> None:
        prepared = await self._request(lambda api: api.prepare(self.group_id, self.member_id, self.epoch))
        if prepared["error_code"] != ErrorCode.NONE:
            log.info("prepare assignment: %s", prepared["error_message"])
            return
        plan = await self.compute(prepared)
        installed = await self._request(
            lambda api: api.install(
                self.group_id, self.member_id, self.epoch, prepared["group_epoch"], plan.covered,
                plan.members, plan.error,
            )
        )  # fmt: skip
        if installed["error_code"] != ErrorCode.NONE:
            log.warning("install assignment: %s", installed["error_message"])
            return
        self.heartbeat_now()  # this worker's own part of the new target, without an interval's wait

    async def _stop(self, work: frozenset[Work]) -> None:
        if work:
            await self.listener.stop_work(work)
            self.runs = self.runs - work

    @property
    def zombie_stops(self) -> int:
        return self.session.zombie_stops

    async def _give_up(self) -> None:
        """The session may expire: everything stops. Heartbeats answered meanwhile may have
        found nothing to change (the work was still running), so the next one, sent now that
        it has stopped, is a full one: the coordinator answers it with the whole assignment,
        which is started again, or with UNKNOWN_MEMBER_ID / FENCED_MEMBER_EPOCH if this
        worker's session has expired (then it rejoins with epoch 0)."""
        await self._stop(self.runs)
        self._resync = True
        self.heartbeat_now()

    # -- the connection -------------------------------------------------------------------

    async def _request(self, call: Callable[[ConnectGroupApi], Awaitable[dict[str, Any]]]) -> dict[str, Any]:
        async with self._connecting:  # the heartbeats and a computation share one connection
            if self._client is None or not self._client.connected:
                connecting = ProtocolClient.connect(self.bootstrap, f"worker-{self.member_id}", self.security)
                self._client = await asyncio.wait_for(connecting, self.request_timeout_ms / 1000)
        return await asyncio.wait_for(call(ConnectGroupApi(self._client)), self.request_timeout_ms / 1000)

    async def _disconnect(self) -> None:
        if self._client is not None:
            await self._client.close()
            self._client = None

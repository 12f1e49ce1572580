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

This module speaks the protocol: one ProtocolClient connection, the heartbeat fields, the
errors. What to stop, start and rejoin when is the member machine's (machine.py,
shared with the classic protocol); driver.py carries it out against the herder.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import time
from collections.abc import Awaitable, Callable
from dataclasses import dataclass
from typing import Any

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
from workers.distributed.membership.driver import MachineView, MemberDriver, WorkListener
from workers.distributed.membership.machine import Assignment, MemberMachine, MemberState, Rejoin
from workers.distributed.membership.session_watch import SESSION_KEEPING_ANSWERS, SessionWatch

log = logging.getLogger(__name__)
REJOIN_ERRORS = (ErrorCode.UNKNOWN_MEMBER_ID, ErrorCode.FENCED_MEMBER_EPOCH)
# How often a worker heartbeats while it waits for prepared work its old owner is letting go:
# its start is the wait after that owner's acknowledgement (the coordinator cannot call).
QUICK_HEARTBEAT_MS = 100
RETRY_ERRORS = (
    ErrorCode.COORDINATOR_LOAD_IN_PROGRESS, ErrorCode.COORDINATOR_NOT_AVAILABLE, ErrorCode.NOT_COORDINATOR
)  # fmt: skip


class MembershipRefused(RuntimeError):
    """The coordinator refused this worker's heartbeat for good; the message says why."""


@dataclass(frozen=True)
class InstallPlan:
    """An assignor's answer to ConnectGroupPrepareAssignment."""

    covered: frozenset[Work]
    members: list[InstalledMember]
    error: int = 0


Compute = Callable[[dict[str, Any]], Awaitable[InstallPlan]]


class ConnectMembership(MachineView):
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
        quick_heartbeats: Callable[[], bool] = lambda: False,
    ) -> None:
        """`quick_heartbeats()`: work is about to be assigned here (prepared work another
        worker lets go of, distributed/warm_handoff.py), so heartbeats come every QUICK_HEARTBEAT_MS."""
        self.bootstrap, self.group_id, self.member_id, self.url = bootstrap, group_id, member_id, url
        self.quick_heartbeats = quick_heartbeats
        self.security = security
        self.compute, self.assignors = compute, assignors
        self.instance_id = instance_id
        self.rebalance_timeout_ms = rebalance_timeout_ms
        self.request_timeout_ms = request_timeout_ms
        self.machine = MemberMachine(SessionWatch(session_timeout_ms), acknowledges=True)
        self.work = MemberDriver(self.machine, listener, self.heartbeat_now, self._rejoin, lambda: member_id)
        self._client: ProtocolClient | None = None
        self._full = True  # the next heartbeat sends every field
        self._sent_assignors: list[ClientAssignor] | None = None
        self._wake = asyncio.Event()
        self._stopping = False
        self._computing: asyncio.Task[None] | None = None
        self._connecting = asyncio.Lock()

    # -- what the herder calls ------------------------------------------------------------

    def heartbeat_now(self) -> None:
        """Send the next heartbeat at once (e.g. the assignors' reason or metadata changed)."""
        self._wake.set()

    async def run(self) -> None:
        """Heartbeat until `leave()`; reconnects and rejoins as needed."""
        watchdog = asyncio.create_task(self.work.watchdog(lambda: self._stopping))
        try:
            while not self._stopping:
                # Cleared before the heartbeat, not after: a wake-up while it is on its way
                # (a revocation or a start finishing meanwhile) is news it did not carry.
                self._wake.clear()
                delay_ms = await self._beat_once()
                if self.quick_heartbeats():
                    delay_ms = min(delay_ms, QUICK_HEARTBEAT_MS)
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
        reachable = self.state not in (MemberState.UNJOINED, MemberState.UNREACHABLE)
        await self.work.carry_out(self.machine.leave())
        if self._client is not None and reachable:
            with contextlib.suppress(ConnectionError, asyncio.TimeoutError):
                await self._request(lambda api: api.heartbeat(self.group_id, self.member_id, LEAVE_EPOCH))
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
            self.machine.unreachable()
            self._full = True
            await self._disconnect()
            return 500
        code = answer["error_code"]
        if code in REJOIN_ERRORS:
            log.info("%s: %s; stopping all work and rejoining", self.member_id, answer["error_message"])
            await self.work.carry_out(self.machine.fenced(time.monotonic()))
            return 0
        if code in RETRY_ERRORS:
            log.warning("heartbeat: %s: %s; retrying", ErrorCode(code).name, answer["error_message"])
            if code in SESSION_KEEPING_ANSWERS:  # a coordinator loading after its start
                self.machine.session.answered(sent_at)
            self._full = self._full or "url" in fields  # a full heartbeat not taken goes again
            return 500
        if code != ErrorCode.NONE:
            name = ErrorCode(code).name if code in ErrorCode._value2member_map_ else str(code)
            raise MembershipRefused(f"the coordinator refused to let this worker in: {name}: "
                                    f"{answer['error_message']}")  # fmt: skip
        log.debug(
            "heartbeat at epoch %s answered in %.0f ms: %s",
            self.epoch,
            (time.monotonic() - sent_at) * 1000,
            {
                k: answer[k]
                for k in ("member_epoch", "error_code", "session_timeout_ms", "heartbeat_interval_ms")
            },
        )
        field, given = answer["assignment"], None
        if field is not None:
            given = Assignment(
                answer["member_epoch"], work_of(field["connectors_and_tasks"]), field["error"],
                field["metadata_version"], field["metadata"],
            )  # fmt: skip
        if answer["session_timeout_ms"] != self.machine.session.session_timeout_ms:
            # The group's own value (its dynamic config) or the coordinator's setting: the
            # no-zombie deadline follows it from this answer on.
            log.info("%s: the coordinator measures this worker's session with %d ms",
                     self.member_id, answer["session_timeout_ms"])  # fmt: skip
        actions = self.machine.heartbeat_answered(
            time.monotonic(), sent_at, answer["member_epoch"], answer["session_timeout_ms"], given
        )
        # A revocation is stopped as a KIP-848 consumer runs it: beside the heartbeats, and the
        # one after it has stopped acknowledges at once.
        await self.work.beside_heartbeats(actions)
        if answer["should_compute_assignment"] and (self._computing is None or self._computing.done()):
            # Computed beside the heartbeats (reading the config and status topics may take
            # a while), so the session stays alive meanwhile.
            self._computing = asyncio.create_task(self._compute_logged())
        return answer["heartbeat_interval_ms"]

    def _heartbeat_fields(self) -> dict[str, Any]:
        assignors = self.assignors()
        changed = assignors != self._sent_assignors
        full = self._full
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
            # Taken by this heartbeat: a full one asked for while it is on its way (a watchdog
            # stop while the coordinator is frozen) is sent after it, not lost with its answer.
            self._full = False
        if self.state == MemberState.UNJOINED:
            self.machine.state = MemberState.JOINING
        return fields

    def _rejoin(self, how: Rejoin) -> None:
        """Fenced (epoch 0 already) or stopped by the watchdog: the next heartbeat is a full
        one, sent at once. After a watchdog stop, heartbeats answered meanwhile may have found
        nothing to change (the work was still running); the coordinator answers a full one
        with the whole assignment, which is started again, or with UNKNOWN_MEMBER_ID /
        FENCED_MEMBER_EPOCH if the session has expired (then the worker rejoins with epoch 0)."""
        self._full = True
        self.heartbeat_now()

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

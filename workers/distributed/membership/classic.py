"""A worker's membership in a classic group (`group.protocol=classic`), as Kafka Connect's
WorkerCoordinator runs it: JoinGroup/SyncGroup/Heartbeat/LeaveGroup with protocol type
"connect" and Kafka Connect's embedded protocol (connect_rebalance/connect_protocol.py, shared
with the coordinator, which speaks it to classic workers inside a connect group), so that the
same bytes work against this coordinator and against an Apache Kafka broker.

Theory of operation:
- A join offers the protocols `connect.protocol` names (sessioned, compatible, default),
  each with this worker's metadata: REST url, config offset, and (v1+) what it runs now.
  The coordinator elects a leader and chooses one protocol; the leader reads the config
  topic to its end and computes every member's assignment with the worker-side assignor
  the protocol names ("default": eager, otherwise incremental cooperative); SyncGroup
  hands each worker its part.
- Eager ("default"): everything is stopped before every join; the assignment is the whole
  of what to run.
- Incremental cooperative: nothing is stopped before a join; the assignment says what to
  stop (revoked, stopped at once) and what to start (a delta). A worker that had anything
  revoked rejoins at once (the second half of revoke-then-assign); a `delay` makes every
  worker rejoin after it (the scheduled rebalance that hands lost work out).
- Heartbeats run on their own connection and task at `heartbeat.interval.ms`, also while
  a join is parked (they keep the session alive and say REBALANCE_IN_PROGRESS).
  REBALANCE_IN_PROGRESS means rejoin. ILLEGAL_GENERATION means the member is still in the
  group but the generation moved on without it (e.g. a connect group turned classic again at
  a later epoch than this worker had reached): as Kafka Connect's WorkerCoordinator does, an
  incremental worker keeps what it runs and rejoins, reporting it, so the leader's next
  assignment decides what moves (an eager worker stops everything before any join anyway).
  UNKNOWN_MEMBER_ID or FENCED_INSTANCE_ID outside a join means the session is gone:
  everything stops and the worker joins afresh.
- No zombies: if no heartbeat has been answered for long enough that the coordinator may
  expire the session, all work stops *before* it can, as on connect.

This module speaks the protocol; what to stop, start and rejoin when is the member machine's
(machine.py, shared with the connect protocol), carried out against the herder by
driver.py: `stop_work` is awaited before anything is reported stopped; `start_work`
runs in the background, and is called on every assignment (even with nothing new) so that
the herder always knows the leader and its config offset.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import time
from collections.abc import Awaitable, Callable, Mapping
from dataclasses import dataclass
from typing import Any

from connect_rebalance.client_security import ClientSecurity
from connect_rebalance.connect_protocol import (
    CONFIG_MISMATCH,
    NO_ERROR,
    PROTOCOL_TYPE,
    ConnectAssignment,
    ConnectProtocolError,
    WorkerState,
    decode_assignment,
    decode_metadata,
    encode_assignment,
    encode_metadata,
    offered_protocols,
    protocol_version,
)
from connect_rebalance.errors import ErrorCode
from connect_rebalance.protocol.api_keys import ApiKey
from connect_rebalance.protocol.client import ProtocolClient
from connect_rebalance.work import Work
from workers.distributed.assignor.assignors import eager_round_robin
from workers.distributed.membership.driver import MachineView, MemberDriver, WorkListener
from workers.distributed.membership.leader_info import LeaderInfo
from workers.distributed.membership.machine import Assignment, MemberMachine, Rejoin
from workers.distributed.membership.session_watch import SESSION_KEEPING_ANSWERS, SessionWatch

log = logging.getLogger(__name__)
JOIN_VERSION, SYNC_VERSION, HEARTBEAT_VERSION, LEAVE_VERSION = 5, 3, 3, 3
SESSION_LOST = (ErrorCode.UNKNOWN_MEMBER_ID, ErrorCode.ILLEGAL_GENERATION, ErrorCode.FENCED_INSTANCE_ID)
RETRY_BACKOFF_S = 0.5

# The leader's view of the cluster's config: read to its end, then (every connector and task, offset).
Snapshot = Callable[[], Awaitable[tuple[frozenset[Work], int]]]
# The incremental cooperative leader's target: (member id -> url, what each owns, all work, generation)
# -> (each member's target, the delay everyone rejoins after while a lost worker's work is held).
PlanTarget = Callable[
    [Mapping[str, str], Mapping[str, frozenset[Work]], frozenset[Work], int],
    Awaitable[tuple[dict[str, frozenset[Work]], int]],
]


class ClassicMembership(MachineView):
    def __init__(
        self,
        bootstrap: str,
        group_id: str,
        url: str,
        listener: WorkListener,
        snapshot: Snapshot,
        config_offset: Callable[[], int],
        plan_target: PlanTarget,
        *,
        connect_protocol: str = "sessioned",
        client_id: str = "connect-rebalance-worker",
        session_timeout_ms: int = 10000,
        rebalance_timeout_ms: int = 60000,
        heartbeat_interval_ms: int = 3000,
        request_timeout_ms: int = 5000,
        security: ClientSecurity | None = None,
    ) -> None:
        self.bootstrap, self.group_id, self.url = bootstrap, group_id, url
        self.security = security
        self.listener, self.snapshot_work, self.config_offset = listener, snapshot, config_offset
        self.plan_target = plan_target
        self.offers = offered_protocols(connect_protocol)
        self.client_id = client_id
        self.session_timeout_ms = session_timeout_ms
        self.rebalance_timeout_ms = rebalance_timeout_ms
        self.heartbeat_interval_ms = heartbeat_interval_ms
        self.request_timeout_ms = request_timeout_ms
        self.member_id = ""
        self.protocol = self.offers[0][0]  # until the coordinator chooses one
        self.snapshot: ConnectAssignment | None = None  # the allocation sent in metadata
        self.machine = MemberMachine(SessionWatch(session_timeout_ms), acknowledges=False, epoch=-1)
        self.work = MemberDriver(
            self.machine, listener, lambda: None, self._rejoin_as, lambda: self.member_id, serial=True
        )
        self._rejoin = True
        self._joining = False
        self._stopping = False
        self._wake = asyncio.Event()
        self._left = asyncio.Event()
        self._control: ProtocolClient | None = None  # JoinGroup/SyncGroup (they park)
        self._beats: ProtocolClient | None = None  # heartbeats

    @property
    def generation(self) -> int:
        """The generation: what statuses are written at (the `epoch`), as Kafka Connect does."""
        return self.machine.epoch

    # -- what the herder calls ------------------------------------------------------------

    def heartbeat_now(self) -> None:
        """The leader saw the work change (a connector or task configs): rebalance."""
        self.request_rejoin()

    def request_rejoin(self) -> None:
        self._rejoin = True
        self._wake.set()

    async def run(self) -> None:
        """Join, and rejoin whenever asked to, until `leave()`."""
        watchdog = self.work.watchdog(lambda: self._stopping)  # also runs the scheduled rebalance
        helpers = [asyncio.create_task(self._heartbeat_loop()), asyncio.create_task(watchdog)]
        try:
            while not self._stopping:
                if self._rejoin:
                    if not await self._join_and_sync():
                        await self._sleep(RETRY_BACKOFF_S)
                    continue
                await self._sleep(None)
        finally:
            for helper in helpers:
                helper.cancel()
            await asyncio.gather(*helpers, return_exceptions=True)

    async def leave(self) -> None:
        """Stop all work and leave the group for good (its work is reassigned at once)."""
        self._stopping = True
        self._wake.set()
        self._left.set()
        async with self.work.one_change():
            await self.work.carry_out(self.machine.leave())
        if self.member_id:
            with contextlib.suppress(ConnectionError, OSError, asyncio.TimeoutError):
                client = await asyncio.wait_for(
                    ProtocolClient.connect(self.bootstrap, self.client_id, self.security),
                    self.request_timeout_ms / 1000,
                )
                try:
                    members = [{"member_id": self.member_id, "group_instance_id": None}]
                    leave = client.request(
                        ApiKey.LEAVE_GROUP, LEAVE_VERSION, {"group_id": self.group_id, "members": members}
                    )
                    await asyncio.wait_for(leave, self.request_timeout_ms / 1000)
                finally:
                    await client.close()
        for client in (self._control, self._beats):
            if client is not None:
                await client.close()

    # -- joining --------------------------------------------------------------------------

    def _metadata(self) -> list[dict[str, Any]]:
        offset = self.config_offset()
        protocols = []
        for name, version in self.offers:
            allocation = None
            if version > 0 and self.snapshot is not None:
                allocation = ConnectAssignment(
                    version, self.snapshot.error, self.snapshot.leader, self.snapshot.leader_url,
                    self.snapshot.config_offset, self.runs, self.snapshot.revoked, self.snapshot.delay_ms,
                )  # fmt: skip
            state = WorkerState(version, self.url, offset, allocation)
            protocols.append({"name": name, "metadata": encode_metadata(state)})
        return protocols

    async def _join_and_sync(self) -> bool:
        """One rebalance round; False if it failed in a way worth backing off for."""
        self._joining = True
        try:
            previous = self.protocol
            eager = protocol_version(previous) == 0
            async with self.work.one_change():  # eager: everything stops before joining
                await self.work.carry_out(self.machine.joining(time.monotonic(), eager))
            self._rejoin = False  # a request from here on asks for another round
            sent = time.monotonic()
            join = await self._call(
                "control", ApiKey.JOIN_GROUP, JOIN_VERSION,
                {"group_id": self.group_id, "session_timeout_ms": self.session_timeout_ms,
                 "rebalance_timeout_ms": self.rebalance_timeout_ms, "member_id": self.member_id,
                 "group_instance_id": None, "protocol_type": PROTOCOL_TYPE, "protocols": self._metadata()},
                self.rebalance_timeout_ms + 5000,
            )  # fmt: skip
            code = join["error_code"]
            if code == ErrorCode.MEMBER_ID_REQUIRED:
                self.member_id, self._rejoin = join["member_id"], True
                return True
            if code != ErrorCode.NONE:
                return await self._failed_round("JoinGroup", code)
            self._answered(sent)
            self.member_id, self.machine.epoch = join["member_id"], join["generation_id"]
            self.protocol = join["protocol_name"]
            log.info("%s joined generation %s (%s), leader %s", self.member_id, self.generation,
                     self.protocol, join["leader"])  # fmt: skip
            assignments: list[dict[str, Any]] = []
            if join["leader"] == self.member_id:
                try:
                    computed = await self._lead(join["members"], protocol_version(previous) > 0)
                except Exception as exc:  # noqa: BLE001 - still sync, so no one waits out the timeout
                    log.warning("%s: computing the assignment failed: %s", self.member_id, exc)
                    computed = {}  # every member reads an empty assignment and rejoins
                assignments = [{"member_id": m, "assignment": a} for m, a in computed.items()]
            sent = time.monotonic()
            sync = await self._call(
                "control", ApiKey.SYNC_GROUP, SYNC_VERSION,
                {"group_id": self.group_id, "generation_id": self.generation, "member_id": self.member_id,
                 "group_instance_id": None, "assignments": assignments},
                self.rebalance_timeout_ms + 5000,
            )  # fmt: skip
            if sync["error_code"] != ErrorCode.NONE:
                return await self._failed_round("SyncGroup", sync["error_code"])
            self._answered(sent)
            return await self._apply(decode_assignment(sync["assignment"]))
        except (TimeoutError, ConnectionError, OSError) as exc:
            log.warning("%s: rebalance against %s failed: %s", self.member_id, self.bootstrap, exc)
            await self._close("control")
            self._rejoin = True
            return False
        except ConnectProtocolError as exc:
            log.warning("%s: the assignment does not decode: %s", self.member_id, exc)
            self._rejoin = True
            return False
        finally:
            self._joining = False

    async def _failed_round(self, api: str, code: int) -> bool:
        self._rejoin = True
        if code in SESSION_LOST:
            await self._session_error(api, code)
            return True
        if code == ErrorCode.REBALANCE_IN_PROGRESS:
            return True
        log.warning("%s: %s failed with error %s", self.member_id, api, ErrorCode(code).name)
        return False

    async def _apply(self, assignment: ConnectAssignment) -> bool:
        """Stop what is revoked, start what is new, and schedule the next round if asked."""
        async with self.work.one_change():
            if self._stopping:
                return True
            if assignment.error != NO_ERROR:
                log.info("%s: assignment error %s (config mismatch); rejoining", self.member_id,
                         assignment.error)  # fmt: skip
                self._rejoin = True
                return False
            self.snapshot = assignment
            info = LeaderInfo(assignment.leader, assignment.leader_url, assignment.config_offset,
                              assignment.delay_ms, self.protocol)  # fmt: skip
            given = Assignment(self.generation, assignment.assigned, metadata=info.encode())
            actions = self.machine.synced(
                self.generation, assignment.assigned, assignment.revoked, assignment.delay_ms,
                protocol_version(self.protocol) == 0, given, time.monotonic(),
            )  # fmt: skip
            await self.work.carry_out(actions)
            return True

    async def _lead(self, members: list[dict[str, Any]], was_incremental: bool) -> dict[str, bytes]:
        """The elected leader's job: every member's assignment, against the config's end.

        A round in which the group turned eager (a worker offering only `default` joined an
        incremental cooperative group) was joined by members still running their work, which
        an eager assignment would hand to others at once. So that round assigns nothing: every
        member stops everything (an eager assignment revokes all) and the leader asks for the
        next round, which every member joins having stopped.
        """
        version = protocol_version(self.protocol)
        states: dict[str, WorkerState] = {}
        for member in members:
            try:
                states[member["member_id"]] = decode_metadata(member["metadata"])
            except ConnectProtocolError as exc:
                log.warning("member %s sent metadata that does not decode (%s); it owns nothing",
                            member["member_id"], exc)  # fmt: skip
                states[member["member_id"]] = WorkerState(version, "", -1)
        work, offset = await self.snapshot_work()
        highest = max(s.config_offset for s in states.values())
        if offset < highest:
            log.warning("config offset %s is behind a member's %s: CONFIG_MISMATCH", offset, highest)
            mismatch = ConnectAssignment(version, CONFIG_MISMATCH, self.member_id, self.url, highest)
            return {member: encode_assignment(mismatch) for member in states}
        if version == 0:
            if was_incremental:
                log.info("%s: the group turned eager; everyone stops before work is assigned", self.member_id)
                self._rejoin, work = True, frozenset()
            plan = Plan(
                {m: (items, frozenset()) for m, items in eager_round_robin(sorted(states), work).items()}
            )
        else:
            owned = {m: s.owned for m, s in states.items()}
            urls = {m: s.url for m, s in states.items()}
            target, delay_ms = await self.plan_target(urls, owned, work, self.generation)
            plan = incremental_deltas(owned, target, delay_ms)
        return {
            member: encode_assignment(
                ConnectAssignment(
                    version, NO_ERROR, self.member_id, self.url, offset, assigned, revoked, plan.delay_ms
                )
            )  # fmt: skip
            for member, (assigned, revoked) in plan.members.items()
        }

    # -- losing the session ----------------------------------------------------------------

    async def _session_error(self, api: str, code: int) -> None:
        """`api` was answered with one of SESSION_LOST: rejoin, keeping the work only where the
        member is still in the group and the leader will see what it runs (incremental)."""
        keep = code == ErrorCode.ILLEGAL_GENERATION and protocol_version(self.protocol) > 0
        if keep:
            log.info("%s: %s answered ILLEGAL_GENERATION at generation %s; rejoining with the work it "
                     "runs", self.member_id, api, self.generation)  # fmt: skip
        else:
            log.info("%s: %s answered %s; stopping all work and joining afresh", self.member_id, api, code)
        forget = code != ErrorCode.ILLEGAL_GENERATION
        async with self.work.one_change():
            lost = self.machine.generation_lost(time.monotonic(), keep_work=keep, forget_member=forget)
            await self.work.carry_out(lost)

    def _rejoin_as(self, how: Rejoin) -> None:
        """The machine asks for a round: a follow-up after a revocation, a scheduled rebalance,
        a lost session (forgetting the member id if the coordinator did), or a watchdog stop
        (what was reported running no longer runs)."""
        if not how.kept_work:
            self.snapshot = None
        if how.as_new:
            self.member_id = ""
        self.request_rejoin()

    # -- heartbeats and the watchdog ------------------------------------------------------

    def _answered(self, sent: float) -> None:
        self.machine.session.answered(sent)

    async def _heartbeat_loop(self) -> None:
        while not self._stopping:
            if self.member_id and self.generation >= 0:
                await self._beat()
            with contextlib.suppress(asyncio.TimeoutError):
                await asyncio.wait_for(self._left.wait(), self.heartbeat_interval_ms / 1000)

    async def _beat(self) -> None:
        member, generation, sent = self.member_id, self.generation, time.monotonic()
        try:
            answer = await self._call(
                "beats", ApiKey.HEARTBEAT, HEARTBEAT_VERSION,
                {"group_id": self.group_id, "generation_id": generation, "member_id": member,
                 "group_instance_id": None},
                min(self.request_timeout_ms, self.session_timeout_ms),
            )  # fmt: skip
        except (TimeoutError, ConnectionError, OSError) as exc:
            log.warning("%s: heartbeat failed: %s", member, exc)
            await self._close("beats")
            return
        code = answer["error_code"]
        if code in SESSION_KEEPING_ANSWERS:
            self._answered(sent)
        if code == ErrorCode.REBALANCE_IN_PROGRESS and not self._joining:
            log.info("%s: the group is rebalancing; rejoining", member)
            self.request_rejoin()
        elif (
            code in SESSION_LOST
            and not self._joining
            and (member, generation)
            == (
                self.member_id,
                self.generation,
            )
        ):
            await self._session_error("Heartbeat", code)

    # -- connections ----------------------------------------------------------------------

    async def _call(
        self, which: str, api_key: int, version: int, fields: dict[str, Any], timeout_ms: int
    ) -> dict[str, Any]:
        attr = f"_{which}"
        client: ProtocolClient | None = getattr(self, attr)
        if client is None or not client.connected:
            connecting = ProtocolClient.connect(self.bootstrap, self.client_id, self.security)
            client = await asyncio.wait_for(connecting, self.request_timeout_ms / 1000)
            setattr(self, attr, client)
        return await asyncio.wait_for(client.request(api_key, version, fields), timeout_ms / 1000)

    async def _close(self, which: str) -> None:
        attr = f"_{which}"
        client: ProtocolClient | None = getattr(self, attr)
        setattr(self, attr, None)
        if client is not None:
            await client.close()

    async def _sleep(self, seconds: float | None) -> None:
        """Until woken (a rejoin was asked for, or leave) or `seconds` have passed."""
        with contextlib.suppress(asyncio.TimeoutError):
            await asyncio.wait_for(self._wake.wait(), seconds)
        self._wake.clear()


@dataclass(frozen=True)
class Plan:
    """Each member's (newly assigned, revoked) work, and the delay everyone rejoins after."""

    members: dict[str, tuple[frozenset[Work], frozenset[Work]]]
    delay_ms: int = 0


def incremental_deltas(
    owned: Mapping[str, frozenset[Work]], target: Mapping[str, frozenset[Work]], delay_ms: int
) -> Plan:
    """Kafka Connect's incremental cooperative assignment from a target: each member stops
    what it owns beyond its target at once, and starts only what nobody owns any more (work
    another member still runs is handed over in the follow-up round, after it stopped)."""
    held = {item for items in owned.values() for item in items}
    return Plan({m: (target[m] - owned[m] - held, owned[m] - target[m]) for m in owned}, delay_ms)

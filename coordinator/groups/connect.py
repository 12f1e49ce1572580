"""Connect groups: Kafka Connect workers rebalancing connectors and tasks, KIP-848 style.

The `connect` group type of the draft "Integrating Kafka Connect With New Consumer
Rebalance Protocol", with the decisions docs/protocol.md records. Like consumer.py it has no
IO and no clock; items are `Work` — (connector, task) pairs — and the shared reconciliation
engine (reconciliation.py) moves each worker from its current assignment to its target.

Theory of operation
-------------------
- The *group epoch* is bumped when a worker joins, leaves or is fenced, or changes its
  client assignors — their names, version ranges, reason or metadata. A worker's assignor
  metadata carries its view of the connector configuration, so new connectors reach the
  group this way, and a changed *reason* is how a worker asks for a scheduled rebalance
  (`scheduled.rebalance.max.delay.ms`).
- While the group epoch is ahead of the *assignment epoch*, one worker is chosen to compute
  the next target (client_assignment.py: common assignor, version coverage, stickiness). Its
  heartbeat answers carry ShouldComputeAssignment; it reads the group with
  ConnectGroupPrepareAssignment and installs the result with ConnectGroupInstallAssignment,
  which is validated against the group as it was prepared. If it does not install within
  its rebalance timeout another worker is chosen. An assignor error keeps the current target
  (the assignment epoch still advances, so the group does not spin).
- Each heartbeat reconciles the sending worker alone: revoke first (the worker stays at its
  epoch until it reports it stopped the work), then assign what others have released.
- Two client assignors (docs/protocol.md): `sessioned` (incremental cooperative) and
  `eager` (Kafka Connect's eager protocol). The group uses the first, in priority order, that
  every worker supports. A target computed by `eager` is reconciled eagerly: every worker
  gives up everything it holds, even what its new target keeps, and nothing is assigned while
  a worker holds work from an older epoch or a newer target is due, so each rebalance stops
  and restarts all work once, as Kafka Connect's eager rebalances do.
- The draft's rules on fencing: a heartbeat at a wrong epoch is FENCED_MEMBER_EPOCH and the
  worker is removed from the group (it must stop everything and rejoin with epoch 0), except
  the lost-response case (previous epoch, owned work a subset of the current assignment).
Timers: a session per worker (expiry removes it), a rebalance timeout while a worker holds
work it was told to stop (expiry fences it), and one for the chosen computing worker.

Online migration (connect_migration.py): a connect group may also hold workers speaking the
classic protocol (`Worker.classic` is set). They are reconciled like any worker, but never
compute: assignor and computing-worker selection consider the other workers only.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from enum import StrEnum
from typing import TYPE_CHECKING, Any

from connect_rebalance.connect_protocol import PROTOCOL_VERSIONS
from connect_rebalance.errors import ErrorCode, KafkaApiError
from connect_rebalance.work import Work, work_field, work_of

from .client_assignment import (
    ComputeRound,
    assignor_specs,
    assignors_problem,
    choose_computer,
    common_assignor,
    computing_member,
    install_problem,
    installed_epoch,
)
from .connect_records import (
    ClassicWorkerMetadata,
    ConnectAssignorSpec,
    ConnectCoveredRecord,
    ConnectCurrentAssignmentRecord,
    ConnectGroupEpochRecord,
    ConnectRecord,
    ConnectTarget,
    ConnectTargetMember,
    ConnectTargetRecord,
    ConnectWorkerRecord,
    ConnectWorkerSnapshot,
)
from .reconciliation import MemberAssignment, MemberState, Ownership, fenced_reason, reconcile
from .requests import GroupRequest, Outcome

if TYPE_CHECKING:
    from .coordinator import GroupCoordinator

LEAVE_EPOCH = -1
EAGER_ASSIGNOR = "eager"  # the client assignor whose targets are reconciled eagerly
STATE_NAMES = {MemberState.STABLE: "Stable", MemberState.UNREVOKED: "Unrevoked",
               MemberState.UNRELEASED: "Unreleased"}  # fmt: skip


class ConnectGroupState(StrEnum):
    EMPTY = "Empty"
    ASSIGNING = "Assigning"
    RECONCILING = "Reconciling"
    STABLE = "Stable"
    DEAD = "Dead"


@dataclass
class Worker:
    member_id: str
    instance_id: str | None = None
    url: str = ""
    client_id: str = ""
    client_host: str = ""
    rebalance_timeout_ms: int = 60000
    assignors: tuple[ConnectAssignorSpec, ...] = ()
    assignment: MemberAssignment[Work] = field(default_factory=MemberAssignment.joining)
    classic: ClassicWorkerMetadata | None = None  # set while it speaks the classic protocol

    def snapshot(self) -> ConnectWorkerSnapshot:
        return ConnectWorkerSnapshot(
            self.instance_id, self.url, self.client_id, self.client_host, self.rebalance_timeout_ms,
            self.assignors, self.classic,
        )  # fmt: skip


@dataclass
class ConnectGroup:
    group_id: str
    group_epoch: int = 0
    assignment_epoch: int = 0
    members: dict[str, Worker] = field(default_factory=dict)
    target: dict[str, ConnectTargetMember] = field(default_factory=dict)
    target_error: int = 0
    covered: frozenset[Work] = frozenset()
    assignor_name: str = ""
    ownership: Ownership[Work] = field(default_factory=Ownership)
    compute: ComputeRound = field(default_factory=ComputeRound)

    type_name = "connect"

    @property
    def protocol_type(self) -> str:
        return "connect"

    @property
    def state(self) -> ConnectGroupState:
        if not self.members:
            return ConnectGroupState.EMPTY
        if self.group_epoch > self.assignment_epoch:
            return ConnectGroupState.ASSIGNING
        if any(
            m.assignment.state != MemberState.STABLE or m.assignment.member_epoch != self.assignment_epoch
            for m in self.members.values()
        ):
            return ConnectGroupState.RECONCILING
        return ConnectGroupState.STABLE

    def is_empty(self) -> bool:
        return not self.members

    def target_of(self, member_id: str) -> frozenset[Work]:
        entry = self.target.get(member_id)
        return entry.items if entry is not None else frozenset()

    @property
    def eager(self) -> bool:
        """The current target was computed by the eager assignor."""
        return self.assignor_name == EAGER_ASSIGNOR

    def held_by_others(self, member_id: str) -> Callable[[Work], bool]:
        """Work the member must wait for: held by another worker, or, in an eager group, any
        work while another worker still holds work from an older epoch (everyone stops
        everything before anything is assigned) or while a newer target is due (what this
        one assigns would be stopped again at once)."""
        held = self.ownership.held_by_others(member_id)
        waiting = self.eager and (
            self.group_epoch > self.assignment_epoch
            or any(
                m.assignment.member_epoch < self.assignment_epoch and m.assignment.held
                for m in self.members.values()
                if m.member_id != member_id
            )
        )
        return (lambda _: True) if waiting else held

    def computing_pool(self) -> dict[str, tuple[ConnectAssignorSpec, ...]]:
        """The workers that take part in assignor and computing-worker selection: classic
        workers (online migration) never compute."""
        return {m.member_id: m.assignors for m in self.members.values() if m.classic is None}

    def target_record(self) -> ConnectTargetRecord:
        members = tuple(sorted(self.target.items()))
        target = ConnectTarget(
            self.assignment_epoch, self.target_error, self.assignor_name, self.compute.previous or "", members
        )
        return ConnectTargetRecord(self.group_id, target)


def session_key(group_id: str, member_id: str) -> tuple[str, str, str]:
    return ("connect-session", group_id, member_id)


def rebalance_key(group_id: str, member_id: str) -> tuple[str, str, str]:
    return ("connect-rebalance", group_id, member_id)


def compute_key(group_id: str, member_id: str) -> tuple[str, str, str]:
    return ("connect-compute", group_id, member_id)


def classic_join_key(group_id: str, member_id: str) -> tuple[str, str, str]:
    """A classic worker told to rejoin must do so within its rebalance timeout."""
    return ("connect-classic-join", group_id, member_id)


def classic_sync_key(group_id: str, member_id: str) -> tuple[str, str, str]:
    """A classic worker that joined must sync within its rebalance timeout."""
    return ("connect-classic-sync", group_id, member_id)


def _classic_assignor(member: Worker) -> ConnectAssignorSpec | None:
    """How a classic worker appears in ConnectGroupPrepareAssignment: its embedded protocol
    version and its JoinGroup WorkerState bytes (which are not JSON, unlike our workers'
    assignor metadata, so the computing worker can tell it apart)."""
    if member.classic is None:
        return None
    version, metadata = next(
        ((PROTOCOL_VERSIONS[n], m) for n, m in member.classic.protocols if PROTOCOL_VERSIONS.get(n, 0) >= 1),
        (1, b""),
    )
    return ConnectAssignorSpec("classic", version, version, 0, version, metadata)


def _listed(assignors: Sequence[ConnectAssignorSpec]) -> str:
    """`[sessioned v1-1, eager v1-1]`: assignors in priority order with their version ranges."""
    return "[" + ", ".join(f"{a.name} v{a.minimum_version}-{a.maximum_version}" for a in assignors) + "]"


def _invalid(message: str) -> KafkaApiError:
    return KafkaApiError(ErrorCode.INVALID_REQUEST, message)


class ConnectGroups:
    def __init__(self, core: GroupCoordinator) -> None:
        settings = core.settings
        self.core = core
        self.session_timeout_ms = settings.connect_session_timeout_ms
        self.heartbeat_interval_ms = settings.connect_heartbeat_interval_ms
        self.pending_heartbeat_interval_ms = min(
            settings.consumer_pending_heartbeat_interval_ms, settings.connect_heartbeat_interval_ms
        )
        self.max_size = settings.connect_max_size

    # -- validation -----------------------------------------------------------------------

    def _validate_heartbeat(self, body: Any) -> None:
        epoch = body.member_epoch
        self._validate_ids(body)
        if epoch < LEAVE_EPOCH:
            raise _invalid("MemberEpoch must be >= -1.")
        if body.instance_id is not None and not body.instance_id.strip():
            raise _invalid("InstanceId can't be empty.")
        if body.url is not None and not body.url.strip():
            raise _invalid("Url can't be empty.")
        if body.server_assignor is not None and body.client_assignors is not None:
            raise _invalid("ServerAssignor and ClientAssignors cannot be used together.")
        problem = assignors_problem(body.client_assignors or [])
        if problem is not None:
            raise _invalid(problem)
        if body.server_assignor is not None:
            raise KafkaApiError(
                ErrorCode.UNSUPPORTED_ASSIGNOR,
                f"ServerAssignor {body.server_assignor} is not supported: connect groups assign client-side.",
            )

    def _validate_join(self, body: Any) -> None:
        """What a worker's first heartbeat must carry (epoch 0, not yet a member).

        A member keeps sending epoch 0 until the first target is installed (the draft's
        case study), so these checks apply to new members only.
        """
        if body.rebalance_timeout_ms <= 0:
            raise _invalid("RebalanceTimeoutMs must be larger than zero in the first heartbeat.")
        if body.url is None:
            raise _invalid("Url must be set in the first heartbeat.")
        if not body.client_assignors:
            raise _invalid("ClientAssignors must be set in the first heartbeat.")
        if work_of(body.owned_connectors_and_tasks):
            raise _invalid("OwnedConnectorsAndTasks must be empty when joining.")

    def _validate_ids(self, body: Any) -> None:
        if not (body.group_id or "").strip():
            raise _invalid("GroupId can't be empty.")
        if not (body.member_id or "").strip():
            raise _invalid("MemberId can't be empty.")

    # -- ConnectGroupHeartbeat ------------------------------------------------------------

    def heartbeat(self, request: GroupRequest, now_ms: int, out: Outcome) -> None:
        body = request.body
        try:
            self._validate_heartbeat(body)
            if body.member_epoch == LEAVE_EPOCH:
                fields = self._leave(body, now_ms, out)
            else:
                fields = self._heartbeat(request, now_ms, out)
        except KafkaApiError as exc:
            fields = {
                "error_code": exc.code,
                "error_message": exc.message,
                "member_id": None,
                "member_epoch": -1,
                "heartbeat_interval_ms": 0,
                "session_timeout_ms": self.session_timeout_ms,
                "should_compute_assignment": False,
                "assignment": None,
            }
        out.reply(request.request_id, {"throttle_time_ms": 0, **fields})

    def _group(self, group_id: str, create: bool, now_ms: int, out: Outcome) -> ConnectGroup:
        group = self.core.groups.get(group_id)
        if isinstance(group, ConnectGroup):
            return group
        if create and (group is None or group.is_empty()):
            created = ConnectGroup(group_id)
            self.core.groups[group_id] = created  # type: ignore[assignment]
            return created
        if create and group is not None:
            # A non-empty classic group: the online upgrade converts it (or refuses, saying why).
            return self.core.connect_migration.upgrade(group, now_ms, out)
        if group is None:
            raise KafkaApiError(ErrorCode.UNKNOWN_MEMBER_ID, f"Connect group {group_id} has no such member.")
        raise KafkaApiError(ErrorCode.GROUP_ID_NOT_FOUND, f"Group {group_id} is not a connect group.")

    def _heartbeat(self, request: GroupRequest, now_ms: int, out: Outcome) -> dict[str, Any]:
        body = request.body
        group = self._group(body.group_id, body.member_epoch == 0, now_ms, out)
        owned = None if body.owned_connectors_and_tasks is None else work_of(body.owned_connectors_and_tasks)
        member, joined = self._member_for(group, body, owned, now_ms, out)
        specs = None if body.client_assignors is None else assignor_specs(body.client_assignors)
        assignors_changed = specs is not None and specs != member.assignors
        if specs is not None and assignors_changed and not joined:
            self._check_common_assignor(group, member.member_id, specs)
        before_snapshot = None if joined else member.snapshot()
        member.client_id, member.client_host = request.client_id, request.client_host
        if body.instance_id is not None:
            member.instance_id = body.instance_id
        if body.url is not None:
            member.url = body.url
        if body.rebalance_timeout_ms != -1:
            member.rebalance_timeout_ms = body.rebalance_timeout_ms
        if specs is not None:
            member.assignors = specs
        before = self.advance(group, member, before_snapshot, joined or assignors_changed, owned, now_ms, out)
        full = (
            body.url is not None
            and body.rebalance_timeout_ms != -1
            and body.client_assignors is not None
            and body.owned_connectors_and_tasks is not None
        )
        send = (
            body.member_epoch == 0
            or full
            or member.assignment.assigned != before.assigned
            or member.assignment.member_epoch != before.member_epoch
        )
        compute = self._should_compute(group, member.member_id)
        # Asked back sooner: a worker with work to stop or pick up, the computing worker, and
        # every worker while a new target is being computed (it is likely to move their work).
        settled = (
            member.assignment.state == MemberState.STABLE
            and member.assignment.member_epoch == group.assignment_epoch
            and group.group_epoch == group.assignment_epoch
        )
        return {
            "error_code": ErrorCode.NONE,
            "error_message": None,
            "member_id": member.member_id,
            "member_epoch": member.assignment.member_epoch,
            "heartbeat_interval_ms": (
                self.heartbeat_interval_ms if settled else self.pending_heartbeat_interval_ms
            ),
            "session_timeout_ms": self.session_timeout_ms,
            "should_compute_assignment": compute,
            "assignment": self._assignment_field(group, member) if send else None,
        }

    def _member_for(
        self, group: ConnectGroup, body: Any, owned: frozenset[Work] | None, now_ms: int, out: Outcome
    ) -> tuple[Worker, bool]:
        member = group.members.get(body.member_id)
        if body.member_epoch != 0:
            if member is None:
                raise KafkaApiError(
                    ErrorCode.UNKNOWN_MEMBER_ID, f"Member {body.member_id} is not a member of the group."
                )
            reason = fenced_reason(member.assignment, body.member_epoch, owned)
            if reason is not None:
                # The draft: a fenced worker is removed; it stops everything and rejoins with epoch 0.
                self.remove(group, member.member_id, now_ms, out)
                raise KafkaApiError(ErrorCode.FENCED_MEMBER_EPOCH, reason)
            return member, False
        if member is not None:
            return member, False  # a rejoin with the same id: its assignment is sent again
        self._validate_join(body)
        self._check_common_assignor(group, body.member_id, assignor_specs(body.client_assignors))
        if len(group.members) >= self.max_size:
            raise KafkaApiError(
                ErrorCode.GROUP_MAX_SIZE_REACHED,
                f"Connect group {group.group_id} has {self.max_size} workers.",
            )
        if body.instance_id is not None:
            holder = next((m for m in group.members.values() if m.instance_id == body.instance_id), None)
            if holder is not None:
                # A restarted static worker replaces its predecessor, which is fenced.
                self.remove(group, holder.member_id, now_ms, out, may_downgrade=False)
        member = Worker(body.member_id)
        group.members[member.member_id] = member
        return member, True

    def _check_common_assignor(
        self, group: ConnectGroup, member_id: str, specs: Sequence[ConnectAssignorSpec]
    ) -> None:
        """UNSUPPORTED_ASSIGNOR if a worker offering `specs` would leave the group's workers
        without an assignor they all support with overlapping versions (the draft's rule)."""
        others = [a for m, a in group.computing_pool().items() if m != member_id]
        if others and common_assignor([*others, specs]) is None:
            offered = sorted({_listed(a) for a in others})
            raise KafkaApiError(
                ErrorCode.UNSUPPORTED_ASSIGNOR,
                f"ClientAssignors {_listed(specs)} share no assignor with overlapping versions with "
                f"every worker in group {group.group_id}, whose workers offer {' and '.join(offered)}.",
            )

    def advance(
        self,
        group: ConnectGroup,
        member: Worker,
        before_snapshot: ConnectWorkerSnapshot | None,
        bump: bool,
        owned: frozenset[Work] | None,
        now_ms: int,
        out: Outcome,
    ) -> MemberAssignment[Work]:
        """After a worker's fields were updated from its request (either protocol): record it,
        bump the group epoch if asked, choose a computing worker if a target is due, reconcile
        this worker and re-arm its timers. Returns its previous assignment."""
        if member.snapshot() != before_snapshot:
            out.records.append(ConnectWorkerRecord(group.group_id, member.member_id, member.snapshot()))
        if bump:
            self._bump(group, out)
        if group.group_epoch > group.assignment_epoch:
            self._choose_computer(group, now_ms)
        before = member.assignment
        self._reconcile(group, member, owned, out)
        self.refresh_session(group, member, now_ms)
        if member.assignment.state == MemberState.UNREVOKED:
            if before.state != MemberState.UNREVOKED:
                self.core.timers.schedule(
                    rebalance_key(group.group_id, member.member_id), now_ms + member.rebalance_timeout_ms
                )
        else:
            self.core.timers.cancel(rebalance_key(group.group_id, member.member_id))
        return before

    def refresh_session(self, group: ConnectGroup, member: Worker, now_ms: int) -> None:
        """A classic worker's session is its JoinGroup session timeout; others get the group's."""
        timeout = member.classic.session_timeout_ms if member.classic is not None else self.session_timeout_ms
        self.core.timers.schedule(session_key(group.group_id, member.member_id), now_ms + timeout)

    def _reconcile(
        self, group: ConnectGroup, member: Worker, owned: frozenset[Work] | None, out: Outcome
    ) -> None:
        before = member.assignment
        member.assignment = reconcile(
            before,
            group.assignment_epoch,
            group.target_of(member.member_id),
            owned,
            group.held_by_others(member.member_id),
            revoke_all=group.eager,
        )
        group.ownership.update(member.member_id, before, member.assignment)
        if member.assignment != before:
            out.records.append(
                ConnectCurrentAssignmentRecord(group.group_id, member.member_id, member.assignment)
            )

    def _bump(self, group: ConnectGroup, out: Outcome) -> None:
        group.group_epoch += 1
        out.records.append(ConnectGroupEpochRecord(group.group_id, group.group_epoch))

    def _assignment_field(self, group: ConnectGroup, member: Worker) -> dict[str, Any]:
        target = group.target.get(member.member_id)
        return {
            "error": group.target_error or (target.error if target else 0),
            "connectors_and_tasks": work_field(member.assignment.assigned),
            "metadata_version": target.metadata_version if target else 0,
            "metadata": target.metadata if target else b"",
        }

    # -- choosing the computing worker ----------------------------------------------------

    def _selection(self, group: ConnectGroup) -> tuple[str, int, int] | None:
        return common_assignor(list(group.computing_pool().values()))

    def _choose_computer(self, group: ConnectGroup, now_ms: int) -> None:
        chosen = choose_computer(group.compute, group.computing_pool())
        if chosen is not None:
            self.core.timers.schedule(
                compute_key(group.group_id, chosen[0]), now_ms + group.members[chosen[0]].rebalance_timeout_ms
            )

    def _should_compute(self, group: ConnectGroup, member_id: str) -> bool:
        return group.compute.should_compute(member_id, group.group_epoch, group.assignment_epoch)

    def _computing_member(self, body: Any) -> tuple[ConnectGroup, Worker]:
        """Checks shared by Prepare and Install: the group, the member, its epoch, its turn."""
        return computing_member(
            self.core.groups, ConnectGroup, body, "Connect group", ErrorCode.FENCED_MEMBER_EPOCH
        )

    # -- ConnectGroupPrepareAssignment ----------------------------------------------------

    def prepare(self, request: GroupRequest, now_ms: int, out: Outcome) -> None:
        try:
            group, _ = self._computing_member(request.body)
            selection = self._selection(group)
            assert selection is not None, "a chosen computing member implies a common assignor"
            name, lowest, highest = selection
            group.compute.prepared(group.group_epoch, frozenset(group.members), name)
            members = []
            for m in group.members.values():
                spec = _classic_assignor(m) or next(a for a in m.assignors if a.name == name)
                members.append({
                    "member_id": m.member_id,
                    "member_epoch": m.assignment.member_epoch,
                    "instance_id": m.instance_id,
                    "url": m.url,
                    "assignor": {"metadata_version": spec.metadata_version, "reason": spec.reason,
                                 "metadata": spec.metadata},
                    "target_connectors_and_tasks": work_field(group.target_of(m.member_id)),
                    "owned_connectors_and_tasks": work_field(m.assignment.held),
                })  # fmt: skip
            fields: dict[str, Any] = {
                "error_code": ErrorCode.NONE,
                "error_message": None,
                "group_epoch": group.group_epoch,
                "assignment_epoch": group.assignment_epoch,
                "assignor_name": name,
                "assignor_minimum_version": lowest,
                "assignor_maximum_version": highest,
                "target_connectors_and_tasks": work_field(group.covered),
                "members": members,
            }
        except KafkaApiError as exc:
            fields = {
                "error_code": exc.code,
                "error_message": exc.message,
                "group_epoch": -1,
                "assignment_epoch": -1,
                "assignor_name": "",
                "assignor_minimum_version": -1,
                "assignor_maximum_version": -1,
                "target_connectors_and_tasks": work_field(()),
                "members": [],
            }
        out.reply(request.request_id, {"throttle_time_ms": 0, **fields})

    # -- ConnectGroupInstallAssignment ----------------------------------------------------

    def install(self, request: GroupRequest, now_ms: int, out: Outcome) -> None:
        body = request.body
        try:
            group, member = self._computing_member(body)
            self._install(group, member, body, now_ms, out)
            fields: dict[str, Any] = {"error_code": ErrorCode.NONE, "error_message": None}
        except KafkaApiError as exc:
            fields = {"error_code": exc.code, "error_message": exc.message}
        out.reply(request.request_id, {"throttle_time_ms": 0, **fields})

    def _install(self, group: ConnectGroup, member: Worker, body: Any, now_ms: int, out: Outcome) -> None:
        prepared = installed_epoch(group.compute, body, "ConnectGroupPrepareAssignment")
        if body.error == 0:
            targets = {m.member_id: work_of(m.connectors_and_tasks) for m in body.members}
            covered = work_of(body.connectors_and_tasks)
            problem = install_problem(covered, targets, group.compute.prepared_members)  # type: ignore[arg-type]
            if problem is not None:
                raise KafkaApiError(ErrorCode.INVALID_ASSIGNMENT, f"Invalid assignment: {problem}.")
            group.target = {
                m.member_id: ConnectTargetMember(
                    targets[m.member_id], m.error, m.metadata_version, bytes(m.metadata)
                )
                for m in body.members
                if m.member_id in group.members
            }
            group.covered = covered
            out.records.append(ConnectCoveredRecord(group.group_id, prepared, covered))
            group.assignor_name = group.compute.prepared_assignor  # how the target is reconciled
        # An assignor error keeps the current target; its epoch advances with the error set.
        group.target_error = body.error
        group.assignment_epoch = prepared
        self.core.timers.cancel(compute_key(group.group_id, member.member_id))
        group.compute.installed(member.member_id)
        out.records.append(group.target_record())
        if group.group_epoch > group.assignment_epoch:
            self._choose_computer(group, now_ms)

    # -- leaving, fencing and timers ------------------------------------------------------

    def _leave(self, body: Any, now_ms: int, out: Outcome) -> dict[str, Any]:
        group = self._group(body.group_id, False, now_ms, out)
        if body.member_id not in group.members:
            raise KafkaApiError(ErrorCode.UNKNOWN_MEMBER_ID, f"Member {body.member_id} is not in the group.")
        self.remove(group, body.member_id, now_ms, out)
        return {
            "error_code": ErrorCode.NONE,
            "error_message": None,
            "member_id": body.member_id,
            "member_epoch": LEAVE_EPOCH,
            "heartbeat_interval_ms": 0,
            "session_timeout_ms": self.session_timeout_ms,
            "should_compute_assignment": False,
            "assignment": None,
        }

    def remove(
        self, group: ConnectGroup, member_id: str, now_ms: int, out: Outcome, may_downgrade: bool = True
    ) -> None:
        """A worker leaves or is fenced: its work is free and the group needs a new target.

        Its entry stays in the target until the next install, so the computing worker can
        tell which work was lost (covered, but no present worker's target holds it). If only
        classic workers remain, the group may turn classic again (connect_migration.py).
        """
        member = group.members.pop(member_id, None)
        if member is None:
            return
        out.records.append(ConnectCurrentAssignmentRecord(group.group_id, member_id, None))
        out.records.append(ConnectWorkerRecord(group.group_id, member_id, None))
        group.ownership.update(member_id, member.assignment, None)
        self.cancel_timers(group.group_id, member_id)
        group.compute.forget(member_id)
        self._bump(group, out)
        if not group.members:
            group.assignment_epoch = group.group_epoch
            out.records.append(group.target_record())
        else:
            self._choose_computer(group, now_ms)
            if may_downgrade:
                self.core.connect_migration.maybe_downgrade(group, now_ms, out)

    def cancel_timers(self, group_id: str, member_id: str) -> None:
        for key in (session_key, rebalance_key, compute_key, classic_join_key, classic_sync_key):
            self.core.timers.cancel(key(group_id, member_id))

    def on_session_expired(self, group_id: str, member_id: str, now_ms: int, out: Outcome) -> None:
        group = self.core.groups.get(group_id)
        if isinstance(group, ConnectGroup):
            self.remove(group, member_id, now_ms, out)

    def on_rebalance_timeout(self, group_id: str, member_id: str, now_ms: int, out: Outcome) -> None:
        group = self.core.groups.get(group_id)
        if isinstance(group, ConnectGroup):
            member = group.members.get(member_id)
            if member is not None and member.assignment.state == MemberState.UNREVOKED:
                self.remove(group, member_id, now_ms, out)

    def on_compute_timeout(self, group_id: str, member_id: str, now_ms: int, out: Outcome) -> None:
        """The chosen worker did not install in time: choose another."""
        group = self.core.groups.get(group_id)
        if isinstance(group, ConnectGroup) and group.compute.member_id == member_id:
            group.compute.timed_out()
            if group.group_epoch > group.assignment_epoch:
                self._choose_computer(group, now_ms)

    # -- ConnectGroupDescribe -------------------------------------------------------------

    def describe(self, request: GroupRequest, now_ms: int, out: Outcome) -> None:
        described = [self._describe(group_id) for group_id in request.body.group_ids]
        out.reply(request.request_id, {"throttle_time_ms": 0, "groups": described})

    def _describe(self, group_id: str) -> dict[str, Any]:
        group = self.core.groups.get(group_id)
        if not isinstance(group, ConnectGroup):
            return {
                "error_code": ErrorCode.GROUP_ID_NOT_FOUND,
                "error_message": f"Group {group_id} is not a connect group."
                if group is not None
                else f"Group {group_id} not found.",
                "group_id": group_id,
                "group_state": ConnectGroupState.DEAD.value,
                "group_epoch": -1,
                "assignment_epoch": -1,
                "assignor_name": "",
                "computing_member_id": None,
                "target_connectors_and_tasks": work_field(()),
                "members": [],
            }
        members = [
            {
                "member_id": m.member_id,
                "instance_id": m.instance_id,
                "url": m.url,
                "client_id": m.client_id,
                "client_host": m.client_host,
                "member_epoch": m.assignment.member_epoch,
                "member_state": STATE_NAMES.get(m.assignment.state, m.assignment.state.name.title()),
                "assignors": [
                    {
                        "name": a.name,
                        "minimum_version": a.minimum_version,
                        "maximum_version": a.maximum_version,
                        "reason": a.reason,
                        "metadata_version": a.metadata_version,
                    }
                    for a in m.assignors
                ],  # fmt: skip
                "assignment": work_field(m.assignment.assigned),
                "pending_revocation": work_field(m.assignment.pending_revocation),
                "target_assignment": work_field(group.target_of(m.member_id)),
            }
            for m in group.members.values()
        ]
        selection = self._selection(group)
        return {
            "error_code": ErrorCode.NONE,
            "error_message": None,
            "group_id": group_id,
            "group_state": group.state.value,
            "group_epoch": group.group_epoch,
            "assignment_epoch": group.assignment_epoch,
            "assignor_name": group.assignor_name or (selection[0] if selection else ""),
            "computing_member_id": group.compute.member_id,
            "target_connectors_and_tasks": work_field(group.covered),
            "members": members,
        }

    # -- replay ---------------------------------------------------------------------------

    def deletion_records(self, group_id: str) -> list[ConnectRecord]:
        return [
            ConnectTargetRecord(group_id, None),
            ConnectCoveredRecord(group_id, None),
            ConnectGroupEpochRecord(group_id, None),
        ]

    def replay(self, record: ConnectRecord) -> None:
        """Rebuild a connect group from its records (start-up; the live path writes the same)."""
        existing = self.core.groups.get(record.group_id)
        if isinstance(record, ConnectGroupEpochRecord) and record.epoch is None:
            if isinstance(existing, ConnectGroup):
                del self.core.groups[record.group_id]
            return
        group = existing if isinstance(existing, ConnectGroup) else ConnectGroup(record.group_id)
        self.core.groups[record.group_id] = group  # type: ignore[assignment]
        if isinstance(record, ConnectGroupEpochRecord):
            group.group_epoch = record.epoch or 0
        elif isinstance(record, ConnectCoveredRecord):
            group.covered = record.items
        elif isinstance(record, ConnectTargetRecord):
            if record.value is not None:
                t = record.value
                group.assignment_epoch, group.target_error, group.assignor_name = t.epoch, t.error, t.assignor
                group.target = dict(t.members)
                group.compute.previous = t.computed_by or None
        elif isinstance(record, ConnectWorkerRecord):
            self._replay_worker(group, record)
        elif isinstance(record, ConnectCurrentAssignmentRecord) and record.value is not None:
            member = group.members.get(record.member_id)
            if member is not None:
                group.ownership.update(record.member_id, member.assignment, record.value)
                member.assignment = record.value

    def _replay_worker(self, group: ConnectGroup, record: ConnectWorkerRecord) -> None:
        if record.value is None:
            gone = group.members.pop(record.member_id, None)
            if gone is not None:
                group.ownership.update(record.member_id, gone.assignment, None)
            return
        member = group.members.setdefault(record.member_id, Worker(record.member_id))
        v = record.value
        member.instance_id, member.url = v.instance_id, v.url
        member.client_id, member.client_host = v.client_id, v.client_host
        member.rebalance_timeout_ms, member.assignors = v.rebalance_timeout_ms, v.assignors
        member.classic = v.classic

    def load_complete(self, now_ms: int) -> None:
        for group in list(self.core.groups.values()):
            if isinstance(group, ConnectGroup):
                for member in group.members.values():
                    self.refresh_session(group, member, now_ms)
                if group.group_epoch > group.assignment_epoch:
                    self._choose_computer(group, now_ms)

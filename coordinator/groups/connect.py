"""Connect groups: Kafka Connect workers rebalancing connectors and tasks, a flavour of the
modern-group engine (modern/engine.py).

The `connect` group type of the draft "Integrating Kafka Connect With New Consumer Rebalance
Protocol", with the decisions docs/protocol.md records. Items are `Work` — (connector, task)
pairs.

Theory of operation
-------------------
- The group epoch is bumped when a worker joins, leaves or is fenced, or changes its client
  assignors — their names, version ranges, reason or metadata. A worker's assignor metadata
  carries its view of the connector configuration, so new connectors reach the group this
  way, and a changed *reason* is how a worker asks for a scheduled rebalance
  (`scheduled.rebalance.max.delay.ms`).
- Workers always compute the target: while the group epoch is ahead of the assignment epoch,
  one worker is chosen (client_assignment.py: common assignor, version coverage,
  stickiness); it reads the group with ConnectGroupPrepareAssignment and installs the result
  with ConnectGroupInstallAssignment, validated against the group as it was prepared. An
  assignor error keeps the current target (the assignment epoch still advances).
- Two client assignors (docs/protocol.md): `sessioned` (incremental cooperative) and
  `eager` (Kafka Connect's eager protocol). The group uses the first, in priority order, that
  every worker supports. A target computed by `eager` is reconciled eagerly: every worker
  gives up everything it holds, even what its new target keeps, and nothing is assigned while
  a worker holds work from an older epoch or a newer target is due, so each rebalance stops
  and restarts all work once, as Kafka Connect's eager rebalances do.
- A departed worker's entry stays in the target until the next install, so the computing
  worker can tell which work was lost (covered, but no present worker's target holds it).
- The draft's fencing: a heartbeat at a wrong epoch is FENCED_MEMBER_EPOCH and the worker is
  removed (it stops everything and rejoins with epoch 0), except the lost-response case.
  A restarted static worker replaces its predecessor.
Classic workers (online migration, classic_bridge.py) are reconciled like any worker but never
compute: assignor and computing-worker selection consider the other workers only.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass, replace
from typing import Any, ClassVar

from connect_rebalance.connect_protocol import (
    NO_ERROR,
    PROTOCOL_TYPE,
    PROTOCOL_VERSIONS,
    ConnectAssignment,
    ConnectProtocolError,
    WorkerState,
    decode_assignment,
    decode_metadata,
    encode_assignment,
)
from connect_rebalance.errors import ErrorCode, KafkaApiError
from connect_rebalance.work import Work, work_field, work_of
from coordinator.groups.client_assignment import (
    ClientAssignorSpec,
    assignor_specs,
    common_assignor,
    install_problem,
)
from coordinator.groups.connect_records import (
    ClassicWorkerMetadata,
    ConnectCoveredRecord,
    ConnectCurrentAssignmentRecord,
    ConnectGroupEpochRecord,
    ConnectTarget,
    ConnectTargetRecord,
    ConnectWorkerRecord,
    ConnectWorkerSnapshot,
)
from coordinator.groups.context import GroupContext
from coordinator.groups.group_configs import CONNECT_HEARTBEAT_INTERVAL, CONNECT_SESSION_TIMEOUT
from coordinator.groups.modern.engine import LEAVE_EPOCH, ModernGroups, invalid
from coordinator.groups.modern.group import Member, ModernGroup
from coordinator.groups.reconciliation import MemberAssignment, MemberState, TargetMember
from coordinator.groups.requests import CONFIG_CHANGE, FENCED, STATIC_REPLACEMENT, GroupRequest

EAGER_ASSIGNOR = "eager"  # the client assignor whose targets are reconciled eagerly
STATE_NAMES = {MemberState.STABLE: "Stable", MemberState.UNREVOKED: "Unrevoked",
               MemberState.UNRELEASED: "Unreleased"}  # fmt: skip


@dataclass
class ConnectGroup(ModernGroup[Work]):
    covered: frozenset[Work] = frozenset()  # the work the current target covers

    type_name: ClassVar[str] = "connect"

    @property
    def eager(self) -> bool:
        """The current target was computed by the eager assignor."""
        return self.assignor_name == EAGER_ASSIGNOR

    def tombstones(self) -> list[Any]:
        return [
            ConnectTargetRecord(self.group_id, None),
            ConnectCoveredRecord(self.group_id, None),
            ConnectGroupEpochRecord(self.group_id, None),
        ]


def classic_assignor(member: Member[Work]) -> ClientAssignorSpec | None:
    """How a classic worker appears in ConnectGroupPrepareAssignment: its embedded protocol
    version and its JoinGroup WorkerState bytes (which are not JSON, unlike our workers'
    assignor metadata, so the computing worker can tell it apart)."""
    if member.classic is None:
        return None
    version, metadata = next(
        ((PROTOCOL_VERSIONS[n], m) for n, m in member.classic.protocols if PROTOCOL_VERSIONS.get(n, 0) >= 1),
        (1, b""),
    )
    return ClientAssignorSpec("classic", version, version, 0, version, metadata)


class ConnectGroups(ModernGroups[Work]):
    group_class = ConnectGroup
    kind = "Connect group"
    prepare_epoch_error = ErrorCode.FENCED_MEMBER_EPOCH
    prepare_api = "ConnectGroupPrepareAssignment"
    unprepared: ClassVar[dict[str, Any]] = {"target_connectors_and_tasks": work_field(()), "members": []}
    undescribed: ClassVar[dict[str, Any]] = {
        "computing_member_id": None, "target_connectors_and_tasks": work_field(()), "members": [],
    }  # fmt: skip
    profile_fields = ("instance_id", "client_assignors", "url")
    epoch_record = ConnectGroupEpochRecord
    member_record = ConnectWorkerRecord
    assignment_record = ConnectCurrentAssignmentRecord
    session_config = CONNECT_SESSION_TIMEOUT
    heartbeat_config = CONNECT_HEARTBEAT_INTERVAL

    def __init__(self, ctx: GroupContext) -> None:
        settings = ctx.settings
        super().__init__(
            ctx,
            settings.connect_session_timeout_ms,
            settings.connect_heartbeat_interval_ms,
            settings.connect_max_size,
        )
        self.answer_fields = {
            "session_timeout_ms": self.session_timeout_ms,
            "should_compute_assignment": False,
        }

    def heartbeat_fields(
        self, group: Any, member: Member[Work], before: MemberAssignment[Work], request: GroupRequest
    ) -> dict[str, Any]:
        """The answer carries the session timeout the group's sessions are measured with (its
        dynamic config or the setting): a worker stops its own work before that much time
        without an answer, so it must know the group's value, not the coordinator's default."""
        fields = super().heartbeat_fields(group, member, before, request)
        fields["session_timeout_ms"] = self.session_timeout(group.group_id, member)
        return fields

    # -- validation -----------------------------------------------------------------------

    def validate(self, body: Any, version: int) -> None:
        if not (body.group_id or "").strip():
            raise invalid("GroupId can't be empty.")
        if not (body.member_id or "").strip():
            raise invalid("MemberId can't be empty.")
        if body.member_epoch < LEAVE_EPOCH:
            raise invalid("MemberEpoch must be >= -1.")
        if body.instance_id is not None and not body.instance_id.strip():
            raise invalid("InstanceId can't be empty.")
        if body.url is not None and not body.url.strip():
            raise invalid("Url can't be empty.")
        self.check_assignors(body)
        if body.server_assignor is not None:
            raise KafkaApiError(
                ErrorCode.UNSUPPORTED_ASSIGNOR,
                f"ServerAssignor {body.server_assignor} is not supported: connect groups assign client-side.",
            )

    def admit(self, group: Any, body: Any, now_ms: int) -> None:
        """A new worker: what its first heartbeat must carry, an assignor in common with the
        group, room; a restarted static worker replaces its predecessor, which is fenced.

        A member keeps sending epoch 0 until the first target is installed (the draft's case
        study), so these checks apply to new members only.
        """
        if body.rebalance_timeout_ms <= 0:
            raise invalid("RebalanceTimeoutMs must be larger than zero in the first heartbeat.")
        if body.url is None:
            raise invalid("Url must be set in the first heartbeat.")
        if not body.client_assignors:
            raise invalid("ClientAssignors must be set in the first heartbeat.")
        if work_of(body.owned_connectors_and_tasks):
            raise invalid("OwnedConnectorsAndTasks must be empty when joining.")
        self._check_common_assignor(group, body.member_id, assignor_specs(body.client_assignors))
        self.check_room(group)
        if body.instance_id is not None:
            holder = group.static_member(body.instance_id)
            if holder is not None:
                self.remove(group, holder.member_id, now_ms, downgrade=False, cause=STATIC_REPLACEMENT)

    def check_request(self, group: Any, member_id: str, body: Any) -> None:
        """A worker that changes its assignors must still share one with every other worker."""
        member = group.members.get(member_id)
        if member is not None and body.client_assignors is not None:
            specs = assignor_specs(body.client_assignors)
            if specs != member.profile.client_assignors:
                self._check_common_assignor(group, member_id, specs)

    def _check_common_assignor(self, group: Any, member_id: str, specs: Sequence[ClientAssignorSpec]) -> None:
        """UNSUPPORTED_ASSIGNOR if a worker offering `specs` would leave the group's workers
        without an assignor they all support with overlapping versions (the draft's rule)."""
        others = [a for m, a in self.computing_pool(group).items() if m != member_id]
        if others and common_assignor([*others, specs]) is None:
            offered = sorted({_listed(a) for a in others})
            raise KafkaApiError(
                ErrorCode.UNSUPPORTED_ASSIGNOR,
                f"ClientAssignors {_listed(specs)} share no assignor with overlapping versions with "
                f"every worker in group {group.group_id}, whose workers offer {' and '.join(offered)}.",
            )

    def held_by_others(self, group: Any, member_id: str) -> Callable[[Work], bool]:
        """Work the worker must wait for: held by another worker, or, in an eager group, any work
        while another worker still holds work from an older epoch (everyone stops everything
        before anything is assigned) or while a newer target is due (what this one assigns
        would be stopped again at once)."""
        held = group.ownership.held_by_others(member_id)
        waiting = group.eager and (
            group.group_epoch > group.assignment_epoch
            or any(
                m.assignment.member_epoch < group.assignment_epoch and m.assignment.held
                for m in group.members.values()
                if m.member_id != member_id
            )
        )
        return (lambda _: True) if waiting else held  # type: ignore[no-any-return]

    def revokes_all(self, group: Any) -> bool:
        return group.eager  # type: ignore[no-any-return]

    def on_fenced(self, group: Any, member: Member[Work], now_ms: int) -> None:
        self.remove(group, member.member_id, now_ms, cause=FENCED)

    # -- members --------------------------------------------------------------------------

    def empty_profile(self) -> ConnectWorkerSnapshot:
        return ConnectWorkerSnapshot(None, "", "", "", 60000, ())

    def owned_items(self, body: Any) -> frozenset[Work] | None:
        owned = body.owned_connectors_and_tasks
        return None if owned is None else work_of(owned)

    def profile_from(self, request: GroupRequest, profile: ConnectWorkerSnapshot) -> ConnectWorkerSnapshot:
        url = request.body.url
        return replace(super().profile_from(request, profile), url=profile.url if url is None else url)

    def bumps(self, before: ConnectWorkerSnapshot, after: ConnectWorkerSnapshot) -> bool:
        return before.client_assignors != after.client_assignors

    profile_cause = CONFIG_CHANGE  # the assignor metadata carries the worker's view of the configs

    def member_tombstones(self, group_id: str, member_id: str) -> list[Any]:
        # The member's target entry stays until the next install: it tells what work was lost.
        return [
            ConnectCurrentAssignmentRecord(group_id, member_id, None),
            ConnectWorkerRecord(group_id, member_id, None),
        ]

    def on_removed(self, group: Any, now_ms: int) -> None:
        self.choose_computer(group, now_ms)

    # -- answers --------------------------------------------------------------------------

    def full_request(self, request: GroupRequest) -> bool:
        body = request.body
        return (
            body.url is not None
            and body.rebalance_timeout_ms != -1
            and body.client_assignors is not None
            and body.owned_connectors_and_tasks is not None
        )

    def assignment_answer(self, group: Any, member: Member[Work]) -> dict[str, Any]:
        target = group.target.get(member.member_id)
        return {
            "error": group.target_error or (target.error if target else 0),
            "connectors_and_tasks": work_field(member.assignment.assigned),
            "metadata_version": target.metadata_version if target else 0,
            "metadata": target.metadata if target else b"",
        }

    # -- the target -----------------------------------------------------------------------

    def computing_pool(self, group: Any) -> dict[str, Any]:
        """Workers that take part in assignor and computing-worker selection: classic workers
        (online migration) never compute."""
        return {m.member_id: m.profile.client_assignors for m in group.members.values() if m.classic is None}

    def target_due(self, group: Any, now_ms: int) -> None:
        self.choose_computer(group, now_ms)

    def write_target(
        self,
        group: Any,
        epoch: int,
        members: dict[str, Any] | None,
        assignor: str,
        error: int,
        computed_by: str | None = None,
    ) -> None:
        entries = group.target if members is None else members
        computed = computed_by if computed_by is not None else (group.compute.previous or "")
        target = ConnectTarget(epoch, error, assignor, computed, tuple(sorted(entries.items())))
        self.ctx.emit(ConnectTargetRecord(group.group_id, target))

    def replay_target(self, group: Any, record: Any) -> None:
        journal = self.ctx.journal
        if isinstance(record, ConnectCoveredRecord):
            journal.set_attr(group, "covered", record.items)
        elif isinstance(record, ConnectTargetRecord) and record.value is not None:
            t = record.value
            journal.set_attr(group, "assignment_epoch", t.epoch)
            journal.set_attr(group, "target_error", t.error)
            journal.set_attr(group, "assignor_name", t.assignor)
            journal.set_attr(group, "target", dict(t.members))
            journal.keep(group.compute)
            group.compute.previous = t.computed_by or None

    # -- ConnectGroupPrepareAssignment / InstallAssignment --------------------------------

    def prepared(self, group: Any, assignor: str) -> dict[str, Any]:
        group.compute.prepared(group.group_epoch, frozenset(group.members), assignor)
        members = []
        for m in group.members.values():
            spec = classic_assignor(m) or next(a for a in m.profile.client_assignors if a.name == assignor)
            members.append({
                "member_id": m.member_id, "member_epoch": m.assignment.member_epoch,
                "instance_id": m.profile.instance_id, "url": m.profile.url,
                "assignor": {"metadata_version": spec.metadata_version, "reason": spec.reason,
                             "metadata": spec.metadata},
                "target_connectors_and_tasks": work_field(group.target_of(m.member_id)),
                "owned_connectors_and_tasks": work_field(m.assignment.held),
            })  # fmt: skip
        return {"target_connectors_and_tasks": work_field(group.covered), "members": members}

    def install_target(self, group: Any, member: Member[Work], body: Any, epoch: int) -> None:
        target = None
        if body.error == 0:
            items = {m.member_id: work_of(m.connectors_and_tasks) for m in body.members}
            covered = work_of(body.connectors_and_tasks)
            problem = install_problem(covered, items, group.compute.prepared_members)  # type: ignore[arg-type]
            if problem is not None:
                raise KafkaApiError(ErrorCode.INVALID_ASSIGNMENT, f"Invalid assignment: {problem}.")
            target = {
                m.member_id: TargetMember(items[m.member_id], m.error, m.metadata_version, bytes(m.metadata))
                for m in body.members
                if m.member_id in group.members
            }
            self.ctx.emit(ConnectCoveredRecord(group.group_id, epoch, covered))
        # The assignor the target was computed with says how it is reconciled (eager or not).
        assignor = group.compute.prepared_assignor if target is not None else group.assignor_name
        self.write_target(group, epoch, target, assignor, body.error, member.member_id)

    # -- ConnectGroupDescribe -------------------------------------------------------------

    def described_fields(self, group: Any) -> dict[str, Any]:
        return {
            "computing_member_id": group.compute.member_id,
            "target_connectors_and_tasks": work_field(group.covered),
        }

    def described_members(self, group: Any) -> list[dict[str, Any]]:
        return [
            {
                "member_id": m.member_id,
                "instance_id": m.profile.instance_id,
                "url": m.profile.url,
                "client_id": m.profile.client_id,
                "client_host": m.profile.client_host,
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
                    for a in m.profile.client_assignors
                ],  # fmt: skip
                "assignment": work_field(m.assignment.assigned),
                "pending_revocation": work_field(m.assignment.pending_revocation),
                "target_assignment": work_field(group.target_of(m.member_id)),
            }
            for m in group.members.values()
        ]


def _listed(assignors: Sequence[ClientAssignorSpec]) -> str:
    """`[sessioned v1-1, eager v1-1]`: assignors in priority order with their version ranges."""
    return "[" + ", ".join(f"{a.name} v{a.minimum_version}-{a.maximum_version}" for a in assignors) + "]"


def incremental(protocols: list[tuple[str, bytes]]) -> list[str]:
    """The names of the incremental cooperative protocols (version >= 1) offered, in order."""
    return [name for name, _ in protocols if PROTOCOL_VERSIONS.get(name, 0) >= 1]


def owned_by_classic_member(metadata: bytes, assignment: bytes) -> frozenset[Work]:
    """What a classic worker runs: the allocation in its JoinGroup metadata, plus what its last
    assignment added, minus what that revoked. Raises ConnectProtocolError on bad bytes."""
    owned = decode_metadata(metadata).owned
    if assignment:
        last = decode_assignment(assignment)
        owned = (owned | last.assigned) - last.revoked
    return owned


class ConnectEmbedding:
    """Classic workers inside a connect group: Kafka Connect's embedded protocol (the classic
    bridge's view of connect groups, classic_bridge.py).

    Only the incremental cooperative protocols can be reconciled one worker at a time: an
    eager group (protocol `default`) is not converted and an eager-only worker cannot join.
    SyncGroup answers Kafka Connect's deltas: assigned = the reconciled assignment minus what
    the worker reported running at its JoinGroup; revoked = its pending revocation and
    anything it reported running that it does not hold; the header (leader, url, config
    offset, delay) from the metadata the computing worker installed for it. A group turned
    classic again starts at the highest member epoch (the generation most workers hold, so
    their next heartbeat is REBALANCE_IN_PROGRESS, not ILLEGAL_GENERATION, which would make
    them drop all their work), and its leader then assigns with Kafka Connect's incremental
    cooperative assignor.
    """

    protocol_type = PROTOCOL_TYPE
    policy_setting = "group.connect.migration.policy"

    def __init__(self, groups: ConnectGroups) -> None:
        self.groups = groups

    def offered(self, protocols: list[tuple[str, bytes]]) -> list[str]:
        return incremental(protocols)

    def upgrade_refusal(self, classic: Any) -> str | None:
        name = classic.protocol_name or (classic.select_protocol() if classic.candidate_protocols() else "")
        if PROTOCOL_VERSIONS.get(name, 0) >= 1:
            return None
        return (
            f"its workers use the eager protocol {name!r}; set connect.protocol=compatible or sessioned "
            "on every worker first"
        )

    def converted(
        self, member: Any, protocol: str, claimed: frozenset[Work]
    ) -> tuple[ConnectWorkerSnapshot, frozenset[Work]]:
        metadata = member.metadata(protocol) or member.protocols[0][1]
        items = owned_by_classic_member(metadata, member.assignment) - claimed
        profile = ConnectWorkerSnapshot(
            member.group_instance_id, decode_metadata(metadata).url, member.client_id, member.client_host,
            member.rebalance_timeout_ms, (),
            ClassicWorkerMetadata(member.session_timeout_ms, tuple(member.protocols), items),
        )  # fmt: skip
        return profile, items

    def write_converted_target(
        self, group: Any, generation: int, targets: dict[str, frozenset[Work]], protocol: str
    ) -> None:
        members = {member_id: TargetMember(items) for member_id, items in targets.items()}
        self.groups.write_target(group, generation, members, protocol, 0, "")
        covered = frozenset().union(*targets.values())
        self.groups.ctx.emit(ConnectCoveredRecord(group.group_id, generation, covered))

    def parse_join(self, protocols: list[tuple[str, bytes]], chosen: str) -> WorkerState:
        return decode_metadata(dict(protocols)[chosen])

    def joined(
        self, request: GroupRequest, profile: ConnectWorkerSnapshot, protocols: list[tuple[str, bytes]],
        parsed: WorkerState,
    ) -> tuple[ConnectWorkerSnapshot, frozenset[Work], bool]:  # fmt: skip
        body, version = request.body, request.version
        updated = replace(
            profile, url=parsed.url, client_id=request.client_id, client_host=request.client_host,
            instance_id=body.group_instance_id if version >= 5 else None,
            rebalance_timeout_ms=body.rebalance_timeout_ms if version >= 1 else body.session_timeout_ms,
            classic=ClassicWorkerMetadata(body.session_timeout_ms, tuple(protocols), parsed.owned),
        )  # fmt: skip
        return updated, parsed.owned, False

    def rejoin_epoch(self, group: Any) -> int:
        """The assignment epoch: a classic worker never computes, so rejoining before the next
        target is installed would change nothing."""
        return group.assignment_epoch  # type: ignore[no-any-return]

    def sync_assignment(self, group: Any, member: Member[Work], protocol: str) -> bytes:
        version = PROTOCOL_VERSIONS.get(protocol, 1)
        a, owned = member.assignment, member.classic.owned
        target = group.target.get(member.member_id)
        try:
            header = decode_assignment(target.metadata if target is not None else b"")
        except ConnectProtocolError:
            computing = group.members.get(group.compute.previous or "")
            leader, leader_url = (computing.member_id, computing.profile.url) if computing else ("", "")
            header = ConnectAssignment(version, NO_ERROR, leader, leader_url, self._offset(member)[1])
        return encode_assignment(
            ConnectAssignment(
                version, header.error, header.leader, header.leader_url, header.config_offset,
                a.assigned - owned, a.pending_revocation | (owned - a.assigned), header.delay_ms,
            )
        )  # fmt: skip

    def downgrade_assignment(self, group: Any, member: Member[Work]) -> bytes:
        version, offset = self._offset(member)
        return encode_assignment(
            ConnectAssignment(version, NO_ERROR, "", "", offset, member.assignment.assigned)
        )

    def _offset(self, member: Member[Work]) -> tuple[int, int]:
        """A classic worker's incremental protocol version and the config offset it reported."""
        protocols = list(member.classic.protocols)
        for name in incremental(protocols):
            try:
                return PROTOCOL_VERSIONS[name], decode_metadata(dict(protocols)[name]).config_offset
            except ConnectProtocolError:
                continue
        return 1, -1

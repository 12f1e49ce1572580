"""Online migration between classic `connect` groups and connect groups (the draft's "Migration
To the New Protocol"): a rolling upgrade or downgrade of Kafka Connect workers.

This module owns the two conversions and the translation of the classic protocol for workers
that keep speaking it (JoinGroup/SyncGroup/Heartbeat with Kafka Connect's embedded protocol,
connect_rebalance/connect_protocol.py) inside a connect group. Like the group modules it has no
IO and no clock; state changes are records, replayed, so a restarted coordinator rebuilds
exactly what the live one had. migration.py does the same for consumer groups; the shape and
the rules are the same, the items are connectors and tasks.

Rules (`group.connect.migration.policy`: bidirectional, upgrade, downgrade, disabled)
-------------------------------------------------------------------------------------
- Upgrade: a ConnectGroupHeartbeat join (epoch 0) to a non-empty classic group converts it if
  the policy allows upgrades, its protocol type is `connect`, its protocol is incremental
  cooperative (an eager group, protocol `default`, is refused: its workers stop everything at
  every rebalance and cannot be reconciled one at a time) and it fits `group.connect.max.size`.
  Any refusal is GROUP_ID_NOT_FOUND with a message saying why. The connect group starts at
  group epoch = assignment epoch = the classic generation; each classic member becomes a
  worker, STABLE at that epoch, owning (and targeted with) what it runs: the allocation in its
  JoinGroup metadata plus what its last assignment added, minus what that revoked (the first
  claimer of an item keeps it). Parked JoinGroup/SyncGroup requests are answered
  REBALANCE_IN_PROGRESS and the classic group is tombstoned; the joining worker then joins as
  any worker does (a new group epoch, and it computes the next target).
- Classic workers inside a connect group never compute. JoinGroup updates the worker (url,
  protocols, what its metadata says it runs), bumps the group epoch if it is new, reconciles it
  through the shared engine and answers at once: generation = member epoch, no leader, no
  members. SyncGroup answers an embedded assignment at the worker's protocol version: the
  header (leader, leader url, config offset, delay) from the metadata the computing worker
  installed for it; assigned = its reconciled assignment minus what it reported running at its
  JoinGroup (Kafka Connect's assignments are deltas); revoked = what it must stop: its pending
  revocation, and anything it reported running that it does not hold. Heartbeat answers
  REBALANCE_IN_PROGRESS while it must rejoin (migration.must_rejoin, against the assignment
  epoch: a new target must be installed before a rejoin can change anything). Revoke before assign
  holds as for any worker; two deadlines of its rebalance timeout (sync after join, rejoin
  when told) keep a classic worker's holds finite.
- Downgrade: when a removal leaves only classic workers, the policy allows downgrades, they fit
  `group.max.size` and share a protocol, the group becomes a classic group (protocol type
  `connect`) at generation = the highest member epoch (the generation most of them hold, so
  their next heartbeat is REBALANCE_IN_PROGRESS, not ILLEGAL_GENERATION, which would make them
  drop all their work) with each worker's current assignment as its assignment bytes, and
  immediately prepares a rebalance: the workers rejoin and elect a leader that assigns with
  Kafka Connect's incremental cooperative assignor. The connect group's records are tombstoned.
- A classic JoinGroup to an empty connect group deletes it and creates a classic group.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from connect_rebalance.connect_protocol import (
    NO_ERROR,
    PROTOCOL_TYPE,
    PROTOCOL_VERSIONS,
    ConnectAssignment,
    ConnectProtocolError,
    decode_assignment,
    decode_metadata,
    encode_assignment,
)
from connect_rebalance.errors import ErrorCode, KafkaApiError
from connect_rebalance.work import Work

from .classic import ClassicGroup, ClassicMember, ClassicState, join_error, sync_response
from .connect import (
    ConnectGroup,
    ConnectGroups,
    Worker,
    classic_join_key,
    classic_sync_key,
)
from .connect_records import (
    ClassicWorkerMetadata,
    ConnectCoveredRecord,
    ConnectCurrentAssignmentRecord,
    ConnectGroupEpochRecord,
    ConnectTarget,
    ConnectTargetMember,
    ConnectTargetRecord,
    ConnectWorkerRecord,
)
from .migration import (
    MEMBER_ID_REQUIRED_FROM_VERSION,
    POLICIES,
    _MemberIdError,
    downgrade_allowed,
    forget_classic,
    leave_results,
    must_rejoin,
    start_classic,
    write,
)
from .reconciliation import MemberAssignment, MemberState
from .records import GroupMetadataRecord, Record
from .requests import GroupRequest, Outcome

if TYPE_CHECKING:
    from .coordinator import GroupCoordinator

Protocols = list[tuple[str, bytes]]


def incremental(protocols: Protocols) -> list[str]:
    """The names of the incremental cooperative protocols (version >= 1) offered, in order."""
    return [name for name, _ in protocols if PROTOCOL_VERSIONS.get(name, 0) >= 1]


def owned_by_classic_member(metadata: bytes, assignment: bytes) -> frozenset[Work]:
    """What a classic member runs: the allocation in its JoinGroup metadata, plus what its last
    assignment added, minus what that revoked. Raises ConnectProtocolError on bad bytes."""
    owned = decode_metadata(metadata).owned
    if assignment:
        last = decode_assignment(assignment)
        owned = (owned | last.assigned) - last.revoked
    return owned


class ConnectMigration:
    """The conversions and the classic protocol spoken to connect groups."""

    def __init__(self, core: GroupCoordinator, connect: ConnectGroups) -> None:
        self.core = core
        self.connect = connect
        self.upgrade_enabled, self.downgrade_enabled = POLICIES[
            core.settings.connect_migration_policy.lower()
        ]

    # -- upgrade --------------------------------------------------------------------------

    def upgrade(self, classic: Any, now_ms: int, out: Outcome) -> ConnectGroup:
        """Convert a non-empty classic group for a joining connect-protocol worker, or raise
        GROUP_ID_NOT_FOUND saying why it may not be converted."""
        group_id = classic.group_id

        def refuse(why: str) -> KafkaApiError:
            return KafkaApiError(
                ErrorCode.GROUP_ID_NOT_FOUND, f"Cannot upgrade group {group_id} to a connect group: {why}."
            )

        if not isinstance(classic, ClassicGroup):
            raise refuse(f"it is a {classic.type_name} group")
        if not self.upgrade_enabled:
            raise refuse("the online upgrade is disabled (group.connect.migration.policy)")
        if classic.state == ClassicState.DEAD:
            raise refuse("the group is being deleted")
        if classic.protocol_type != PROTOCOL_TYPE:
            raise refuse(f"its protocol type is {classic.protocol_type!r}, not 'connect'")
        if len(classic.members) > self.core.settings.connect_max_size:
            raise refuse("it has more members than group.connect.max.size")
        name = classic.protocol_name or (classic.select_protocol() if classic.candidate_protocols() else "")
        if PROTOCOL_VERSIONS.get(name, 0) < 1:
            raise refuse(
                f"its workers use the eager protocol {name!r}; set connect.protocol=compatible or "
                "sessioned on every worker first"
            )
        generation = classic.generation
        records: list[Record] = [
            GroupMetadataRecord(group_id, None),
            ConnectGroupEpochRecord(group_id, generation),
        ]
        claimed: set[Work] = set()
        targets: dict[str, ConnectTargetMember] = {}
        for m in classic.members.values():
            try:
                items = owned_by_classic_member(m.metadata(name) or m.protocols[0][1], m.assignment)
                url = decode_metadata(m.metadata(name) or m.protocols[0][1]).url
            except (ConnectProtocolError, IndexError) as exc:
                raise refuse(f"member {m.member_id}: {exc}") from exc
            items -= claimed
            claimed |= items
            worker = Worker(
                m.member_id, m.group_instance_id, url, m.client_id, m.client_host, m.rebalance_timeout_ms,
                classic=ClassicWorkerMetadata(m.session_timeout_ms, tuple(m.protocols), items),
            )  # fmt: skip
            targets[m.member_id] = ConnectTargetMember(items)
            stable = MemberAssignment(MemberState.STABLE, generation, generation, items, frozenset())
            records += [
                ConnectWorkerRecord(group_id, m.member_id, worker.snapshot()),
                ConnectCurrentAssignmentRecord(group_id, m.member_id, stable),
            ]
        records += [
            ConnectTargetRecord(
                group_id, ConnectTarget(generation, 0, name, "", tuple(sorted(targets.items())))
            ),
            ConnectCoveredRecord(group_id, generation, frozenset(claimed)),
        ]
        forget_classic(self.core.timers, classic, out)
        write(self.core, records, out)
        group = self.core.groups[group_id]
        assert isinstance(group, ConnectGroup)
        for worker in group.members.values():
            self.connect.refresh_session(group, worker, now_ms)
        return group

    # -- downgrade ------------------------------------------------------------------------

    def maybe_downgrade(self, group: ConnectGroup, now_ms: int, out: Outcome) -> None:
        """After a removal: a group of classic workers only turns classic again, if allowed."""
        members = list(group.members.values())
        if not downgrade_allowed(members, self.downgrade_enabled, self.core.settings.max_group_size):
            return
        group_id = group.group_id
        classic = ClassicGroup(
            group_id,
            state=ClassicState.STABLE,
            state_timestamp_ms=now_ms,
            generation=max(m.assignment.member_epoch for m in members),
            protocol_type=PROTOCOL_TYPE,
        )
        for m in members:
            assert m.classic is not None
            protocols = list(m.classic.protocols)
            version, offset = _version_and_offset(protocols)
            assignment = ConnectAssignment(version, NO_ERROR, "", "", offset, m.assignment.assigned)
            classic.members[m.member_id] = ClassicMember(
                m.member_id, m.instance_id, m.client_id, m.client_host, m.rebalance_timeout_ms,
                m.classic.session_timeout_ms, PROTOCOL_TYPE, protocols, encode_assignment(assignment),
            )  # fmt: skip
            if m.instance_id is not None:
                classic.static_members[m.instance_id] = m.member_id
        if not incremental([(n, b"") for n in classic.candidate_protocols()]):
            return  # the workers share no incremental protocol: they could not form a classic group
        classic.protocol_name = classic.select_protocol()
        classic.leader_id = members[0].member_id
        tombstones: list[Record] = []
        for m in members:
            tombstones += [
                ConnectCurrentAssignmentRecord(group_id, m.member_id, None),
                ConnectWorkerRecord(group_id, m.member_id, None),
            ]
            self.connect.cancel_timers(group_id, m.member_id)
        tombstones += self.connect.deletion_records(group_id)
        write(self.core, tombstones, out)
        start_classic(self.core, classic, now_ms, out)

    # -- JoinGroup ------------------------------------------------------------------------

    def join(self, request: GroupRequest, now_ms: int, out: Outcome) -> None:
        body, version = request.body, request.version
        group = self.core.groups[body.group_id]
        assert isinstance(group, ConnectGroup)
        if group.is_empty():
            # An empty connect group gives way to a classic group.
            write(self.core, self.connect.deletion_records(group.group_id), out)
            self.core.classic.join(request, now_ms, out)
            return
        member_id = body.member_id or ""
        try:
            fields = self._join(group, request, member_id, now_ms, out)
        except KafkaApiError as exc:
            fields = join_error(
                version, exc.code, exc.member_id if isinstance(exc, _MemberIdError) else member_id
            )
        out.reply(request.request_id, fields)

    def _join(
        self, group: ConnectGroup, request: GroupRequest, member_id: str, now_ms: int, out: Outcome
    ) -> dict[str, object]:
        body, version = request.body, request.version
        settings = self.core.settings
        protocols: Protocols = [(p.name, bytes(p.metadata)) for p in body.protocols]
        if not settings.min_session_timeout_ms <= body.session_timeout_ms <= settings.max_session_timeout_ms:
            raise KafkaApiError(ErrorCode.INVALID_SESSION_TIMEOUT, "session timeout out of bounds")
        if not self.upgrade_enabled and not self.downgrade_enabled:
            raise KafkaApiError(
                ErrorCode.INCONSISTENT_GROUP_PROTOCOL,
                f"Group {group.group_id} is a connect group and group.connect.migration.policy is disabled.",
            )
        if body.protocol_type != PROTOCOL_TYPE:
            raise KafkaApiError(
                ErrorCode.INCONSISTENT_GROUP_PROTOCOL,
                f"Group {group.group_id} is a connect group: protocol type {body.protocol_type!r} "
                "is not 'connect'.",
            )
        offered = incremental(protocols)
        if not offered:
            raise KafkaApiError(
                ErrorCode.INCONSISTENT_GROUP_PROTOCOL,
                f"Group {group.group_id} is a connect group: a worker on the eager protocol cannot join it; "
                "set connect.protocol=compatible or sessioned.",
            )
        common = self._common(group, member_id, offered)
        if not common:
            raise KafkaApiError(
                ErrorCode.INCONSISTENT_GROUP_PROTOCOL,
                f"The protocols {offered} share none with the group's other classic workers.",
            )
        chosen = common[0]
        try:
            state = decode_metadata(dict(protocols)[chosen])
        except ConnectProtocolError as exc:
            raise KafkaApiError(ErrorCode.INCONSISTENT_GROUP_PROTOCOL, f"metadata: {exc}") from exc
        member, joined = self._classic_member_for(group, request, member_id)
        before = None if joined else member.snapshot()
        member.url, member.client_id, member.client_host = state.url, request.client_id, request.client_host
        member.instance_id = body.group_instance_id if version >= 5 else None
        member.rebalance_timeout_ms = body.rebalance_timeout_ms if version >= 1 else body.session_timeout_ms
        member.classic = ClassicWorkerMetadata(body.session_timeout_ms, tuple(protocols), state.owned)
        self.connect.advance(group, member, before, joined, state.owned, now_ms, out)
        timers = self.core.timers
        timers.cancel(classic_join_key(group.group_id, member.member_id))
        timers.schedule(
            classic_sync_key(group.group_id, member.member_id), now_ms + member.rebalance_timeout_ms
        )
        return {
            "error_code": ErrorCode.NONE,
            "generation_id": member.assignment.member_epoch,
            "protocol_type": PROTOCOL_TYPE,
            "protocol_name": chosen,
            "leader": "",  # a classic worker in a connect group never assigns
            "skip_assignment": False,
            "member_id": member.member_id,
            "members": [],
        }

    def _common(self, group: ConnectGroup, member_id: str, offered: list[str]) -> list[str]:
        """The worker's incremental protocols every other classic worker offers too, in its order."""
        others = [
            {n for n, _ in m.classic.protocols}
            for m in group.members.values()
            if m.classic is not None and m.member_id != member_id
        ]
        return [n for n in offered if all(n in names for names in others)]

    def _classic_member_for(
        self, group: ConnectGroup, request: GroupRequest, member_id: str
    ) -> tuple[Worker, bool]:
        if not member_id and request.version >= MEMBER_ID_REQUIRED_FROM_VERSION:
            self._check_room(group)
            raise _MemberIdError(self.core.new_member_id(request.client_id))
        existing = group.members.get(member_id) if member_id else None
        if existing is not None:
            if existing.classic is None:
                raise KafkaApiError(
                    ErrorCode.UNKNOWN_MEMBER_ID, f"Member {member_id} uses the connect protocol."
                )
            return existing, False
        self._check_room(group)
        fresh = Worker(member_id or self.core.new_member_id(request.client_id))
        group.members[fresh.member_id] = fresh
        return fresh, True

    def _check_room(self, group: ConnectGroup) -> None:
        if len(group.members) >= self.connect.max_size:
            raise KafkaApiError(
                ErrorCode.GROUP_MAX_SIZE_REACHED,
                f"Connect group {group.group_id} has {self.connect.max_size} workers.",
            )

    # -- SyncGroup, Heartbeat -------------------------------------------------------------

    def _classic_member(self, group: ConnectGroup, member_id: str, generation: int) -> Worker:
        member = group.members.get(member_id)
        if member is None or member.classic is None:
            raise KafkaApiError(ErrorCode.UNKNOWN_MEMBER_ID, f"Member {member_id} is not a classic worker.")
        if generation != member.assignment.member_epoch:
            raise KafkaApiError(
                ErrorCode.ILLEGAL_GENERATION,
                f"generation {generation} is not the worker's epoch {member.assignment.member_epoch}",
            )
        return member

    def sync(self, request: GroupRequest, now_ms: int, out: Outcome) -> None:
        body, version = request.body, request.version
        group = self.core.groups[body.group_id]
        assert isinstance(group, ConnectGroup)
        try:
            member = self._classic_member(group, body.member_id, body.generation_id)
            assert member.classic is not None
            chosen = self._common(group, member.member_id, incremental(list(member.classic.protocols)))
            if version >= 5 and (
                (body.protocol_type is not None and body.protocol_type != PROTOCOL_TYPE)
                or (body.protocol_name is not None and body.protocol_name not in chosen)
            ):
                raise KafkaApiError(ErrorCode.INCONSISTENT_GROUP_PROTOCOL, "protocol mismatch")
            self.connect.refresh_session(group, member, now_ms)
            self.core.timers.cancel(classic_sync_key(group.group_id, member.member_id))
            a = member.assignment
            if group.assignment_epoch > a.member_epoch and a.state != MemberState.UNREVOKED:
                self._expect_rejoin(group, member, now_ms)
                raise KafkaApiError(ErrorCode.REBALANCE_IN_PROGRESS, "the target moved on; rejoin")
        except KafkaApiError as exc:
            out.reply(request.request_id, sync_response(exc.code))
            return
        name = (body.protocol_name if version >= 5 else None) or (chosen[0] if chosen else "sessioned")
        out.reply(
            request.request_id,
            {
                "error_code": ErrorCode.NONE,
                "protocol_type": PROTOCOL_TYPE,
                "protocol_name": name if version >= 5 else None,
                "assignment": encode_assignment(
                    self._assignment(group, member, PROTOCOL_VERSIONS.get(name, 1))
                ),
            },
        )

    def _assignment(self, group: ConnectGroup, member: Worker, version: int) -> ConnectAssignment:
        """The embedded assignment for a classic worker: the header the computing worker
        installed for it, the deltas from what it reported running at its JoinGroup."""
        assert member.classic is not None
        a, owned = member.assignment, member.classic.owned
        target = group.target.get(member.member_id)
        try:
            header = decode_assignment(target.metadata if target is not None else b"")
        except ConnectProtocolError:
            computing = group.members.get(group.compute.previous or "")
            own_offset = _version_and_offset(list(member.classic.protocols))[1]
            leader, leader_url = (computing.member_id, computing.url) if computing else ("", "")
            header = ConnectAssignment(version, NO_ERROR, leader, leader_url, own_offset)
        return ConnectAssignment(
            version, header.error, header.leader, header.leader_url, header.config_offset,
            a.assigned - owned, a.pending_revocation | (owned - a.assigned), header.delay_ms,
        )  # fmt: skip

    def heartbeat(self, request: GroupRequest, now_ms: int, out: Outcome) -> None:
        body = request.body
        group = self.core.groups[body.group_id]
        assert isinstance(group, ConnectGroup)
        error = ErrorCode.NONE
        try:
            member = self._classic_member(group, body.member_id, body.generation_id)
            self.connect.refresh_session(group, member, now_ms)
            held_by_others = group.held_by_others(member.member_id)
            # The assignment epoch, not the group epoch: a classic worker never computes, so
            # rejoining before the next target is installed would change nothing.
            target = group.target_of(member.member_id)
            if must_rejoin(member.assignment, group.assignment_epoch, target, held_by_others):
                self._expect_rejoin(group, member, now_ms)
                error = ErrorCode.REBALANCE_IN_PROGRESS
        except KafkaApiError as exc:
            error = exc.code
        out.reply(request.request_id, {"throttle_time_ms": 0, "error_code": error})

    def _expect_rejoin(self, group: ConnectGroup, member: Worker, now_ms: int) -> None:
        """A worker told to rejoin has its rebalance timeout to do so (the first telling counts)."""
        key = classic_join_key(group.group_id, member.member_id)
        if self.core.timers.deadline(key) is None:
            self.core.timers.schedule(key, now_ms + member.rebalance_timeout_ms)

    def on_classic_timeout(self, group_id: str, member_id: str, now_ms: int, out: Outcome) -> None:
        """A classic worker did not sync after joining, or did not rejoin when told: remove it."""
        group = self.core.groups.get(group_id)
        if isinstance(group, ConnectGroup):
            member = group.members.get(member_id)
            if member is not None and member.classic is not None:
                self.connect.remove(group, member_id, now_ms, out)

    # -- LeaveGroup -----------------------------------------------------------------------

    def leave(self, request: GroupRequest, now_ms: int, out: Outcome) -> None:
        body, version = request.body, request.version
        group = self.core.groups[body.group_id]
        assert isinstance(group, ConnectGroup)

        def find(member_id: str, instance_id: str | None) -> tuple[ErrorCode, str]:
            target = (
                next((m for m in group.members.values() if m.instance_id == instance_id), None)
                if instance_id is not None
                else group.members.get(member_id)
            )
            if target is None:
                return ErrorCode.UNKNOWN_MEMBER_ID, member_id
            if instance_id is not None and member_id and target.member_id != member_id:
                return ErrorCode.FENCED_INSTANCE_ID, member_id
            return ErrorCode.NONE, target.member_id

        results, leaving = leave_results(body, version, find)
        for member_id in leaving:
            self.connect.remove(group, member_id, now_ms, out, may_downgrade=False)
        if leaving:
            self.maybe_downgrade(group, now_ms, out)
        top_error = results[0]["error_code"] if version < 3 and results else ErrorCode.NONE
        out.reply(request.request_id, {"throttle_time_ms": 0, "error_code": top_error, "members": results})


def _version_and_offset(protocols: Protocols) -> tuple[int, int]:
    """A classic worker's incremental protocol version and the config offset it reported."""
    for name in incremental(protocols):
        try:
            return PROTOCOL_VERSIONS[name], decode_metadata(dict(protocols)[name]).config_offset
        except ConnectProtocolError:
            continue
    return 1, -1

"""Classic-protocol members inside a modern group, and the conversions between the two kinds.

One bridge serves consumer groups (KIP-848's online migration, as Kafka 4.x runs it) and
connect groups (the draft's "Migration To the New Protocol"); an `Embedding` says how the
classic members of a group type are read and answered (ConsumerProtocol bytes, or Kafka
Connect's embedded protocol). No IO, no clock; state changes are records, replayed.

Rules (`group.consumer.migration.policy`, `group.connect.migration.policy`: bidirectional,
upgrade, downgrade, disabled)
-----------------------------
- Upgrade: a modern join (epoch 0) to a non-empty classic group converts it, if the policy
  allows upgrades, the protocol types match, it fits the group type's max size, the
  embedding accepts its protocol (connect: incremental cooperative only) and every member's
  bytes decode. Any refusal is GROUP_ID_NOT_FOUND, saying why. The modern group starts at
  group epoch = assignment epoch = the classic generation, each member STABLE at that epoch
  owning (and targeted with) what it runs (the first claimer of an item keeps it); parked
  JoinGroup/SyncGroup requests are answered REBALANCE_IN_PROGRESS and the classic group is
  tombstoned.
- Classic members go through the engine's pipeline (`advance`) and never compute. JoinGroup
  updates the member from its metadata, reconciles it and answers at once: generation =
  member epoch, no leader, no members. SyncGroup answers its assignment in the embedded
  protocol, or REBALANCE_IN_PROGRESS if the target moved past it. Heartbeat answers
  REBALANCE_IN_PROGRESS while it must rejoin: to revoke, to learn a newer target, or to pick
  up items others released. Revoke before assign holds as for any member; two deadlines of
  its rebalance timeout (sync after join, rejoin when told) keep a classic member's holds
  finite.
- Downgrade: when a removal leaves only classic members, the policy allows downgrades, they
  fit `group.max.size` and share a protocol, the group becomes a classic group, Stable with
  each member's assignment in the embedded protocol, and at once prepares a rebalance so the
  members rejoin and elect a leader. The modern group's records are tombstoned. Its
  generation is the highest member epoch, the one the members that reached the latest
  target heartbeat with: they are told REBALANCE_IN_PROGRESS and rejoin keeping what they
  own. Kafka takes the group epoch, the same value once the group has settled; but the
  group epoch runs ahead of every member while a newer target is on its way (and here the
  departure itself bumped it), and a generation nobody holds would tell every member
  ILLEGAL_GENERATION, on which a consumer drops its partitions as lost. A member behind the
  others is told ILLEGAL_GENERATION, as Kafka tells any member of an older generation: it
  is still a member, and rejoins with its member id.
- A classic JoinGroup to an empty modern group deletes it and creates a classic group.
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any, Protocol

from connect_rebalance.errors import ErrorCode, KafkaApiError
from coordinator.groups.classic import (
    ClassicGroup,
    ClassicGroups,
    ClassicMember,
    ClassicState,
    join_error,
    leave_identities,
    sync_response,
)
from coordinator.groups.context import GroupContext
from coordinator.groups.modern.engine import ModernGroups
from coordinator.groups.modern.group import Member, ModernGroup
from coordinator.groups.reconciliation import MemberAssignment, MemberState
from coordinator.groups.records import GroupMetadataRecord
from coordinator.groups.requests import CONVERSION, JOIN, REBALANCE_TIMEOUT, SUBSCRIPTION_CHANGE, GroupRequest

MEMBER_ID_REQUIRED_FROM_VERSION = 4
POLICIES = {
    "bidirectional": (True, True),
    "upgrade": (True, False),
    "downgrade": (False, True),
    "disabled": (False, False),
}
Protocols = list[tuple[str, bytes]]


class Embedding(Protocol):
    """How a group type's classic members are read and answered (its embedded protocol)."""

    protocol_type: str
    policy_setting: str

    def offered(self, protocols: Protocols) -> list[str]:
        """The protocol names the group type can run its classic members on, in order."""

    def upgrade_refusal(self, classic: ClassicGroup) -> str | None: ...

    def converted(
        self, member: ClassicMember, protocol: str, claimed: frozenset[Any]
    ) -> tuple[Any, frozenset[Any]]:
        """A classic group's member as (profile, what it runs that no earlier member claimed);
        ValueError if its bytes do not decode."""

    def write_converted_target(
        self, group: Any, generation: int, targets: dict[str, Any], protocol: str
    ) -> None: ...

    def parse_join(self, protocols: Protocols, chosen: str) -> Any:
        """A JoinGroup's metadata, read; ValueError if it does not decode."""

    def joined(
        self, request: GroupRequest, profile: Any, protocols: Protocols, parsed: Any
    ) -> tuple[Any, Any, bool]:
        """A JoinGroup's member: (profile, owned items, whether the target must change)."""

    def rejoin_epoch(self, group: Any) -> int:
        """The epoch a classic member behind must rejoin for."""

    def sync_assignment(self, group: Any, member: Member[Any], protocol: str) -> bytes: ...

    def downgrade_assignment(self, group: Any, member: Member[Any]) -> bytes: ...


class ClassicBridge:
    def __init__(
        self,
        ctx: GroupContext,
        engine: ModernGroups[Any],
        classic: ClassicGroups,
        embedding: Embedding,
        policy: str,
    ) -> None:
        self.ctx = ctx
        self.engine = engine
        self.classic = classic
        self.embedding = embedding
        self.upgrade_enabled, self.downgrade_enabled = POLICIES[policy.lower()]
        engine.bridge = self

    # -- upgrade --------------------------------------------------------------------------

    def upgrade(self, classic: Any, now_ms: int) -> ModernGroup[Any] | None:
        """Convert a non-empty classic group for a joining modern member; None for another kind
        of group; raises GROUP_ID_NOT_FOUND saying why the classic group may not be converted."""
        if not isinstance(classic, ClassicGroup):
            return None
        group_id, embedding, engine = classic.group_id, self.embedding, self.engine

        def refuse(why: str) -> KafkaApiError:
            return KafkaApiError(
                ErrorCode.GROUP_ID_NOT_FOUND,
                f"Cannot upgrade classic group {group_id} to a {engine.kind.lower()}: {why}.",
            )

        if not self.upgrade_enabled:
            raise refuse(f"the online upgrade is disabled ({embedding.policy_setting})")
        if classic.state == ClassicState.DEAD:
            raise refuse("the group is being deleted")
        if classic.protocol_type != embedding.protocol_type:
            raise refuse(f"its protocol type is {classic.protocol_type!r}, not {embedding.protocol_type!r}")
        if len(classic.members) > engine.max_size:
            raise refuse(f"it has more members than group.{engine.group_class.type_name}.max.size")
        refusal = embedding.upgrade_refusal(classic)
        if refusal is not None:
            raise refuse(refusal)
        protocol = classic.protocol_name or (
            classic.select_protocol() if classic.candidate_protocols() else ""
        )
        converted: dict[str, tuple[Any, frozenset[Any]]] = {}
        claimed: frozenset[Any] = frozenset()
        for m in classic.members.values():
            try:
                profile, items = embedding.converted(m, protocol, claimed)
            except (ValueError, IndexError) as exc:
                raise refuse(f"member {m.member_id}: {exc}") from exc
            converted[m.member_id] = (profile, items)
            claimed |= items
        self.classic.forget(classic)
        emit, generation = self.ctx.emit, classic.generation
        emit(GroupMetadataRecord(group_id, None))
        self.ctx.triggered(group_id, CONVERSION)
        emit(engine.epoch_record(group_id, generation))
        for member_id, (profile, items) in converted.items():
            stable = MemberAssignment(MemberState.STABLE, generation, generation, items, frozenset())
            emit(engine.member_record(group_id, member_id, profile))
            emit(engine.assignment_record(group_id, member_id, stable))
        group = self.ctx.groups[group_id]
        targets = {member_id: items for member_id, (_, items) in converted.items()}
        embedding.write_converted_target(group, generation, targets, protocol)
        for member in group.members.values():
            engine.refresh_session(group, member, now_ms)
        return group  # type: ignore[no-any-return]

    # -- downgrade ------------------------------------------------------------------------

    def maybe_downgrade(self, group: Any, now_ms: int) -> None:
        """After a removal: a group of classic members only turns classic again, if allowed."""
        members = list(group.members.values())
        if not (
            members
            and self.downgrade_enabled
            and all(m.classic is not None for m in members)
            and len(members) <= self.ctx.settings.max_group_size
        ):
            return
        group_id, embedding = group.group_id, self.embedding
        classic = ClassicGroup(
            group_id,
            state=ClassicState.STABLE,
            state_timestamp_ms=now_ms,
            generation=max(m.assignment.member_epoch for m in members),
            protocol_type=embedding.protocol_type,
        )
        for m in members:
            profile = m.profile
            classic.members[m.member_id] = ClassicMember(
                m.member_id, m.instance_id, profile.client_id, profile.client_host, m.rebalance_timeout_ms,
                m.classic.session_timeout_ms, embedding.protocol_type, list(m.classic.protocols),
                embedding.downgrade_assignment(group, m),
            )  # fmt: skip
            if m.instance_id is not None:
                classic.static_members[m.instance_id] = m.member_id
        if not embedding.offered([(n, b"") for n in classic.candidate_protocols()]):
            return  # the members share no protocol: they could not form a classic group
        classic.protocol_name = classic.select_protocol()
        classic.leader_id = members[0].member_id
        for m in members:
            self.engine.cancel_timers(group_id, m.member_id)
            for record in self.engine.member_tombstones(group_id, m.member_id):
                self.ctx.emit(record)
        for record in group.tombstones():
            self.ctx.emit(record)
        self.classic.start(classic, now_ms)

    # -- JoinGroup ------------------------------------------------------------------------

    def join(self, request: GroupRequest, now_ms: int) -> None:
        body = request.body
        group = self.ctx.groups[body.group_id]
        if group.is_empty():
            # An empty modern group gives way to a classic group (its offsets stay).
            for record in group.tombstones():
                self.ctx.emit(record)
            self.classic.join(request, now_ms)
            return
        member_id = body.member_id or ""
        try:
            fields = self._join(group, request, member_id, now_ms)
        except KafkaApiError as exc:
            fields = join_error(
                request.version, exc.code, exc.member_id if isinstance(exc, _MemberIdError) else member_id
            )
        self.ctx.reply(request.request_id, fields)

    def _join(self, group: Any, request: GroupRequest, member_id: str, now_ms: int) -> dict[str, object]:
        body, settings = request.body, self.ctx.settings
        protocols: Protocols = [(p.name, bytes(p.metadata)) for p in body.protocols]
        if not settings.min_session_timeout_ms <= body.session_timeout_ms <= settings.max_session_timeout_ms:
            raise KafkaApiError(ErrorCode.INVALID_SESSION_TIMEOUT, "session timeout out of bounds")
        kind = f"Group {group.group_id} is a {self.engine.kind.lower()}"
        if not self.upgrade_enabled and not self.downgrade_enabled:
            raise KafkaApiError(
                ErrorCode.INCONSISTENT_GROUP_PROTOCOL,
                f"{kind} and {self.embedding.policy_setting} is disabled.",
            )
        if body.protocol_type != self.embedding.protocol_type:
            raise KafkaApiError(
                ErrorCode.INCONSISTENT_GROUP_PROTOCOL,
                f"{kind}: protocol type {body.protocol_type!r} is not {self.embedding.protocol_type!r}.",
            )
        offered = self.embedding.offered(protocols)
        if not offered:
            raise KafkaApiError(
                ErrorCode.INCONSISTENT_GROUP_PROTOCOL, f"{kind}: none of its protocols is usable."
            )
        common = self._common(group, member_id, offered)
        if not common:
            raise KafkaApiError(
                ErrorCode.INCONSISTENT_GROUP_PROTOCOL,
                f"The protocols {offered} share none with the group's other classic members.",
            )
        try:
            parsed = self.embedding.parse_join(protocols, common[0])
        except ValueError as exc:
            raise KafkaApiError(ErrorCode.INCONSISTENT_GROUP_PROTOCOL, str(exc)) from exc
        member, joined = self._member_for(group, request, member_id)
        profile, owned, changed = self.embedding.joined(request, member.profile, protocols, parsed)
        bump = JOIN if joined else SUBSCRIPTION_CHANGE if changed else None
        self.engine.advance(group, member, profile, joined, bump, owned, now_ms)
        member_id = member.member_id
        self.ctx.cancel(self.engine.key("classic-join", group.group_id, member_id))
        self._deadline("classic-sync", group, group.members[member_id], now_ms)
        return {
            "error_code": ErrorCode.NONE,
            "generation_id": group.members[member_id].assignment.member_epoch,
            "protocol_type": self.embedding.protocol_type,
            "protocol_name": common[0],
            "leader": "",  # a classic member of a modern group never assigns
            "skip_assignment": False,
            "member_id": member_id,
            "members": [],
        }

    def _common(self, group: Any, member_id: str, offered: list[str]) -> list[str]:
        """The member's usable protocols every other classic member offers too, in its order."""
        others = [
            {n for n, _ in m.classic.protocols}
            for m in group.members.values()
            if m.classic is not None and m.member_id != member_id
        ]
        return [n for n in offered if all(n in names for names in others)]

    def _member_for(self, group: Any, request: GroupRequest, member_id: str) -> tuple[Member[Any], bool]:
        instance_id = request.body.group_instance_id if request.version >= 5 else None
        engine = self.engine
        if instance_id is not None:
            holder = group.static_member(instance_id)
            if holder is not None and member_id and holder.member_id != member_id:
                raise KafkaApiError(
                    ErrorCode.FENCED_INSTANCE_ID, f"Instance {instance_id} is another member's."
                )
            if holder is not None and not member_id:
                # A restarted static member takes its predecessor's place and assignment.
                return engine.replace_static(group, holder, self.ctx.new_member_id(request.client_id)), False
            if holder is not None:
                return holder, False
        elif not member_id and request.version >= MEMBER_ID_REQUIRED_FROM_VERSION:
            engine.check_room(group)
            raise _MemberIdError(self.ctx.new_member_id(request.client_id))
        existing = group.members.get(member_id) if member_id else None
        if existing is not None:
            if existing.classic is None:
                raise KafkaApiError(
                    ErrorCode.UNKNOWN_MEMBER_ID,
                    f"Member {member_id} uses the {engine.group_class.type_name} protocol.",
                )
            return existing, False
        engine.check_room(group)
        return Member(member_id or self.ctx.new_member_id(request.client_id), engine.empty_profile()), True

    # -- SyncGroup, Heartbeat -------------------------------------------------------------

    def _classic_member(self, group: Any, body: Any, version: int) -> Member[Any]:
        instance_id = body.group_instance_id if version >= 3 else None
        if instance_id is not None:
            holder = group.static_member(instance_id)
            if holder is None:
                raise KafkaApiError(ErrorCode.UNKNOWN_MEMBER_ID, f"Instance {instance_id} is unknown.")
            if holder.member_id != body.member_id:
                raise KafkaApiError(
                    ErrorCode.FENCED_INSTANCE_ID, f"Instance {instance_id} is another member's."
                )
        member = group.members.get(body.member_id)
        if member is None or member.classic is None:
            raise KafkaApiError(
                ErrorCode.UNKNOWN_MEMBER_ID, f"Member {body.member_id} is not a classic member."
            )
        if body.generation_id != member.assignment.member_epoch:
            raise KafkaApiError(
                ErrorCode.ILLEGAL_GENERATION,
                f"generation {body.generation_id} is not the member's epoch {member.assignment.member_epoch}",
            )
        return member  # type: ignore[no-any-return]

    def sync(self, request: GroupRequest, now_ms: int) -> None:
        body, version = request.body, request.version
        group = self.ctx.groups[body.group_id]
        try:
            member = self._classic_member(group, body, version)
            chosen = self._common(
                group, member.member_id, self.embedding.offered(list(member.classic.protocols))
            )
            if version >= 5 and (
                (body.protocol_type is not None and body.protocol_type != self.embedding.protocol_type)
                or (body.protocol_name is not None and body.protocol_name not in chosen)
            ):
                raise KafkaApiError(ErrorCode.INCONSISTENT_GROUP_PROTOCOL, "protocol mismatch")
            self.engine.refresh_session(group, member, now_ms)
            self.ctx.cancel(self.engine.key("classic-sync", group.group_id, member.member_id))
            a = member.assignment
            if group.assignment_epoch > a.member_epoch and a.state != MemberState.UNREVOKED:
                self._expect_rejoin(group, member, now_ms)
                raise KafkaApiError(ErrorCode.REBALANCE_IN_PROGRESS, "the target moved on; rejoin")
        except KafkaApiError as exc:
            self.ctx.reply(request.request_id, sync_response(exc.code))
            return
        offered = self.embedding.offered(list(member.classic.protocols))
        name = (body.protocol_name if version >= 5 else None) or (chosen or offered or [""])[0]
        self.ctx.reply(
            request.request_id,
            {
                "error_code": ErrorCode.NONE,
                "protocol_type": self.embedding.protocol_type,
                "protocol_name": name if version >= 5 else None,
                "assignment": self.embedding.sync_assignment(group, member, name),
            },
        )

    def heartbeat(self, request: GroupRequest, now_ms: int) -> None:
        body = request.body
        group = self.ctx.groups[body.group_id]
        error = ErrorCode.NONE
        try:
            member = self._classic_member(group, body, request.version)
            self.engine.refresh_session(group, member, now_ms)
            if must_rejoin(
                member.assignment,
                self.embedding.rejoin_epoch(group),
                group.target_of(member.member_id),
                self.engine.held_by_others(group, member.member_id),
            ):
                self._expect_rejoin(group, member, now_ms)
                error = ErrorCode.REBALANCE_IN_PROGRESS
        except KafkaApiError as exc:
            error = exc.code
        self.ctx.reply(request.request_id, {"throttle_time_ms": 0, "error_code": error})

    def _expect_rejoin(self, group: Any, member: Member[Any], now_ms: int) -> None:
        """A member told to rejoin has its rebalance timeout to do so (the first telling counts)."""
        if (
            self.ctx.timers.deadline(self.engine.key("classic-join", group.group_id, member.member_id))
            is None
        ):
            self._deadline("classic-join", group, member, now_ms)

    def _deadline(self, kind: str, group: Any, member: Member[Any], now_ms: int) -> None:
        group_id, member_id = group.group_id, member.member_id
        self.ctx.schedule(
            self.engine.key(kind, group_id, member_id),
            now_ms + member.rebalance_timeout_ms,
            lambda now: self.on_classic_timeout(group_id, member_id, now),
        )

    def on_classic_timeout(self, group_id: str, member_id: str, now_ms: int) -> None:
        """A classic member did not sync after joining, or did not rejoin when told: remove it."""
        group = self.ctx.groups.get(group_id)
        if isinstance(group, self.engine.group_class):
            member = group.members.get(member_id)
            if member is not None and member.classic is not None:
                self.engine.remove(group, member_id, now_ms, cause=REBALANCE_TIMEOUT)

    # -- LeaveGroup -----------------------------------------------------------------------

    def leave(self, request: GroupRequest, now_ms: int) -> None:
        body, version = request.body, request.version
        group = self.ctx.groups[body.group_id]
        results, leaving = [], []
        for member_id, instance_id in leave_identities(body, version):
            found = (
                group.static_member(instance_id) if instance_id is not None else group.members.get(member_id)
            )
            error = ErrorCode.NONE
            if found is None:
                error = ErrorCode.UNKNOWN_MEMBER_ID
            elif instance_id is not None and member_id and found.member_id != member_id:
                error = ErrorCode.FENCED_INSTANCE_ID
            else:
                leaving.append(found.member_id)
            results.append({"member_id": member_id, "group_instance_id": instance_id, "error_code": error})
        for member_id in dict.fromkeys(leaving):
            self.engine.remove(group, member_id, now_ms, downgrade=False)
        if leaving:
            self.maybe_downgrade(group, now_ms)
        top_error = results[0]["error_code"] if version < 3 and results else ErrorCode.NONE
        self.ctx.reply(
            request.request_id, {"throttle_time_ms": 0, "error_code": top_error, "members": results}
        )


def must_rejoin(a: MemberAssignment[Any], epoch: int, target: Iterable[Any], held_by_others: Any) -> bool:
    """A classic member rejoins to revoke, to learn a newer target, or to pick up freed items."""
    if a.member_epoch < epoch or a.state == MemberState.UNREVOKED:
        return True
    if a.state == MemberState.UNRELEASED:
        return not any(held_by_others(i) for i in target)
    return False


class _MemberIdError(KafkaApiError):
    """MEMBER_ID_REQUIRED, carrying the id the member must rejoin with."""

    def __init__(self, member_id: str) -> None:
        super().__init__(ErrorCode.MEMBER_ID_REQUIRED, "rejoin with the given member id")
        self.member_id = member_id

"""Classic groups: JoinGroup, SyncGroup, Heartbeat and LeaveGroup, as Apache Kafka runs them.

Everything that decides a classic group's state lives here. This module never touches a
socket, a file or a clock: requests arrive with `now_ms`, answers and records leave in an
`Outcome`, and deadlines are keys in the coordinator's `Timers`.

Theory of operation
-------------------
A group moves through Empty -> PreparingRebalance -> CompletingRebalance -> Stable and back
(Dead once deleted). Every rebalance is a barrier:

1. *Join phase* (PreparingRebalance). Each member (re)sends JoinGroup; the request is parked.
   The phase completes when every known member has a parked join and no member is pending,
   or when the rebalance timeout (the largest of the members') expires. A group that was
   Empty instead waits `group.initial.rebalance.delay.ms`, extended by the same delay each
   time a new member arrives, up to the rebalance timeout, so a starting fleet forms one
   generation rather than many.
2. On completion, members that did not rejoin are removed, the generation is bumped, one
   protocol is chosen by vote among the protocols every member supports, the leader is kept
   if it rejoined (else the first member), and every parked join is answered: the leader
   with every member's metadata for the chosen protocol, the others with none.
3. *Sync phase* (CompletingRebalance). Followers' SyncGroups are parked until the leader's
   arrives with the assignment; then the group is Stable, its metadata (members,
   subscriptions, assignments) is written as a record, and every parked sync is answered.
   Members that have not synced within the rebalance timeout are removed and the group
   rebalances again.

Membership details real clients depend on: JoinGroup v4+ with an empty member id is answered
MEMBER_ID_REQUIRED with a generated id, held as a *pending member* for a session timeout;
static members (`group.instance.id`) keep their place across restarts, a rejoin with a new
member id replaces the old one (whose parked requests are answered FENCED_INSTANCE_ID) and,
in a Stable group, is answered at once unless the protocol the group would select changes,
and a request naming an instance id with another member id is FENCED_INSTANCE_ID. A join
that would grow the group beyond group.max.size is GROUP_MAX_SIZE_REACHED, counted as
Kafka's `acceptJoiningMember` counts (`ClassicGroups._has_room_for`). A member awaiting its
join response is kept alive; otherwise a member that does not heartbeat within its session
timeout is removed, which starts a rebalance.

Classic requests for a consumer or connect group never reach this module: the dispatcher
hands them to that group's classic bridge (classic_bridge.py).

What is persisted: the group as of its last completed generation (GroupMetadataRecord), and
nothing of the transient join/sync phases. As in Apache Kafka (whose classic-group records
are written with `replayRecords` off), a classic group is changed in memory and its snapshot
written when a phase ends; every change is journaled, so a snapshot that cannot be written
takes the group back to where it was. Replaying the records gives a Stable (or Empty) group
whose members must heartbeat again within their session timeouts.
"""

from __future__ import annotations

from collections import Counter
from dataclasses import dataclass, field
from enum import StrEnum
from typing import Any

from connect_rebalance import consumer_protocol
from connect_rebalance.errors import ErrorCode, KafkaApiError
from coordinator.groups.context import GroupContext
from coordinator.groups.records import ClassicGroupSnapshot, ClassicMemberSnapshot, GroupMetadataRecord
from coordinator.groups.requests import (
    CONVERSION,
    JOIN,
    LEAVE,
    REBALANCE_TIMEOUT,
    SESSION_EXPIRY,
    STATIC_REPLACEMENT,
    SUBSCRIPTION_CHANGE,
    GroupRequest,
    Trigger,
)

MEMBER_ID_REQUIRED_FROM_VERSION = 4


class ClassicState(StrEnum):
    EMPTY = "Empty"
    PREPARING_REBALANCE = "PreparingRebalance"
    COMPLETING_REBALANCE = "CompletingRebalance"
    STABLE = "Stable"
    DEAD = "Dead"


@dataclass(slots=True)
class ParkedRequest:
    request_id: int
    version: int


@dataclass
class ClassicMember:
    member_id: str
    group_instance_id: str | None
    client_id: str
    client_host: str
    rebalance_timeout_ms: int
    session_timeout_ms: int
    protocol_type: str
    protocols: list[tuple[str, bytes]]
    assignment: bytes = b""
    join: ParkedRequest | None = None
    sync: ParkedRequest | None = None

    def metadata(self, protocol_name: str | None) -> bytes:
        for name, metadata in self.protocols:
            if name == protocol_name:
                return metadata
        return b""

    def snapshot(self, protocol_name: str | None) -> ClassicMemberSnapshot:
        return ClassicMemberSnapshot(
            self.member_id,
            self.group_instance_id,
            self.client_id,
            self.client_host,
            self.rebalance_timeout_ms,
            self.session_timeout_ms,
            self.metadata(protocol_name),
            self.assignment,
        )


@dataclass
class ClassicGroup:
    group_id: str
    state: ClassicState = ClassicState.EMPTY
    state_timestamp_ms: int = -1
    generation: int = 0
    protocol_type: str | None = None
    protocol_name: str | None = None
    leader_id: str | None = None
    members: dict[str, ClassicMember] = field(default_factory=dict)
    pending_members: set[str] = field(default_factory=set)
    static_members: dict[str, str] = field(default_factory=dict)
    pending_sync: set[str] = field(default_factory=set)
    in_initial_delay: bool = False
    new_member_added: bool = False
    initial_delay_remaining_ms: int = 0
    # Why the rebalance under way started, and who left it since: the next generation's triggers.
    triggers: list[Trigger] = field(default_factory=list)

    type_name = "classic"

    def is_empty(self) -> bool:
        return (
            self.state in (ClassicState.EMPTY, ClassicState.DEAD)
            and not self.members
            and not self.pending_members
        )

    @property
    def empty_since_ms(self) -> int:
        return self.state_timestamp_ms

    def tombstones(self) -> list[GroupMetadataRecord]:
        return [GroupMetadataRecord(self.group_id, None)]

    def subscribed_topics(self) -> set[str] | None:
        """What a live `consumer`-protocol group subscribes to, read from its members' metadata;
        None for a live group of another embedded protocol (unknown)."""
        if self.state == ClassicState.EMPTY:
            return set()
        if self.protocol_type != consumer_protocol.PROTOCOL_TYPE:
            return None
        metadata = (m.metadata(self.protocol_name) for m in self.members.values())
        return {topic for data in metadata for topic in consumer_protocol.subscribed_topics(data)}

    def validate_offset_commit(
        self, member_id: str, instance_id: str | None, generation: int, version: int
    ) -> None:
        """Kafka's rules: a simple commit (negative generation) is accepted by an Empty group
        whatever member id it carries (an admin client sends none; librdkafka's `assign()`-ed
        consumer under `group.protocol=consumer` sends its own); otherwise a member of the
        current generation, not in the middle of an assignment."""
        if self.state == ClassicState.DEAD:
            raise KafkaApiError(ErrorCode.COORDINATOR_NOT_AVAILABLE, "the group is being deleted")
        if generation < 0 and self.state == ClassicState.EMPTY:
            return
        if instance_id is not None:
            registered = self.static_members.get(instance_id)
            if registered is None:
                raise KafkaApiError(ErrorCode.UNKNOWN_MEMBER_ID, f"instance {instance_id!r} is not a member")
            if registered != member_id:
                raise KafkaApiError(
                    ErrorCode.FENCED_INSTANCE_ID, f"instance {instance_id!r} has another member id"
                )
        if member_id not in self.members:
            raise KafkaApiError(ErrorCode.UNKNOWN_MEMBER_ID, f"member {member_id!r} is not in the group")
        if generation != self.generation:
            raise KafkaApiError(
                ErrorCode.ILLEGAL_GENERATION, f"generation {generation} is not the group's {self.generation}"
            )
        if self.state == ClassicState.COMPLETING_REBALANCE:
            raise KafkaApiError(ErrorCode.REBALANCE_IN_PROGRESS, "the group is completing a rebalance")

    def validate_offset_fetch(self, member_id: str | None, epoch: int) -> None:
        """Anyone may read a classic group's offsets."""

    def transition(self, state: ClassicState, now_ms: int) -> None:
        self.state = state
        self.state_timestamp_ms = now_ms

    def rebalance_timeout_ms(self) -> int:
        return max((m.rebalance_timeout_ms for m in self.members.values()), default=0)

    def accepts_protocols(self, protocol_type: str, names: list[str]) -> bool:
        """A joining member must share the group's protocol type and one protocol with all."""
        if not self.members:
            return True
        if protocol_type != self.protocol_type:
            return False
        return bool(self.candidate_protocols() & set(names))

    def candidate_protocols(self) -> set[str]:
        sets = [{name for name, _ in m.protocols} for m in self.members.values()]
        return set.intersection(*sets) if sets else set()

    def select_protocol(self) -> str:
        """Each member votes for its most preferred candidate; the most votes win (ties: first)."""
        candidates = self.candidate_protocols()
        votes = Counter(
            next(name for name, _ in m.protocols if name in candidates) for m in self.members.values()
        )
        best = max(votes.values())
        for member in self.members.values():  # deterministic tie-break: members' order
            for name, _ in member.protocols:
                if votes.get(name) == best:
                    return name
        raise AssertionError("no protocol selected")

    def all_members_joined(self) -> bool:
        return not self.pending_members and all(m.join is not None for m in self.members.values())

    def described(self) -> dict[str, object]:
        """DescribeGroups' view, as Kafka 4.x gives it: the chosen protocol and each member's
        metadata for it only while Stable (empty in every other state, CompletingRebalance
        included: the generation's protocol and subscriptions are not settled until the leader
        has assigned); each member's assignment as it holds it."""
        stable = self.state == ClassicState.STABLE
        return {
            "group_state": self.state.value,
            "protocol_type": self.protocol_type or "",
            "protocol_data": (self.protocol_name or "") if stable else "",
            "members": [
                {
                    "member_id": m.member_id,
                    "group_instance_id": m.group_instance_id,
                    "client_id": m.client_id,
                    "client_host": m.client_host,
                    "member_metadata": m.metadata(self.protocol_name) if stable else b"",
                    "member_assignment": m.assignment,
                }
                for m in self.members.values()
            ],
        }

    def snapshot(self) -> ClassicGroupSnapshot:
        return ClassicGroupSnapshot(
            self.protocol_type or "",
            self.generation,
            self.protocol_name,
            self.leader_id,
            self.state_timestamp_ms,
            tuple(m.snapshot(self.protocol_name) for m in self.members.values()),
        )

    @classmethod
    def from_snapshot(cls, group_id: str, snapshot: ClassicGroupSnapshot) -> ClassicGroup:
        group = cls(
            group_id,
            state=ClassicState.STABLE if snapshot.members else ClassicState.EMPTY,
            state_timestamp_ms=snapshot.state_timestamp_ms,
            generation=snapshot.generation,
            protocol_type=snapshot.protocol_type or None,
            protocol_name=snapshot.protocol_name,
            leader_id=snapshot.leader_id,
        )
        for m in snapshot.members:
            group.members[m.member_id] = ClassicMember(
                m.member_id,
                m.group_instance_id,
                m.client_id,
                m.client_host,
                m.rebalance_timeout_ms,
                m.session_timeout_ms,
                snapshot.protocol_type,
                [(snapshot.protocol_name or "", m.subscription)],
                m.assignment,
            )
            if m.group_instance_id is not None:
                group.static_members[m.group_instance_id] = m.member_id
        return group


# -- timer keys -----------------------------------------------------------------------------


def session_key(group_id: str, member_id: str) -> tuple[str, str, str]:
    return (group_id, "classic-session", member_id)


def pending_member_key(group_id: str, member_id: str) -> tuple[str, str, str]:
    return (group_id, "classic-pending", member_id)


def join_key(group_id: str) -> tuple[str, str]:
    return (group_id, "classic-join")


def sync_key(group_id: str) -> tuple[str, str]:
    return (group_id, "classic-sync")


# -- responses ------------------------------------------------------------------------------


def join_error(version: int, code: ErrorCode, member_id: str = "") -> dict[str, object]:
    return {
        "error_code": code,
        "generation_id": -1,
        "protocol_type": None,
        "protocol_name": None if version >= 7 else "",
        "leader": "",
        "member_id": member_id,
        "members": [],
    }


def sync_response(
    code: ErrorCode, assignment: bytes = b"", group: ClassicGroup | None = None
) -> dict[str, object]:
    ok = code == ErrorCode.NONE and group is not None
    return {
        "error_code": code,
        "protocol_type": group.protocol_type if ok else None,
        "protocol_name": group.protocol_name if ok else None,
        "assignment": assignment,
    }


class ClassicGroups:
    """The classic-protocol handlers, over the groups table of the context."""

    def __init__(self, ctx: GroupContext) -> None:
        self.ctx = ctx

    def _group(self, group_id: str, changing: bool = True) -> ClassicGroup | None:
        group = self.ctx.groups.get(group_id)
        if not isinstance(group, ClassicGroup):
            return None
        if changing:
            self.ctx.journal.keep(group)  # whatever this request changes can be taken back
        return group

    def _member(self, member: ClassicMember) -> ClassicMember:
        """A member about to be changed in place (kept, so the change can be taken back)."""
        self.ctx.journal.keep(member)
        return member

    def refresh_session(self, group: ClassicGroup, member: ClassicMember, now_ms: int) -> None:
        group_id, member_id = group.group_id, member.member_id
        self.ctx.schedule(
            session_key(group_id, member_id),
            now_ms + member.session_timeout_ms,
            lambda now: self.on_session_expired(group_id, member_id, now),
        )

    def _schedule_join(self, group: ClassicGroup, deadline_ms: int) -> None:
        group_id = group.group_id
        self.ctx.schedule(join_key(group_id), deadline_ms, lambda now: self.on_join_deadline(group_id, now))

    # -- JoinGroup ------------------------------------------------------------------------

    def join(self, request: GroupRequest, now_ms: int) -> None:
        body, version = request.body, request.version
        member_id = body.member_id or ""
        instance_id = body.group_instance_id if version >= 5 else None
        protocols = [(p.name, bytes(p.metadata)) for p in body.protocols]

        def fail(code: ErrorCode, member: str = member_id) -> None:
            self.ctx.reply(request.request_id, join_error(version, code, member))

        if not body.group_id:
            return fail(ErrorCode.INVALID_GROUP_ID)
        if (
            not self.ctx.settings.min_session_timeout_ms
            <= body.session_timeout_ms
            <= self.ctx.settings.max_session_timeout_ms
        ):
            return fail(ErrorCode.INVALID_SESSION_TIMEOUT)
        existing = self.ctx.groups.get(body.group_id)
        if existing is not None and not isinstance(existing, ClassicGroup):
            return fail(ErrorCode.INCONSISTENT_GROUP_PROTOCOL)
        if existing is not None:
            self.ctx.journal.keep(existing)
        if existing is None and member_id:
            return fail(ErrorCode.UNKNOWN_MEMBER_ID)
        if existing is not None and not self._has_room_for(existing, member_id):
            return self._refuse_joining_member(existing, member_id, request, now_ms)
        if not body.protocol_type or not protocols:
            return fail(ErrorCode.INCONSISTENT_GROUP_PROTOCOL)
        group = existing or ClassicGroup(body.group_id, state_timestamp_ms=now_ms)
        if group.state == ClassicState.DEAD:
            return fail(ErrorCode.COORDINATOR_NOT_AVAILABLE)
        if not group.accepts_protocols(body.protocol_type, [name for name, _ in protocols]):
            return fail(ErrorCode.INCONSISTENT_GROUP_PROTOCOL)
        rebalance_timeout = body.rebalance_timeout_ms if version >= 1 else body.session_timeout_ms
        candidate = ClassicMember(
            member_id, instance_id, request.client_id, request.client_host, rebalance_timeout,
            body.session_timeout_ms, body.protocol_type, protocols,
        )  # fmt: skip
        if existing is None:
            self.ctx.add_group(group)
        if not member_id:
            self._join_unknown_member(group, candidate, request, now_ms)
        else:
            self._join_known_member(group, candidate, request, now_ms)

    def _join_unknown_member(
        self, group: ClassicGroup, candidate: ClassicMember, request: GroupRequest, now_ms: int
    ) -> None:
        version = request.version
        candidate.member_id = self.ctx.new_member_id(request.client_id)
        if candidate.group_instance_id is not None and candidate.group_instance_id in group.static_members:
            self._replace_static_member(group, candidate, request, now_ms)
            return
        if candidate.group_instance_id is None and version >= MEMBER_ID_REQUIRED_FROM_VERSION:
            group.pending_members.add(candidate.member_id)
            group_id, member_id = group.group_id, candidate.member_id
            self.ctx.schedule(
                pending_member_key(group_id, member_id),
                now_ms + candidate.session_timeout_ms,
                lambda now: self.on_pending_member_expired(group_id, member_id, now),
            )
            self.ctx.reply(
                request.request_id, join_error(version, ErrorCode.MEMBER_ID_REQUIRED, candidate.member_id)
            )
            return
        self._add_member_and_rebalance(group, candidate, request, now_ms)

    def _has_room_for(self, group: ClassicGroup, member_id: str) -> bool:
        """Kafka's `acceptJoiningMember`: whether group.max.size lets this join in.

        An Empty group takes every join. While preparing a rebalance, a member already awaiting
        its join answer is in; anyone else counts against the members awaiting theirs (not all
        members: those that do not rejoin are about to be removed, and a lowered limit then
        leaves out the last to rejoin). Otherwise members are in and newcomers count against
        the members. Members still to rejoin after MEMBER_ID_REQUIRED do not count.
        """
        limit = self.ctx.settings.max_group_size
        if group.state in (ClassicState.EMPTY, ClassicState.DEAD) or len(group.members) < limit:
            return True  # nobody awaits a join answer without being a member
        member = group.members.get(member_id)
        if group.state == ClassicState.PREPARING_REBALANCE:
            if member is not None and member.join is not None:
                return True
            return sum(1 for m in group.members.values() if m.join is not None) < limit
        return member is not None

    def _refuse_joining_member(
        self, group: ClassicGroup, member_id: str, request: GroupRequest, now_ms: int
    ) -> None:
        """GROUP_MAX_SIZE_REACHED, and the member (or pending member) named is out of the group."""
        if member_id in group.pending_members:
            group.pending_members.discard(member_id)
            self.ctx.cancel(pending_member_key(group.group_id, member_id))
        else:
            self.remove_member(group, member_id)
        self.ctx.reply(request.request_id, join_error(request.version, ErrorCode.GROUP_MAX_SIZE_REACHED))
        self._try_complete_join(group, now_ms)

    def _join_known_member(
        self, group: ClassicGroup, candidate: ClassicMember, request: GroupRequest, now_ms: int
    ) -> None:
        version, member_id = request.version, candidate.member_id
        if member_id in group.pending_members:
            group.pending_members.discard(member_id)
            self.ctx.cancel(pending_member_key(group.group_id, member_id))
            self._add_member_and_rebalance(group, candidate, request, now_ms)
            return
        fenced = self._static_member_error(group, member_id, candidate.group_instance_id)
        if fenced is not None:
            self.ctx.reply(request.request_id, join_error(version, fenced, member_id))
            return
        member = group.members.get(member_id)
        if member is None or group.state in (ClassicState.EMPTY, ClassicState.DEAD):
            self.ctx.reply(request.request_id, join_error(version, ErrorCode.UNKNOWN_MEMBER_ID, member_id))
            return
        # A follower rejoining with the same protocols learns the current generation again;
        # the leader rejoining, or anyone changing protocols, starts a rebalance.
        unchanged = member.protocols == candidate.protocols
        settled = group.state == ClassicState.COMPLETING_REBALANCE or (
            group.state == ClassicState.STABLE and member_id != group.leader_id
        )
        if group.state == ClassicState.PREPARING_REBALANCE:
            self._update_member(member, candidate, request)
            self._try_complete_join(group, now_ms)
        elif settled and unchanged:
            self.refresh_session(group, member, now_ms)
            self.ctx.reply(request.request_id, self._join_response(group, member, version))
        else:
            self._update_member(member, candidate, request)
            group.triggers.append(Trigger(JOIN if unchanged else SUBSCRIPTION_CHANGE, member_id))
            self.prepare_rebalance(group, now_ms)

    def _static_member_error(
        self, group: ClassicGroup, member_id: str, instance_id: str | None
    ) -> ErrorCode | None:
        if instance_id is None:
            return None
        registered = group.static_members.get(instance_id)
        if registered is None:
            return ErrorCode.UNKNOWN_MEMBER_ID
        if registered != member_id:
            return ErrorCode.FENCED_INSTANCE_ID
        return None

    def _update_member(self, member: ClassicMember, candidate: ClassicMember, request: GroupRequest) -> None:
        self._member(member)
        if member.join is not None and member.join.request_id != request.request_id:
            # A second join while one is parked replaces it; the first is told to rejoin.
            self.ctx.reply(
                member.join.request_id,
                join_error(member.join.version, ErrorCode.REBALANCE_IN_PROGRESS, member.member_id),
            )
        member.protocols = candidate.protocols
        member.protocol_type = candidate.protocol_type
        member.rebalance_timeout_ms = candidate.rebalance_timeout_ms
        member.session_timeout_ms = candidate.session_timeout_ms
        member.client_id, member.client_host = candidate.client_id, candidate.client_host
        member.join = ParkedRequest(request.request_id, request.version)
        self.ctx.cancel(session_key(request.body.group_id, member.member_id))  # kept alive while parked

    def _add_member_and_rebalance(
        self, group: ClassicGroup, member: ClassicMember, request: GroupRequest, now_ms: int
    ) -> None:
        if not group.members:
            group.protocol_type = member.protocol_type
        group.members[member.member_id] = member
        if member.group_instance_id is not None:
            group.static_members[member.group_instance_id] = member.member_id
        member.join = ParkedRequest(request.request_id, request.version)
        group.new_member_added = True
        group.triggers.append(Trigger(JOIN, member.member_id))
        if group.state == ClassicState.PREPARING_REBALANCE:
            self._try_complete_join(group, now_ms)
        else:
            self.prepare_rebalance(group, now_ms)

    def _replace_static_member(
        self, group: ClassicGroup, candidate: ClassicMember, request: GroupRequest, now_ms: int
    ) -> None:
        """A static member rejoined with a fresh member id: it takes the old member's place.

        As in Kafka's GroupMetadataManager, the new member keeps the old one's assignment and
        brings its own protocols (metadata bytes included) and timeouts. In a Stable group
        the join is answered at once, at the same generation, unless the protocol the group
        would now select differs from the one it runs: the bytes are not compared, because
        clients put changing data in them (the Java consumer's generation and owned
        partitions, the cooperative-sticky assignor's user data). The member then gets its old
        assignment through SyncGroup and nobody else notices. In any other state the member
        takes part in the rebalance (one starts if the group was completing one, since the
        leader may be assigning to the old member id).
        """
        assert candidate.group_instance_id is not None
        old_id = group.static_members[candidate.group_instance_id]
        old = group.members[old_id]
        self.ctx.cancel(session_key(group.group_id, old_id))
        for parked in (old.join, old.sync):
            if parked is not None:
                fields = (
                    join_error(parked.version, ErrorCode.FENCED_INSTANCE_ID, old_id)
                    if parked is old.join
                    else sync_response(ErrorCode.FENCED_INSTANCE_ID)
                )
                self.ctx.reply(parked.request_id, fields)
        leader_before = group.leader_id
        candidate.assignment = old.assignment
        # In the old member's place: the order breaks ties in the protocol vote.
        group.members = {
            (candidate.member_id if member_id == old_id else member_id): (
                candidate if member_id == old_id else member
            )
            for member_id, member in group.members.items()
        }
        group.static_members[candidate.group_instance_id] = candidate.member_id
        if group.leader_id == old_id:
            group.leader_id = candidate.member_id
        if old_id in group.pending_sync:
            group.pending_sync.discard(old_id)
            group.pending_sync.add(candidate.member_id)
        if group.state == ClassicState.STABLE and group.select_protocol() == group.protocol_name:
            self.refresh_session(group, candidate, now_ms)
            answer = self._join_response(group, candidate, request.version, static_rejoin=True)
            if request.version < 9:
                # Before KIP-814 a rejoining static leader must not think it leads an empty group:
                # Kafka names the leader as it was, so the member syncs as a follower.
                answer["leader"] = leader_before or ""
            self.ctx.reply(request.request_id, answer)
            self.ctx.write(GroupMetadataRecord(group.group_id, group.snapshot()))
            return
        candidate.join = ParkedRequest(request.request_id, request.version)
        group.triggers.append(Trigger(STATIC_REPLACEMENT, candidate.member_id))
        if group.state == ClassicState.PREPARING_REBALANCE:
            self._try_complete_join(group, now_ms)
        else:
            self.prepare_rebalance(group, now_ms)

    def _join_response(
        self, group: ClassicGroup, member: ClassicMember, version: int, static_rejoin: bool = False
    ) -> dict[str, object]:
        is_leader = member.member_id == group.leader_id
        members = []
        if is_leader and (not static_rejoin or version >= 9):
            members = [
                {
                    "member_id": m.member_id,
                    "group_instance_id": m.group_instance_id,
                    "metadata": m.metadata(group.protocol_name),
                }
                for m in group.members.values()
            ]
        return {
            "error_code": ErrorCode.NONE,
            "generation_id": group.generation,
            "protocol_type": group.protocol_type,
            "protocol_name": group.protocol_name,
            "leader": group.leader_id or "",
            # A static leader that rejoined without a rebalance must not reassign (KIP-814).
            "skip_assignment": bool(static_rejoin and is_leader),
            "member_id": member.member_id,
            "members": members,
        }

    # -- rebalance phases -----------------------------------------------------------------

    def prepare_rebalance(self, group: ClassicGroup, now_ms: int) -> None:
        if group.state == ClassicState.COMPLETING_REBALANCE:
            for member in map(self._member, group.members.values()):
                member.assignment = b""
                if member.sync is not None:
                    self.ctx.reply(member.sync.request_id, sync_response(ErrorCode.REBALANCE_IN_PROGRESS))
                    member.sync = None
        group.pending_sync.clear()
        self.ctx.cancel(sync_key(group.group_id))
        initial = group.state == ClassicState.EMPTY and self.ctx.settings.initial_rebalance_delay_ms > 0
        group.transition(ClassicState.PREPARING_REBALANCE, now_ms)
        rebalance_timeout = group.rebalance_timeout_ms()
        if initial:
            delay = min(self.ctx.settings.initial_rebalance_delay_ms, rebalance_timeout)
            group.in_initial_delay = True
            group.new_member_added = False
            group.initial_delay_remaining_ms = max(rebalance_timeout - delay, 0)
            self._schedule_join(group, now_ms + delay)
        else:
            group.in_initial_delay = False
            self._schedule_join(group, now_ms + rebalance_timeout)
            self._try_complete_join(group, now_ms)

    def _try_complete_join(self, group: ClassicGroup, now_ms: int) -> None:
        if (
            group.state == ClassicState.PREPARING_REBALANCE
            and not group.in_initial_delay
            and group.all_members_joined()
        ):
            self.complete_join(group, now_ms)

    def on_join_deadline(self, group_id: str, now_ms: int) -> None:
        group = self._group(group_id)
        if group is None or group.state != ClassicState.PREPARING_REBALANCE:
            return
        if group.in_initial_delay and group.new_member_added and group.initial_delay_remaining_ms > 0:
            delay = min(self.ctx.settings.initial_rebalance_delay_ms, group.initial_delay_remaining_ms)
            group.initial_delay_remaining_ms -= delay
            group.new_member_added = False
            self._schedule_join(group, now_ms + delay)
            return
        self.complete_join(group, now_ms)

    def complete_join(self, group: ClassicGroup, now_ms: int) -> None:
        self.ctx.cancel(join_key(group.group_id))
        group.in_initial_delay = False
        for member in [m for m in group.members.values() if m.join is None]:
            group.triggers.append(Trigger(REBALANCE_TIMEOUT, member.member_id))
            self.remove_member(group, member.member_id)
        group.generation += 1
        for trigger in group.triggers:
            self.ctx.triggered(group.group_id, trigger.cause, trigger.member_id)
        group.triggers = []
        if not group.members:
            group.protocol_name = None
            group.leader_id = None
            group.transition(ClassicState.EMPTY, now_ms)
            self.ctx.write(GroupMetadataRecord(group.group_id, group.snapshot()))
            return
        group.protocol_name = group.select_protocol()
        if group.leader_id not in group.members:
            group.leader_id = next(iter(group.members))
        group.transition(ClassicState.COMPLETING_REBALANCE, now_ms)
        for member in map(self._member, group.members.values()):
            assert member.join is not None
            self.ctx.reply(member.join.request_id, self._join_response(group, member, member.join.version))
            member.join = None
            self.refresh_session(group, member, now_ms)
        group.pending_sync = set(group.members)
        group_id = group.group_id
        self.ctx.schedule(
            sync_key(group_id),
            now_ms + group.rebalance_timeout_ms(),
            lambda now: self.on_sync_deadline(group_id, now),
        )

    def on_sync_deadline(self, group_id: str, now_ms: int) -> None:
        group = self._group(group_id)
        if (
            group is None
            or not group.pending_sync
            or group.state
            not in (
                ClassicState.COMPLETING_REBALANCE,
                ClassicState.STABLE,
            )
        ):
            return
        for member_id in sorted(group.pending_sync):
            group.triggers.append(Trigger(REBALANCE_TIMEOUT, member_id))
            self.remove_member(group, member_id)
        self.prepare_rebalance(group, now_ms)

    def remove_member(self, group: ClassicGroup, member_id: str) -> None:
        member = group.members.pop(member_id, None)
        if member is None:
            return
        self.ctx.cancel(session_key(group.group_id, member_id))
        if (
            member.group_instance_id is not None
            and group.static_members.get(member.group_instance_id) == member_id
        ):
            del group.static_members[member.group_instance_id]
        group.pending_sync.discard(member_id)
        if member.join is not None:
            self.ctx.reply(
                member.join.request_id,
                join_error(member.join.version, ErrorCode.UNKNOWN_MEMBER_ID, member_id),
            )
        if member.sync is not None:
            self.ctx.reply(member.sync.request_id, sync_response(ErrorCode.UNKNOWN_MEMBER_ID))
        if group.leader_id == member_id:
            joined = [m.member_id for m in group.members.values() if m.join is not None]
            group.leader_id = joined[0] if joined else None

    def members_left(self, group: ClassicGroup, now_ms: int) -> None:
        """After members were removed: rebalance, or finish a join that now has everyone."""
        if group.state in (ClassicState.STABLE, ClassicState.COMPLETING_REBALANCE):
            self.prepare_rebalance(group, now_ms)
        else:
            self._try_complete_join(group, now_ms)

    # -- timers ---------------------------------------------------------------------------

    def on_session_expired(self, group_id: str, member_id: str, now_ms: int) -> None:
        group = self._group(group_id)
        if group is None or member_id not in group.members:
            return
        group.triggers.append(Trigger(SESSION_EXPIRY, member_id))
        self.remove_member(group, member_id)
        self.members_left(group, now_ms)

    def on_pending_member_expired(self, group_id: str, member_id: str, now_ms: int) -> None:
        group = self._group(group_id)
        if group is None or member_id not in group.pending_members:
            return
        group.pending_members.discard(member_id)
        self._try_complete_join(group, now_ms)

    # -- SyncGroup ------------------------------------------------------------------------

    def _member_error(
        self, group: ClassicGroup | None, member_id: str, instance_id: str | None, generation: int
    ) -> ErrorCode | None:
        if group is None or group.state == ClassicState.DEAD:
            return ErrorCode.UNKNOWN_MEMBER_ID
        fenced = self._static_member_error(group, member_id, instance_id)
        if fenced is not None:
            return fenced
        if member_id not in group.members:
            return ErrorCode.UNKNOWN_MEMBER_ID
        if generation != group.generation:
            return ErrorCode.ILLEGAL_GENERATION
        return None

    def sync(self, request: GroupRequest, now_ms: int) -> None:
        body, version = request.body, request.version
        instance_id = body.group_instance_id if version >= 3 else None
        group = self._group(body.group_id)
        error = self._member_error(group, body.member_id, instance_id, body.generation_id)
        mismatched = (
            group is not None
            and version >= 5
            and (
                (body.protocol_type is not None and body.protocol_type != group.protocol_type)
                or (body.protocol_name is not None and body.protocol_name != group.protocol_name)
            )
        )
        if error is None and mismatched:
            error = ErrorCode.INCONSISTENT_GROUP_PROTOCOL
        if error is None and group is not None and group.state == ClassicState.PREPARING_REBALANCE:
            error = ErrorCode.REBALANCE_IN_PROGRESS
        if error is None and group is not None and group.state == ClassicState.EMPTY:
            error = ErrorCode.UNKNOWN_MEMBER_ID
        if error is not None or group is None:
            self.ctx.reply(request.request_id, sync_response(error or ErrorCode.UNKNOWN_MEMBER_ID))
            return
        member = group.members[body.member_id]
        self.refresh_session(group, member, now_ms)
        group.pending_sync.discard(member.member_id)
        if not group.pending_sync:
            self.ctx.cancel(sync_key(group.group_id))
        if group.state == ClassicState.STABLE:
            self.ctx.reply(request.request_id, sync_response(ErrorCode.NONE, member.assignment, group))
            return
        self._member(member).sync = ParkedRequest(request.request_id, version)
        if member.member_id != group.leader_id:
            return
        assignments = {a.member_id: bytes(a.assignment) for a in body.assignments}
        for m in map(self._member, group.members.values()):
            m.assignment = assignments.get(m.member_id, b"")
        group.transition(ClassicState.STABLE, now_ms)
        self.ctx.write(GroupMetadataRecord(group.group_id, group.snapshot()))
        for m in group.members.values():
            if m.sync is not None:
                self.ctx.reply(m.sync.request_id, sync_response(ErrorCode.NONE, m.assignment, group))
                m.sync = None

    # -- Heartbeat ------------------------------------------------------------------------

    def heartbeat(self, request: GroupRequest, now_ms: int) -> None:
        body, version = request.body, request.version
        instance_id = body.group_instance_id if version >= 3 else None
        group = self._group(body.group_id, changing=False)  # a heartbeat changes timers only
        error = self._member_error(group, body.member_id, instance_id, body.generation_id)
        if error is None and group is not None:
            if group.state == ClassicState.EMPTY:
                error = ErrorCode.UNKNOWN_MEMBER_ID
            else:
                self.refresh_session(group, group.members[body.member_id], now_ms)
                if group.state == ClassicState.PREPARING_REBALANCE:
                    error = ErrorCode.REBALANCE_IN_PROGRESS
        self.ctx.reply(request.request_id, {"throttle_time_ms": 0, "error_code": error or ErrorCode.NONE})

    # -- LeaveGroup -----------------------------------------------------------------------

    def leave(self, request: GroupRequest, now_ms: int) -> None:
        body, version = request.body, request.version
        identities = leave_identities(body, version)
        group = self._group(body.group_id)
        if group is None:
            self.ctx.reply(request.request_id, {"error_code": ErrorCode.UNKNOWN_MEMBER_ID, "members": []})
            return
        results = []
        removed = False
        for member_id, instance_id in identities:
            error = ErrorCode.NONE
            target: str | None = member_id
            if instance_id is not None:
                registered = group.static_members.get(instance_id)
                if registered is None:
                    error = ErrorCode.UNKNOWN_MEMBER_ID
                elif member_id and registered != member_id:
                    error = ErrorCode.FENCED_INSTANCE_ID
                target = registered
            if error == ErrorCode.NONE and target in group.pending_members:
                group.pending_members.discard(target)
                self.ctx.cancel(pending_member_key(group.group_id, target))
                removed = True
            elif error == ErrorCode.NONE and target not in group.members:
                error = ErrorCode.UNKNOWN_MEMBER_ID
            elif error == ErrorCode.NONE and target is not None:
                group.triggers.append(Trigger(LEAVE, target))
                self.remove_member(group, target)
                removed = True
            results.append({"member_id": member_id, "group_instance_id": instance_id, "error_code": error})
        if removed:
            self.members_left(group, now_ms)
        top_error = results[0]["error_code"] if version < 3 else ErrorCode.NONE
        self.ctx.reply(
            request.request_id, {"throttle_time_ms": 0, "error_code": top_error, "members": results}
        )

    # -- conversions (classic_bridge.py) ----------------------------------------------------

    def forget(self, classic: ClassicGroup) -> None:
        """A classic group converted away: its parked requests are answered REBALANCE_IN_PROGRESS
        (its members rejoin the group that replaced it) and its deadlines dropped."""
        group_id = classic.group_id
        self.ctx.journal.keep(classic)
        for m in map(self._member, classic.members.values()):
            if m.join is not None:
                self.ctx.reply(
                    m.join.request_id,
                    join_error(m.join.version, ErrorCode.REBALANCE_IN_PROGRESS, m.member_id),
                )
            if m.sync is not None:
                self.ctx.reply(m.sync.request_id, sync_response(ErrorCode.REBALANCE_IN_PROGRESS))
            m.join = m.sync = None
            self.ctx.cancel(session_key(group_id, m.member_id))
        for member_id in classic.pending_members:
            self.ctx.cancel(pending_member_key(group_id, member_id))
        self.ctx.cancel(join_key(group_id))
        self.ctx.cancel(sync_key(group_id))

    def start(self, classic: ClassicGroup, now_ms: int) -> None:
        """A group turned classic takes over: recorded, its members' sessions running, and a
        rebalance prepared at once so they rejoin with the classic protocol and elect a leader."""
        self.ctx.add_group(classic)
        self.ctx.write(GroupMetadataRecord(classic.group_id, classic.snapshot()))
        for m in classic.members.values():
            self.refresh_session(classic, m, now_ms)
        classic.triggers.append(Trigger(CONVERSION))
        self.prepare_rebalance(classic, now_ms)

    # -- replay and DescribeGroups --------------------------------------------------------

    def replay(self, record: GroupMetadataRecord) -> None:
        """Start-up: a snapshot rebuilds the group; a tombstone (live too) deletes it."""
        journal, groups = self.ctx.journal, self.ctx.groups
        if record.value is not None:
            journal.set_item(
                groups, record.group_id, ClassicGroup.from_snapshot(record.group_id, record.value)
            )
            return
        group = journal.pop_item(groups, record.group_id)
        if isinstance(group, ClassicGroup):
            journal.set_attr(group, "state", ClassicState.DEAD)

    def load_complete(self, now_ms: int) -> None:
        for group in self.ctx.groups.values():
            if isinstance(group, ClassicGroup):
                for member in group.members.values():
                    self.refresh_session(group, member, now_ms)

    def describe(self, group_id: str, version: int) -> dict[str, Any]:
        group = self.ctx.groups.get(group_id)
        if isinstance(group, ClassicGroup) and group.state != ClassicState.DEAD:
            return {"error_code": ErrorCode.NONE, "error_message": None, "group_id": group_id,
                    **group.described(), "authorized_operations": None}  # fmt: skip
        missing = f"group {group_id!r} is not a classic group" if group is not None else (
            f"group {group_id!r} does not exist")  # fmt: skip
        return {
            "error_code": ErrorCode.GROUP_ID_NOT_FOUND if version >= 6 else ErrorCode.NONE,
            "error_message": missing if version >= 6 else None,
            "group_id": group_id, "group_state": ClassicState.DEAD.value, "protocol_type": "",
            "protocol_data": "", "members": [],
            "authorized_operations": None,  # not requested: encodes as INT32_MIN
        }  # fmt: skip


def leave_identities(body: Any, version: int) -> list[tuple[str, str | None]]:
    """(member id, instance id) of each member a LeaveGroup names (one, before v3)."""
    if version >= 3:
        return [(m.member_id, m.group_instance_id) for m in body.members]
    return [(body.member_id, None)]

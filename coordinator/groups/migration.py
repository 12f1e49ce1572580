"""Online migration between classic groups and consumer groups (KIP-848), as Kafka 4.x runs it.

This module owns the two conversions and the translation of the classic protocol for members
that keep speaking it inside a consumer group. Like the group modules it has no IO and no
clock; it builds new state by writing records and replaying them, so a restarted coordinator
rebuilds exactly what the live one had.

Rules (`group.consumer.migration.policy`: bidirectional, upgrade, downgrade, disabled)
--------------------------------------------------------------------------------------
- Upgrade: a ConsumerGroupHeartbeat join (epoch 0) to a non-empty classic group converts it,
  if the policy allows upgrades, the group's protocol type is `consumer`, it has no more
  members than `group.consumer.max.size`, and every member's ConsumerProtocol subscription
  and assignment decode (an assignment carrying user data from a custom assignor would be
  lost, so it refuses). Any failure is GROUP_ID_NOT_FOUND. The consumer group starts at
  group epoch = assignment epoch = the classic generation, every classic member STABLE at
  that epoch with its subscription and assigned partitions; parked JoinGroup/SyncGroup
  requests are answered REBALANCE_IN_PROGRESS. The classic group is tombstoned.
- Classic members inside a consumer group go through the consumer group's pipeline:
  JoinGroup updates the member from its subscription (topics, owned partitions, rack),
  bumps the epoch if needed, computes the target and reconciles the member, and answers at
  once with generation = member epoch and no leader. SyncGroup returns the member's assigned
  partitions as a ConsumerProtocol assignment, or REBALANCE_IN_PROGRESS if the target moved
  past it. Heartbeat answers REBALANCE_IN_PROGRESS while the member must rejoin: its epoch is
  behind the group's, it has partitions to revoke, or partitions it waited for are now free.
  Revoke before assign holds as for any member: what a classic member was told to give up
  stays held (by the shared reconciliation engine) until it rejoins without it. Two deadlines
  of the member's rebalance timeout keep such holds finite: after a JoinGroup it must sync
  (sync timeout), and once told to rejoin it must rejoin (join timeout); else it is removed.
- Downgrade: when a removal leaves only classic members, the policy allows downgrades and
  they fit `group.max.size`, the group becomes a classic group, Stable at generation = the
  group epoch with each member's target as its assignment, and immediately prepares a
  rebalance so the members rejoin with the classic protocol. The consumer group's records
  are tombstoned.
- A classic JoinGroup to an empty consumer group deletes it and creates a classic group.
"""

from __future__ import annotations

import warnings
from collections.abc import Callable, Iterable
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from connect_rebalance.errors import ErrorCode, KafkaApiError

from .classic import (
    ClassicGroup,
    ClassicMember,
    ClassicState,
    join_error,
    join_key,
    pending_member_key,
    sync_key,
    sync_response,
)
from .classic import session_key as classic_session_key
from .consumer import (
    ConsumerGroup,
    ConsumerGroups,
    ConsumerMember,
    member_tombstones,
    rebalance_key,
    session_key,
    snapshot,
)
from .reconciliation import MemberAssignment, MemberState
from .records import (
    ClassicMemberMetadata,
    ConsumerGroupEpochRecord,
    ConsumerMemberRecord,
    CurrentAssignmentRecord,
    GroupMetadataRecord,
    Record,
    TargetEpochRecord,
    TargetMemberRecord,
)
from .requests import GroupRequest, Outcome
from .timers import Timers

with warnings.catch_warnings():
    warnings.simplefilter("ignore", DeprecationWarning)
    from kafka.protocol.consumer.metadata import ConsumerProtocolAssignment, ConsumerProtocolSubscription

if TYPE_CHECKING:
    from .coordinator import GroupCoordinator

Item = tuple[str, int]  # (topic id, partition)
CONSUMER_PROTOCOL_TYPE = "consumer"
MEMBER_ID_REQUIRED_FROM_VERSION = 4
MAX_ASSIGNMENT_VERSION = 3
POLICIES = {
    "bidirectional": (True, True),
    "upgrade": (True, False),
    "downgrade": (False, True),
    "disabled": (False, False),
}


@dataclass(frozen=True, slots=True)
class Subscription:
    """A ConsumerProtocol subscription, as read from a classic member's metadata."""

    version: int
    topics: tuple[str, ...]
    owned: tuple[tuple[str, int], ...]  # (topic name, partition)
    rack_id: str | None


def decode_subscription(metadata: bytes) -> Subscription:
    """Raises ValueError if the bytes are not a ConsumerProtocol subscription."""
    try:
        decoded = ConsumerProtocolSubscription.decode(metadata)
    except Exception as exc:  # any client may send any bytes
        raise ValueError(f"not a consumer protocol subscription: {exc}") from exc
    owned = getattr(decoded, "owned_partitions", None) or []
    return Subscription(
        decoded.version,
        tuple(decoded.topics or ()),
        tuple((tp.topic, p) for tp in owned for p in tp.partitions),
        getattr(decoded, "rack_id", None) or None,
    )


def decode_assignment(data: bytes) -> list[tuple[str, int]]:
    """(topic, partition) pairs of a ConsumerProtocol assignment; empty bytes assign nothing.

    Raises ValueError if the bytes do not decode or carry user data (it would be lost).
    """
    if not data:
        return []
    try:
        decoded = ConsumerProtocolAssignment.decode(data)
    except Exception as exc:
        raise ValueError(f"not a consumer protocol assignment: {exc}") from exc
    if decoded.user_data:
        raise ValueError("the assignment carries user data from a custom assignor, which would be lost")
    return [(tp.topic, p) for tp in decoded.assigned_partitions for p in tp.partitions]


def encode_assignment(partitions: Iterable[tuple[str, int]], version: int = 0) -> bytes:
    by_topic: dict[str, list[int]] = {}
    for topic, partition in partitions:
        by_topic.setdefault(topic, []).append(partition)
    return bytes(
        ConsumerProtocolAssignment(
            version=min(max(version, 0), MAX_ASSIGNMENT_VERSION),
            assigned_partitions=[{"topic": t, "partitions": sorted(p)} for t, p in sorted(by_topic.items())],
            user_data=None,
        ).encode(header=True)
    )


class GroupMigration:
    """The conversions and the classic protocol spoken to consumer groups."""

    def __init__(self, core: GroupCoordinator, consumer: ConsumerGroups) -> None:
        self.core = core
        self.consumer = consumer
        policy = core.settings.consumer_migration_policy.lower()
        self.upgrade_enabled, self.downgrade_enabled = POLICIES[policy]

    # -- ConsumerProtocol bytes <-> items -------------------------------------------------

    def _items(self, partitions: Iterable[tuple[str, int]]) -> frozenset[Item]:
        """Topic names to ids; partitions of topics this coordinator does not know are dropped."""
        ids = {name: self.consumer.topics.topic_id(name) for name, _ in partitions}
        return frozenset((ids[n], p) for n, p in partitions if ids[n] is not None)  # type: ignore[misc]

    def _named(self, items: Iterable[Item]) -> list[tuple[str, int]]:
        names = {t: self.consumer.topics.name_of(t) for t, _ in items}
        return [(names[t], p) for t, p in items if names[t] is not None]  # type: ignore[misc]

    # -- upgrade --------------------------------------------------------------------------

    def upgrade(self, classic: Any, now_ms: int, out: Outcome) -> ConsumerGroup | None:
        """Convert a non-empty classic group for a joining consumer-protocol member.

        Returns None when `classic` is another kind of group (the caller refuses it); raises
        GROUP_ID_NOT_FOUND when the classic group may not be converted.
        """
        if not isinstance(classic, ClassicGroup):
            return None
        group_id = classic.group_id

        def refuse(why: str) -> KafkaApiError:
            return KafkaApiError(
                ErrorCode.GROUP_ID_NOT_FOUND,
                f"Cannot upgrade classic group {group_id} to a consumer group: {why}.",
            )

        if not self.upgrade_enabled:
            raise refuse("the online upgrade is disabled (group.consumer.migration.policy)")
        if classic.state == ClassicState.DEAD:
            raise refuse("the group is being deleted")
        if classic.protocol_type != CONSUMER_PROTOCOL_TYPE:
            raise refuse(f"its protocol type is {classic.protocol_type!r}, not 'consumer'")
        if len(classic.members) > self.core.settings.consumer_max_size:
            raise refuse("it has more members than group.consumer.max.size")
        generation = classic.generation
        records: list[Record] = [
            GroupMetadataRecord(group_id, None),
            ConsumerGroupEpochRecord(group_id, generation),
        ]
        claimed: set[Item] = set()
        for m in classic.members.values():
            try:
                subscription = decode_subscription(m.metadata(classic.protocol_name) or m.protocols[0][1])
                assigned = decode_assignment(m.assignment)
            except (ValueError, IndexError) as exc:
                raise refuse(f"member {m.member_id}: {exc}") from exc
            # A member that has not synced its assignment yet may still own partitions it reported.
            items = self._items(assigned or subscription.owned) - claimed
            claimed |= items
            member = ConsumerMember(
                m.member_id, m.group_instance_id, subscription.rack_id, m.client_id, m.client_host,
                m.rebalance_timeout_ms, frozenset(subscription.topics),
                classic=ClassicMemberMetadata(m.session_timeout_ms, tuple(m.protocols)),
            )  # fmt: skip
            stable = MemberAssignment(MemberState.STABLE, generation, generation, items, frozenset())
            records += [
                ConsumerMemberRecord(group_id, m.member_id, snapshot(member)),
                TargetMemberRecord(group_id, m.member_id, items),
                CurrentAssignmentRecord(group_id, m.member_id, stable),
            ]
        records.append(TargetEpochRecord(group_id, generation, self.consumer.assignors[0]))
        forget_classic(self.core.timers, classic, out)
        write(self.core, records, out)
        group = self.core.groups[group_id]
        assert isinstance(group, ConsumerGroup)
        for member in group.members.values():
            self.consumer.refresh_session(group, member, now_ms)
        return group

    # -- downgrade ------------------------------------------------------------------------

    def maybe_downgrade(self, group: ConsumerGroup, now_ms: int, out: Outcome) -> None:
        """After a removal: a group of classic members only turns classic again, if allowed."""
        members = list(group.members.values())
        if not downgrade_allowed(members, self.downgrade_enabled, self.core.settings.max_group_size):
            return
        group_id = group.group_id
        classic = ClassicGroup(
            group_id,
            state=ClassicState.STABLE,
            state_timestamp_ms=now_ms,
            generation=group.group_epoch,
            protocol_type=CONSUMER_PROTOCOL_TYPE,
        )
        for m in members:
            assert m.classic is not None
            protocols = list(m.classic.protocols)
            version = _subscription_version(protocols)
            target = self._named(group.target.get(m.member_id, frozenset()))
            classic.members[m.member_id] = ClassicMember(
                m.member_id, m.instance_id, m.client_id, m.client_host, m.rebalance_timeout_ms,
                m.classic.session_timeout_ms, CONSUMER_PROTOCOL_TYPE, protocols,
                encode_assignment(target, version),
            )  # fmt: skip
            if m.instance_id is not None:
                classic.static_members[m.instance_id] = m.member_id
        if not classic.candidate_protocols():
            return  # the members share no protocol: they could not form a classic group
        classic.protocol_name = classic.select_protocol()
        classic.leader_id = members[0].member_id
        tombstones: list[Record] = []
        for m in members:
            tombstones += member_tombstones(group_id, m.member_id)
            self.core.timers.cancel(session_key(group_id, m.member_id))
            self.core.timers.cancel(rebalance_key(group_id, m.member_id))
        tombstones += [TargetEpochRecord(group_id, None), ConsumerGroupEpochRecord(group_id, None)]
        write(self.core, tombstones, out)
        start_classic(self.core, classic, now_ms, out)

    # -- JoinGroup ------------------------------------------------------------------------

    def join(self, request: GroupRequest, now_ms: int, out: Outcome) -> None:
        body, version = request.body, request.version
        group = self.core.groups[body.group_id]
        assert isinstance(group, ConsumerGroup)
        if group.is_empty():
            # An empty consumer group gives way to a classic group (its offsets stay).
            write(
                self.core,
                [TargetEpochRecord(group.group_id, None), ConsumerGroupEpochRecord(group.group_id, None)],
                out,
            )
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
        self, group: ConsumerGroup, request: GroupRequest, member_id: str, now_ms: int, out: Outcome
    ) -> dict[str, object]:
        body, version = request.body, request.version
        settings = self.core.settings
        instance_id = body.group_instance_id if version >= 5 else None
        protocols = [(p.name, bytes(p.metadata)) for p in body.protocols]
        if not settings.min_session_timeout_ms <= body.session_timeout_ms <= settings.max_session_timeout_ms:
            raise KafkaApiError(ErrorCode.INVALID_SESSION_TIMEOUT, "session timeout out of bounds")
        names = [name for name, _ in protocols]
        others = [
            {n for n, _ in m.classic.protocols}
            for m in group.members.values()
            if m.classic is not None and m.member_id != member_id
        ]
        common = set(names).intersection(*others)
        if (
            not self.upgrade_enabled
            and not self.downgrade_enabled
            or body.protocol_type != CONSUMER_PROTOCOL_TYPE
            or not common
        ):
            raise KafkaApiError(
                ErrorCode.INCONSISTENT_GROUP_PROTOCOL, "the group does not accept this member"
            )
        try:
            subscription = decode_subscription(protocols[0][1])
        except ValueError as exc:
            raise KafkaApiError(ErrorCode.INCONSISTENT_GROUP_PROTOCOL, str(exc)) from exc
        member, joined = self._classic_member_for(group, request, member_id, instance_id, out)
        identity = snapshot(member)
        rebalance_timeout = body.rebalance_timeout_ms if version >= 1 else body.session_timeout_ms
        topics = frozenset(subscription.topics)
        changed = topics != member.subscribed_topic_names or member.subscribed_topic_regex is not None
        member.subscribed_topic_names, member.subscribed_topic_regex = topics, None
        member.instance_id, member.rack_id = instance_id, subscription.rack_id
        member.client_id, member.client_host = request.client_id, request.client_host
        member.rebalance_timeout_ms = rebalance_timeout
        member.classic = ClassicMemberMetadata(body.session_timeout_ms, tuple(protocols))
        owned = self._items(subscription.owned)
        self.consumer.advance_member(group, member, identity, joined, changed, owned, now_ms, out)
        timers = self.core.timers
        timers.cancel(classic_join_key(group.group_id, member.member_id))
        timers.schedule(
            classic_sync_key(group.group_id, member.member_id), now_ms + member.rebalance_timeout_ms
        )
        return {
            "error_code": ErrorCode.NONE,
            "generation_id": member.assignment.member_epoch,
            "protocol_type": CONSUMER_PROTOCOL_TYPE,
            "protocol_name": next(n for n in names if n in common),
            "leader": "",  # a classic member of a consumer group never assigns
            "skip_assignment": False,
            "member_id": member.member_id,
            "members": [],
        }

    def _classic_member_for(
        self,
        group: ConsumerGroup,
        request: GroupRequest,
        member_id: str,
        instance_id: str | None,
        out: Outcome,
    ) -> tuple[ConsumerMember, bool]:
        if instance_id is not None:
            holder = group.static_member(instance_id)
            if holder is not None and member_id and holder.member_id != member_id:
                raise KafkaApiError(
                    ErrorCode.FENCED_INSTANCE_ID, f"Instance {instance_id} is another member's."
                )
            if holder is not None and not member_id:
                # A restarted static member takes its predecessor's place and assignment.
                new_id = self.core.new_member_id(request.client_id)
                return self.consumer.replace_static(group, holder, new_id, out), False
            if holder is not None:
                return holder, False
        elif not member_id and request.version >= MEMBER_ID_REQUIRED_FROM_VERSION:
            self.consumer.check_room(group)
            raise _MemberIdError(self.core.new_member_id(request.client_id))
        existing = group.members.get(member_id) if member_id else None
        if existing is not None:
            if existing.classic is None:
                raise KafkaApiError(
                    ErrorCode.UNKNOWN_MEMBER_ID, f"Member {member_id} uses the consumer protocol."
                )
            return existing, False
        self.consumer.check_room(group)
        fresh = ConsumerMember(member_id or self.core.new_member_id(request.client_id))
        group.members[fresh.member_id] = fresh
        return fresh, True

    # -- SyncGroup, Heartbeat -------------------------------------------------------------

    def _classic_member(
        self, group: ConsumerGroup, member_id: str, instance_id: str | None, generation: int
    ) -> ConsumerMember:
        if instance_id is not None:
            holder = group.static_member(instance_id)
            if holder is None:
                raise KafkaApiError(ErrorCode.UNKNOWN_MEMBER_ID, f"Instance {instance_id} is unknown.")
            if holder.member_id != member_id:
                raise KafkaApiError(
                    ErrorCode.FENCED_INSTANCE_ID, f"Instance {instance_id} is another member's."
                )
        member = group.members.get(member_id)
        if member is None or member.classic is None:
            raise KafkaApiError(ErrorCode.UNKNOWN_MEMBER_ID, f"Member {member_id} is not a classic member.")
        if generation != member.assignment.member_epoch:
            raise KafkaApiError(
                ErrorCode.ILLEGAL_GENERATION,
                f"generation {generation} is not the member's epoch {member.assignment.member_epoch}",
            )
        return member

    def sync(self, request: GroupRequest, now_ms: int, out: Outcome) -> None:
        body, version = request.body, request.version
        group = self.core.groups[body.group_id]
        assert isinstance(group, ConsumerGroup)
        try:
            member = self._classic_member(
                group, body.member_id, body.group_instance_id if version >= 3 else None, body.generation_id
            )
            assert member.classic is not None
            names = [n for n, _ in member.classic.protocols]
            if version >= 5 and (
                (body.protocol_type is not None and body.protocol_type != CONSUMER_PROTOCOL_TYPE)
                or (body.protocol_name is not None and body.protocol_name not in names)
            ):
                raise KafkaApiError(ErrorCode.INCONSISTENT_GROUP_PROTOCOL, "protocol mismatch")
            self.consumer.refresh_session(group, member, now_ms)
            self.core.timers.cancel(classic_sync_key(group.group_id, member.member_id))
            state = member.assignment.state
            if group.assignment_epoch > member.assignment.member_epoch and state != MemberState.UNREVOKED:
                self._expect_rejoin(group, member, now_ms)
                raise KafkaApiError(ErrorCode.REBALANCE_IN_PROGRESS, "the target moved on; rejoin")
        except KafkaApiError as exc:
            out.reply(request.request_id, sync_response(exc.code))
            return
        assignment = encode_assignment(
            self._named(member.assignment.assigned), _subscription_version(list(member.classic.protocols))
        )
        out.reply(
            request.request_id,
            {
                "error_code": ErrorCode.NONE,
                "protocol_type": CONSUMER_PROTOCOL_TYPE,
                "protocol_name": (body.protocol_name or names[0]) if version >= 5 else None,
                "assignment": assignment,
            },
        )

    def heartbeat(self, request: GroupRequest, now_ms: int, out: Outcome) -> None:
        body, version = request.body, request.version
        group = self.core.groups[body.group_id]
        assert isinstance(group, ConsumerGroup)
        error = ErrorCode.NONE
        try:
            member = self._classic_member(
                group, body.member_id, body.group_instance_id if version >= 3 else None, body.generation_id
            )
            self.consumer.refresh_session(group, member, now_ms)
            if self._must_rejoin(group, member):
                self._expect_rejoin(group, member, now_ms)
                error = ErrorCode.REBALANCE_IN_PROGRESS
        except KafkaApiError as exc:
            error = exc.code
        out.reply(request.request_id, {"throttle_time_ms": 0, "error_code": error})

    def _expect_rejoin(self, group: ConsumerGroup, member: ConsumerMember, now_ms: int) -> None:
        """A member told to rejoin has its rebalance timeout to do so (the first telling counts)."""
        key = classic_join_key(group.group_id, member.member_id)
        if self.core.timers.deadline(key) is None:
            self.core.timers.schedule(key, now_ms + member.rebalance_timeout_ms)

    def on_classic_timeout(self, group_id: str, member_id: str, now_ms: int, out: Outcome) -> None:
        """A classic member did not sync after joining, or did not rejoin when told: remove it."""
        group = self.core.groups.get(group_id)
        if isinstance(group, ConsumerGroup):
            member = group.members.get(member_id)
            if member is not None and member.classic is not None:
                self.consumer.remove(group, member_id, out)
                self.consumer.removed(group, now_ms, out)

    def _must_rejoin(self, group: ConsumerGroup, member: ConsumerMember) -> bool:
        return must_rejoin(
            member.assignment,
            group.group_epoch,
            group.target.get(member.member_id, frozenset()),
            group.ownership.held_by_others(member.member_id),
        )

    # -- LeaveGroup -----------------------------------------------------------------------

    def leave(self, request: GroupRequest, now_ms: int, out: Outcome) -> None:
        body, version = request.body, request.version
        group = self.core.groups[body.group_id]
        assert isinstance(group, ConsumerGroup)

        def find(member_id: str, instance_id: str | None) -> tuple[ErrorCode, str]:
            target = (
                group.static_member(instance_id) if instance_id is not None else group.members.get(member_id)
            )
            if target is None:
                return ErrorCode.UNKNOWN_MEMBER_ID, member_id
            if instance_id is not None and member_id and target.member_id != member_id:
                return ErrorCode.FENCED_INSTANCE_ID, member_id
            return ErrorCode.NONE, target.member_id

        results, leaving = leave_results(body, version, find)
        for member_id in leaving:
            self.consumer.remove(group, member_id, out)
        if leaving:
            self.consumer.removed(group, now_ms, out)
        top_error = results[0]["error_code"] if version < 3 and results else ErrorCode.NONE
        out.reply(request.request_id, {"throttle_time_ms": 0, "error_code": top_error, "members": results})


def write(core: GroupCoordinator, records: Iterable[Record], out: Outcome) -> None:
    """State changes are records: each is written and replayed, as a restart would replay it."""
    for record in records:
        out.records.append(record)
        core.replay(record)


def downgrade_allowed(members: list[Any], enabled: bool, max_group_size: int) -> bool:
    """A group may turn classic again once only classic members are left, if allowed and they fit."""
    return (
        bool(members)
        and enabled
        and all(m.classic is not None for m in members)
        and len(members) <= max_group_size
    )


def start_classic(core: GroupCoordinator, classic: ClassicGroup, now_ms: int, out: Outcome) -> None:
    """The downgraded group takes over: recorded, its members' sessions running, and a rebalance
    prepared at once so they rejoin with the classic protocol and elect a leader."""
    core.groups[classic.group_id] = classic
    out.records.append(GroupMetadataRecord(classic.group_id, classic.snapshot()))
    for m in classic.members.values():
        core.classic._refresh_session(classic, m, now_ms)
    core.classic.prepare_rebalance(classic, now_ms, out)


def forget_classic(timers: Timers, classic: ClassicGroup, out: Outcome) -> None:
    """A classic group converted away: answer its parked requests (REBALANCE_IN_PROGRESS, so
    its members rejoin the group that replaced it) and drop its deadlines."""
    group_id = classic.group_id
    for m in classic.members.values():
        if m.join is not None:
            out.reply(
                m.join.request_id,
                join_error(m.join.version, ErrorCode.REBALANCE_IN_PROGRESS, m.member_id),
            )
            m.join = None
        if m.sync is not None:
            out.reply(m.sync.request_id, sync_response(ErrorCode.REBALANCE_IN_PROGRESS))
            m.sync = None
        timers.cancel(classic_session_key(group_id, m.member_id))
    for member_id in classic.pending_members:
        timers.cancel(pending_member_key(group_id, member_id))
    timers.cancel(join_key(group_id))
    timers.cancel(sync_key(group_id))


def must_rejoin(
    a: MemberAssignment[Any], group_epoch: int, target: frozenset[Any], held_by_others: Callable[[Any], bool]
) -> bool:
    """A classic member rejoins to revoke, to learn a newer target, or to pick up freed items.

    The group epoch (not only the assignment epoch) counts: with only classic members left,
    nobody else would trigger the new target a departure calls for.
    """
    if a.member_epoch < group_epoch or a.state == MemberState.UNREVOKED:
        return True
    if a.state == MemberState.UNRELEASED:
        return not any(held_by_others(i) for i in target)
    return False


def leave_results(
    body: Any, version: int, find: Callable[[str, str | None], tuple[ErrorCode, str]]
) -> tuple[list[dict[str, Any]], list[str]]:
    """LeaveGroup's per-member results and the member ids that leave; `find(member id,
    instance id)` says (error, the member id it names)."""
    identities = (
        [(m.member_id, m.group_instance_id) for m in body.members]
        if version >= 3
        else [(body.member_id, None)]
    )
    results, leaving = [], []
    for member_id, instance_id in identities:
        error, found = find(member_id, instance_id)
        if error == ErrorCode.NONE:
            leaving.append(found)
        results.append({"member_id": member_id, "group_instance_id": instance_id, "error_code": error})
    return results, list(dict.fromkeys(leaving))


def classic_join_key(group_id: str, member_id: str) -> tuple[str, str, str]:
    return ("consumer-classic-join", group_id, member_id)


def classic_sync_key(group_id: str, member_id: str) -> tuple[str, str, str]:
    return ("consumer-classic-sync", group_id, member_id)


class _MemberIdError(KafkaApiError):
    """MEMBER_ID_REQUIRED, carrying the id the member must rejoin with."""

    def __init__(self, member_id: str) -> None:
        super().__init__(ErrorCode.MEMBER_ID_REQUIRED, "rejoin with the given member id")
        self.member_id = member_id


def _subscription_version(protocols: list[tuple[str, bytes]]) -> int:
    try:
        return decode_subscription(protocols[0][1]).version
    except (ValueError, IndexError):
        return 0

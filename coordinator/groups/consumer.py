"""Consumer groups (KIP-848): ConsumerGroupHeartbeat, as Apache Kafka 4.x runs it.

Everything that decides a consumer group's state lives here; like classic.py it has no IO
and no clock. Items are (topic id, partition) pairs; the shared reconciliation engine
(reconciliation.py) moves each member from its current assignment to its target.

Theory of operation
-------------------
The group has a *group epoch*, bumped whenever what the assignment depends on changes: a
member joins or leaves or is fenced, a subscription changes, or the partitions of a
subscribed topic change. When the group epoch is ahead of the *assignment epoch*, the next
heartbeat recomputes the target assignment with the group's server-side assignor (the one
most members ask for, else the first configured) and the assignment epoch catches up.
Each heartbeat then reconciles the sending member alone: it is told to revoke what it must
give up (and stays at its epoch until it reports it has), and it is given what is free.
Nobody waits at a group-wide barrier; a member that keeps its partitions is never paused.

Heartbeat rules real clients depend on (librdkafka treats several wrong answers as fatal):
- validation: member id required from v1 (v0 joins may omit it and get one generated);
  a join (epoch 0) must carry a rebalance timeout, an empty TopicPartitions and a
  subscription; epoch -2 needs an instance id; an unknown server assignor is
  UNSUPPORTED_ASSIGNOR and an invalid regex INVALID_REGULAR_EXPRESSION;
- epochs: a member sending a newer epoch than it has is fenced; an older one is accepted
  only when it is the previous epoch and its owned partitions are a subset of its current
  assignment (its last response was lost); epoch 0 from an existing member re-sends its
  assignment; a fenced member must rejoin with epoch 0;
- leaving: epoch -1 removes the member (group epoch bump); epoch -2 keeps a static member's
  place and assignment for its session timeout, and a new process with the same instance
  id takes it over; a static member may only be replaced after such a temporary leave
  (UNRELEASED_INSTANCE_ID otherwise);
- the response carries the assignment when the member joined, sent a full request, or its
  assignment changed; otherwise null.
Timers: a session per member (expiry removes it), a rebalance timeout while a member
holds partitions it was told to revoke (expiry fences it), and one for the member chosen to
compute a client-side target (expiry chooses another).

Client-side assignment (KIP-848 "Client Side Mode"; client_assignment.py holds the rules it
shares with connect groups): when every member declares client assignors (a tagged field of
the heartbeat) and none asks for a server assignor, the target is not computed here. One
member, chosen by assignor and version coverage, gets ShouldComputeAssignment in its
heartbeat answers; it reads the group with ConsumerGroupPrepareAssignment and installs the
result with ConsumerGroupInstallAssignment, validated against the group as it was prepared
(members, subscriptions, partition counts): each partition of a subscribed topic assigned
exactly once, only to a member subscribing to its topic. A valid install for an older group
epoch is accepted and the next round starts at once; an assignor error keeps the current
target (its epoch still advances); a chosen member that does not install within its
rebalance timeout is passed over. Reconciliation is unchanged: revoke before assign. The
metadata the assignor computed for a member, and its error, reach the member in its
heartbeat's Assignment (tagged fields) once it is at the target's epoch.

Online migration (migration.py): a group may hold members speaking the classic protocol
(`ConsumerMember.classic` is set); they go through the same pipeline (`advance_member`),
use their own session timeout, and commit offsets with their member epoch as generation.
A consumer-protocol join to a non-empty classic group converts it here (`_group`); a
removal that leaves only classic members may convert the group back (`_removed`).
"""

from __future__ import annotations

import re
from collections import Counter
from dataclasses import dataclass, field, replace
from enum import StrEnum
from typing import TYPE_CHECKING, Any, Protocol

from connect_rebalance.errors import ErrorCode, KafkaApiError

from .assignors import ASSIGNORS, AssignmentMember
from .client_assignment import (
    ClientAssignorSpec,
    ComputeRound,
    assignor_specs,
    assignors_problem,
    choose_computer,
    common_assignor,
    computing_member,
    install_problem,
    installed_epoch,
)
from .reconciliation import MemberAssignment, MemberState, Ownership, fenced_reason, reconcile
from .records import (
    ClassicMemberMetadata,
    ConsumerGroupEpochRecord,
    ConsumerMemberRecord,
    ConsumerMemberSnapshot,
    CurrentAssignmentRecord,
    Record,
    TargetEpochRecord,
    TargetMemberRecord,
)
from .requests import GroupRequest, Outcome

if TYPE_CHECKING:
    from .coordinator import GroupCoordinator

Item = tuple[str, int]  # (topic id, partition)
NO_METADATA: tuple[int, bytes] = (0, b"")
LEAVE_EPOCH, TEMPORARY_LEAVE_EPOCH = -1, -2
MEMBER_ID_REQUIRED_FROM_VERSION = 1
REGEX_FROM_VERSION = 1


class TopicsView(Protocol):
    """What the consumer group reads of the cluster's metadata."""

    def topic_id(self, name: str) -> str | None: ...
    def partition_count(self, topic_id: str) -> int | None: ...
    def names(self) -> list[str]: ...
    def name_of(self, topic_id: str) -> str | None: ...


class ConsumerGroupState(StrEnum):
    EMPTY = "Empty"
    ASSIGNING = "Assigning"
    RECONCILING = "Reconciling"
    STABLE = "Stable"
    DEAD = "Dead"


@dataclass
class ConsumerMember:
    member_id: str
    instance_id: str | None = None
    rack_id: str | None = None
    client_id: str = ""
    client_host: str = ""
    rebalance_timeout_ms: int = 300000
    subscribed_topic_names: frozenset[str] = frozenset()
    subscribed_topic_regex: str | None = None
    server_assignor: str | None = None
    assignment: MemberAssignment[Item] = field(default_factory=MemberAssignment.joining)
    classic: ClassicMemberMetadata | None = None  # set while the member speaks the classic protocol
    client_assignors: tuple[ClientAssignorSpec, ...] = ()


@dataclass(frozen=True, slots=True)
class PreparedGroup:
    """The group as the computing member read it: what its install is validated against."""

    epoch: int
    subscriptions: dict[str, frozenset[str]]  # member id -> subscribed topic ids
    partitions: dict[str, int]  # topic id -> partition count


@dataclass
class ConsumerGroup:
    group_id: str
    group_epoch: int = 0
    assignment_epoch: int = 0
    members: dict[str, ConsumerMember] = field(default_factory=dict)
    target: dict[str, frozenset[Item]] = field(default_factory=dict)
    ownership: Ownership[Item] = field(default_factory=Ownership)
    subscribed_metadata: tuple[tuple[str, int], ...] = ()
    assignor_name: str = ""
    compute: ComputeRound = field(default_factory=ComputeRound)
    prepared: PreparedGroup | None = None
    # What a client-side assignor computed with the target: per member (version, bytes), and its error.
    target_metadata: dict[str, tuple[int, bytes]] = field(default_factory=dict)
    target_error: int = 0

    type_name = "consumer"

    @property
    def protocol_type(self) -> str:
        return "consumer"

    @property
    def state(self) -> ConsumerGroupState:
        if not self.members:
            return ConsumerGroupState.EMPTY
        if self.group_epoch > self.assignment_epoch:
            return ConsumerGroupState.ASSIGNING
        if any(
            m.assignment.state != MemberState.STABLE or m.assignment.member_epoch != self.assignment_epoch
            for m in self.members.values()
            if m.assignment.member_epoch != TEMPORARY_LEAVE_EPOCH
        ):
            return ConsumerGroupState.RECONCILING
        return ConsumerGroupState.STABLE

    def is_empty(self) -> bool:
        return not self.members

    def static_member(self, instance_id: str) -> ConsumerMember | None:
        return next((m for m in self.members.values() if m.instance_id == instance_id), None)


def session_key(group_id: str, member_id: str) -> tuple[str, str, str]:
    return ("consumer-session", group_id, member_id)


def rebalance_key(group_id: str, member_id: str) -> tuple[str, str, str]:
    return ("consumer-rebalance", group_id, member_id)


def compute_key(group_id: str, member_id: str) -> tuple[str, str, str]:
    return ("consumer-compute", group_id, member_id)


def _invalid(message: str) -> KafkaApiError:
    return KafkaApiError(ErrorCode.INVALID_REQUEST, message)


class ConsumerGroups:
    def __init__(self, core: GroupCoordinator, topics: TopicsView) -> None:
        settings = core.settings
        self.core = core
        self.topics = topics
        self.assignors = list(settings.consumer_assignors)
        self.session_timeout_ms = settings.consumer_session_timeout_ms
        self.heartbeat_interval_ms = settings.consumer_heartbeat_interval_ms
        self.pending_heartbeat_interval_ms = min(
            settings.consumer_pending_heartbeat_interval_ms, settings.consumer_heartbeat_interval_ms
        )

    def session_timeout(self, member: ConsumerMember) -> int:
        """Consumer-protocol members use the group setting; classic members keep their own."""
        return member.classic.session_timeout_ms if member.classic is not None else self.session_timeout_ms

    def _heartbeat_interval(self, group: ConsumerGroup, member: ConsumerMember) -> int:
        """The interval a member should heartbeat at next.

        A member with reconciliation work pending — partitions to revoke, partitions still
        held by others, or an epoch behind the target — is asked back sooner, so a
        reconciliation that needs several heartbeats takes several short intervals instead
        of several default ones. So is every member while a member computes the next target
        (the chosen one must learn it, the others will likely move). A settled member keeps
        the configured interval.
        """
        settled = (
            member.assignment.state == MemberState.STABLE
            and member.assignment.member_epoch == group.assignment_epoch
            and group.group_epoch == group.assignment_epoch
        )
        return self.heartbeat_interval_ms if settled else self.pending_heartbeat_interval_ms

    # -- validation -----------------------------------------------------------------------

    def _validate(self, body: Any, version: int) -> None:
        epoch = body.member_epoch
        if not (body.group_id or "").strip():
            raise _invalid("GroupId can't be empty.")
        if not (body.member_id or "").strip() and (
            version >= MEMBER_ID_REQUIRED_FROM_VERSION or epoch > 0 or epoch == -1
        ):
            raise _invalid("MemberId can't be empty.")
        for name in ("instance_id", "rack_id"):
            value = getattr(body, name)
            if value is not None and not value.strip():
                raise _invalid(f"{'InstanceId' if name == 'instance_id' else 'RackId'} can't be empty.")
        regex = body.subscribed_topic_regex if version >= REGEX_FROM_VERSION else None
        if epoch == 0:
            if body.rebalance_timeout_ms == -1:
                raise _invalid("RebalanceTimeoutMs must be provided in first request.")
            if body.topic_partitions is None or body.topic_partitions:
                raise _invalid("TopicPartitions must be empty when (re-)joining.")
            if body.subscribed_topic_names is None and regex is None:
                raise _invalid("SubscribedTopicNames or SubscribedTopicRegex must be set in first request.")
        elif epoch == TEMPORARY_LEAVE_EPOCH:
            if body.instance_id is None:
                raise _invalid("InstanceId can't be null.")
        elif epoch < TEMPORARY_LEAVE_EPOCH:
            raise _invalid("MemberEpoch is invalid.")
        if body.server_assignor is not None and body.client_assignors is not None:
            raise _invalid("ServerAssignor and ClientAssignors cannot be used together.")
        problem = assignors_problem(body.client_assignors or ())
        if problem is not None:
            raise _invalid(problem)
        if body.server_assignor is not None and body.server_assignor not in self.assignors:
            raise KafkaApiError(
                ErrorCode.UNSUPPORTED_ASSIGNOR, f"ServerAssignor {body.server_assignor} is not supported."
            )
        if regex:
            try:
                re.compile(regex)
            except re.error as exc:
                raise KafkaApiError(
                    ErrorCode.INVALID_REGULAR_EXPRESSION, f"Invalid regular expression {regex}: {exc}"
                ) from exc

    # -- the heartbeat --------------------------------------------------------------------

    def heartbeat(self, request: GroupRequest, now_ms: int, out: Outcome) -> None:
        body, version = request.body, request.version
        try:
            self._validate(body, version)
            if body.member_epoch in (LEAVE_EPOCH, TEMPORARY_LEAVE_EPOCH):
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
                "assignment": None,
            }
        out.reply(request.request_id, {"throttle_time_ms": 0, "error_message": None, **fields})

    def _group(
        self, group_id: str, create: bool, now_ms: int = 0, out: Outcome | None = None
    ) -> ConsumerGroup:
        group = self.core.groups.get(group_id)
        if isinstance(group, ConsumerGroup):
            return group
        migration = self.core.migration
        if create and group is not None and not group.is_empty() and migration is not None:
            converted = migration.upgrade(group, now_ms, out or Outcome())
            if converted is not None:
                return converted
        if group is None and create:
            created = ConsumerGroup(group_id)
            self.core.groups[group_id] = created  # type: ignore[assignment]
            return created
        if group is not None and create and group.is_empty():
            created = ConsumerGroup(group_id)  # an empty classic group becomes a consumer group
            self.core.groups[group_id] = created  # type: ignore[assignment]
            return created
        if group is None:
            # The group was deleted under its members: tell them to rejoin. GROUP_ID_NOT_FOUND,
            # Kafka's answer, is fatal to librdkafka consumers.
            raise KafkaApiError(
                ErrorCode.UNKNOWN_MEMBER_ID, f"Consumer group {group_id} has no such member; rejoin."
            )
        raise KafkaApiError(ErrorCode.GROUP_ID_NOT_FOUND, f"Group {group_id} is not a consumer group.")

    def _heartbeat(self, request: GroupRequest, now_ms: int, out: Outcome) -> dict[str, Any]:
        body, version = request.body, request.version
        group = self._group(body.group_id, body.member_epoch == 0, now_ms, out)
        member_id = body.member_id or (self.core.new_member_id("") if version == 0 else "")
        owned = self._owned_items(body.topic_partitions)
        if body.client_assignors:
            self._check_client_assignors(group, member_id, assignor_specs(body.client_assignors))
        member, joined = self._member_for(group, member_id, body, owned, now_ms, out)
        identity = snapshot(member)
        changed = self._update_member(member, body, request)
        before = self.advance_member(group, member, identity, joined, changed, owned, now_ms, out)
        full = (
            body.rebalance_timeout_ms != -1
            and (
                body.subscribed_topic_names is not None
                or (version >= REGEX_FROM_VERSION and body.subscribed_topic_regex is not None)
            )
            and body.topic_partitions is not None
        )
        result = self._assignor_result(group, member)
        send_assignment = (
            body.member_epoch == 0
            or full
            or member.assignment.assigned != before.assigned
            or (bool(result) and member.assignment.member_epoch != before.member_epoch)
        )
        return {
            "error_code": ErrorCode.NONE,
            "member_id": member.member_id,
            "member_epoch": member.assignment.member_epoch,
            "heartbeat_interval_ms": self._heartbeat_interval(group, member),
            "should_compute_assignment": group.compute.should_compute(
                member.member_id, group.group_epoch, group.assignment_epoch
            ),
            "assignment": {**self._assignment_field(member.assignment.assigned), **result}
            if send_assignment
            else None,
        }

    def _assignor_result(self, group: ConsumerGroup, member: ConsumerMember) -> dict[str, Any]:
        """A client-side assignor's error and this member's metadata, for its heartbeat's Assignment.

        Sent once the member has reached the target's epoch (the metadata belongs to that
        target), and only when not the defaults, so server-side answers keep Kafka's bytes.
        """
        version, metadata = group.target_metadata.get(member.member_id, NO_METADATA)
        at_target = member.assignment.member_epoch == group.assignment_epoch
        if not at_target or (not group.target_error and (version, metadata) == NO_METADATA):
            return {}
        return {"error": group.target_error, "metadata_version": version, "metadata_bytes": metadata}

    def advance_member(
        self,
        group: ConsumerGroup,
        member: ConsumerMember,
        identity: ConsumerMemberSnapshot,
        joined: bool,
        changed: bool,
        owned: frozenset[Item] | None,
        now_ms: int,
        out: Outcome,
    ) -> MemberAssignment[Item]:
        """After a member's fields were updated from its request (either protocol): record it,
        bump the group epoch if what the assignment depends on changed, recompute the target if
        it is behind, reconcile this member and re-arm its timers. Returns its previous assignment.
        """
        bump = joined or changed
        if joined or snapshot(member) != identity:
            out.records.append(ConsumerMemberRecord(group.group_id, member.member_id, snapshot(member)))
        bump |= self._metadata_changed(group)
        if bump:
            group.group_epoch += 1
            out.records.append(ConsumerGroupEpochRecord(group.group_id, group.group_epoch))
        if group.group_epoch > group.assignment_epoch:
            if self._client_selection(group) is None:
                self._compute_target(group, out)
            else:
                self._choose_computer(group, now_ms)
        before = member.assignment
        member.assignment = reconcile(
            before,
            group.assignment_epoch,
            group.target.get(member.member_id, frozenset()),
            owned,
            group.ownership.held_by_others(member.member_id),
        )
        group.ownership.update(member.member_id, before, member.assignment)
        if member.assignment != before:
            out.records.append(CurrentAssignmentRecord(group.group_id, member.member_id, member.assignment))
        self.refresh_session(group, member, now_ms)
        if member.assignment.state == MemberState.UNREVOKED:
            if before.state != MemberState.UNREVOKED:
                self.core.timers.schedule(
                    rebalance_key(group.group_id, member.member_id), now_ms + member.rebalance_timeout_ms
                )
        else:
            self.core.timers.cancel(rebalance_key(group.group_id, member.member_id))
        return before

    def refresh_session(self, group: ConsumerGroup, member: ConsumerMember, now_ms: int) -> None:
        self.core.timers.schedule(
            session_key(group.group_id, member.member_id), now_ms + self.session_timeout(member)
        )

    def _owned_items(self, topic_partitions: Any) -> frozenset[Item] | None:
        if topic_partitions is None:
            return None
        return frozenset((str(tp.topic_id), p) for tp in topic_partitions for p in tp.partitions)

    def _member_for(
        self,
        group: ConsumerGroup,
        member_id: str,
        body: Any,
        owned: frozenset[Item] | None,
        now_ms: int,
        out: Outcome,
    ) -> tuple[ConsumerMember, bool]:
        epoch = body.member_epoch
        if body.instance_id is not None:
            holder = group.static_member(body.instance_id)
            if epoch == 0:
                if holder is None:
                    return self._new_member(group, member_id, body), True
                if holder.member_id != member_id and holder.assignment.member_epoch != TEMPORARY_LEAVE_EPOCH:
                    raise KafkaApiError(
                        ErrorCode.UNRELEASED_INSTANCE_ID,
                        f"Static member {body.instance_id} has not released its place.",
                    )
                if holder.member_id != member_id:
                    return self.replace_static(group, holder, member_id, out), False
                return holder, False
            if holder is None:
                raise KafkaApiError(
                    ErrorCode.UNKNOWN_MEMBER_ID, f"Instance id {body.instance_id} is unknown."
                )
            if holder.member_id != member_id:
                raise KafkaApiError(
                    ErrorCode.FENCED_INSTANCE_ID, f"Instance {body.instance_id} is another member's."
                )
        member = group.members.get(member_id)
        if member is None:
            if epoch != 0:
                raise KafkaApiError(
                    ErrorCode.UNKNOWN_MEMBER_ID, f"Member {member_id} is not a member of the group."
                )
            return self._new_member(group, member_id, body), True
        reason = fenced_reason(member.assignment, epoch, owned)
        if reason is not None:
            # Kafka keeps a fenced consumer-protocol member: it rejoins with epoch 0.
            raise KafkaApiError(ErrorCode.FENCED_MEMBER_EPOCH, reason)
        return member, False

    def _new_member(self, group: ConsumerGroup, member_id: str, body: Any) -> ConsumerMember:
        self.check_room(group)
        member = ConsumerMember(member_id)
        group.members[member_id] = member
        return member

    def check_room(self, group: ConsumerGroup) -> None:
        """A new member may not grow a group beyond group.consumer.max.size."""
        if len(group.members) >= self.core.settings.consumer_max_size:
            raise KafkaApiError(
                ErrorCode.GROUP_MAX_SIZE_REACHED,
                f"The consumer group has reached its maximum capacity of "
                f"{self.core.settings.consumer_max_size} members.",
            )

    def replace_static(
        self, group: ConsumerGroup, old: ConsumerMember, member_id: str, out: Outcome
    ) -> ConsumerMember:
        """A restarted static member takes over its predecessor's subscription and assignment."""
        del group.members[old.member_id]
        for key in (session_key, rebalance_key, compute_key):
            self.core.timers.cancel(key(group.group_id, old.member_id))
        group.compute.forget(old.member_id)
        group.ownership.update(old.member_id, old.assignment, None)
        fresh = replace(
            old, member_id=member_id, assignment=replace(old.assignment, member_epoch=0, previous_epoch=0)
        )
        group.members[member_id] = fresh
        group.ownership.update(member_id, None, fresh.assignment)
        if old.member_id in group.target:
            group.target[member_id] = group.target.pop(old.member_id)
        if old.member_id in group.target_metadata:
            group.target_metadata[member_id] = group.target_metadata.pop(old.member_id)
        out.records.extend(member_tombstones(group.group_id, old.member_id))
        out.records.append(ConsumerMemberRecord(group.group_id, member_id, snapshot(fresh)))
        if member_id in group.target:
            out.records.append(
                TargetMemberRecord(
                    group.group_id, member_id, group.target[member_id],
                    group.target_metadata.get(member_id, NO_METADATA),
                )
            )  # fmt: skip
        out.records.append(CurrentAssignmentRecord(group.group_id, member_id, fresh.assignment))
        return fresh

    def _update_member(self, member: ConsumerMember, body: Any, request: GroupRequest) -> bool:
        """Apply the non-null fields; True if the subscription or assignor vote changed."""
        changed = False
        member.client_id, member.client_host = request.client_id, request.client_host
        member.classic = None  # a member heartbeating with this protocol no longer speaks the classic one
        if body.instance_id is not None:
            member.instance_id = body.instance_id
        if body.rack_id is not None:
            member.rack_id = body.rack_id
        if body.rebalance_timeout_ms != -1:
            member.rebalance_timeout_ms = body.rebalance_timeout_ms
        if (
            body.subscribed_topic_names is not None
            and frozenset(body.subscribed_topic_names) != member.subscribed_topic_names
        ):
            member.subscribed_topic_names = frozenset(body.subscribed_topic_names)
            changed = True
        regex = body.subscribed_topic_regex if request.version >= REGEX_FROM_VERSION else None
        if regex is not None and (regex or None) != member.subscribed_topic_regex:
            member.subscribed_topic_regex = regex or None
            changed = True
        if body.server_assignor is not None and body.server_assignor != member.server_assignor:
            member.server_assignor = body.server_assignor
            changed = True
        if body.client_assignors is not None:
            # Names, versions, reason or metadata changed: the KIP's trigger for a new target.
            specs = assignor_specs(body.client_assignors)
            changed |= specs != member.client_assignors
            member.client_assignors = specs
        return changed

    # -- target assignment ----------------------------------------------------------------

    def _subscribed_ids(self, member: ConsumerMember) -> frozenset[str]:
        names = set(member.subscribed_topic_names)
        if member.subscribed_topic_regex:
            pattern = re.compile(member.subscribed_topic_regex)
            names.update(n for n in self.topics.names() if pattern.fullmatch(n) and not n.startswith("__"))
        ids = (self.topics.topic_id(n) for n in names)
        return frozenset(i for i in ids if i is not None)

    def _metadata_changed(self, group: ConsumerGroup) -> bool:
        """Subscribed topics created, deleted or grown since the last epoch."""
        ids = sorted({i for m in group.members.values() for i in self._subscribed_ids(m)})
        current = tuple((i, self.topics.partition_count(i) or 0) for i in ids)
        if current == group.subscribed_metadata:
            return False
        group.subscribed_metadata = current
        return True

    def _compute_target(self, group: ConsumerGroup, out: Outcome) -> None:
        if group.compute.member_id is not None:  # the group left client-side assignment
            self.core.timers.cancel(compute_key(group.group_id, group.compute.member_id))
            group.compute.abandon()
        votes = Counter(m.server_assignor for m in group.members.values() if m.server_assignor)
        name = max(sorted(votes), key=lambda n: votes[n]) if votes else self.assignors[0]
        partitions = dict(group.subscribed_metadata)
        specs = {
            m.member_id: AssignmentMember(
                m.member_id,
                self._subscribed_ids(m),
                group.target.get(m.member_id, frozenset()),
                m.instance_id,
                m.rack_id,
            )
            for m in group.members.values()
        }
        self._set_target(group, dict(ASSIGNORS[name].assign(specs, partitions)), {}, out)
        group.assignor_name, group.target_error = name, 0
        group.assignment_epoch = group.group_epoch
        out.records.append(TargetEpochRecord(group.group_id, group.assignment_epoch, name))

    def _set_target(
        self,
        group: ConsumerGroup,
        target: dict[str, frozenset[Item]],
        metadata: dict[str, tuple[int, bytes]],
        out: Outcome,
    ) -> None:
        """Replace the target; a record for each member whose partitions or assignor metadata changed."""
        previous, previous_metadata = group.target, group.target_metadata
        group.target, group.target_metadata = target, metadata
        for member_id, items in sorted(target.items()):
            meta = metadata.get(member_id, NO_METADATA)
            if previous.get(member_id) != items or previous_metadata.get(member_id, NO_METADATA) != meta:
                out.records.append(TargetMemberRecord(group.group_id, member_id, items, meta))

    def _assignment_field(self, items: frozenset[Item]) -> dict[str, Any]:
        by_topic: dict[str, list[int]] = {}
        for topic_id, partition in items:
            by_topic.setdefault(topic_id, []).append(partition)
        return {
            "topic_partitions": [
                {"topic_id": t, "partitions": sorted(p)} for t, p in sorted(by_topic.items())
            ]
        }

    # -- client-side assignment (ConsumerGroupPrepareAssignment / InstallAssignment) -------

    def _client_selection(self, group: ConsumerGroup) -> tuple[str, int, int] | None:
        """(assignor, lowest, highest version) when members compute the target, else None.

        Only when every member declares client assignors and none asks for a server assignor
        (a classic member of a migrating group declares none): the KIP's "a client side
        assignor is used if possible", without overriding an explicit server-side vote.
        """
        members = list(group.members.values())
        if not members or any(not m.client_assignors or m.server_assignor for m in members):
            return None
        return common_assignor([m.client_assignors for m in members])

    def _check_client_assignors(
        self, group: ConsumerGroup, member_id: str, specs: tuple[ClientAssignorSpec, ...]
    ) -> None:
        """The KIP: a member whose assignors share no version range with the others is refused."""
        others = [
            m.client_assignors
            for m in group.members.values()
            if m.member_id != member_id and m.client_assignors
        ]
        if others and common_assignor([*others, specs]) is None:
            raise KafkaApiError(
                ErrorCode.UNSUPPORTED_ASSIGNOR,
                "ClientAssignors share no assignor with overlapping versions with the group's members.",
            )

    def _choose_computer(self, group: ConsumerGroup, now_ms: int) -> None:
        if self._client_selection(group) is None:
            return
        chosen = choose_computer(
            group.compute, {m.member_id: m.client_assignors for m in group.members.values()}
        )
        if chosen is not None:
            self.core.timers.schedule(
                compute_key(group.group_id, chosen[0]), now_ms + group.members[chosen[0]].rebalance_timeout_ms
            )

    def on_compute_timeout(self, group_id: str, member_id: str, now_ms: int, out: Outcome) -> None:
        """The chosen member did not install within its rebalance timeout: choose another."""
        group = self.core.groups.get(group_id)
        if isinstance(group, ConsumerGroup) and group.compute.member_id == member_id:
            group.compute.timed_out()
            group.prepared = None
            if group.group_epoch > group.assignment_epoch:
                self._choose_computer(group, now_ms)

    def prepare(self, request: GroupRequest, now_ms: int, out: Outcome) -> None:
        try:
            group, _ = computing_member(
                self.core.groups, ConsumerGroup, request.body, "Consumer group", ErrorCode.STALE_MEMBER_EPOCH
            )
            selection = self._client_selection(group)
            if selection is None:  # not expected: leaving client-side assignment ends the round
                raise KafkaApiError(ErrorCode.UNKNOWN_MEMBER_ID, "The target is computed server-side.")
            name, lowest, highest = selection
            partitions = dict(group.subscribed_metadata)
            view = PreparedGroup(
                group.group_epoch,
                {m.member_id: self._subscribed_ids(m) & partitions.keys() for m in group.members.values()},
                partitions,
            )
            group.compute.prepared(view.epoch, frozenset(view.subscriptions))
            group.prepared = view
            members = []
            for m in group.members.values():
                spec = next(a for a in m.client_assignors if a.name == name)
                members.append({
                    "member_id": m.member_id,
                    "member_epoch": m.assignment.member_epoch,
                    "instance_id": m.instance_id,
                    "rack_id": m.rack_id,
                    "subscribed_topic_ids": sorted(view.subscriptions[m.member_id]),
                    "assignor": {"reason": spec.reason, "metadata_version": spec.metadata_version,
                                 "metadata_bytes": spec.metadata},
                    "topic_partitions": self._assignment_field(group.target.get(m.member_id, frozenset()))[
                        "topic_partitions"
                    ],
                })  # fmt: skip
            fields: dict[str, Any] = {
                "error_code": ErrorCode.NONE,
                "group_epoch": view.epoch,
                "assignment_epoch": group.assignment_epoch,
                "assignor_name": name,
                "assignor_minimum_version": lowest,
                "assignor_maximum_version": highest,
                "members": members,
                "topics": [
                    {"topic_id": t, "topic_name": self.topics.name_of(t) or "", "num_partitions": n}
                    for t, n in group.subscribed_metadata
                ],
            }
        except KafkaApiError as exc:
            fields = {"error_code": exc.code, "error_message": exc.message, "group_epoch": -1,
                      "assignment_epoch": -1, "assignor_name": "", "assignor_minimum_version": -1,
                      "assignor_maximum_version": -1, "members": [], "topics": []}  # fmt: skip
        out.reply(request.request_id, {"throttle_time_ms": 0, "error_message": None, **fields})

    def install(self, request: GroupRequest, now_ms: int, out: Outcome) -> None:
        try:
            group, member = computing_member(
                self.core.groups, ConsumerGroup, request.body, "Consumer group", ErrorCode.STALE_MEMBER_EPOCH
            )
            self._install(group, member, request.body, now_ms, out)
            fields: dict[str, Any] = {"error_code": ErrorCode.NONE, "error_message": None}
        except KafkaApiError as exc:
            fields = {"error_code": exc.code, "error_message": exc.message}
        out.reply(request.request_id, {"throttle_time_ms": 0, **fields})

    def _install(
        self, group: ConsumerGroup, member: ConsumerMember, body: Any, now_ms: int, out: Outcome
    ) -> None:
        prepared = installed_epoch(group.compute, body, "ConsumerGroupPrepareAssignment")
        view = group.prepared
        if view is None or view.epoch != prepared:  # not expected: a round keeps its view of the group
            raise _invalid("Call ConsumerGroupPrepareAssignment before installing an assignment.")
        if body.error == 0:
            targets = {m.member_id: self._owned_items(m.partitions) or frozenset() for m in body.members}
            self._validate_install(view, targets)
            metadata = {
                m.member_id: (m.metadata_version, bytes(m.metadata_bytes))
                for m in body.members
                if m.member_id in group.members
                and (m.metadata_version, bytes(m.metadata_bytes)) != NO_METADATA
            }
            self._set_target(group, {m: targets.get(m, frozenset()) for m in group.members}, metadata, out)
            selection = self._client_selection(group)
            group.assignor_name = selection[0] if selection else group.assignor_name
        # An assignor error keeps the current target; its epoch advances so the group does not spin.
        group.assignment_epoch, group.target_error = view.epoch, body.error
        out.records.append(
            TargetEpochRecord(group.group_id, group.assignment_epoch, group.assignor_name, group.target_error)
        )
        self.core.timers.cancel(compute_key(group.group_id, member.member_id))
        group.compute.installed(member.member_id)
        group.prepared = None
        if group.group_epoch > group.assignment_epoch:
            self._choose_computer(group, now_ms)

    def _validate_install(self, view: PreparedGroup, targets: dict[str, frozenset[Item]]) -> None:
        """INVALID_ASSIGNMENT unless the targets fit the group as it was prepared."""

        def named(items: frozenset[Item]) -> frozenset[tuple[str, int]]:
            return frozenset((self.topics.name_of(t) or t, p) for t, p in items)

        for member_id, items in sorted(targets.items()):
            topics = frozenset(t for t, _ in items)
            foreign = topics - view.subscriptions.get(member_id, topics)  # unknown members: below
            if foreign:
                names = sorted(self.topics.name_of(t) or t for t in foreign)
                raise KafkaApiError(
                    ErrorCode.INVALID_ASSIGNMENT,
                    f"Invalid assignment: {member_id} is assigned topics it does not subscribe to: {names}.",
                )
        covered = frozenset((t, p) for t, n in view.partitions.items() for p in range(n))
        problem = install_problem(
            named(covered),  # type: ignore[arg-type]
            {m: named(items) for m, items in targets.items()},  # type: ignore[misc]
            frozenset(view.subscriptions),
        )
        if problem is not None:
            raise KafkaApiError(ErrorCode.INVALID_ASSIGNMENT, f"Invalid assignment: {problem}.")

    # -- leaving and fencing --------------------------------------------------------------

    def _leave(self, body: Any, now_ms: int, out: Outcome) -> dict[str, Any]:
        group = self._group(body.group_id, False)
        if body.instance_id is not None:
            member = group.static_member(body.instance_id)
            if member is None:
                raise KafkaApiError(
                    ErrorCode.UNKNOWN_MEMBER_ID, f"Instance id {body.instance_id} is unknown."
                )
            if member.member_id != body.member_id:
                raise KafkaApiError(
                    ErrorCode.FENCED_INSTANCE_ID, f"Instance {body.instance_id} is another member's."
                )
        else:
            member = group.members.get(body.member_id)
            if member is None:
                raise KafkaApiError(
                    ErrorCode.UNKNOWN_MEMBER_ID, f"Member {body.member_id} is not a member of the group."
                )
        if body.member_epoch == TEMPORARY_LEAVE_EPOCH:
            # The static member keeps its place and assignment until its session runs out.
            before = member.assignment
            member.assignment = replace(
                before, member_epoch=TEMPORARY_LEAVE_EPOCH, pending_revocation=frozenset()
            )
            group.ownership.update(member.member_id, before, member.assignment)
            out.records.append(CurrentAssignmentRecord(group.group_id, member.member_id, member.assignment))
        else:
            self.remove(group, member.member_id, out)
            self.removed(group, now_ms, out)
        return {
            "error_code": ErrorCode.NONE,
            "member_id": body.member_id,
            "member_epoch": body.member_epoch,
            "heartbeat_interval_ms": 0,
            "assignment": None,
        }

    def remove(self, group: ConsumerGroup, member_id: str, out: Outcome) -> None:
        member = group.members.pop(member_id, None)
        if member is None:
            return
        out.records.extend(member_tombstones(group.group_id, member_id))
        group.ownership.update(member_id, member.assignment, None)
        group.target.pop(member_id, None)
        group.target_metadata.pop(member_id, None)
        for key in (session_key, rebalance_key, compute_key):
            self.core.timers.cancel(key(group.group_id, member_id))
        group.compute.forget(member_id)
        group.group_epoch += 1
        out.records.append(ConsumerGroupEpochRecord(group.group_id, group.group_epoch))
        self._metadata_changed(group)
        if not group.members:
            group.assignment_epoch = group.group_epoch
            out.records.append(TargetEpochRecord(group.group_id, group.assignment_epoch, group.assignor_name))

    def removed(self, group: ConsumerGroup, now_ms: int, out: Outcome) -> None:
        """After members were removed: only classic members left may turn the group classic again."""
        if self.core.migration is not None:
            self.core.migration.maybe_downgrade(group, now_ms, out)

    def on_session_expired(self, group_id: str, member_id: str, now_ms: int, out: Outcome) -> None:
        group = self.core.groups.get(group_id)
        if isinstance(group, ConsumerGroup) and member_id in group.members:
            self.remove(group, member_id, out)
            self.removed(group, now_ms, out)

    def on_rebalance_timeout(self, group_id: str, member_id: str, now_ms: int, out: Outcome) -> None:
        group = self.core.groups.get(group_id)
        if isinstance(group, ConsumerGroup):
            member = group.members.get(member_id)
            if member is not None and member.assignment.state == MemberState.UNREVOKED:
                self.remove(group, member_id, out)
                self.removed(group, now_ms, out)

    # -- ConsumerGroupDescribe ------------------------------------------------------------

    def describe(self, request: GroupRequest, now_ms: int, out: Outcome) -> None:
        described = []
        for group_id in request.body.group_ids:
            group = self.core.groups.get(group_id)
            if not isinstance(group, ConsumerGroup):
                described.append(
                    {
                        "error_code": ErrorCode.GROUP_ID_NOT_FOUND,
                        "error_message": f"Group {group_id} is not a consumer group."
                        if group is not None
                        else f"Group {group_id} not found.",
                        "group_id": group_id,
                        "group_state": ConsumerGroupState.DEAD.value,
                        "group_epoch": -1,
                        "assignment_epoch": -1,
                        "assignor_name": "",
                        "members": [],
                    }
                )
                continue
            members = [
                {
                    "member_id": m.member_id,
                    "instance_id": m.instance_id,
                    "rack_id": m.rack_id,
                    "member_epoch": m.assignment.member_epoch,
                    "client_id": m.client_id,
                    "client_host": m.client_host,
                    "subscribed_topic_names": sorted(m.subscribed_topic_names),
                    "subscribed_topic_regex": m.subscribed_topic_regex,
                    "assignment": self._described_assignment(m.assignment.held),
                    "target_assignment": self._described_assignment(
                        group.target.get(m.member_id, frozenset())
                    ),
                    "member_type": 0 if m.classic is not None else 1,
                }
                for m in group.members.values()
            ]
            described.append(
                {
                    "error_code": ErrorCode.NONE,
                    "error_message": None,
                    "group_id": group_id,
                    "group_state": group.state.value,
                    "group_epoch": group.group_epoch,
                    "assignment_epoch": group.assignment_epoch,
                    "assignor_name": group.assignor_name
                    or next(iter(self._client_selection(group) or ()), self.assignors[0]),
                    "members": members,
                }
            )
        out.reply(request.request_id, {"throttle_time_ms": 0, "groups": described})

    def _described_assignment(self, items: frozenset[Item]) -> dict[str, Any]:
        field_ = self._assignment_field(items)
        for entry in field_["topic_partitions"]:
            entry["topic_name"] = self.topics.name_of(entry["topic_id"]) or ""
        return field_

    # -- offsets of consumer groups -------------------------------------------------------

    def validate_offset_commit(self, group: ConsumerGroup, member_id: str, epoch: int, version: int) -> None:
        """OffsetCommit by a member must carry its current epoch (v9+); admin commits need an empty group."""
        if not member_id and epoch < 0:
            if group.members:
                raise KafkaApiError(
                    ErrorCode.UNKNOWN_MEMBER_ID, "the group has members; commit as one of them"
                )
            return
        member = group.members.get(member_id)
        if member is not None and member.classic is not None:
            # A classic member commits with its member epoch as generation, at any version.
            if epoch != member.assignment.member_epoch:
                raise KafkaApiError(
                    ErrorCode.ILLEGAL_GENERATION,
                    f"generation {epoch} is not the member's epoch {member.assignment.member_epoch}",
                )
            return
        self._check_member_epoch(group, member_id, epoch)
        if version < 9:
            raise KafkaApiError(
                ErrorCode.UNSUPPORTED_VERSION, "consumer group members commit with OffsetCommit v9+"
            )

    def validate_offset_fetch(self, group: ConsumerGroup, member_id: str | None, epoch: int) -> None:
        """OffsetFetch v9+ naming a member must carry its current epoch; without one, anyone may read."""
        if member_id is not None:
            self._check_member_epoch(group, member_id, epoch)

    def _check_member_epoch(self, group: ConsumerGroup, member_id: str, epoch: int) -> None:
        member = group.members.get(member_id)
        if member is None:
            raise KafkaApiError(
                ErrorCode.UNKNOWN_MEMBER_ID, f"Member {member_id} is not a member of the group."
            )
        current = member.assignment.member_epoch
        if epoch != current:
            raise KafkaApiError(ErrorCode.STALE_MEMBER_EPOCH, f"epoch {epoch} is not the member's {current}")

    # -- replay ---------------------------------------------------------------------------

    def replay(self, record: Record) -> None:
        """Rebuild a consumer group from its records (start-up; the live path writes the same)."""
        existing = self.core.groups.get(record.group_id)
        if isinstance(record, ConsumerGroupEpochRecord) and record.epoch is None:
            if isinstance(existing, ConsumerGroup):
                del self.core.groups[record.group_id]
            return
        group = existing if isinstance(existing, ConsumerGroup) else ConsumerGroup(record.group_id)
        self.core.groups[record.group_id] = group  # type: ignore[assignment]
        if isinstance(record, ConsumerGroupEpochRecord):
            group.group_epoch = record.epoch or 0
        elif isinstance(record, TargetEpochRecord):
            if record.epoch is not None:
                group.assignment_epoch, group.assignor_name = record.epoch, record.assignor
                group.target_error = record.error
        elif isinstance(record, TargetMemberRecord):
            group.target_metadata.pop(record.member_id, None)
            if record.items is None:
                group.target.pop(record.member_id, None)
            else:
                group.target[record.member_id] = record.items
                if record.metadata != NO_METADATA:
                    group.target_metadata[record.member_id] = record.metadata
        elif isinstance(record, ConsumerMemberRecord):
            self._replay_member(group, record)
        elif isinstance(record, CurrentAssignmentRecord) and record.value is not None:
            member = group.members.get(record.member_id)
            if member is not None:
                group.ownership.update(record.member_id, member.assignment, record.value)
                member.assignment = record.value

    def _replay_member(self, group: ConsumerGroup, record: ConsumerMemberRecord) -> None:
        if record.value is None:
            gone = group.members.pop(record.member_id, None)
            if gone is not None:
                group.ownership.update(record.member_id, gone.assignment, None)
            return
        member = group.members.setdefault(record.member_id, ConsumerMember(record.member_id))
        v = record.value
        member.instance_id, member.rack_id = v.instance_id, v.rack_id
        member.client_id, member.client_host = v.client_id, v.client_host
        member.subscribed_topic_names = frozenset(v.subscribed_topic_names)
        member.subscribed_topic_regex = v.subscribed_topic_regex
        member.rebalance_timeout_ms, member.server_assignor = v.rebalance_timeout_ms, v.server_assignor
        member.classic = v.classic
        member.client_assignors = v.client_assignors

    def load_complete(self, now_ms: int) -> None:
        for group in self.core.groups.values():
            if isinstance(group, ConsumerGroup):
                for member in group.members.values():
                    self.refresh_session(group, member, now_ms)
                if group.group_epoch > group.assignment_epoch and self._client_selection(group):
                    self._choose_computer(group, now_ms)


def snapshot(member: ConsumerMember) -> ConsumerMemberSnapshot:
    return ConsumerMemberSnapshot(
        member.instance_id,
        member.rack_id,
        member.client_id,
        member.client_host,
        tuple(sorted(member.subscribed_topic_names)),
        member.subscribed_topic_regex,
        member.rebalance_timeout_ms,
        member.server_assignor,
        member.classic,
        member.client_assignors,
    )


def member_tombstones(group_id: str, member_id: str) -> list[Record]:
    return [
        CurrentAssignmentRecord(group_id, member_id, None),
        TargetMemberRecord(group_id, member_id, None),
        ConsumerMemberRecord(group_id, member_id, None),
    ]


_snapshot = snapshot  # the older private name, still imported by tests

"""Consumer groups (KIP-848): ConsumerGroupHeartbeat as Apache Kafka 4.x runs it, a flavour of
the modern-group engine (modern/engine.py). Items are (topic id, partition) pairs.

Theory of operation
-------------------
The group epoch is bumped when a member joins, leaves or is fenced, when a subscription or an
assignor changes, or when the partitions of a subscribed topic change. While the group epoch
is ahead of the assignment epoch, the next heartbeat recomputes the target with the group's
server-side assignor (the one most members ask for, else the first configured) — or, when
every member declares client assignors and none asks for a server assignor (KIP-848 "Client
Side Mode", client_assignment.py), a member is chosen to compute it through
ConsumerGroupPrepareAssignment / InstallAssignment, validated against the group as it was
prepared (members, subscriptions, partition counts). Each heartbeat reconciles its member
alone; a member that keeps its partitions never pauses.

Heartbeat rules real clients depend on (librdkafka treats several wrong answers as fatal):
- validation: member id required from v1 (v0 joins may omit it and get one generated); a
  join (epoch 0) must carry a rebalance timeout, an empty TopicPartitions and a
  subscription; epoch -2 needs an instance id; an unknown server assignor is
  UNSUPPORTED_ASSIGNOR and an invalid regex INVALID_REGULAR_EXPRESSION;
- epochs: a newer epoch than the member's is fenced; an older one is accepted only when it
  is the previous epoch and its owned partitions are a subset of its assignment (its last
  response was lost); epoch 0 from an existing member re-sends its assignment; a fenced
  member stays in the group and must rejoin with epoch 0;
- leaving: epoch -1 removes the member; epoch -2 keeps a static member's place and
  assignment for its session timeout, and a new process with the same instance id takes it
  over; a static member may only be replaced after such a temporary leave
  (UNRELEASED_INSTANCE_ID otherwise);
- the answer carries the assignment when the member joined, sent a full request, or its
  assignment changed; a client-side assignor's metadata and error reach the member with it
  once it is at the target's epoch.
Classic-protocol members (online migration, classic_bridge.py) go through the same pipeline.
"""

from __future__ import annotations

import re
from collections import Counter
from dataclasses import dataclass, field, replace
from typing import Any, ClassVar

from connect_rebalance import consumer_protocol
from connect_rebalance.errors import ErrorCode, KafkaApiError
from coordinator.assignors import ASSIGNORS, AssignmentMember
from coordinator.groups.client_assignment import (
    assignor_specs,
    common_assignor,
    install_problem,
)
from coordinator.groups.context import GroupContext
from coordinator.groups.group_configs import (
    CONSUMER_ASSIGNMENT_INTERVAL,
    CONSUMER_HEARTBEAT_INTERVAL,
    CONSUMER_SESSION_TIMEOUT,
    override,
)
from coordinator.groups.modern.engine import LEAVE_EPOCH, ModernGroups, invalid
from coordinator.groups.modern.group import TEMPORARY_LEAVE_EPOCH, Member, ModernGroup
from coordinator.groups.reconciliation import TargetMember
from coordinator.groups.records import (
    ClassicMemberMetadata,
    ConsumerGroupEpochRecord,
    ConsumerMemberRecord,
    ConsumerMemberSnapshot,
    CurrentAssignmentRecord,
    TargetEpochRecord,
    TargetMemberRecord,
)
from coordinator.groups.requests import SUBSCRIPTION_CHANGE, GroupRequest

Item = tuple[str, int]  # (topic id, partition)
MEMBER_ID_REQUIRED_FROM_VERSION = 1
REGEX_FROM_VERSION = 1


@dataclass(frozen=True, slots=True)
class PreparedGroup:
    """The group as the computing member read it: what its install is validated against."""

    epoch: int
    subscriptions: dict[str, frozenset[str]]  # member id -> subscribed topic ids
    partitions: dict[str, int]  # topic id -> partition count


@dataclass(frozen=True)
class ComputeTarget:
    """An effect the core asks the IO shell for: run a server-side assignor on another thread
    and hand the result back (the dispatcher's `target_computed`). Its inputs are plain values,
    taken when it was asked for."""

    group_id: str
    epoch: int
    assignor: str
    members: dict[str, AssignmentMember]
    partitions: dict[str, int]

    def run(self) -> dict[str, frozenset[Item]]:
        return dict(ASSIGNORS[self.assignor].assign(self.members, self.partitions))


@dataclass
class ConsumerGroup(ModernGroup[Item]):
    subscribed_metadata: tuple[tuple[str, int], ...] = ()  # (topic id, partitions) the last epoch saw
    subscribed_names: frozenset[str] = frozenset()  # the topic names behind them
    # How many members subscribe to each topic name and to each regex: what the group subscribes
    # to, without walking its members (kept by ConsumerGroups.profile_replaced).
    name_subscribers: Counter[str] = field(default_factory=Counter, repr=False, compare=False)
    regex_subscribers: Counter[str] = field(default_factory=Counter, repr=False, compare=False)
    subscriptions_version: int = field(default=0, repr=False, compare=False)  # bumped as keys come and go
    computing: int | None = None  # the epoch an offloaded server-side computation is under way for
    computations: int = 0  # server-side target computations started (a figure for /metrics)
    metadata_seen: tuple[int, int] | None = None  # (topics version, profiles version) last looked at
    prepared: PreparedGroup | None = None

    type_name: ClassVar[str] = "consumer"

    def subscribed_topics(self) -> set[str] | None:
        return set(self.subscribed_names)

    def tombstones(self) -> list[Any]:
        return [TargetEpochRecord(self.group_id, None), ConsumerGroupEpochRecord(self.group_id, None)]


class ConsumerGroups(ModernGroups[Item]):
    group_class = ConsumerGroup
    kind = "Consumer group"
    prepare_epoch_error = ErrorCode.STALE_MEMBER_EPOCH
    prepare_api = "ConsumerGroupPrepareAssignment"
    unprepared: ClassVar[dict[str, Any]] = {"members": [], "topics": []}
    undescribed: ClassVar[dict[str, Any]] = {"members": []}
    leave_epochs = frozenset({LEAVE_EPOCH, TEMPORARY_LEAVE_EPOCH})
    profile_fields = ("instance_id", "client_assignors", "rack_id", "subscribed_topic_names",
                      "subscribed_topic_regex", "server_assignor")  # fmt: skip
    epoch_record = ConsumerGroupEpochRecord
    member_record = ConsumerMemberRecord
    assignment_record = CurrentAssignmentRecord
    session_config = CONSUMER_SESSION_TIMEOUT
    heartbeat_config = CONSUMER_HEARTBEAT_INTERVAL

    def __init__(self, ctx: GroupContext) -> None:
        settings = ctx.settings
        super().__init__(
            ctx,
            settings.consumer_session_timeout_ms,
            settings.consumer_heartbeat_interval_ms,
            settings.consumer_max_size,
        )
        assert ctx.topics is not None, "consumer groups read topic ids from the cluster's metadata"
        self.topics = ctx.topics
        self.assignors = list(settings.consumer_assignors)
        # One object per distinct subscription, whatever the number of members holding it.
        self._subscriptions: dict[frozenset[str], frozenset[str]] = {}
        self._resolved_cache: dict[
            tuple[frozenset[str], str | None], tuple[frozenset[str], frozenset[str]]
        ] = {}
        self._resolved_version: int | None = None

    # -- validation -----------------------------------------------------------------------

    def validate(self, body: Any, version: int) -> None:
        epoch = body.member_epoch
        if not (body.group_id or "").strip():
            raise invalid("GroupId can't be empty.")
        if not (body.member_id or "").strip() and (
            version >= MEMBER_ID_REQUIRED_FROM_VERSION or epoch > 0 or epoch == LEAVE_EPOCH
        ):
            raise invalid("MemberId can't be empty.")
        for name in ("instance_id", "rack_id"):
            value = getattr(body, name)
            if value is not None and not value.strip():
                raise invalid(f"{'InstanceId' if name == 'instance_id' else 'RackId'} can't be empty.")
        regex = body.subscribed_topic_regex if version >= REGEX_FROM_VERSION else None
        if epoch == 0:
            if body.rebalance_timeout_ms == -1:
                raise invalid("RebalanceTimeoutMs must be provided in first request.")
            if body.topic_partitions is None or body.topic_partitions:
                raise invalid("TopicPartitions must be empty when (re-)joining.")
            if body.subscribed_topic_names is None and regex is None:
                raise invalid("SubscribedTopicNames or SubscribedTopicRegex must be set in first request.")
        elif epoch == TEMPORARY_LEAVE_EPOCH:
            if body.instance_id is None:
                raise invalid("InstanceId can't be null.")
        elif epoch < TEMPORARY_LEAVE_EPOCH:
            raise invalid("MemberEpoch is invalid.")
        self.check_assignors(body)
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

    def check_request(self, group: Any, member_id: str, body: Any) -> None:
        """The KIP: a member whose assignors share no version range with the others is refused."""
        if not body.client_assignors:
            return
        others = [
            m.profile.client_assignors
            for m in group.members.values()
            if m.member_id != member_id and m.profile.client_assignors
        ]
        if others and common_assignor([*others, assignor_specs(body.client_assignors)]) is None:
            raise KafkaApiError(
                ErrorCode.UNSUPPORTED_ASSIGNOR,
                "ClientAssignors share no assignor with overlapping versions with the group's members.",
            )

    # -- members --------------------------------------------------------------------------

    def empty_profile(self) -> ConsumerMemberSnapshot:
        return ConsumerMemberSnapshot(None, None, "", "", frozenset(), None, 300000, None)

    def member_id_of(self, request: GroupRequest) -> str:
        body = request.body
        return body.member_id or (self.ctx.new_member_id("") if request.version == 0 else "")

    def owned_items(self, body: Any) -> frozenset[Item] | None:
        return items_of(body.topic_partitions)

    def static_member_for(
        self, group: Any, member_id: str, body: Any, now_ms: int
    ) -> tuple[Member[Item], bool] | None:
        instance_id = body.instance_id
        if instance_id is None:
            return None
        holder = group.static_member(instance_id)
        if body.member_epoch == 0:
            if holder is None:
                self.admit(group, body, now_ms)
                return Member(member_id, self.empty_profile()), True
            if holder.member_id == member_id:
                return holder, False
            # A classic static member never leaves temporarily: a restart into the consumer
            # protocol (a rolling upgrade) replaces it, as in Kafka.
            if holder.assignment.member_epoch != TEMPORARY_LEAVE_EPOCH and holder.classic is None:
                raise KafkaApiError(
                    ErrorCode.UNRELEASED_INSTANCE_ID,
                    f"Static member {instance_id} has not released its place.",
                )
            return self.replace_static(group, holder, member_id), False
        if holder is None:
            raise KafkaApiError(ErrorCode.UNKNOWN_MEMBER_ID, f"Instance id {instance_id} is unknown.")
        if holder.member_id != member_id:
            raise KafkaApiError(ErrorCode.FENCED_INSTANCE_ID, f"Instance {instance_id} is another member's.")
        return None  # the member itself: looked up and checked for fencing as any member

    def profile_from(self, request: GroupRequest, profile: ConsumerMemberSnapshot) -> ConsumerMemberSnapshot:
        body = request.body
        regex = body.subscribed_topic_regex if request.version >= REGEX_FROM_VERSION else None
        names = body.subscribed_topic_names
        return replace(
            super().profile_from(request, profile),
            classic=None,  # a member heartbeating with this protocol no longer speaks the classic one
            rack_id=profile.rack_id if body.rack_id is None else body.rack_id,
            subscribed_topic_names=profile.subscribed_topic_names if names is None else frozenset(names),
            subscribed_topic_regex=profile.subscribed_topic_regex if regex is None else (regex or None),
            server_assignor=profile.server_assignor if body.server_assignor is None else body.server_assignor,
        )

    def bumps(self, before: ConsumerMemberSnapshot, after: ConsumerMemberSnapshot) -> bool:
        """A new subscription or assignor vote; changed client assignors (names, versions, reason
        or metadata) are the KIP's trigger for a new target."""
        return (
            before.subscribed_topic_names != after.subscribed_topic_names
            or before.subscribed_topic_regex != after.subscribed_topic_regex
            or before.server_assignor != after.server_assignor
            or before.client_assignors != after.client_assignors
        )

    profile_cause = SUBSCRIPTION_CHANGE

    def member_tombstones(self, group_id: str, member_id: str) -> list[Any]:
        return [
            CurrentAssignmentRecord(group_id, member_id, None),
            TargetMemberRecord(group_id, member_id, None),
            ConsumerMemberRecord(group_id, member_id, None),
        ]

    def on_removed(self, group: Any, now_ms: int) -> None:
        self.metadata_changed(group)

    def leaving_member(self, group: Any, body: Any) -> Member[Item]:
        if body.instance_id is None:
            return super().leaving_member(group, body)
        member = group.static_member(body.instance_id)
        if member is None:
            raise KafkaApiError(ErrorCode.UNKNOWN_MEMBER_ID, f"Instance id {body.instance_id} is unknown.")
        if member.member_id != body.member_id:
            raise KafkaApiError(
                ErrorCode.FENCED_INSTANCE_ID, f"Instance {body.instance_id} is another member's."
            )
        return member  # type: ignore[no-any-return]

    # -- answers --------------------------------------------------------------------------

    def full_request(self, request: GroupRequest) -> bool:
        body, version = request.body, request.version
        return (
            body.rebalance_timeout_ms != -1
            and (
                body.subscribed_topic_names is not None
                or (version >= REGEX_FROM_VERSION and body.subscribed_topic_regex is not None)
            )
            and body.topic_partitions is not None
        )

    def news_at_epoch(self, group: Any, member: Member[Item]) -> bool:
        return bool(self._assignor_result(group, member))

    def assignment_answer(self, group: Any, member: Member[Item]) -> dict[str, Any]:
        return {**assignment_field(member.assignment.assigned), **self._assignor_result(group, member)}

    def _assignor_result(self, group: Any, member: Member[Item]) -> dict[str, Any]:
        """A client-side assignor's error and this member's metadata, for its heartbeat's
        Assignment: once the member is at the target's epoch (the metadata belongs to that
        target), and only when not the defaults, so server-side answers keep Kafka's bytes."""
        target = group.target.get(member.member_id)
        version, metadata = metadata_of(target)
        at_target = member.assignment.member_epoch == group.assignment_epoch
        if not at_target or (not group.target_error and (version, metadata) == NO_METADATA):
            return {}
        return {"error": group.target_error, "metadata_version": version, "metadata_bytes": metadata}

    # -- the target -----------------------------------------------------------------------

    def subscribed_names(self, profile: ConsumerMemberSnapshot) -> frozenset[str]:
        return self._resolved(profile)[0]

    def matching(self, regex: str) -> list[str]:
        """The topics a regex subscription resolves to (internal topics never)."""
        pattern = re.compile(regex)
        return [n for n in self.topics.names() if pattern.fullmatch(n) and not n.startswith("__")]

    def profile_replaced(self, group: Any, before: Any, after: Any) -> None:
        if (
            before is not None
            and after is not None
            and (
                before.subscribed_topic_names == after.subscribed_topic_names
                and before.subscribed_topic_regex == after.subscribed_topic_regex
            )
        ):
            return
        _tally(group, before, -1)
        _tally(group, after, 1)
        self.ctx.journal.on_undo(lambda: (_tally(group, after, -1), _tally(group, before, 1)))

    def subscribed_ids(self, profile: ConsumerMemberSnapshot) -> frozenset[str]:
        return self._resolved(profile)[1]

    def _resolved(self, profile: ConsumerMemberSnapshot) -> tuple[frozenset[str], frozenset[str]]:
        """(topic names, topic ids) a subscription covers: its names and what its regex matches
        now. Resolved once per distinct subscription while the cluster's topics stay the same,
        however many members share it."""
        if self._resolved_version != self.topics.version:
            self._resolved_cache.clear()
            self._resolved_version = self.topics.version
        key = (profile.subscribed_topic_names, profile.subscribed_topic_regex)
        found = self._resolved_cache.get(key)
        if found is None:
            names = set(profile.subscribed_topic_names)
            if profile.subscribed_topic_regex:
                names.update(self.matching(profile.subscribed_topic_regex))
            ids = (self.topics.topic_id(n) for n in names)
            found = self._resolved_cache[key] = (frozenset(names), frozenset(i for i in ids if i is not None))
        return found

    def shared(self, profile: ConsumerMemberSnapshot) -> ConsumerMemberSnapshot:
        names = self._subscriptions.setdefault(profile.subscribed_topic_names, profile.subscribed_topic_names)
        return (
            profile
            if names is profile.subscribed_topic_names
            else replace(profile, subscribed_topic_names=names)
        )

    def metadata_changed(self, group: Any) -> bool:
        """Subscribed topics created, deleted or grown since the last epoch. Looked at again only
        when the cluster's topics changed or a topic name (or regex) gained its first subscriber
        or lost its last since the last look: neither a settled group's heartbeat nor a join to
        topics the group already reads walks its members or its topics."""
        seen = (self.topics.version, group.subscriptions_version)
        if seen == group.metadata_seen:
            return False
        self.ctx.journal.set_attr(group, "metadata_seen", seen)
        names = self._group_names(group)
        ids = sorted(i for i in map(self.topics.topic_id, names) if i is not None)
        current = tuple((i, self.topics.partition_count(i) or 0) for i in ids)
        if current == group.subscribed_metadata:
            return False
        self.ctx.journal.set_attr(group, "subscribed_metadata", current)
        self.ctx.journal.set_attr(group, "subscribed_names", names)
        return True

    def load_complete(self, now_ms: int) -> None:
        """Loaded groups know what they subscribe to. What their last epoch saw of the topics is
        not persisted: the first heartbeat after a restart bumps the epoch, so a change made
        while the coordinator was down is not missed."""
        for group in self.ctx.groups.values():
            if isinstance(group, ConsumerGroup):
                group.subscribed_names = self._group_names(group)
        super().load_complete(now_ms)

    def _group_names(self, group: ConsumerGroup) -> frozenset[str]:
        """The topic names the group subscribes to, from its tallies (not its members)."""
        return frozenset(group.name_subscribers).union(*map(self.matching, group.regex_subscribers))

    def computing_pool(self, group: Any) -> dict[str, Any] | None:
        """Every member, when all declare client assignors and none asks for a server assignor
        (a classic member of a migrating group declares none): the KIP's "a client side
        assignor is used if possible", without overriding an explicit server-side vote."""
        members = list(group.members.values())
        if not members or any(not m.profile.client_assignors or m.profile.server_assignor for m in members):
            return None
        return {m.member_id: m.profile.client_assignors for m in members}

    def target_due(self, group: Any, now_ms: int) -> None:
        if self.computing_pool(group) is not None:
            self.choose_computer(group, now_ms)
        elif not self.ctx.settings.consumer_assignor_offload:
            computation = self._computation(group)
            self._write_computed(group, computation.assignor, computation.run())
        elif group.computing is None:  # one at a time: a stale result is discarded and rerun
            key = self.key("assign", group.group_id, "")
            interval = override(self.ctx, group.group_id, CONSUMER_ASSIGNMENT_INTERVAL)
            if interval is None:
                interval = self.ctx.settings.consumer_assignment_interval_ms
            if interval == 0:
                self._start_computation(group)
            elif self.ctx.timers.deadline(key) is None:
                group_id = group.group_id
                self.ctx.schedule(key, now_ms + interval, lambda now: self._start_computation_of(group_id))

    def _computation(self, group: Any) -> ComputeTarget:
        """What the server-side assignor needs, as plain values (it may run on another thread)."""
        self.ctx.journal.set_attr(group, "computations", group.computations + 1)
        if group.compute.member_id is not None:  # the group left client-side assignment
            self.ctx.cancel(self.key("compute", group.group_id, group.compute.member_id))
            self.ctx.journal.keep(group.compute)
            group.compute.abandon()
        votes = Counter(
            m.profile.server_assignor for m in group.members.values() if m.profile.server_assignor
        )
        name = max(sorted(votes), key=lambda n: votes[n]) if votes else self.assignors[0]
        specs = {
            m.member_id: AssignmentMember(
                m.member_id,
                self.subscribed_ids(m.profile),
                group.target_of(m.member_id),
                m.profile.instance_id,
                m.profile.rack_id,
            )
            for m in group.members.values()
        }
        return ComputeTarget(group.group_id, group.group_epoch, name, specs, dict(group.subscribed_metadata))

    def _start_computation_of(self, group_id: str) -> None:
        """The assignment interval is over: compute if a target is still due server-side."""
        group = self._live(group_id)
        due = group is not None and group.computing is None and group.group_epoch > group.assignment_epoch
        if due and self.computing_pool(group) is None:
            self._start_computation(group)

    def _start_computation(self, group: Any) -> None:
        computation = self._computation(group)
        self.ctx.journal.set_attr(group, "computing", computation.epoch)
        self.ctx.effect(computation)

    def target_computed(self, computation: ComputeTarget, assigned: Any, now_ms: int) -> None:
        """An offloaded computation's result (None if it failed). Written only if the group is
        still at the epoch it was computed for; otherwise discarded and computed again."""
        group = self._live(computation.group_id)
        if group is None or group.computing != computation.epoch:
            return  # deleted, converted, or not the round under way
        self.ctx.journal.set_attr(group, "computing", None)
        fresh = group.group_epoch == computation.epoch and self.computing_pool(group) is None
        if assigned is not None and fresh:
            self._write_computed(group, computation.assignor, assigned)
        elif group.group_epoch > group.assignment_epoch:
            self.target_due(group, now_ms)

    def _write_computed(self, group: Any, assignor: str, assigned: Any) -> None:
        target = {m: TargetMember(assigned.get(m, frozenset())) for m in group.members}
        self.write_target(group, group.group_epoch, target, assignor, 0)

    def write_target(
        self,
        group: Any,
        epoch: int,
        members: dict[str, Any] | None,
        assignor: str,
        error: int,
        computed_by: str | None = None,
    ) -> None:
        """A record for each member whose partitions or assignor metadata changed, then the epoch."""
        for member_id, target in sorted((members or {}).items()):
            if group.target.get(member_id) != target:
                self.ctx.emit(
                    TargetMemberRecord(group.group_id, member_id, target.items, metadata_of(target))
                )
        self.ctx.emit(TargetEpochRecord(group.group_id, epoch, assignor, error))

    def replay_target(self, group: Any, record: Any) -> None:
        if isinstance(record, TargetMemberRecord):
            target = None if record.items is None else TargetMember(record.items, 0, *record.metadata)
            self.set_target_member(group, record.member_id, target)
        elif isinstance(record, TargetEpochRecord) and record.epoch is not None:
            journal = self.ctx.journal
            journal.set_attr(group, "assignment_epoch", record.epoch)
            journal.set_attr(group, "assignor_name", record.assignor)
            journal.set_attr(group, "target_error", record.error)

    # -- client-side assignment (ConsumerGroupPrepareAssignment / InstallAssignment) -------

    def prepared(self, group: Any, assignor: str) -> dict[str, Any]:
        partitions = dict(group.subscribed_metadata)
        view = PreparedGroup(
            group.group_epoch,
            {m.member_id: self.subscribed_ids(m.profile) & partitions.keys() for m in group.members.values()},
            partitions,
        )
        group.compute.prepared(view.epoch, frozenset(view.subscriptions))
        self.ctx.journal.set_attr(group, "prepared", view)
        members = []
        for m in group.members.values():
            spec = next(a for a in m.profile.client_assignors if a.name == assignor)
            members.append({
                "member_id": m.member_id, "member_epoch": m.assignment.member_epoch,
                "instance_id": m.profile.instance_id, "rack_id": m.profile.rack_id,
                "subscribed_topic_ids": sorted(view.subscriptions[m.member_id]),
                "assignor": {"reason": spec.reason, "metadata_version": spec.metadata_version,
                             "metadata_bytes": spec.metadata},
                "topic_partitions": assignment_field(group.target_of(m.member_id))["topic_partitions"],
            })  # fmt: skip
        topics = [
            {"topic_id": t, "topic_name": self.topics.name_of(t) or "", "num_partitions": n}
            for t, n in group.subscribed_metadata
        ]
        return {"members": members, "topics": topics}

    def install_target(self, group: Any, member: Member[Item], body: Any, epoch: int) -> None:
        view = group.prepared
        if view is None or view.epoch != epoch:  # not expected: a round keeps its view of the group
            raise invalid("Call ConsumerGroupPrepareAssignment before installing an assignment.")
        target, assignor = None, group.assignor_name
        if body.error == 0:
            items = {m.member_id: items_of(m.partitions) or frozenset() for m in body.members}
            self._validate_install(view, items)
            computed = {m.member_id: (m.metadata_version, bytes(m.metadata_bytes)) for m in body.members}
            target = {
                member_id: TargetMember(
                    items.get(member_id, frozenset()), 0, *computed.get(member_id, NO_METADATA)
                )
                for member_id in group.members
            }
            selection = self.selection(group)
            assignor = selection[0] if selection else assignor
        self.write_target(group, epoch, target, assignor, body.error)
        self.ctx.journal.set_attr(group, "prepared", None)

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

    # -- ConsumerGroupDescribe ------------------------------------------------------------

    def described_assignor(self, group: Any) -> str:
        return super().described_assignor(group) or self.assignors[0]

    def describe_key(self) -> Any:
        return self.topics.version

    def described_members(self, group: Any) -> list[dict[str, Any]]:
        # Members that name the same topics share one subscription (`shared`): it is sorted once,
        # and the same list stands in each of their entries, which the encoder writes once.
        sorted_names: dict[frozenset[str], list[str]] = {}
        for m in group.members.values():
            names = m.profile.subscribed_topic_names
            if names not in sorted_names:
                sorted_names[names] = sorted(names)
        members = [
            {
                "member_id": m.member_id,
                "instance_id": m.profile.instance_id,
                "rack_id": m.profile.rack_id,
                "member_epoch": m.assignment.member_epoch,
                "client_id": m.profile.client_id,
                "client_host": m.profile.client_host,
                "subscribed_topic_names": sorted_names[m.profile.subscribed_topic_names],
                "subscribed_topic_regex": m.profile.subscribed_topic_regex,
                "assignment": self._described(m.assignment.held),
                "target_assignment": self._described(group.target_of(m.member_id)),
                "member_type": 0 if m.classic is not None else 1,
            }
            for m in group.members.values()
        ]
        return members

    def _described(self, items: frozenset[Item]) -> dict[str, Any]:
        described = assignment_field(items)
        for entry in described["topic_partitions"]:
            entry["topic_name"] = self.topics.name_of(entry["topic_id"]) or ""
        return described

    # -- the classic bridge's view of consumer groups ---------------------------------------

    def items(self, partitions: Any) -> frozenset[Item]:
        """(topic name, partition) pairs as items; partitions of unknown topics are dropped."""
        ids = {name: self.topics.topic_id(name) for name, _ in partitions}
        return frozenset((ids[n], p) for n, p in partitions if ids[n] is not None)  # type: ignore[misc]

    def named(self, items: Any) -> list[tuple[str, int]]:
        names = {t: self.topics.name_of(t) for t, _ in items}
        return [(names[t], p) for t, p in items if names[t] is not None]  # type: ignore[misc]


NO_METADATA: tuple[int, bytes] = (0, b"")


def _tally(group: ConsumerGroup, profile: ConsumerMemberSnapshot | None, delta: int) -> None:
    """Count (delta 1) or uncount (-1) a member's subscription in its group's tallies."""
    if profile is None:
        return
    regex = profile.subscribed_topic_regex
    for tally, keys in (
        (group.name_subscribers, profile.subscribed_topic_names),
        (group.regex_subscribers, (regex,) if regex else ()),
    ):
        for key in keys:
            tally[key] += delta
            if not tally[key]:
                del tally[key]
            if tally.get(key, 0) == max(delta, 0):  # a key came or went: what to look up changed
                group.subscriptions_version += 1


def metadata_of(target: TargetMember[Any] | None) -> tuple[int, bytes]:
    return NO_METADATA if target is None else (target.metadata_version, target.metadata)


def items_of(topic_partitions: Any) -> frozenset[Item] | None:
    if topic_partitions is None:
        return None
    return frozenset((str(tp.topic_id), p) for tp in topic_partitions for p in tp.partitions)


def assignment_field(items: frozenset[Item]) -> dict[str, Any]:
    by_topic: dict[str, list[int]] = {}
    for topic_id, partition in items:
        by_topic.setdefault(topic_id, []).append(partition)
    return {
        "topic_partitions": [{"topic_id": t, "partitions": sorted(p)} for t, p in sorted(by_topic.items())]
    }


class ConsumerEmbedding:
    """Classic consumers inside a consumer group: ConsumerProtocol subscriptions and assignments
    (the classic bridge's view of consumer groups, classic_bridge.py)."""

    protocol_type = consumer_protocol.PROTOCOL_TYPE
    policy_setting = "group.consumer.migration.policy"

    def __init__(self, groups: ConsumerGroups) -> None:
        self.groups = groups

    def offered(self, protocols: list[tuple[str, bytes]]) -> list[str]:
        return [name for name, _ in protocols]

    def upgrade_refusal(self, classic: Any) -> str | None:
        return None

    def converted(
        self, member: Any, protocol: str, claimed: frozenset[Item]
    ) -> tuple[ConsumerMemberSnapshot, frozenset[Item]]:
        subscription = consumer_protocol.decode_subscription(
            member.metadata(protocol) or member.protocols[0][1]
        )
        assigned = consumer_protocol.decode_assignment(member.assignment)
        # A member that has not synced its assignment yet may still own partitions it reported.
        items = self.groups.items(assigned or subscription.owned) - claimed
        profile = ConsumerMemberSnapshot(
            member.group_instance_id, subscription.rack_id, member.client_id, member.client_host,
            frozenset(subscription.topics), None, member.rebalance_timeout_ms, None,
            ClassicMemberMetadata(member.session_timeout_ms, tuple(member.protocols)),
        )  # fmt: skip
        return profile, items

    def write_converted_target(
        self, group: Any, generation: int, targets: dict[str, frozenset[Item]], protocol: str
    ) -> None:
        members = {member_id: TargetMember(items) for member_id, items in targets.items()}
        self.groups.write_target(group, generation, members, self.groups.assignors[0], 0)

    def parse_join(self, protocols: list[tuple[str, bytes]], chosen: str) -> consumer_protocol.Subscription:
        return consumer_protocol.decode_subscription(dict(protocols)[chosen])

    def joined(
        self,
        request: GroupRequest,
        profile: ConsumerMemberSnapshot,
        protocols: list[tuple[str, bytes]],
        parsed: consumer_protocol.Subscription,
    ) -> tuple[ConsumerMemberSnapshot, frozenset[Item], bool]:
        body, version = request.body, request.version
        topics = frozenset(parsed.topics)
        changed = topics != profile.subscribed_topic_names or profile.subscribed_topic_regex is not None
        updated = replace(
            profile, subscribed_topic_names=topics, subscribed_topic_regex=None,
            instance_id=body.group_instance_id if version >= 5 else None, rack_id=parsed.rack_id,
            client_id=request.client_id, client_host=request.client_host,
            rebalance_timeout_ms=body.rebalance_timeout_ms if version >= 1 else body.session_timeout_ms,
            classic=ClassicMemberMetadata(body.session_timeout_ms, tuple(protocols)),
        )  # fmt: skip
        return updated, self.groups.items(parsed.owned), changed

    def rejoin_epoch(self, group: Any) -> int:
        """The group epoch: with only classic members left, nobody else would trigger the new
        target a departure calls for."""
        return group.group_epoch  # type: ignore[no-any-return]

    def sync_assignment(self, group: Any, member: Member[Item], protocol: str) -> bytes:
        return self._encoded(member, member.assignment.assigned)

    def downgrade_assignment(self, group: Any, member: Member[Item]) -> bytes:
        return self._encoded(member, group.target_of(member.member_id))

    def _encoded(self, member: Member[Item], items: frozenset[Item]) -> bytes:
        version = consumer_protocol.subscription_version(member.classic.protocols[0][1])
        return consumer_protocol.encode_assignment(self.groups.named(items), version)

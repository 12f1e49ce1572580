"""The lifecycle every modern group shares, written once (consumer and connect groups are flavours).

No IO and no clock: requests arrive with `now_ms`, answers and records leave through the
`GroupContext`, deadlines are timers that carry their operation.

Theory of operation
-------------------
- A heartbeat is validated, then finds its group (creating one only once the join is
  accepted, or converting a classic group through the bridge) and its member (a new one, a
  known one, a static member's successor; a heartbeat at a wrong epoch is fenced).
- `advance` is the one pipeline every member goes through, whatever protocol it speaks: its
  new profile is recorded, the group epoch is bumped when what the assignment depends on
  changed, a target that is due is computed (server-side) or a member is chosen to compute
  it (client-side, Prepare/Install), and the member is reconciled alone — revoke before
  assign, nobody waits at a group-wide barrier. Its session and, while it holds work it was
  told to give up, its rebalance timeout are re-armed.
- Three deadlines per member: its session (expiry removes it), its rebalance timeout while
  it must revoke (expiry removes it), and, for the member chosen to compute a target, its
  rebalance timeout to install one (expiry chooses another).
- Every change of persistent state is a record, applied by `replay` — the same code that
  rebuilds the group at start-up; members are immutable values replaced by records.
A flavour says what differs: validation, how the request's fields update a member's
profile, what bumps the epoch, who computes the target and how it is written, fencing and
static membership, the answers and Describe.
"""

from __future__ import annotations

import operator
from abc import ABC, abstractmethod
from collections.abc import Callable, Hashable, Sequence
from dataclasses import replace
from typing import Any, ClassVar, Generic, Protocol

from connect_rebalance.errors import ErrorCode, KafkaApiError
from coordinator.groups.client_assignment import (
    AssignorVersions,
    assignor_specs,
    assignors_problem,
    choose_computer,
    common_assignor,
    computing_member,
    installed_epoch,
)
from coordinator.groups.context import GroupContext
from coordinator.groups.group_configs import override
from coordinator.groups.modern.group import TEMPORARY_LEAVE_EPOCH, Member, ModernGroup
from coordinator.groups.reconciliation import Item, MemberAssignment, MemberState, fenced_reason, reconcile
from coordinator.groups.requests import (
    JOIN,
    LEAVE,
    METADATA_CHANGE,
    REBALANCE_TIMEOUT,
    SESSION_EXPIRY,
    GroupRequest,
)

LEAVE_EPOCH = -1


class ClassicBridge(Protocol):
    """What the engine asks of the bridge for classic-protocol members (classic_bridge.py)."""

    def upgrade(self, classic: Any, now_ms: int) -> ModernGroup[Any] | None: ...
    def maybe_downgrade(self, group: ModernGroup[Any], now_ms: int) -> None: ...


def invalid(message: str) -> KafkaApiError:
    return KafkaApiError(ErrorCode.INVALID_REQUEST, message)


class ModernGroups(ABC, Generic[Item]):
    group_class: ClassVar[type[ModernGroup[Any]]]
    kind: ClassVar[str]  # "Consumer group": how messages name the group type
    prepare_epoch_error: ClassVar[ErrorCode]  # a computing member at a wrong epoch
    leave_epochs: ClassVar[frozenset[int]] = frozenset({LEAVE_EPOCH})
    # The flavour's record types: (group id, epoch | None) and (group id, member id, value | None).
    epoch_record: ClassVar[type]
    member_record: ClassVar[type]
    assignment_record: ClassVar[type]
    # The flavour's dynamic group configs (group_configs.py) overriding its session timeout and
    # heartbeat interval per group; None: the flavour has none.
    session_config: ClassVar[str | None] = None
    heartbeat_config: ClassVar[str | None] = None

    def __init__(
        self,
        ctx: GroupContext,
        session_timeout_ms: int,
        heartbeat_interval_ms: int,
        max_size: int,
    ) -> None:
        self.ctx = ctx
        self.session_timeout_ms = session_timeout_ms
        self.heartbeat_interval_ms = heartbeat_interval_ms
        self._timer_names: dict[str, str] = {}  # timer kind -> its name in keys
        # The profile fields of a request, all None when it changes nothing (one getter call).
        self._profile_values = operator.attrgetter(*self.profile_fields)
        self._no_profile_values = (None,) * len(self.profile_fields) if len(self.profile_fields) > 1 else None
        self.pending_heartbeat_interval_ms = min(
            ctx.settings.consumer_pending_heartbeat_interval_ms, heartbeat_interval_ms
        )
        self.max_size = max_size
        self.bridge: ClassicBridge | None = None  # attached by the dispatcher

    # -- the flavour ----------------------------------------------------------------------

    @abstractmethod
    def validate(self, body: Any, version: int) -> None: ...

    @abstractmethod
    def empty_profile(self) -> Any: ...

    def profile_from(self, request: GroupRequest, profile: Any) -> Any:
        """The member's profile updated from the request: who sent it, and the non-null fields
        every flavour has (a flavour adds its own)."""
        body = request.body
        return replace(
            profile,
            client_id=request.client_id,
            client_host=request.client_host,
            instance_id=profile.instance_id if body.instance_id is None else body.instance_id,
            rebalance_timeout_ms=(
                profile.rebalance_timeout_ms if body.rebalance_timeout_ms == -1 else body.rebalance_timeout_ms
            ),
            client_assignors=(
                profile.client_assignors
                if body.client_assignors is None
                else assignor_specs(body.client_assignors)
            ),
        )

    # Request fields that change the profile when not null (every flavour: rebalance_timeout_ms
    # when not -1, and the client's id and host).
    profile_fields: ClassVar[tuple[str, ...]] = ("instance_id", "client_assignors")

    def profile_of(self, request: GroupRequest, profile: Any) -> Any:
        """The member's profile after the request: the very same when the request cannot change
        it (a settled member's heartbeat: every optional field null, from the same client), so
        the most frequent request copies nothing."""
        body = request.body
        if (
            request.client_id == profile.client_id
            and request.client_host == profile.client_host
            and body.rebalance_timeout_ms == -1
            and profile.classic is None
            and self._profile_values(body) == self._no_profile_values
        ):
            return profile
        return self.profile_from(request, profile)

    @abstractmethod
    def bumps(self, before: Any, after: Any) -> bool:
        """Whether a profile change calls for a new target (a new group epoch)."""

    profile_cause: ClassVar[str]  # what a profile change that bumps the epoch is called (requests.py)

    @abstractmethod
    def owned_items(self, body: Any) -> frozenset[Item] | None: ...

    @abstractmethod
    def computing_pool(self, group: Any) -> dict[str, Sequence[AssignorVersions]] | None:
        """The members that choose the client-side assignor and one of them to compute, or
        None when the target is computed here."""

    @abstractmethod
    def target_due(self, group: Any, now_ms: int) -> None:
        """The group epoch is ahead of the assignment epoch: compute or have it computed."""

    @abstractmethod
    def write_target(
        self,
        group: Any,
        epoch: int,
        members: dict[str, Any] | None,
        assignor: str,
        error: int,
        computed_by: str | None = None,
    ) -> None:
        """Record the target at `epoch` (its members unchanged when None)."""

    @abstractmethod
    def replay_target(self, group: Any, record: Any) -> None: ...

    @abstractmethod
    def member_tombstones(self, group_id: str, member_id: str) -> list[Any]: ...

    @abstractmethod
    def full_request(self, request: GroupRequest) -> bool:
        """Whether the heartbeat carries every field (a client that lost its state sends all)."""

    @abstractmethod
    def assignment_answer(self, group: Any, member: Member[Item]) -> dict[str, Any]: ...

    def news_at_epoch(self, group: Any, member: Member[Item]) -> bool:
        """Whether reaching a new epoch alone is news for the member (the answer says it then)."""
        return True

    def heartbeat_fields(
        self, group: Any, member: Member[Item], before: MemberAssignment[Item], request: GroupRequest
    ) -> dict[str, Any]:
        """The answer carries the assignment when the member joined, sent a full request, its
        assignment changed, or it reached an epoch that is news to it."""
        now = member.assignment
        send = (
            request.body.member_epoch == 0
            or self.full_request(request)
            or (
                now is not before  # a settled member's assignment is the very same
                and (
                    now.assigned != before.assigned
                    or (now.member_epoch != before.member_epoch and self.news_at_epoch(group, member))
                )
            )
        )
        return {
            "throttle_time_ms": 0,
            "error_message": None,
            **self.answer_fields,
            "error_code": ErrorCode.NONE,
            "member_id": member.member_id,
            "member_epoch": member.assignment.member_epoch,
            "heartbeat_interval_ms": self.heartbeat_interval(group, member),
            "should_compute_assignment": group.compute.should_compute(
                member.member_id, group.group_epoch, group.assignment_epoch
            ),
            "assignment": self.assignment_answer(group, member) if send else None,
        }

    answer_fields: ClassVar[dict[str, Any]] = {}  # the flavour's fields in every heartbeat answer

    def error_fields(self, exc: KafkaApiError) -> dict[str, Any]:
        return {"error_code": exc.code, "error_message": exc.message, "member_id": None, "member_epoch": -1,
                "heartbeat_interval_ms": 0, "assignment": None, **self.answer_fields}  # fmt: skip

    def leave_fields(self, body: Any) -> dict[str, Any]:
        return {"error_code": ErrorCode.NONE, "member_id": body.member_id, "member_epoch": body.member_epoch,
                "heartbeat_interval_ms": 0, "assignment": None, **self.answer_fields}  # fmt: skip

    def check_assignors(self, body: Any) -> None:
        """ServerAssignor or ClientAssignors, not both, and client assignors well formed (the KIP)."""
        if body.server_assignor is not None and body.client_assignors is not None:
            raise invalid("ServerAssignor and ClientAssignors cannot be used together.")
        problem = assignors_problem(body.client_assignors or ())
        if problem is not None:
            raise invalid(problem)

    def check_request(self, group: Any, member_id: str, body: Any) -> None:
        """Checks of a heartbeat against the group, before its member is looked up."""

    def member_id_of(self, request: GroupRequest) -> str:
        return request.body.member_id  # type: ignore[no-any-return]

    def static_member_for(
        self, group: Any, member_id: str, body: Any, now_ms: int
    ) -> tuple[Member[Item], bool] | None:
        """A static member's lookup, when its flavour has rules of its own for it."""
        return None

    def admit(self, group: Any, body: Any, now_ms: int) -> None:
        """A new member is about to join: refuse it here (room, assignors, ...)."""
        self.check_room(group)

    def on_fenced(self, group: Any, member: Member[Item], now_ms: int) -> None:
        """A heartbeat at a wrong epoch is refused; a flavour may also remove its member."""

    def held_by_others(self, group: Any, member_id: str) -> Callable[[Item], bool]:
        """Which items the member must wait for before it is given them: held by another member."""
        return group.ownership.held_by_others(member_id)  # type: ignore[no-any-return]

    def revokes_all(self, group: Any) -> bool:
        """Whether a member moving to a new target gives up everything first (eager)."""
        return False

    def shared(self, profile: Any) -> Any:
        """The profile with the parts members usually have in common (a subscription) shared
        between them, so a group's memory grows with its members, not with members times
        topics."""
        return profile

    def metadata_changed(self, group: Any) -> bool:
        """Whether the cluster's metadata the target depends on changed since the last epoch."""
        return False

    def on_removed(self, group: Any, now_ms: int) -> None:
        """After a member left (and the group epoch was bumped for it)."""

    # -- heartbeats -----------------------------------------------------------------------

    def heartbeat(self, request: GroupRequest, now_ms: int) -> None:
        body = request.body
        try:
            self.validate(body, request.version)
            if body.member_epoch not in self.leave_epochs:
                self.ctx.reply(request.request_id, self._heartbeat(request, now_ms))
                return
            fields = self._leave(body, now_ms)
        except KafkaApiError as exc:
            fields = self.error_fields(exc)
        self.ctx.reply(request.request_id, {"throttle_time_ms": 0, "error_message": None, **fields})

    def _heartbeat(self, request: GroupRequest, now_ms: int) -> dict[str, Any]:
        body = request.body
        group = self.group_for(body.group_id, body.member_epoch == 0, now_ms)
        member_id = self.member_id_of(request)
        owned = self.owned_items(body)
        self.check_request(group, member_id, body)
        member, joined = self.member_for(group, member_id, body, owned, now_ms)
        profile = self.profile_of(request, member.profile)
        bump = (
            JOIN
            if joined
            else self.profile_cause
            if profile is not member.profile and self.bumps(member.profile, profile)
            else None
        )
        before = self.advance(group, member, profile, joined, bump, owned, now_ms)
        return self.heartbeat_fields(group, group.members[member.member_id], before, request)

    def group_for(self, group_id: str, joining: bool, now_ms: int) -> Any:
        """The group, a new one for a join (entered into the table once the join is accepted),
        or a classic group converted by the bridge."""
        group = self.ctx.groups.get(group_id)
        if isinstance(group, self.group_class):
            return group
        if joining:
            if group is None or group.is_empty():
                return self.group_class(group_id)
            if self.bridge is not None:
                converted = self.bridge.upgrade(group, now_ms)
                if converted is not None:
                    return converted
        if group is None:
            # Deleted under its members: tell them to rejoin. GROUP_ID_NOT_FOUND, Kafka's answer,
            # is fatal to librdkafka consumers.
            raise KafkaApiError(
                ErrorCode.UNKNOWN_MEMBER_ID, f"{self.kind} {group_id} has no such member; rejoin."
            )
        raise KafkaApiError(ErrorCode.GROUP_ID_NOT_FOUND, f"Group {group_id} is not a {self.kind.lower()}.")

    def member_for(
        self, group: Any, member_id: str, body: Any, owned: frozenset[Item] | None, now_ms: int
    ) -> tuple[Member[Item], bool]:
        static = self.static_member_for(group, member_id, body, now_ms)
        if static is not None:
            return static
        member = group.members.get(member_id)
        if member is None:
            if body.member_epoch != 0:
                raise KafkaApiError(
                    ErrorCode.UNKNOWN_MEMBER_ID, f"Member {member_id} is not a member of the group."
                )
            self.admit(group, body, now_ms)
            return Member(member_id, self.empty_profile()), True
        reason = fenced_reason(member.assignment, body.member_epoch, owned)
        if reason is not None:
            self.on_fenced(group, member, now_ms)
            raise KafkaApiError(ErrorCode.FENCED_MEMBER_EPOCH, reason)
        return member, False

    def replace_static(self, group: Any, old: Member[Item], member_id: str) -> Member[Item]:
        """A restarted static member takes over its predecessor's profile, target and assignment."""
        group_id, emit = group.group_id, self.ctx.emit
        renamed = {member_id if m == old.member_id else m: t for m, t in group.target.items()}
        self.cancel_timers(group_id, old.member_id)
        self.ctx.journal.keep(group.compute)
        group.compute.forget(old.member_id)
        for record in self.member_tombstones(group_id, old.member_id):
            emit(record)
        emit(self.member_record(group_id, member_id, old.profile))
        if member_id in renamed:
            self.write_target(group, group.assignment_epoch, renamed, group.assignor_name, group.target_error)
        emit(
            self.assignment_record(
                group_id, member_id, replace(old.assignment, member_epoch=0, previous_epoch=0)
            )
        )
        return group.members[member_id]  # type: ignore[no-any-return]

    def check_room(self, group: Any) -> None:
        if len(group.members) >= self.max_size:
            raise KafkaApiError(
                ErrorCode.GROUP_MAX_SIZE_REACHED,
                f"The {self.kind.lower()} has reached its maximum capacity of {self.max_size} members.",
            )

    def advance(
        self,
        group: Any,
        member: Member[Item],
        profile: Any,
        joined: bool,
        bump: str | None,
        owned: frozenset[Item] | None,
        now_ms: int,
    ) -> MemberAssignment[Item]:
        """The pipeline of a member's request, either protocol: record its profile, bump the
        group epoch if asked (`bump` says why) or if the metadata changed, see to a due target,
        reconcile the member and re-arm its timers. Returns its previous assignment."""
        ctx, group_id, member_id = self.ctx, group.group_id, member.member_id
        if ctx.groups.get(group_id) is not group:
            ctx.add_group(group)
        if joined or (profile is not member.profile and profile != member.profile):
            ctx.emit(self.member_record(group_id, member_id, profile))
        if self.metadata_changed(group):
            self.bump(group, bump or METADATA_CHANGE, member_id)
        elif bump is not None:
            self.bump(group, bump, member_id)
        if group.group_epoch > group.assignment_epoch:
            self.target_due(group, now_ms)
        before = group.members[member_id].assignment
        if before.state == MemberState.STABLE and before.member_epoch == group.assignment_epoch:
            after = before  # reconcile's first rule, without building its arguments: nothing to do
        else:
            after = reconcile(
                before,
                group.assignment_epoch,
                group.target_of(member_id),
                owned,
                self.held_by_others(group, member_id),
                revoke_all=self.revokes_all(group),
            )
        if after is not before and after != before:  # a settled member's is the same object
            ctx.emit(self.assignment_record(group_id, member_id, after))
        self.refresh_session(group, group.members[member_id], now_ms)
        key = self.key("rebalance", group_id, member_id)
        if after.state != MemberState.UNREVOKED:
            ctx.cancel(key)
        elif before.state != MemberState.UNREVOKED:
            ctx.schedule(
                key,
                now_ms + group.members[member_id].rebalance_timeout_ms,
                lambda now: self.on_rebalance_timeout(group_id, member_id, now),
            )
        return before

    def bump(self, group: Any, cause: str, member_id: str = "") -> None:
        self.ctx.triggered(group.group_id, cause, member_id)
        self.ctx.emit(self.epoch_record(group.group_id, group.group_epoch + 1))

    def heartbeat_interval(self, group: Any, member: Member[Item]) -> int:
        """How soon the member should heartbeat again.

        A settled member gets the group's interval (its dynamic config, or the group type's
        setting) — or, with adaptive heartbeats, the
        shortest interval at which all the coordinator's members together stay within its
        heartbeat budget, between the floor and that interval: a coordinator with few members
        learns of every change within a fraction of a second, one with many is not flooded.
        A member with reconciliation work pending — items to revoke, items others still hold,
        an epoch behind the target — or in a group whose next target is being computed is
        asked back sooner still, so a reconciliation that needs several heartbeats takes
        several short intervals instead of several default ones.
        """
        settings, interval = self.ctx.settings, self.heartbeat_interval_ms
        if self.heartbeat_config is not None:  # the group's own interval: also the adaptive ceiling
            interval = override(self.ctx, group.group_id, self.heartbeat_config) or interval
        if settings.adaptive_heartbeat:
            spread = -(-self.ctx.modern_members * 1000 // settings.adaptive_heartbeat_budget)
            interval = min(interval, max(settings.adaptive_min_heartbeat_interval_ms, spread))
        return interval if group.settled(member) else min(interval, self.pending_heartbeat_interval_ms)

    # -- timers ---------------------------------------------------------------------------

    def key(self, kind: str, group_id: str, member_id: str) -> Hashable:
        name = self._timer_names.get(kind)
        if name is None:  # made once per kind: a heartbeat asks for its session's key each time
            name = self._timer_names[kind] = f"{self.group_class.type_name}-{kind}"
        return (group_id, name, member_id)

    def session_timeout(self, group_id: str, member: Member[Item]) -> int:
        """Members of this protocol use the group's dynamic config or the group type's setting;
        classic members keep their own."""
        classic = member.profile.classic
        if classic is not None:
            return classic.session_timeout_ms
        if self.session_config is not None:
            return override(self.ctx, group_id, self.session_config) or self.session_timeout_ms
        return self.session_timeout_ms

    def refresh_session(self, group: Any, member: Member[Item], now_ms: int) -> None:
        group_id, member_id = group.group_id, member.member_id
        self.ctx.schedule(
            self.key("session", group_id, member_id),
            now_ms + self.session_timeout(group_id, member),
            lambda now: self.on_session_expired(group_id, member_id, now),
        )

    def cancel_timers(self, group_id: str, member_id: str) -> None:
        for kind in ("session", "rebalance", "compute", "classic-join", "classic-sync"):
            self.ctx.cancel(self.key(kind, group_id, member_id))

    def _live(self, group_id: str) -> Any:
        group = self.ctx.groups.get(group_id)
        return group if isinstance(group, self.group_class) else None

    def on_session_expired(self, group_id: str, member_id: str, now_ms: int) -> None:
        group = self._live(group_id)
        if group is not None and member_id in group.members:
            self.remove(group, member_id, now_ms, cause=SESSION_EXPIRY)

    def on_rebalance_timeout(self, group_id: str, member_id: str, now_ms: int) -> None:
        group = self._live(group_id)
        member = group.members.get(member_id) if group is not None else None
        if member is not None and member.assignment.state == MemberState.UNREVOKED:
            self.remove(group, member_id, now_ms, cause=REBALANCE_TIMEOUT)

    def on_compute_timeout(self, group_id: str, member_id: str, now_ms: int) -> None:
        """The chosen member did not install within its rebalance timeout: choose another."""
        group = self._live(group_id)
        if group is not None and group.compute.member_id == member_id:
            self.ctx.journal.keep(group.compute)
            group.compute.timed_out()
            if group.group_epoch > group.assignment_epoch:
                self.choose_computer(group, now_ms)

    # -- leaving --------------------------------------------------------------------------

    def _leave(self, body: Any, now_ms: int) -> dict[str, Any]:
        group = self.group_for(body.group_id, False, now_ms)
        member = self.leaving_member(group, body)
        if body.member_epoch == TEMPORARY_LEAVE_EPOCH:
            # A static member keeps its place and assignment until its session runs out.
            leave = replace(
                member.assignment, member_epoch=TEMPORARY_LEAVE_EPOCH, pending_revocation=frozenset()
            )
            self.ctx.emit(self.assignment_record(group.group_id, member.member_id, leave))
        else:
            self.remove(group, member.member_id, now_ms)
        return self.leave_fields(body)

    def leaving_member(self, group: Any, body: Any) -> Member[Item]:
        member = group.members.get(body.member_id)
        if member is None:
            raise KafkaApiError(
                ErrorCode.UNKNOWN_MEMBER_ID, f"Member {body.member_id} is not a member of the group."
            )
        return member  # type: ignore[no-any-return]

    def remove(
        self, group: Any, member_id: str, now_ms: int, downgrade: bool = True, cause: str = LEAVE
    ) -> None:
        """A member leaves or is removed (`cause` says why): its items are free and the group
        needs a new target. If only classic members remain, the bridge may turn the group
        classic again."""
        if member_id not in group.members:
            return
        for record in self.member_tombstones(group.group_id, member_id):
            self.ctx.emit(record)
        self.cancel_timers(group.group_id, member_id)
        self.ctx.journal.keep(group.compute)
        group.compute.forget(member_id)
        self.bump(group, cause, member_id)
        self.on_removed(group, now_ms)
        if not group.members:
            self.write_target(group, group.group_epoch, None, group.assignor_name, group.target_error)
        elif downgrade and self.bridge is not None:
            self.bridge.maybe_downgrade(group, now_ms)

    # -- client-side assignment -----------------------------------------------------------

    def selection(self, group: Any) -> tuple[str, int, int] | None:
        """(assignor, lowest, highest version) when members compute the target, else None."""
        pool = self.computing_pool(group)
        return None if pool is None else common_assignor(list(pool.values()))

    def choose_computer(self, group: Any, now_ms: int) -> None:
        pool = self.computing_pool(group)
        if pool is None:
            return
        self.ctx.journal.keep(group.compute)
        chosen = choose_computer(group.compute, pool)
        if chosen is not None:
            group_id, member_id = group.group_id, chosen[0]
            self.ctx.schedule(
                self.key("compute", group_id, member_id),
                now_ms + group.members[member_id].rebalance_timeout_ms,
                lambda now: self.on_compute_timeout(group_id, member_id, now),
            )

    def computing(self, body: Any) -> tuple[Any, Member[Item]]:
        """Checks Prepare and Install share: the group, the member, its epoch, its turn."""
        return computing_member(self.ctx.groups, self.group_class, body, self.kind, self.prepare_epoch_error)

    def installed(self, group: Any, member: Member[Item], epoch: int, now_ms: int) -> None:
        """A target was installed for `epoch`: the round is over; start the next if due."""
        self.ctx.cancel(self.key("compute", group.group_id, member.member_id))
        self.ctx.journal.keep(group.compute)
        group.compute.installed(member.member_id)
        if group.group_epoch > group.assignment_epoch:
            self.choose_computer(group, now_ms)

    # -- Prepare, Install, Describe: the envelopes (the flavour fills them) -----------------

    prepare_api: ClassVar[str]  # "ConsumerGroupPrepareAssignment": named when Install comes first
    unprepared: ClassVar[dict[str, Any]]  # a refused Prepare's flavour fields
    undescribed: ClassVar[dict[str, Any]]  # Describe's flavour fields for a group not found

    def prepare(self, request: GroupRequest, now_ms: int) -> None:
        try:
            group, _ = self.computing(request.body)
            selection = self.selection(group)
            if selection is None:  # not expected: leaving client-side assignment ends the round
                raise KafkaApiError(ErrorCode.UNKNOWN_MEMBER_ID, "The target is computed server-side.")
            name, lowest, highest = selection
            self.ctx.journal.keep(group.compute)
            fields = {
                "error_code": ErrorCode.NONE, "group_epoch": group.group_epoch,
                "assignment_epoch": group.assignment_epoch, "assignor_name": name,
                "assignor_minimum_version": lowest, "assignor_maximum_version": highest,
                **self.prepared(group, name),
            }  # fmt: skip
        except KafkaApiError as exc:
            fields = {"error_code": exc.code, "error_message": exc.message, "group_epoch": -1,
                      "assignment_epoch": -1, "assignor_name": "", "assignor_minimum_version": -1,
                      "assignor_maximum_version": -1, **self.unprepared}  # fmt: skip
        self.ctx.reply(request.request_id, {"throttle_time_ms": 0, "error_message": None, **fields})

    def prepared(self, group: Any, assignor: str) -> dict[str, Any]:
        """The group as the computing member reads it (and as its install is checked against)."""
        raise NotImplementedError

    def install(self, request: GroupRequest, now_ms: int) -> None:
        body = request.body
        try:
            group, member = self.computing(body)
            epoch = installed_epoch(group.compute, body, self.prepare_api)
            self.install_target(group, member, body, epoch)
            self.installed(group, member, epoch, now_ms)
            fields: dict[str, Any] = {"error_code": ErrorCode.NONE, "error_message": None}
        except KafkaApiError as exc:
            fields = {"error_code": exc.code, "error_message": exc.message}
        self.ctx.reply(request.request_id, {"throttle_time_ms": 0, **fields})

    def install_target(self, group: Any, member: Member[Item], body: Any, epoch: int) -> None:
        """Validate the installed target against the prepared group and write it (an assignor
        error keeps the current target; its epoch still advances so the group does not spin)."""
        raise NotImplementedError

    def describe(self, request: GroupRequest, now_ms: int) -> None:
        described = []
        for group_id in request.body.group_ids:
            group = self.ctx.groups.get(group_id)
            if isinstance(group, self.group_class):
                described.append({
                    "error_code": ErrorCode.NONE, "error_message": None, "group_id": group_id,
                    "group_state": group.state.value, "group_epoch": group.group_epoch,
                    "assignment_epoch": group.assignment_epoch,
                    "assignor_name": self.described_assignor(group), **self.described_fields(group),
                    "members": self._described_members(group),
                })  # fmt: skip
                continue
            missing = (
                f"Group {group_id} not found."
                if group is None
                else f"Group {group_id} is not a {self.kind.lower()}."
            )
            described.append({
                "error_code": ErrorCode.GROUP_ID_NOT_FOUND, "error_message": missing, "group_id": group_id,
                "group_state": "Dead", "group_epoch": -1, "assignment_epoch": -1, "assignor_name": "",
                **self.undescribed,
            })  # fmt: skip
        self.ctx.reply(request.request_id, {"throttle_time_ms": 0, "groups": described})

    def _described_members(self, group: Any) -> tuple[dict[str, Any], ...]:
        """The flavour's `described_members(group)`, kept until a record changes the group (or
        `describe_key` changes): the same tuple is handed out again, and never changed, so
        the wire encoder writes it once (hot_messages)."""
        key = self.describe_key()
        if group.last_described is None or group.last_described[0] != key:
            group.last_described = (key, tuple(self.described_members(group)))
        return group.last_described[1]  # type: ignore[no-any-return]

    def describe_key(self) -> Any:
        """What else the described members depend on (consumer groups: topic names)."""
        return None

    def described_members(self, group: Any) -> list[dict[str, Any]]:
        """Describe's entry for each member: what records hold, and only that."""
        raise NotImplementedError

    def described_fields(self, group: Any) -> dict[str, Any]:
        """The flavour's group-level fields of Describe, read afresh each time."""
        return {}

    def described_assignor(self, group: Any) -> str:
        selection = self.selection(group)
        return group.assignor_name or (selection[0] if selection else "")  # type: ignore[no-any-return]

    # -- replay ---------------------------------------------------------------------------

    def replay(self, record: Any) -> None:
        """Apply a record to the group it names, live and at start-up alike."""
        groups, journal = self.ctx.groups, self.ctx.journal
        existing = groups.get(record.group_id)
        if isinstance(record, self.epoch_record) and record.epoch is None:
            if isinstance(existing, self.group_class):
                journal.pop_item(groups, record.group_id)
            return
        group = existing
        if not isinstance(group, self.group_class):
            group = self.group_class(record.group_id)
            journal.set_item(groups, record.group_id, group)
        group.forget_derived()
        journal.on_undo(group.forget_derived)
        if isinstance(record, self.epoch_record):
            journal.set_attr(group, "group_epoch", record.epoch)
        elif isinstance(record, self.member_record):
            self._replay_member(group, record.member_id, record.value)
        elif isinstance(record, self.assignment_record):
            self._replay_assignment(group, record.member_id, record.value)
        else:
            self.replay_target(group, record)

    def _replay_member(self, group: Any, member_id: str, profile: Any) -> None:
        journal = self.ctx.journal
        journal.set_attr(group, "profiles_version", group.profiles_version + 1)
        if profile is None:
            gone = journal.pop_item(group.members, member_id)
            if gone is not None:
                journal.set_attr(self.ctx, "modern_members", self.ctx.modern_members - 1)
                self._hold(group, member_id, gone.assignment, None)
                self.profile_replaced(group, gone.profile, None)
            return
        known = group.members.get(member_id)
        if known is None:
            journal.set_attr(self.ctx, "modern_members", self.ctx.modern_members + 1)
        assignment = known.assignment if known is not None else MemberAssignment.joining()
        member = Member(member_id, self.shared(profile), assignment)
        journal.set_item(group.members, member_id, member)
        self.profile_replaced(group, known.profile if known is not None else None, member.profile)

    def profile_replaced(self, group: Any, before: Any, after: Any) -> None:
        """A member's profile was replaced (None: the member joined, or left): a flavour keeps
        what it tallies over its members' profiles in step here, journaled."""

    def _replay_assignment(self, group: Any, member_id: str, assignment: Any) -> None:
        if assignment is None:
            return  # the member's own tombstone removes it
        # A compacted log may hold a member's assignment before its metadata: keep it.
        member = group.members.get(member_id)
        if member is None:
            member = Member(member_id, self.empty_profile())
            self.ctx.journal.set_attr(self.ctx, "modern_members", self.ctx.modern_members + 1)
        self._hold(group, member_id, member.assignment if member_id in group.members else None, assignment)
        self.ctx.journal.set_item(group.members, member_id, replace(member, assignment=assignment))

    def _hold(self, group: Any, member_id: str, before: Any, after: Any) -> None:
        group.ownership.update(member_id, before, after)
        self.ctx.journal.on_undo(lambda: group.ownership.update(member_id, after, before))

    def set_target_member(self, group: Any, member_id: str, target: Any) -> None:
        if target is None:
            self.ctx.journal.pop_item(group.target, member_id)
        else:
            self.ctx.journal.set_item(group.target, member_id, target)

    def load_complete(self, now_ms: int) -> None:
        """After start-up replay: members' sessions start now, and a due target is seen to."""
        for group in list(self.ctx.groups.values()):
            if isinstance(group, self.group_class):
                for member in group.members.values():
                    self.refresh_session(group, member, now_ms)
                if group.group_epoch > group.assignment_epoch:
                    self.choose_computer(group, now_ms)

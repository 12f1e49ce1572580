"""The group coordinator core: a deterministic state machine over every group type.

    handle(request, now_ms) -> Outcome     answers (maybe for other, parked requests) + records
    on_timer(now_ms)        -> Outcome     what deadlines up to now_ms caused
    write_failed(outcome, ...)             its records could not be written: take it all back
    target_computed(effect, result, now)   -> Outcome  an effect's result (a target computed
                                           off the event loop) comes back
    next_deadline()         -> int | None  when on_timer should next be called
    earlier_deadline()      -> int | None  a deadline new since the last call (wake for it if earlier)
    replay(record)                         rebuild persistent state from the log
    load_complete(now_ms)                  after replay: restart the clocks of loaded members

No sockets, no disk, no wall clock: `coordinator.group_service` is the IO around it, and
tests drive it directly with a virtual clock. Member ids come from an injected generator so
runs are reproducible.

This module is the dispatcher: it routes each API to the group type that owns it (a classic
API for a consumer or connect group to that group's classic bridge), each record to the
group type that replays it, and answers the admin APIs through the `Group` protocol
(group_type.py). The parts it wires together receive a `GroupContext`, never this object.
"""

from __future__ import annotations

import uuid
from collections.abc import Callable
from typing import Any

from connect_rebalance.errors import ErrorCode
from connect_rebalance.protocol.api_keys import ApiKey
from coordinator.groups.classic import ClassicGroups, ClassicState, join_error, sync_response
from coordinator.groups.classic_bridge import ClassicBridge
from coordinator.groups.connect import ConnectEmbedding, ConnectGroups
from coordinator.groups.connect_records import CONNECT_RECORD_TYPES
from coordinator.groups.consumer import ConsumerEmbedding, ConsumerGroups
from coordinator.groups.context import GroupContext, TopicsView
from coordinator.groups.group_configs import GroupConfigs
from coordinator.groups.group_metrics import GroupMetrics
from coordinator.groups.modern.group import ModernGroup
from coordinator.groups.offsets import Offsets
from coordinator.groups.records import GroupConfigRecord, GroupMetadataRecord, OffsetCommitRecord, Record
from coordinator.groups.requests import GroupRequest, Outcome
from coordinator.groups.settings import GroupSettings

Handler = Callable[[GroupRequest, int], None]
GROUP_APIS = (ApiKey.OFFSET_COMMIT, ApiKey.OFFSET_FETCH, ApiKey.JOIN_GROUP, ApiKey.HEARTBEAT,
              ApiKey.LEAVE_GROUP, ApiKey.SYNC_GROUP, ApiKey.DESCRIBE_GROUPS, ApiKey.LIST_GROUPS,
              ApiKey.DELETE_GROUPS, ApiKey.OFFSET_DELETE)  # fmt: skip
OFFSET_EXPIRY_KEY = ("", "offset-expiry")
HEARTBEAT_APIS = frozenset(
    {ApiKey.HEARTBEAT, ApiKey.CONSUMER_GROUP_HEARTBEAT, ApiKey.CONNECT_GROUP_HEARTBEAT}
)


def random_member_id(client_id: str) -> str:
    return f"{client_id}-{uuid.uuid4()}"


class GroupCoordinator:
    def __init__(
        self,
        settings: GroupSettings,
        partitions_of: Callable[[str], int | None],
        member_id_factory: Callable[[str], str] = random_member_id,
        topics_view: TopicsView | None = None,
    ) -> None:
        self.settings = settings
        self.ctx = GroupContext(settings, partitions_of, member_id_factory, topics_view, self.replay)
        self.groups = self.ctx.groups
        self.metrics = GroupMetrics(
            settings.rebalance_timeline_size, topics_view.name_of if topics_view is not None else None
        )
        self.classic = ClassicGroups(self.ctx)
        self.offsets = Offsets(self.ctx)
        self.connect = ConnectGroups(self.ctx)
        self.configs = GroupConfigs(self.ctx)
        self.bridges: dict[str, ClassicBridge] = {
            "connect": ClassicBridge(
                self.ctx, self.connect, self.classic, ConnectEmbedding(self.connect),
                settings.connect_migration_policy,
            )
        }  # fmt: skip
        # Consumer groups (KIP-848) need topic ids; the server attaches them once they are served.
        self.consumer = ConsumerGroups(self.ctx) if topics_view is not None else None
        if self.consumer is not None:
            self.bridges["consumer"] = ClassicBridge(
                self.ctx, self.consumer, self.classic, ConsumerEmbedding(self.consumer),
                settings.consumer_migration_policy,
            )  # fmt: skip
        self._handlers: dict[int, Handler] = {
            ApiKey.JOIN_GROUP: self._classic_api("join"),
            ApiKey.SYNC_GROUP: self._classic_api("sync"),
            ApiKey.HEARTBEAT: self._classic_api("heartbeat"),
            ApiKey.LEAVE_GROUP: self._classic_api("leave"),
            ApiKey.OFFSET_COMMIT: self.offsets.commit,
            ApiKey.OFFSET_FETCH: self.offsets.fetch,
            ApiKey.OFFSET_DELETE: self.offsets.delete,
            ApiKey.LIST_GROUPS: self.list_groups,
            ApiKey.DESCRIBE_GROUPS: self.describe_groups,
            ApiKey.DELETE_GROUPS: self.delete_groups,
            ApiKey.CONNECT_GROUP_HEARTBEAT: self.connect.heartbeat,
            ApiKey.CONNECT_GROUP_PREPARE_ASSIGNMENT: self.connect.prepare,
            ApiKey.CONNECT_GROUP_INSTALL_ASSIGNMENT: self.connect.install,
            ApiKey.CONNECT_GROUP_DESCRIBE: self.connect.describe,
            # GROUP resources only: the IO edge hands the core group_configs' request bodies.
            ApiKey.INCREMENTAL_ALTER_CONFIGS: self.configs.alter,
            ApiKey.DESCRIBE_CONFIGS: self.configs.describe,
        }
        if self.consumer is not None:
            self._handlers[ApiKey.CONSUMER_GROUP_HEARTBEAT] = self.consumer.heartbeat
            self._handlers[ApiKey.CONSUMER_GROUP_DESCRIBE] = self.consumer.describe
            self._handlers[ApiKey.CONSUMER_GROUP_PREPARE_ASSIGNMENT] = self.consumer.prepare
            self._handlers[ApiKey.CONSUMER_GROUP_INSTALL_ASSIGNMENT] = self.consumer.install

    def _classic_api(self, name: str) -> Handler:
        """One routing rule: a classic API call for a modern group goes to its bridge."""

        def handle(request: GroupRequest, now_ms: int) -> None:
            group = self.groups.get(getattr(request.body, "group_id", None) or "")
            owner = self.bridges[group.type_name] if isinstance(group, ModernGroup) else self.classic
            getattr(owner, name)(request, now_ms)

        return handle

    # -- the state machine's interface ----------------------------------------------------

    def handle(self, request: GroupRequest, now_ms: int) -> Outcome:
        outcome = self.ctx.begin()
        try:
            self._handlers[request.api_key](request, now_ms)
        finally:
            self.ctx.end()
        if request.api_key in HEARTBEAT_APIS:
            if outcome.records:  # state changes only by records: a settled heartbeat changes none
                group_id = request.body.group_id
                self.metrics.observe(group_id, self.groups.get(group_id), now_ms, outcome)
            self.metrics.heartbeat(request.body.group_id)
        else:
            self.metrics.observe_groups(self.groups, self.group_ids(request), now_ms, outcome)
        return outcome

    def on_timer(self, now_ms: int) -> Outcome:
        def run_expired() -> set[str]:
            touched: set[str] = set()
            for key, operation in self.ctx.timers.pop_expired(now_ms):
                operation(now_ms)
                touched.add(key[0])  # type: ignore[index]
            return touched - {""}

        return self._unrequested(run_expired, now_ms)

    def target_computed(self, computation: Any, assigned: Any, now_ms: int) -> Outcome:
        """The result of an effect the core asked for (a server-side target), or None if it failed."""

        def install() -> set[str]:
            if self.consumer is not None:
                self.consumer.target_computed(computation, assigned, now_ms)
            return {computation.group_id}

        return self._unrequested(install, now_ms)

    def topics_deleted(self, topics: set[str], now_ms: int) -> Outcome:
        """Topics were deleted: the offsets groups committed for them go too."""
        return self._unrequested(lambda: self.offsets.topics_deleted(topics), now_ms)

    def _unrequested(self, change: Callable[[], set[str]], now_ms: int) -> Outcome:
        """The outcome of a change no request made (deadlines, an effect's result, deleted
        topics); `change` returns the groups it touched, which the outcome names."""
        outcome = self.ctx.begin()
        try:
            outcome.groups = change()
        finally:
            self.ctx.end()
        self.metrics.observe_groups(self.groups, outcome.groups, now_ms, outcome)
        return outcome

    def write_failed(
        self,
        outcome: Outcome,
        api_of: Callable[[int], tuple[int, int] | None],
        code: int,
        message: str,
        now_ms: int,
        own_request: int | None = None,
    ) -> None:
        """The outcome's records could not be written (or those of an outcome it was built on):
        memory goes back to what the log says and every answer of the outcome becomes its API's
        error (`api_of(request id)` gives the request's API key and version). The request that
        made the outcome (`own_request`) is answered too if the outcome parked it (a JoinGroup
        waiting for its rebalance): the undo forgets it was ever parked. Nothing of the outcome
        is visible afterwards."""
        assert outcome.journal is not None, "only the core's own outcomes can be taken back"
        outcome.journal.undo()
        touched = {getattr(record, "group_id", "") for record in outcome.records}
        self.metrics.observe_groups(self.groups, touched, now_ms)
        outcome.records, outcome.effects = [], []
        if own_request is not None and own_request not in outcome.replies:
            outcome.replies[own_request] = {}
        for request_id, fields in list(outcome.replies.items()):
            api = api_of(request_id)
            if api is not None:
                outcome.replies[request_id] = self.failed_reply(*api, fields, code, message)

    def next_deadline(self) -> int | None:
        return self.ctx.timers.next_deadline()

    def earlier_deadline(self) -> int | None:
        """A deadline scheduled since the last call that may come before `next_deadline()` was."""
        return self.ctx.timers.take_earlier()

    def group_ids(self, request: GroupRequest) -> set[str]:
        """The groups a request names (none for ListGroups, which reads them all)."""
        body = request.body
        single = getattr(body, "group_id", None)
        many = getattr(body, "groups_names", None) or getattr(body, "group_ids", None) or ()
        # DescribeGroups names them; OffsetFetch v8+ gives one entry per group.
        listed = (g if isinstance(g, str) else g.group_id for g in getattr(body, "groups", None) or ())
        return {single, *many, *listed} - {None, ""}  # type: ignore[operator]

    def replay(self, record: Record) -> None:
        if isinstance(record, OffsetCommitRecord):
            self.offsets.replay(record)
        elif isinstance(record, GroupMetadataRecord):
            self.classic.replay(record)
        elif isinstance(record, CONNECT_RECORD_TYPES):
            self.connect.replay(record)
        elif isinstance(record, GroupConfigRecord):
            self.configs.replay(record)
        else:
            assert self.consumer is not None, "consumer-group records need the consumer group type"
            self.consumer.replay(record)

    def load_complete(self, now_ms: int) -> None:
        self.classic.load_complete(now_ms)
        for engine in (self.consumer, self.connect):
            if engine is not None:
                engine.load_complete(now_ms)
        self.metrics.seed(self.groups)
        self._schedule_expiry(now_ms)

    def _schedule_expiry(self, now_ms: int) -> None:
        self.ctx.schedule(
            OFFSET_EXPIRY_KEY, now_ms + self.settings.offsets_retention_check_interval_ms, self._expire
        )

    def _expire(self, now_ms: int) -> None:
        self.offsets.expire(now_ms)
        self._schedule_expiry(now_ms)

    # -- group administration -------------------------------------------------------------

    def list_groups(self, request: GroupRequest, now_ms: int) -> None:
        body, version = request.body, request.version
        states = {s.lower() for s in body.states_filter} if version >= 4 and body.states_filter else None
        types = {t.lower() for t in body.types_filter} if version >= 5 and body.types_filter else None
        listed = [
            {"group_id": group_id, "protocol_type": group.protocol_type or "",
             "group_state": group.state.value, "group_type": group.type_name}
            for group_id, group in sorted(self.groups.items())
            if group.state != ClassicState.DEAD
            and (states is None or group.state.value.lower() in states)
            and (types is None or group.type_name in types)
        ]  # fmt: skip
        self.ctx.reply(
            request.request_id, {"throttle_time_ms": 0, "error_code": ErrorCode.NONE, "groups": listed}
        )

    def describe_groups(self, request: GroupRequest, now_ms: int) -> None:
        described = [self.classic.describe(group_id, request.version) for group_id in request.body.groups]
        self.ctx.reply(request.request_id, {"throttle_time_ms": 0, "groups": described})

    def delete_groups(self, request: GroupRequest, now_ms: int) -> None:
        results = []
        for group_id in request.body.groups_names:
            group = self.groups.get(group_id)
            if group is None or group.state == ClassicState.DEAD:
                error = ErrorCode.GROUP_ID_NOT_FOUND
            elif not group.is_empty():
                error = ErrorCode.NON_EMPTY_GROUP
            else:
                error = ErrorCode.NONE
                self.offsets.delete_all(group_id)
                for record in group.tombstones():
                    self.ctx.emit(record)
            results.append({"group_id": group_id, "error_code": error})
        self.ctx.reply(request.request_id, {"throttle_time_ms": 0, "results": results})

    # -- answers when an outcome cannot be written ----------------------------------------

    @staticmethod
    def failed_reply(
        api_key: int, version: int, fields: dict[str, Any], code: int, message: str
    ) -> dict[str, Any]:
        """The answer a request gets instead when its outcome could not be written: the API's
        error with the message where the API carries one, and nothing it would have handed
        out (an assignment, a member id, a generation)."""
        if api_key == ApiKey.JOIN_GROUP:
            return join_error(version, ErrorCode(code))
        if api_key == ApiKey.SYNC_GROUP:
            return sync_response(ErrorCode(code))
        return _with_error(fields, code, message)


def _with_error(value: Any, code: int, message: str) -> Any:
    """Every error code in an answer set to `code` (top level and per item), messages beside them."""
    if isinstance(value, list):
        return [_with_error(v, code, message) for v in value]
    if not isinstance(value, dict):
        return value
    failed = {k: _with_error(v, code, message) for k, v in value.items()}
    if "error_code" in failed:
        failed["error_code"] = code
        if "error_message" in failed:
            failed["error_message"] = message
        if "assignment" in failed:
            failed["assignment"] = None
        if "member_epoch" in failed:
            failed["member_epoch"] = -1
    return failed

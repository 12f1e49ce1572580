"""The group coordinator core: a deterministic state machine over every group type.

    handle(request, now_ms) -> Outcome     answers (maybe for other, parked requests) + records
    on_timer(now_ms)        -> Outcome     what deadlines up to now_ms caused
    next_deadline()         -> int | None  when on_timer should next be called
    replay(record)                         rebuild persistent state from the log
    load_complete(now_ms)                  after replay: restart the clocks of loaded members

No sockets, no disk, no wall clock: `coordinator.group_service` is the IO around it, and
tests drive it directly with a virtual clock. Member ids come from an injected generator so
runs are reproducible.

This module owns what all group types share (the groups table, timers, dispatch and the
admin APIs); each group type's rules live in its own module (classic.py; offsets.py for
committed offsets).
"""

from __future__ import annotations

import uuid
from collections.abc import Callable
from typing import Any

from connect_rebalance.errors import ErrorCode

from .classic import ClassicGroup, ClassicGroups, ClassicState
from .connect import ConnectGroup, ConnectGroups
from .connect_migration import ConnectMigration
from .connect_records import CONNECT_RECORD_TYPES
from .consumer import ConsumerGroup, ConsumerGroups, TopicsView
from .group_metrics import GroupMetrics
from .migration import GroupMigration
from .offsets import Offsets
from .records import (
    ConsumerGroupEpochRecord,
    GroupMetadataRecord,
    OffsetCommitRecord,
    Record,
    TargetEpochRecord,
)
from .requests import GroupRequest, Outcome
from .settings import GroupSettings
from .timers import Timers

OFFSET_COMMIT, OFFSET_FETCH, JOIN_GROUP, HEARTBEAT, LEAVE_GROUP, SYNC_GROUP = 8, 9, 11, 12, 13, 14
DESCRIBE_GROUPS, LIST_GROUPS, DELETE_GROUPS, OFFSET_DELETE = 15, 16, 42, 47
CONSUMER_GROUP_HEARTBEAT, CONSUMER_GROUP_DESCRIBE = 68, 69
# The project's private block of API keys (docs/protocol.md).
CONNECT_GROUP_HEARTBEAT, CONNECT_GROUP_PREPARE_ASSIGNMENT = 10000, 10001
CONNECT_GROUP_INSTALL_ASSIGNMENT, CONNECT_GROUP_DESCRIBE = 10002, 10003
CONSUMER_GROUP_PREPARE_ASSIGNMENT, CONSUMER_GROUP_INSTALL_ASSIGNMENT = 10010, 10011
GROUP_APIS = (OFFSET_COMMIT, OFFSET_FETCH, JOIN_GROUP, HEARTBEAT, LEAVE_GROUP, SYNC_GROUP, DESCRIBE_GROUPS,
              LIST_GROUPS, DELETE_GROUPS, OFFSET_DELETE)  # fmt: skip
OFFSET_EXPIRY_KEY = ("offset-expiry",)


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
        self.partitions_of = partitions_of
        self.new_member_id = member_id_factory
        self.groups: dict[str, ClassicGroup | ConsumerGroup | ConnectGroup] = {}
        self.timers = Timers()
        self.metrics = GroupMetrics()
        self.classic = ClassicGroups(self)
        self.offsets = Offsets(self)
        # Consumer groups (KIP-848) need topic ids; the server attaches them once they are served.
        self.consumer = ConsumerGroups(self, topics_view) if topics_view is not None else None
        # Online migration between classic and consumer groups needs consumer groups served.
        self.migration = GroupMigration(self, self.consumer) if self.consumer is not None else None
        self.connect = ConnectGroups(self)
        # Online migration between classic `connect` groups and connect groups.
        self.connect_migration = ConnectMigration(self, self.connect)
        self._handlers: dict[int, Callable[[GroupRequest, int, Outcome], None]] = {
            JOIN_GROUP: self._classic_api(self.classic.join, self.connect_migration.join),
            SYNC_GROUP: self._classic_api(self.classic.sync, self.connect_migration.sync),
            HEARTBEAT: self._classic_api(self.classic.heartbeat, self.connect_migration.heartbeat),
            LEAVE_GROUP: self._classic_api(self.classic.leave, self.connect_migration.leave),
            OFFSET_COMMIT: self.offsets.commit,
            OFFSET_FETCH: self.offsets.fetch,
            OFFSET_DELETE: self.offsets.delete,
            LIST_GROUPS: self.list_groups,
            DESCRIBE_GROUPS: self.describe_groups,
            DELETE_GROUPS: self.delete_groups,
        }
        self._handlers[CONNECT_GROUP_HEARTBEAT] = self.connect.heartbeat
        self._handlers[CONNECT_GROUP_PREPARE_ASSIGNMENT] = self.connect.prepare
        self._handlers[CONNECT_GROUP_INSTALL_ASSIGNMENT] = self.connect.install
        self._handlers[CONNECT_GROUP_DESCRIBE] = self.connect.describe
        if self.consumer is not None:
            self._handlers[CONSUMER_GROUP_HEARTBEAT] = self.consumer.heartbeat
            self._handlers[CONSUMER_GROUP_DESCRIBE] = self.consumer.describe
            self._handlers[CONSUMER_GROUP_PREPARE_ASSIGNMENT] = self.consumer.prepare
            self._handlers[CONSUMER_GROUP_INSTALL_ASSIGNMENT] = self.consumer.install

    def _classic_api(
        self,
        classic: Callable[[GroupRequest, int, Outcome], None],
        connect: Callable[[GroupRequest, int, Outcome], None],
    ) -> Callable[[GroupRequest, int, Outcome], None]:
        """A classic-protocol API: a connect group's classic workers go to connect_migration.py."""

        def handle(request: GroupRequest, now_ms: int, out: Outcome) -> None:
            group = self.groups.get(getattr(request.body, "group_id", None) or "")
            (connect if isinstance(group, ConnectGroup) else classic)(request, now_ms, out)

        return handle

    # -- the state machine's interface ----------------------------------------------------

    def handle(self, request: GroupRequest, now_ms: int) -> Outcome:
        out = Outcome()
        self._handlers[request.api_key](request, now_ms, out)
        group_id = getattr(request.body, "group_id", None)
        self.metrics.observe(group_id, self.groups.get(group_id or ""), now_ms)
        return out

    def on_timer(self, now_ms: int) -> Outcome:
        out = Outcome()
        for key in self.timers.pop_expired(now_ms):
            self._on_deadline(key, now_ms, out)
            if len(key) > 1:
                self.metrics.observe(key[1], self.groups.get(key[1]), now_ms)
        return out

    def _on_deadline(self, key: tuple[str, ...], now_ms: int, out: Outcome) -> None:
        kind = key[0]
        if kind == "classic-session":
            self.classic.on_session_expired(key[1], key[2], now_ms, out)
        elif kind == "classic-pending":
            self.classic.on_pending_member_expired(key[1], key[2], now_ms, out)
        elif kind in ("classic-join", "classic-sync"):
            group = self.groups.get(key[1])
            if isinstance(group, ClassicGroup):
                if kind == "classic-join":
                    self.classic.on_join_deadline(group, now_ms, out)
                else:
                    self.classic.on_sync_deadline(group, now_ms, out)
        elif kind == "consumer-session" and self.consumer is not None:
            self.consumer.on_session_expired(key[1], key[2], now_ms, out)
        elif kind == "consumer-rebalance" and self.consumer is not None:
            self.consumer.on_rebalance_timeout(key[1], key[2], now_ms, out)
        elif kind == "consumer-compute" and self.consumer is not None:
            self.consumer.on_compute_timeout(key[1], key[2], now_ms, out)
        elif kind in ("consumer-classic-join", "consumer-classic-sync") and self.migration is not None:
            self.migration.on_classic_timeout(key[1], key[2], now_ms, out)
        elif kind in ("connect-classic-join", "connect-classic-sync"):
            self.connect_migration.on_classic_timeout(key[1], key[2], now_ms, out)
        elif kind == "connect-session":
            self.connect.on_session_expired(key[1], key[2], now_ms, out)
        elif kind == "connect-rebalance":
            self.connect.on_rebalance_timeout(key[1], key[2], now_ms, out)
        elif kind == "connect-compute":
            self.connect.on_compute_timeout(key[1], key[2], now_ms, out)
        elif key == OFFSET_EXPIRY_KEY:
            self.offsets.expire(now_ms, out)
            self.timers.schedule(
                OFFSET_EXPIRY_KEY, now_ms + self.settings.offsets_retention_check_interval_ms
            )

    def next_deadline(self) -> int | None:
        return self.timers.next_deadline()

    def replay(self, record: Record) -> None:
        if isinstance(record, OffsetCommitRecord):
            self.offsets.replay(record)
        elif isinstance(record, CONNECT_RECORD_TYPES):
            self.connect.replay(record)
        elif not isinstance(record, GroupMetadataRecord):
            assert self.consumer is not None, "consumer-group records need the consumer group type"
            self.consumer.replay(record)
        elif record.value is None:
            group = self.groups.pop(record.group_id, None)
            if isinstance(group, ClassicGroup):
                group.state = ClassicState.DEAD
        else:
            self.groups[record.group_id] = ClassicGroup.from_snapshot(record.group_id, record.value)

    def load_complete(self, now_ms: int) -> None:
        for group in self.groups.values():
            if isinstance(group, ClassicGroup):
                for member in group.members.values():
                    self.classic._refresh_session(group, member, now_ms)
        if self.consumer is not None:
            self.consumer.load_complete(now_ms)
        self.connect.load_complete(now_ms)
        self.metrics.seed(self.groups)
        self.timers.schedule(OFFSET_EXPIRY_KEY, now_ms + self.settings.offsets_retention_check_interval_ms)

    # -- group administration -------------------------------------------------------------

    def list_groups(self, request: GroupRequest, now_ms: int, out: Outcome) -> None:
        body, version = request.body, request.version
        states = {s.lower() for s in body.states_filter} if version >= 4 and body.states_filter else None
        types = {t.lower() for t in body.types_filter} if version >= 5 and body.types_filter else None
        listed = []
        for group_id, group in sorted(self.groups.items()):
            if group.state == ClassicState.DEAD:
                continue
            if states is not None and group.state.value.lower() not in states:
                continue
            if types is not None and group.type_name not in types:
                continue
            listed.append({
                "group_id": group_id,
                "protocol_type": group.protocol_type or "",
                "group_state": group.state.value,
                "group_type": group.type_name,
            })  # fmt: skip
        out.reply(request.request_id, {"throttle_time_ms": 0, "error_code": ErrorCode.NONE, "groups": listed})

    def _describe(self, group_id: str, version: int) -> dict[str, Any]:
        group = self.groups.get(group_id)
        if not isinstance(group, ClassicGroup) or group.state == ClassicState.DEAD:
            return {
                "error_code": ErrorCode.GROUP_ID_NOT_FOUND if version >= 6 else ErrorCode.NONE,
                "error_message": (
                    f"group {group_id!r} is not a classic group"
                    if group is not None
                    else f"group {group_id!r} does not exist"
                )
                if version >= 6
                else None,  # fmt: skip
                "group_id": group_id,
                "group_state": ClassicState.DEAD.value,
                "protocol_type": "",
                "protocol_data": "",
                "members": [],
                "authorized_operations": None,  # not requested: encodes as INT32_MIN
            }
        return {
            "error_code": ErrorCode.NONE,
            "error_message": None,
            "group_id": group_id,
            **group.described(),
            "authorized_operations": None,  # not requested: encodes as INT32_MIN
        }

    def describe_groups(self, request: GroupRequest, now_ms: int, out: Outcome) -> None:
        described = [self._describe(group_id, request.version) for group_id in request.body.groups]
        out.reply(request.request_id, {"throttle_time_ms": 0, "groups": described})

    def delete_groups(self, request: GroupRequest, now_ms: int, out: Outcome) -> None:
        results = []
        for group_id in request.body.groups_names:
            group = self.groups.get(group_id)
            if group is None or group.state == ClassicState.DEAD:
                error = ErrorCode.GROUP_ID_NOT_FOUND
            elif not group.is_empty():
                error = ErrorCode.NON_EMPTY_GROUP
            else:
                error = ErrorCode.NONE
                self.offsets.delete_all(group_id, out)
                deletions: list[Record]
                if isinstance(group, ClassicGroup):
                    deletions = [GroupMetadataRecord(group_id, None)]
                elif isinstance(group, ConnectGroup):
                    deletions = list(self.connect.deletion_records(group_id))
                else:
                    deletions = [TargetEpochRecord(group_id, None), ConsumerGroupEpochRecord(group_id, None)]
                for record in deletions:
                    out.records.append(record)
                    self.replay(record)
            self.metrics.observe(group_id, self.groups.get(group_id), now_ms)
            results.append({"group_id": group_id, "error_code": error})
        out.reply(request.request_id, {"throttle_time_ms": 0, "results": results})

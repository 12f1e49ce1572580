"""Committed offsets: OffsetCommit, OffsetFetch, OffsetDelete and retention.

Rules (Apache Kafka's):
- A commit with a negative generation is a *simple* (admin or standalone) commit, whatever
  member id it carries: allowed on an empty group, and it creates a classic group if there is
  none.
- Otherwise the group says who may commit (`Group.validate_offset_commit`: a member of a
  classic group's current generation, a consumer or connect group member at its epoch).
- Each partition must exist (UNKNOWN_TOPIC_OR_PARTITION) and its metadata must fit in
  `offset.metadata.max.bytes` (OFFSET_METADATA_TOO_LARGE); the others still commit.
- An offset expires `offsets.retention.ms` after its group became empty (or after its
  commit, for a topic a live group does not subscribe to); a commit may name its own
  expiry (OffsetCommit v2-v4). An empty classic group with no offsets left is deleted.
- Deleting a topic deletes every group's offsets for it (and the retention sweep deletes any
  left for a topic that no longer exists).
Every change is a record, applied through `replay` as at start-up.
"""

from __future__ import annotations

from typing import Any

from connect_rebalance.errors import ErrorCode, KafkaApiError
from coordinator.groups.classic import ClassicGroup, ClassicState
from coordinator.groups.context import GroupContext
from coordinator.groups.records import CommittedOffset, GroupMetadataRecord, OffsetCommitRecord
from coordinator.groups.requests import GroupRequest

NO_OFFSET = -1
OFFSET_FETCH_GROUPS_FROM_VERSION = 8
GROUP_ID_NOT_FOUND_FROM_COMMIT_VERSION = 9


class Offsets:
    def __init__(self, ctx: GroupContext) -> None:
        self.ctx = ctx
        self.committed: dict[str, dict[tuple[str, int], CommittedOffset]] = {}

    def replay(self, record: OffsetCommitRecord) -> None:
        """Apply a commit or its deletion. A commit for a group that does not exist (a simple
        commit) creates an empty classic group, live and at start-up alike, as Kafka does."""
        journal = self.ctx.journal
        if record.value is not None and record.group_id not in self.ctx.groups:
            since = record.value.commit_timestamp_ms
            journal.set_item(
                self.ctx.groups, record.group_id, ClassicGroup(record.group_id, state_timestamp_ms=since)
            )
        offsets = self.committed.get(record.group_id)
        if offsets is None:
            if record.value is None:
                return
            offsets = {}
            journal.set_item(self.committed, record.group_id, offsets)
        key = (record.topic, record.partition)
        if record.value is not None:
            journal.set_item(offsets, key, record.value)
            return
        journal.pop_item(offsets, key)
        if not offsets:
            journal.pop_item(self.committed, record.group_id)

    def of_group(self, group_id: str) -> dict[tuple[str, int], CommittedOffset]:
        return self.committed.get(group_id, {})

    # -- OffsetCommit ---------------------------------------------------------------------

    def _validate_commit(self, request: GroupRequest, now_ms: int) -> None:
        body, version = request.body, request.version
        generation = body.generation_id_or_member_epoch if version >= 1 else -1
        member_id = body.member_id if version >= 1 else ""
        if not body.group_id:
            raise KafkaApiError(ErrorCode.INVALID_GROUP_ID, "group id is empty")
        group = self.ctx.groups.get(body.group_id)
        if group is not None:
            group.validate_offset_commit(
                member_id, body.group_instance_id if version >= 7 else None, generation, version
            )
        elif generation >= 0:
            code = (
                ErrorCode.GROUP_ID_NOT_FOUND
                if version >= GROUP_ID_NOT_FOUND_FROM_COMMIT_VERSION
                else ErrorCode.ILLEGAL_GENERATION
            )
            raise KafkaApiError(code, f"group {body.group_id!r} does not exist")

    def commit(self, request: GroupRequest, now_ms: int) -> None:
        body, version = request.body, request.version
        group_error: ErrorCode | None = None
        try:
            self._validate_commit(request, now_ms)
        except KafkaApiError as exc:
            group_error = exc.code
        retention = body.retention_time_ms if 2 <= version <= 4 else -1
        topics = []
        for topic in body.topics:
            partitions = []
            known = self.ctx.partitions_of(topic.name)
            for part in topic.partitions:
                error = group_error
                metadata = part.committed_metadata or ""
                if error is None and (known is None or not 0 <= part.partition_index < known):
                    error = ErrorCode.UNKNOWN_TOPIC_OR_PARTITION
                if error is None and len(metadata.encode()) > self.ctx.settings.offset_metadata_max_bytes:
                    error = ErrorCode.OFFSET_METADATA_TOO_LARGE
                if error is None:
                    commit_ts = (
                        part.commit_timestamp if version == 1 and part.commit_timestamp >= 0 else now_ms
                    )
                    value = CommittedOffset(
                        part.committed_offset,
                        part.committed_leader_epoch if version >= 6 else -1,
                        metadata,
                        commit_ts,
                        now_ms + retention if retention >= 0 else -1,
                    )
                    self.ctx.emit(OffsetCommitRecord(body.group_id, topic.name, part.partition_index, value))
                partitions.append(
                    {"partition_index": part.partition_index, "error_code": error or ErrorCode.NONE}
                )
            topics.append({"name": topic.name, "partitions": partitions})
        self.ctx.reply(request.request_id, {"throttle_time_ms": 0, "topics": topics})

    # -- OffsetFetch ----------------------------------------------------------------------

    def _fetch_group(self, group_id: str, topics: Any) -> list[dict[str, Any]]:
        offsets = self.of_group(group_id)
        wanted: dict[str, list[int]] = {}
        if topics is None:
            for topic, partition in sorted(offsets):
                wanted.setdefault(topic, []).append(partition)
        else:
            for topic in topics:
                wanted[topic.name] = list(topic.partition_indexes)
        result = []
        for topic, partitions in wanted.items():
            rows = []
            for partition in partitions:
                found = offsets.get((topic, partition))
                rows.append({
                    "partition_index": partition,
                    "committed_offset": found.offset if found else NO_OFFSET,
                    "committed_leader_epoch": found.leader_epoch if found else -1,
                    "metadata": found.metadata if found else "",
                    "error_code": ErrorCode.NONE,
                })  # fmt: skip
            result.append({"name": topic, "partitions": rows})
        return result

    def fetch(self, request: GroupRequest, now_ms: int) -> None:
        body, version = request.body, request.version
        if version < OFFSET_FETCH_GROUPS_FROM_VERSION:
            topics = self._fetch_group(body.group_id, body.topics)
            self.ctx.reply(request.request_id, {"throttle_time_ms": 0, "topics": topics, "error_code": 0})
            return
        groups = []
        for g in body.groups:
            try:
                group = self.ctx.groups.get(g.group_id)
                if version >= 9 and group is not None:
                    group.validate_offset_fetch(g.member_id, g.member_epoch)
                groups.append({"group_id": g.group_id, "topics": self._fetch_group(g.group_id, g.topics),
                               "error_code": 0})  # fmt: skip
            except KafkaApiError as exc:
                groups.append({"group_id": g.group_id, "topics": [], "error_code": exc.code})
        self.ctx.reply(request.request_id, {"throttle_time_ms": 0, "groups": groups})

    # -- OffsetDelete ---------------------------------------------------------------------

    def delete(self, request: GroupRequest, now_ms: int) -> None:
        body = request.body
        group = self.ctx.groups.get(body.group_id)
        if group is None or group.state == ClassicState.DEAD:
            self.ctx.reply(request.request_id, {"error_code": ErrorCode.GROUP_ID_NOT_FOUND, "topics": []})
            return
        subscribed = group.subscribed_topics()
        if subscribed is None:  # a live group whose use of topics is unknown
            self.ctx.reply(request.request_id, {"error_code": ErrorCode.NON_EMPTY_GROUP, "topics": []})
            return
        topics = []
        for topic in body.topics:
            partitions = []
            count = self.ctx.partitions_of(topic.name)
            for part in topic.partitions:
                error = ErrorCode.GROUP_SUBSCRIBED_TO_TOPIC if topic.name in subscribed else ErrorCode.NONE
                if count is None or not 0 <= part.partition_index < count:  # Kafka checks this first
                    error = ErrorCode.UNKNOWN_TOPIC_OR_PARTITION
                if error == ErrorCode.NONE and (topic.name, part.partition_index) in self.of_group(
                    body.group_id
                ):
                    self.ctx.emit(OffsetCommitRecord(body.group_id, topic.name, part.partition_index, None))
                partitions.append({"partition_index": part.partition_index, "error_code": error})
            topics.append({"name": topic.name, "partitions": partitions})
        self.ctx.reply(
            request.request_id, {"error_code": ErrorCode.NONE, "throttle_time_ms": 0, "topics": topics}
        )

    def delete_all(self, group_id: str, topics: set[str] | None = None) -> None:
        """Every offset of the group, or those of `topics` only."""
        for topic, partition in sorted(self.of_group(group_id)):
            if topics is None or topic in topics:
                self.ctx.emit(OffsetCommitRecord(group_id, topic, partition, None))

    def topics_deleted(self, topics: set[str]) -> set[str]:
        """A deleted topic takes every group's offsets for it along (Kafka's
        `onPartitionsDeleted`): a topic created again under its name is read from its start,
        not from where the old one was. The groups touched are returned."""
        touched = {g for g, offsets in self.committed.items() if any(t in topics for t, _ in offsets)}
        for group_id in sorted(touched):
            self.delete_all(group_id, topics)
        return touched

    # -- retention ------------------------------------------------------------------------

    def expire(self, now_ms: int) -> None:
        retention = self.ctx.settings.offsets_retention_ms
        topics = {topic for offsets in self.committed.values() for topic, _ in offsets}
        self.topics_deleted({t for t in topics if self.ctx.partitions_of(t) is None})  # missed (a crash)
        for group_id in sorted(self.committed):
            group = self.ctx.groups.get(group_id)
            empty = group is None or group.is_empty()
            subscribed = None if empty else group.subscribed_topics()
            for (topic, partition), offset in sorted(self.of_group(group_id).items()):
                if offset.expire_timestamp_ms >= 0:
                    expired = now_ms >= offset.expire_timestamp_ms
                elif empty:
                    since = max(offset.commit_timestamp_ms, group.empty_since_ms if group else -1)
                    expired = now_ms - since >= retention
                elif subscribed is not None and topic not in subscribed:
                    expired = now_ms - offset.commit_timestamp_ms >= retention
                else:
                    expired = False
                if expired:
                    self.ctx.emit(OffsetCommitRecord(group_id, topic, partition, None))
        for group_id, group in sorted(self.ctx.groups.items()):
            if (
                isinstance(group, ClassicGroup)
                and group.state == ClassicState.EMPTY
                and group.is_empty()
                and group_id not in self.committed
            ):
                self.ctx.emit(GroupMetadataRecord(group_id, None))

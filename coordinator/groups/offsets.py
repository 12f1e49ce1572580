"""Committed offsets: OffsetCommit, OffsetFetch, OffsetDelete and retention.

Rules (Apache Kafka's, for classic groups):
- A commit with generation -1 and no member id is a *simple* (admin or standalone) commit:
  allowed on an Empty group, and it creates the group if there is none.
- Otherwise the committer must be a member of the group's current generation
  (UNKNOWN_MEMBER_ID, FENCED_INSTANCE_ID, ILLEGAL_GENERATION), and not in the middle of
  an assignment (REBALANCE_IN_PROGRESS while CompletingRebalance).
- Each partition must exist (UNKNOWN_TOPIC_OR_PARTITION) and its metadata must fit in
  `offset.metadata.max.bytes` (OFFSET_METADATA_TOO_LARGE); the others still commit.
- An offset expires `offsets.retention.ms` after its group became empty (or after its
  commit, for a topic a live consumer group does not subscribe to); a commit may name its
  own expiry (OffsetCommit v2-v4). An empty group with no offsets left is deleted.
Every change is a record; the live path applies records through `replay`, the same way
recovery does.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from connect_rebalance.errors import ErrorCode, KafkaApiError

from .classic import ClassicGroup, ClassicState
from .records import CommittedOffset, GroupMetadataRecord, OffsetCommitRecord
from .requests import GroupRequest, Outcome
from .subscriptions import subscribed_topics

if TYPE_CHECKING:
    from .coordinator import GroupCoordinator

NO_OFFSET = -1
OFFSET_FETCH_GROUPS_FROM_VERSION = 8
GROUP_ID_NOT_FOUND_FROM_COMMIT_VERSION = 9


class Offsets:
    def __init__(self, core: GroupCoordinator) -> None:
        self.core = core
        self.committed: dict[str, dict[tuple[str, int], CommittedOffset]] = {}

    def replay(self, record: OffsetCommitRecord) -> None:
        offsets = self.committed.setdefault(record.group_id, {})
        if record.value is None:
            offsets.pop((record.topic, record.partition), None)
            if not offsets:
                del self.committed[record.group_id]
        else:
            offsets[(record.topic, record.partition)] = record.value

    def _write(self, record: OffsetCommitRecord, out: Outcome) -> None:
        out.records.append(record)
        self.replay(record)

    def of_group(self, group_id: str) -> dict[tuple[str, int], CommittedOffset]:
        return self.committed.get(group_id, {})

    # -- OffsetCommit ---------------------------------------------------------------------

    def _validate_commit(self, request: GroupRequest, now_ms: int) -> None:
        body, version = request.body, request.version
        generation = body.generation_id_or_member_epoch if version >= 1 else -1
        member_id = body.member_id if version >= 1 else ""
        instance_id = body.group_instance_id if version >= 7 else None
        group = self.core.groups.get(body.group_id)
        if not body.group_id:
            raise KafkaApiError(ErrorCode.INVALID_GROUP_ID, "group id is empty")
        if group is None:
            if generation >= 0:
                code = (
                    ErrorCode.GROUP_ID_NOT_FOUND
                    if version >= GROUP_ID_NOT_FOUND_FROM_COMMIT_VERSION
                    else ErrorCode.ILLEGAL_GENERATION
                )
                raise KafkaApiError(code, f"group {body.group_id!r} does not exist")
            self.core.groups[body.group_id] = ClassicGroup(body.group_id, state_timestamp_ms=now_ms)
            return
        if not isinstance(group, ClassicGroup):
            assert self.core.consumer is not None
            self.core.consumer.validate_offset_commit(group, member_id, generation, version)
            return
        if group.state == ClassicState.DEAD:
            raise KafkaApiError(ErrorCode.COORDINATOR_NOT_AVAILABLE, "the group is being deleted")
        if generation < 0 and not member_id and group.state == ClassicState.EMPTY:
            return
        if instance_id is not None:
            registered = group.static_members.get(instance_id)
            if registered is None:
                raise KafkaApiError(ErrorCode.UNKNOWN_MEMBER_ID, f"instance {instance_id!r} is not a member")
            if registered != member_id:
                raise KafkaApiError(
                    ErrorCode.FENCED_INSTANCE_ID, f"instance {instance_id!r} has another member id"
                )
        if member_id not in group.members:
            raise KafkaApiError(ErrorCode.UNKNOWN_MEMBER_ID, f"member {member_id!r} is not in the group")
        if generation != group.generation:
            raise KafkaApiError(
                ErrorCode.ILLEGAL_GENERATION, f"generation {generation} is not the group's {group.generation}"
            )
        if group.state == ClassicState.COMPLETING_REBALANCE:
            raise KafkaApiError(ErrorCode.REBALANCE_IN_PROGRESS, "the group is completing a rebalance")

    def commit(self, request: GroupRequest, now_ms: int, out: Outcome) -> None:
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
            known = self.core.partitions_of(topic.name)
            for part in topic.partitions:
                error = group_error
                metadata = part.committed_metadata or ""
                if error is None and (known is None or not 0 <= part.partition_index < known):
                    error = ErrorCode.UNKNOWN_TOPIC_OR_PARTITION
                if error is None and len(metadata.encode()) > self.core.settings.offset_metadata_max_bytes:
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
                    self._write(
                        OffsetCommitRecord(body.group_id, topic.name, part.partition_index, value), out
                    )
                partitions.append(
                    {"partition_index": part.partition_index, "error_code": error or ErrorCode.NONE}
                )
            topics.append({"name": topic.name, "partitions": partitions})
        out.reply(request.request_id, {"throttle_time_ms": 0, "topics": topics})

    # -- OffsetFetch ----------------------------------------------------------------------

    def _validate_fetch(self, spec: Any, version: int) -> None:
        """OffsetFetch v9+ naming a member of a consumer group must carry its current epoch."""
        group = self.core.groups.get(spec.group_id)
        if version >= 9 and group is not None and not isinstance(group, ClassicGroup) and self.core.consumer:
            self.core.consumer.validate_offset_fetch(group, spec.member_id, spec.member_epoch)

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

    def fetch(self, request: GroupRequest, now_ms: int, out: Outcome) -> None:
        body, version = request.body, request.version
        if version >= OFFSET_FETCH_GROUPS_FROM_VERSION:
            groups = []
            for g in body.groups:
                try:
                    self._validate_fetch(g, version)
                    groups.append({"group_id": g.group_id, "topics": self._fetch_group(g.group_id, g.topics),
                                   "error_code": 0})  # fmt: skip
                except KafkaApiError as exc:
                    groups.append({"group_id": g.group_id, "topics": [], "error_code": exc.code})
            out.reply(request.request_id, {"throttle_time_ms": 0, "groups": groups})
            return
        out.reply(
            request.request_id,
            {"throttle_time_ms": 0, "topics": self._fetch_group(body.group_id, body.topics), "error_code": 0},
        )

    # -- OffsetDelete ---------------------------------------------------------------------

    def delete(self, request: GroupRequest, now_ms: int, out: Outcome) -> None:
        body = request.body
        group = self.core.groups.get(body.group_id)
        if group is None or (isinstance(group, ClassicGroup) and group.state == ClassicState.DEAD):
            out.reply(request.request_id, {"error_code": ErrorCode.GROUP_ID_NOT_FOUND, "topics": []})
            return
        subscribed: set[str] = set()
        if isinstance(group, ClassicGroup) and group.state != ClassicState.EMPTY:
            if group.protocol_type != "consumer":
                out.reply(request.request_id, {"error_code": ErrorCode.NON_EMPTY_GROUP, "topics": []})
                return
            subscribed = subscribed_topics(group)
        topics = []
        for topic in body.topics:
            partitions = []
            for part in topic.partitions:
                error = ErrorCode.GROUP_SUBSCRIBED_TO_TOPIC if topic.name in subscribed else ErrorCode.NONE
                if error == ErrorCode.NONE and (topic.name, part.partition_index) in self.of_group(
                    body.group_id
                ):
                    self._write(
                        OffsetCommitRecord(body.group_id, topic.name, part.partition_index, None), out
                    )
                partitions.append({"partition_index": part.partition_index, "error_code": error})
            topics.append({"name": topic.name, "partitions": partitions})
        out.reply(request.request_id, {"error_code": ErrorCode.NONE, "throttle_time_ms": 0, "topics": topics})

    def delete_all(self, group_id: str, out: Outcome) -> None:
        for topic, partition in sorted(self.of_group(group_id)):
            self._write(OffsetCommitRecord(group_id, topic, partition, None), out)

    # -- retention ------------------------------------------------------------------------

    def expire(self, now_ms: int, out: Outcome) -> None:
        retention = self.core.settings.offsets_retention_ms
        for group_id in sorted(self.committed):
            group = self.core.groups.get(group_id)
            empty = group is None or group.is_empty()
            subscribed = None
            if isinstance(group, ClassicGroup) and not empty and group.protocol_type == "consumer":
                subscribed = subscribed_topics(group)
            for (topic, partition), offset in sorted(self.of_group(group_id).items()):
                if offset.expire_timestamp_ms >= 0:
                    expired = now_ms >= offset.expire_timestamp_ms
                elif empty:
                    since = max(offset.commit_timestamp_ms, group.state_timestamp_ms if group else -1)
                    expired = now_ms - since >= retention
                elif subscribed is not None and topic not in subscribed:
                    expired = now_ms - offset.commit_timestamp_ms >= retention
                else:
                    expired = False
                if expired:
                    self._write(OffsetCommitRecord(group_id, topic, partition, None), out)
        for group_id, group in sorted(self.core.groups.items()):
            if (
                isinstance(group, ClassicGroup)
                and group.state == ClassicState.EMPTY
                and group.is_empty()
                and group_id not in self.committed
            ):
                out.records.append(GroupMetadataRecord(group_id, None))
                self.core.replay(GroupMetadataRecord(group_id, None))

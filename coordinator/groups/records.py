"""The records the group coordinator writes, as typed values, and their bytes on disk.

The core emits and replays these dataclasses; only `encode_record`/`decode_record` know the
bytes, which follow the versioned schemas in connect_rebalance/protocol/schemas (keys carry
an int16 record type, values an int16 version; a null value is a tombstone).
"""

from __future__ import annotations

import struct
from dataclasses import dataclass

from connect_rebalance.protocol import coordinator_records as schemas
from connect_rebalance.protocol.coordinator_records import (
    GroupMetadataKey,
    GroupMetadataValue,
    OffsetCommitKey,
    OffsetCommitValue,
)

from . import connect_records
from .client_assignment import ClientAssignorSpec, assignor_specs
from .connect_records import CONNECT_RECORD_TYPES, ConnectRecord, decode_connect_record, encode_connect_record
from .reconciliation import MemberAssignment, MemberState

OFFSET_COMMIT_KEY_VERSION = 1
GROUP_METADATA_KEY_VERSION = 2
OFFSET_COMMIT_VALUE_VERSION = 3
GROUP_METADATA_VALUE_VERSION = 4


@dataclass(frozen=True, slots=True)
class CommittedOffset:
    offset: int
    leader_epoch: int
    metadata: str
    commit_timestamp_ms: int
    expire_timestamp_ms: int = -1


@dataclass(frozen=True, slots=True)
class OffsetCommitRecord:
    group_id: str
    topic: str
    partition: int
    value: CommittedOffset | None


@dataclass(frozen=True, slots=True)
class ClassicMemberSnapshot:
    member_id: str
    group_instance_id: str | None
    client_id: str
    client_host: str
    rebalance_timeout_ms: int
    session_timeout_ms: int
    subscription: bytes
    assignment: bytes


@dataclass(frozen=True, slots=True)
class ClassicGroupSnapshot:
    protocol_type: str
    generation: int
    protocol_name: str | None
    leader_id: str | None
    state_timestamp_ms: int
    members: tuple[ClassicMemberSnapshot, ...]


@dataclass(frozen=True, slots=True)
class GroupMetadataRecord:
    group_id: str
    value: ClassicGroupSnapshot | None


Items = frozenset[tuple[str, int]]  # (topic id, partition)


@dataclass(frozen=True, slots=True)
class ConsumerGroupEpochRecord:
    group_id: str
    epoch: int | None  # None: the group is deleted


@dataclass(frozen=True, slots=True)
class ClassicMemberMetadata:
    """What a member speaking the classic protocol inside a consumer group keeps (online migration)."""

    session_timeout_ms: int
    protocols: tuple[tuple[str, bytes], ...]


@dataclass(frozen=True, slots=True)
class ConsumerMemberSnapshot:
    instance_id: str | None
    rack_id: str | None
    client_id: str
    client_host: str
    subscribed_topic_names: frozenset[str]
    subscribed_topic_regex: str | None
    rebalance_timeout_ms: int
    server_assignor: str | None
    classic: ClassicMemberMetadata | None = None
    client_assignors: tuple[ClientAssignorSpec, ...] = ()  # KIP-848 client-side assignment


@dataclass(frozen=True, slots=True)
class ConsumerMemberRecord:
    group_id: str
    member_id: str
    value: ConsumerMemberSnapshot | None


@dataclass(frozen=True, slots=True)
class TargetEpochRecord:
    group_id: str
    epoch: int | None
    assignor: str = ""
    error: int = 0  # reported by a client-side assignor


@dataclass(frozen=True, slots=True)
class TargetMemberRecord:
    group_id: str
    member_id: str
    items: Items | None
    metadata: tuple[int, bytes] = (0, b"")  # (version, bytes) from a client-side assignor


@dataclass(frozen=True, slots=True)
class CurrentAssignmentRecord:
    group_id: str
    member_id: str
    value: MemberAssignment[tuple[str, int]] | None


Record = (
    OffsetCommitRecord
    | GroupMetadataRecord
    | ConsumerGroupEpochRecord
    | ConsumerMemberRecord
    | TargetEpochRecord
    | TargetMemberRecord
    | CurrentAssignmentRecord
    | ConnectRecord
)


def _partitions_field(cls: type, items: Items) -> list[object]:
    by_topic: dict[str, list[int]] = {}
    for topic_id, partition in items:
        by_topic.setdefault(topic_id, []).append(partition)
    return [cls(topic_id=t, partitions=sorted(p)) for t, p in sorted(by_topic.items())]


def _items(entries: list[object]) -> Items:
    return frozenset((str(e.topic_id), p) for e in entries for p in e.partitions)  # type: ignore[attr-defined]


def _encode_consumer_record(record: Record) -> tuple[bytes, bytes | None]:
    group = record.group_id
    if isinstance(record, ConsumerGroupEpochRecord):
        key = schemas.ConsumerGroupMetadataKey(version=3, group_id=group).encode()
        value = (
            None
            if record.epoch is None
            else schemas.ConsumerGroupMetadataValue(version=0, epoch=record.epoch).encode()
        )
    elif isinstance(record, TargetEpochRecord):
        key = schemas.ConsumerGroupTargetAssignmentMetadataKey(version=6, group_id=group).encode()
        value = (
            None
            if record.epoch is None
            else schemas.ConsumerGroupTargetAssignmentMetadataValue(
                version=0,
                assignment_epoch=record.epoch,
                assignor_name=record.assignor,
                assignor_error=record.error,
            ).encode()
        )
    elif isinstance(record, ConsumerMemberRecord):
        key = schemas.ConsumerGroupMemberMetadataKey(
            version=5, group_id=group, member_id=record.member_id
        ).encode()
        m = record.value
        member_cls = schemas.ConsumerGroupMemberMetadataValue
        classic = None
        if m is not None and m.classic is not None:
            meta_cls = member_cls.ClassicMemberMetadata
            classic = meta_cls(
                session_timeout_ms=m.classic.session_timeout_ms,
                supported_protocols=[
                    meta_cls.ClassicProtocol(name=n, metadata=b) for n, b in m.classic.protocols
                ],
            )
        value = (
            None
            if m is None
            else member_cls(
                version=0,
                instance_id=m.instance_id,
                rack_id=m.rack_id,
                client_id=m.client_id,
                client_host=m.client_host,
                subscribed_topic_names=sorted(m.subscribed_topic_names),
                subscribed_topic_regex=m.subscribed_topic_regex,
                rebalance_timeout_ms=m.rebalance_timeout_ms,
                server_assignor=m.server_assignor,
                classic_member_metadata=classic,
                client_assignors=[
                    member_cls.Assignor(
                        name=a.name,
                        minimum_version=a.minimum_version,
                        maximum_version=a.maximum_version,
                        reason=a.reason,
                        metadata_version=a.metadata_version,
                        metadata_bytes=a.metadata,
                    )
                    for a in m.client_assignors
                ]  # fmt: skip
                or None,
            ).encode()
        )
    elif isinstance(record, TargetMemberRecord):
        key = schemas.ConsumerGroupTargetAssignmentMemberKey(
            version=7, group_id=group, member_id=record.member_id
        ).encode()
        cls = schemas.ConsumerGroupTargetAssignmentMemberValue
        value = (
            None
            if record.items is None
            else cls(
                version=0,
                topic_partitions=_partitions_field(cls.TopicPartition, record.items),
                metadata_version=record.metadata[0],
                metadata_bytes=record.metadata[1],
            ).encode()
        )
    else:
        assert isinstance(record, CurrentAssignmentRecord)
        key = schemas.ConsumerGroupCurrentMemberAssignmentKey(
            version=8, group_id=group, member_id=record.member_id
        ).encode()
        a = record.value
        cls = schemas.ConsumerGroupCurrentMemberAssignmentValue
        value = (
            None
            if a is None
            else cls(
                version=0,
                member_epoch=a.member_epoch,
                previous_member_epoch=a.previous_epoch,
                state=int(a.state),
                assigned_partitions=_partitions_field(cls.TopicPartitions, a.assigned),
                partitions_pending_revocation=_partitions_field(cls.TopicPartitions, a.pending_revocation),
            ).encode()
        )
    return bytes(key), None if value is None else bytes(value)


def _decode_consumer_record(key_version: int, key: bytes, value: bytes | None) -> Record:
    if key_version == 3:
        k = schemas.ConsumerGroupMetadataKey.decode(key)
        return ConsumerGroupEpochRecord(
            k.group_id, None if value is None else schemas.ConsumerGroupMetadataValue.decode(value).epoch
        )
    if key_version == 6:
        k = schemas.ConsumerGroupTargetAssignmentMetadataKey.decode(key)
        if value is None:
            return TargetEpochRecord(k.group_id, None)
        v = schemas.ConsumerGroupTargetAssignmentMetadataValue.decode(value)
        return TargetEpochRecord(k.group_id, v.assignment_epoch, v.assignor_name, v.assignor_error)
    if key_version == 5:
        k = schemas.ConsumerGroupMemberMetadataKey.decode(key)
        if value is None:
            return ConsumerMemberRecord(k.group_id, k.member_id, None)
        v = schemas.ConsumerGroupMemberMetadataValue.decode(value)
        return ConsumerMemberRecord(
            k.group_id,
            k.member_id,
            ConsumerMemberSnapshot(
                v.instance_id,
                v.rack_id,
                v.client_id,
                v.client_host,
                frozenset(v.subscribed_topic_names),
                v.subscribed_topic_regex,
                v.rebalance_timeout_ms,
                v.server_assignor,
                None
                if v.classic_member_metadata is None
                else ClassicMemberMetadata(
                    v.classic_member_metadata.session_timeout_ms,
                    tuple((p.name, bytes(p.metadata)) for p in v.classic_member_metadata.supported_protocols),
                ),
                assignor_specs(v.client_assignors or ()),
            ),
        )
    if key_version == 7:
        k = schemas.ConsumerGroupTargetAssignmentMemberKey.decode(key)
        if value is None:
            return TargetMemberRecord(k.group_id, k.member_id, None)
        target = schemas.ConsumerGroupTargetAssignmentMemberValue.decode(value)
        metadata = (target.metadata_version, bytes(target.metadata_bytes))
        return TargetMemberRecord(k.group_id, k.member_id, _items(target.topic_partitions), metadata)
    k = schemas.ConsumerGroupCurrentMemberAssignmentKey.decode(key)
    if value is None:
        return CurrentAssignmentRecord(k.group_id, k.member_id, None)
    v = schemas.ConsumerGroupCurrentMemberAssignmentValue.decode(value)
    return CurrentAssignmentRecord(
        k.group_id,
        k.member_id,
        MemberAssignment(
            MemberState(v.state),
            v.member_epoch,
            v.previous_member_epoch,
            _items(v.assigned_partitions),
            _items(v.partitions_pending_revocation),
        ),
    )


def encode_record(record: Record) -> tuple[bytes, bytes | None]:
    if isinstance(record, CONNECT_RECORD_TYPES):
        return encode_connect_record(record)
    if not isinstance(record, OffsetCommitRecord | GroupMetadataRecord):
        return _encode_consumer_record(record)
    if isinstance(record, OffsetCommitRecord):
        key = OffsetCommitKey(
            version=OFFSET_COMMIT_KEY_VERSION,
            group=record.group_id,
            topic=record.topic,
            partition=record.partition,
        ).encode()
        v = record.value
        if v is None:
            return bytes(key), None
        value = OffsetCommitValue(
            version=OFFSET_COMMIT_VALUE_VERSION,
            offset=v.offset,
            leader_epoch=v.leader_epoch,
            metadata=v.metadata,
            commit_timestamp=v.commit_timestamp_ms,
            expire_timestamp=v.expire_timestamp_ms,
        ).encode()
        return bytes(key), bytes(value)
    key = GroupMetadataKey(version=GROUP_METADATA_KEY_VERSION, group=record.group_id).encode()
    g = record.value
    if g is None:
        return bytes(key), None
    members = [
        GroupMetadataValue.MemberMetadata(
            member_id=m.member_id,
            group_instance_id=m.group_instance_id,
            client_id=m.client_id,
            client_host=m.client_host,
            rebalance_timeout=m.rebalance_timeout_ms,
            session_timeout=m.session_timeout_ms,
            subscription=m.subscription,
            assignment=m.assignment,
        )
        for m in g.members
    ]
    value = GroupMetadataValue(
        version=GROUP_METADATA_VALUE_VERSION,
        protocol_type=g.protocol_type,
        generation=g.generation,
        protocol=g.protocol_name,
        leader=g.leader_id,
        current_state_timestamp=g.state_timestamp_ms,
        members=members,
    ).encode()
    return bytes(key), bytes(value)


def decode_record(key: bytes, value: bytes | None) -> Record:
    (key_version,) = struct.unpack_from(">h", key)
    if key_version in (0, 1):
        k = OffsetCommitKey.decode(key)
        if value is None:
            return OffsetCommitRecord(k.group, k.topic, k.partition, None)
        v = OffsetCommitValue.decode(value)
        return OffsetCommitRecord(
            k.group,
            k.topic,
            k.partition,
            CommittedOffset(v.offset, v.leader_epoch, v.metadata, v.commit_timestamp, v.expire_timestamp),
        )
    if key_version == GROUP_METADATA_KEY_VERSION:
        k = GroupMetadataKey.decode(key)
        if value is None:
            return GroupMetadataRecord(k.group, None)
        v = GroupMetadataValue.decode(value)
        members = tuple(
            ClassicMemberSnapshot(
                m.member_id,
                m.group_instance_id,
                m.client_id,
                m.client_host,
                m.rebalance_timeout,
                m.session_timeout,
                bytes(m.subscription),
                bytes(m.assignment),
            )
            for m in v.members
        )
        return GroupMetadataRecord(
            k.group,
            ClassicGroupSnapshot(
                v.protocol_type, v.generation, v.protocol, v.leader, v.current_state_timestamp, members
            ),
        )
    if key_version in connect_records.KEY_TYPES:
        return decode_connect_record(key, value)
    if key_version in (3, 5, 6, 7, 8):
        return _decode_consumer_record(key_version, key, value)
    raise ValueError(f"unknown coordinator record type {key_version}")

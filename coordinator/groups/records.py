"""The records the group coordinator writes, as typed values, and their bytes on disk.

The core emits and replays these dataclasses; only `encode_record`/`decode_record` know the
bytes, which follow the versioned schemas in connect_rebalance/protocol/schemas (keys carry
an int16 record type, values an int16 version; a null value is a tombstone).
"""

from __future__ import annotations

import struct
from dataclasses import dataclass

from connect_rebalance.protocol.coordinator_records import (
    GroupMetadataKey,
    GroupMetadataValue,
    OffsetCommitKey,
    OffsetCommitValue,
)

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


Record = OffsetCommitRecord | GroupMetadataRecord


def encode_record(record: Record) -> tuple[bytes, bytes | None]:
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
    raise ValueError(f"unknown coordinator record type {key_version}")

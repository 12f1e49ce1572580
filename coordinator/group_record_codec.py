"""The bytes of the group coordinator's records in `__consumer_offsets`: the IO edge's codec.

The pure core (coordinator/groups) emits and replays typed records; the group service turns
them into key and value bytes with `encode_record` and back with `decode_record` at start-up.
The bytes follow the versioned schemas in connect_rebalance/protocol/schemas: keys carry an
int16 record type, values an int16 version, and a null value is a tombstone. Classic groups
and offsets use Apache Kafka's record types 0-2, consumer groups Kafka's 3-8 (as a Kafka
broker writes them), connect groups the project's private block 10000-10004 (the draft's 3-8
are Kafka's consumer-group types). A group's dynamic configuration, whatever its type, is key
type 10005, in the shape of the draft's group-configuration record.
"""

from __future__ import annotations

import struct
import uuid
from typing import Any

from connect_rebalance.protocol import coordinator_records as schemas
from connect_rebalance.protocol.coordinator_records import (
    GroupMetadataKey,
    GroupMetadataValue,
    OffsetCommitKey,
    OffsetCommitValue,
)
from connect_rebalance.protocol.hot_messages import uvarint_bytes
from connect_rebalance.work import work_field, work_of
from coordinator.groups.client_assignment import ClientAssignorSpec, assignor_specs
from coordinator.groups.connect_records import (
    CONNECT_RECORD_TYPES,
    ClassicWorkerMetadata,
    ConnectCoveredRecord,
    ConnectCurrentAssignmentRecord,
    ConnectGroupEpochRecord,
    ConnectRecord,
    ConnectTarget,
    ConnectTargetRecord,
    ConnectWorkerRecord,
    ConnectWorkerSnapshot,
)
from coordinator.groups.reconciliation import MemberAssignment, MemberState, TargetMember
from coordinator.groups.records import (
    ClassicGroupSnapshot,
    ClassicMemberMetadata,
    ClassicMemberSnapshot,
    CommittedOffset,
    ConsumerGroupEpochRecord,
    ConsumerMemberRecord,
    ConsumerMemberSnapshot,
    CurrentAssignmentRecord,
    GroupConfigRecord,
    GroupMetadataRecord,
    OffsetCommitRecord,
    Record,
    TargetEpochRecord,
    TargetMemberRecord,
)

OFFSET_COMMIT_KEY_VERSION = 1
GROUP_METADATA_KEY_VERSION = 2
OFFSET_COMMIT_VALUE_VERSION = 3
GROUP_METADATA_VALUE_VERSION = 4
CONNECT_KEY_TYPES = range(10000, 10005)
GROUP_KEY, COVERED_KEY, MEMBER_KEY, TARGET_KEY, CURRENT_KEY = CONNECT_KEY_TYPES
GROUP_CONFIG_KEY = 10005
Items = frozenset[tuple[str, int]]


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
    elif isinstance(record, TargetMemberRecord) and record.metadata == (0, b""):
        # Written for every member a target names, thousands at once: by hand (the same bytes).
        items = record.items
        key = _member_key(7, group, record.member_id)
        value = None if items is None else b"\x00\x00" + _topic_partitions(items) + b"\x00"
    elif isinstance(record, TargetMemberRecord):
        key = _member_key(7, group, record.member_id)
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
        # Written at every step of every member's reconciliation: by hand (the schema's bytes).
        assert isinstance(record, CurrentAssignmentRecord)
        key = _member_key(8, group, record.member_id)
        a = record.value
        value = (
            None
            if a is None
            else _EPOCHS_AND_STATE.pack(0, a.member_epoch, a.previous_epoch, int(a.state))
            + _topic_partitions(a.assigned)
            + _topic_partitions(a.pending_revocation)
            + b"\x00"
        )
    return bytes(key), None if value is None else bytes(value)


_EPOCHS_AND_STATE = struct.Struct(">hiib")  # value version, member epoch, previous epoch, state
_uuid_bytes: dict[str, bytes] = {}  # topic id -> its 16 bytes (as many entries as topics seen)


def _member_key(record_type: int, group_id: str, member_id: str) -> bytes:
    """A per-member key: the int16 record type, then group and member id as int16-length strings."""
    group, member = group_id.encode(), member_id.encode()
    return struct.pack(">hh", record_type, len(group)) + group + len(member).to_bytes(2, "big") + member


def _topic_partitions(items: Items) -> bytes:
    """A compact array of (topic id uuid, compact array of int32 partitions, no tagged fields),
    topics and partitions in order: what the schema codec writes for `_partitions_field`."""
    by_topic: dict[str, list[int]] = {}
    for topic_id, partition in items:
        by_topic.setdefault(topic_id, []).append(partition)
    out = [uvarint_bytes(len(by_topic) + 1)]
    for topic_id in sorted(by_topic):
        partitions = sorted(by_topic[topic_id])
        raw = _uuid_bytes.get(topic_id)
        if raw is None:
            raw = _uuid_bytes[topic_id] = uuid.UUID(topic_id).bytes
        count = len(partitions)
        out += (raw, uvarint_bytes(count + 1), struct.pack(f">{count}i", *partitions), b"\x00")
    return b"".join(out)


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


def _encode_group_config(record: GroupConfigRecord) -> tuple[bytes, bytes | None]:
    key = schemas.GroupConfigurationKey(version=GROUP_CONFIG_KEY, group_id=record.group_id).encode()
    if record.configs is None:
        return bytes(key), None
    configurations = [{"name": name, "value": value} for name, value in record.configs]
    return bytes(key), _encode(schemas.GroupConfigurationValue, {"configurations": configurations})


def _decode_group_config(key: bytes, value: bytes | None) -> GroupConfigRecord:
    group_id = schemas.GroupConfigurationKey.decode(key).group_id
    if value is None:
        return GroupConfigRecord(group_id, None)
    v = schemas.GroupConfigurationValue.decode(value)
    return GroupConfigRecord(group_id, tuple((c.name, c.value) for c in v.configurations))


def encode_record(record: Record) -> tuple[bytes, bytes | None]:
    if isinstance(record, CONNECT_RECORD_TYPES):
        return encode_connect_record(record)
    if isinstance(record, GroupConfigRecord):
        return _encode_group_config(record)
    if not isinstance(record, OffsetCommitRecord | GroupMetadataRecord):
        return _encode_consumer_record(record)
    if isinstance(record, OffsetCommitRecord):
        return _encode_offset_commit(record)
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


_I16 = struct.Struct(">h")
_I32 = struct.Struct(">i")
_MAX_STRING = 32767  # an int16-length string's most bytes
_OFFSET_HEAD = struct.Struct(">hqih")  # value version, offset, leader epoch, metadata length
_TIMESTAMPS = struct.Struct(">qq")  # commit and expire timestamps


def _string_at(data: bytes, position: int) -> tuple[str, int]:
    (length,) = _I16.unpack_from(data, position)
    if length < 0:
        raise ValueError("a null string where the schema has none")
    end = position + 2 + length
    if end > len(data):
        raise ValueError("a string past the end of the record")
    return data[position + 2 : end].decode(), end


def _encode_offset_commit(record: OffsetCommitRecord) -> tuple[bytes, bytes | None]:
    """A committed offset's key and value written without the schema codec: the mirror of
    `_decode_offset_commit`, for the same reason. Committed offsets are most of what the
    coordinator writes (a commit of 1,000 partitions is 1,000 records), and building the
    schema codec's message objects took most of a commit's time. The bytes are exactly
    OffsetCommitKey v1 and OffsetCommitValue v3 (tests/unit/test_member_record_bytes.py)."""
    group, topic = record.group_id.encode(), record.topic.encode()
    v = record.value
    metadata = b"" if v is None else v.metadata.encode()
    if max(len(group), len(topic), len(metadata)) > _MAX_STRING:
        raise ValueError(f"a committed offset's group, topic or metadata is over {_MAX_STRING} bytes")
    key = b"".join((
        _I16.pack(OFFSET_COMMIT_KEY_VERSION), _I16.pack(len(group)), group,
        _I16.pack(len(topic)), topic, _I32.pack(record.partition),
    ))  # fmt: skip
    if v is None:
        return key, None
    head = _OFFSET_HEAD.pack(OFFSET_COMMIT_VALUE_VERSION, v.offset, v.leader_epoch, len(metadata))
    return key, b"".join((head, metadata, _TIMESTAMPS.pack(v.commit_timestamp_ms, v.expire_timestamp_ms)))


def _decode_offset_commit(key: bytes, value: bytes | None) -> OffsetCommitRecord | None:
    """A committed offset read without the schema codec, or None for the schema codec to read.

    Committed offsets are nearly every record a start-up replays, and the schema codec spends
    ten times longer building its message objects than reading these few fields. This reads
    exactly the bytes of OffsetCommitKey v0-1 and OffsetCommitValue v3 (the version written);
    anything else (another version, a truncated or over-long record) goes to the schema codec,
    which decides as before. tests/unit/test_member_record_bytes.py checks it against the schema.
    """
    try:
        group, position = _string_at(key, 2)
        topic, position = _string_at(key, position)
        if len(key) != position + 4:
            return None
        (partition,) = struct.unpack_from(">i", key, position)
        if value is None:
            return OffsetCommitRecord(group, topic, partition, None)
        version, offset, epoch, _ = _OFFSET_HEAD.unpack_from(value)
        if version != OFFSET_COMMIT_VALUE_VERSION:
            return None
        metadata, position = _string_at(value, _OFFSET_HEAD.size - 2)
        if len(value) != position + _TIMESTAMPS.size:
            return None
        committed, expires = _TIMESTAMPS.unpack_from(value, position)
    except (struct.error, ValueError):
        return None
    offset_value = CommittedOffset(offset, epoch, metadata, committed, expires)
    return OffsetCommitRecord(group, topic, partition, offset_value)


def decode_record(key: bytes, value: bytes | None) -> Record:
    (key_version,) = struct.unpack_from(">h", key)
    if key_version in (0, 1):
        fast = _decode_offset_commit(key, value)
        if fast is not None:
            return fast
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
    if key_version in CONNECT_KEY_TYPES:
        return decode_connect_record(key, value)
    if key_version == GROUP_CONFIG_KEY:
        return _decode_group_config(key, value)
    if key_version in (3, 5, 6, 7, 8):
        return _decode_consumer_record(key_version, key, value)
    raise ValueError(f"unknown coordinator record type {key_version}")


def _encode(cls: type, fields: dict[str, Any]) -> bytes:
    return bytes(cls(version=0, **fields).encode())


def encode_connect_record(record: ConnectRecord) -> tuple[bytes, bytes | None]:
    group = record.group_id
    value: bytes | None = None
    if isinstance(record, ConnectGroupEpochRecord):
        key = schemas.ConnectGroupMetadataKey(version=GROUP_KEY, group_id=group).encode()
        if record.epoch is not None:
            value = _encode(schemas.ConnectGroupMetadataValue, {"epoch": record.epoch})
    elif isinstance(record, ConnectCoveredRecord):
        key = schemas.ConnectGroupConnectorsTasksKey(version=COVERED_KEY, group_id=group).encode()
        if record.epoch is not None:
            value = _encode(
                schemas.ConnectGroupConnectorsTasksValue,
                {"epoch": record.epoch, "connectors_and_tasks": work_field(record.items)},
            )
    elif isinstance(record, ConnectWorkerRecord):
        key = schemas.ConnectGroupMemberMetadataKey(
            version=MEMBER_KEY, group_id=group, member_id=record.member_id
        ).encode()
        w = record.value
        if w is not None:
            classic = None
            if w.classic is not None:
                meta = schemas.ConnectGroupMemberMetadataValue.ClassicWorkerMetadata
                classic = meta(
                    session_timeout_ms=w.classic.session_timeout_ms,
                    supported_protocols=[
                        meta.ClassicProtocol(name=n, metadata=b) for n, b in w.classic.protocols
                    ],
                    owned=work_field(w.classic.owned),
                )
            value = _encode(
                schemas.ConnectGroupMemberMetadataValue,
                {
                    "classic": classic,
                    "instance_id": w.instance_id,
                    "url": w.url,
                    "client_id": w.client_id,
                    "client_host": w.client_host,
                    "rebalance_timeout_ms": w.rebalance_timeout_ms,
                    "assignors": [
                        {
                            "name": a.name,
                            "minimum_version": a.minimum_version,
                            "maximum_version": a.maximum_version,
                            "reason": a.reason,
                            "metadata_version": a.metadata_version,
                            "metadata": a.metadata,
                        }
                        for a in w.client_assignors
                    ],
                },
            )
    elif isinstance(record, ConnectTargetRecord):
        key = schemas.ConnectGroupTargetAssignmentKey(version=TARGET_KEY, group_id=group).encode()
        t = record.value
        if t is not None:
            value = _encode(
                schemas.ConnectGroupTargetAssignmentValue,
                {
                    "assignment_epoch": t.epoch,
                    "error": t.error,
                    "assignor_name": t.assignor,
                    "computed_by": t.computed_by,
                    "members": [
                        {
                            "member_id": member_id,
                            "error": m.error,
                            "connectors_and_tasks": work_field(m.items),
                            "metadata_version": m.metadata_version,
                            "metadata": m.metadata,
                        }
                        for member_id, m in t.members
                    ],
                },
            )
    else:
        key = schemas.ConnectGroupCurrentMemberAssignmentKey(
            version=CURRENT_KEY, group_id=group, member_id=record.member_id
        ).encode()
        a = record.value
        if a is not None:
            value = _encode(
                schemas.ConnectGroupCurrentMemberAssignmentValue,
                {
                    "member_epoch": a.member_epoch,
                    "previous_member_epoch": a.previous_epoch,
                    "state": int(a.state),
                    "assigned": work_field(a.assigned),
                    "pending_revocation": work_field(a.pending_revocation),
                },
            )
    return bytes(key), value


def decode_connect_record(key: bytes, value: bytes | None) -> ConnectRecord:
    (key_type,) = struct.unpack_from(">h", key)
    if key_type == GROUP_KEY:
        k = schemas.ConnectGroupMetadataKey.decode(key)
        epoch = None if value is None else schemas.ConnectGroupMetadataValue.decode(value).epoch
        return ConnectGroupEpochRecord(k.group_id, epoch)
    if key_type == COVERED_KEY:
        k = schemas.ConnectGroupConnectorsTasksKey.decode(key)
        if value is None:
            return ConnectCoveredRecord(k.group_id, None)
        v = schemas.ConnectGroupConnectorsTasksValue.decode(value)
        return ConnectCoveredRecord(k.group_id, v.epoch, work_of(v.connectors_and_tasks))
    if key_type == MEMBER_KEY:
        k = schemas.ConnectGroupMemberMetadataKey.decode(key)
        if value is None:
            return ConnectWorkerRecord(k.group_id, k.member_id, None)
        v = schemas.ConnectGroupMemberMetadataValue.decode(value)
        assignors = tuple(
            ClientAssignorSpec(
                a.name, a.minimum_version, a.maximum_version, a.reason, a.metadata_version, bytes(a.metadata)
            )
            for a in v.assignors
        )
        classic = None
        if v.classic is not None:  # absent from records written before online migration
            classic = ClassicWorkerMetadata(
                v.classic.session_timeout_ms,
                tuple((p.name, bytes(p.metadata)) for p in v.classic.supported_protocols),
                work_of(v.classic.owned),
            )
        snapshot = ConnectWorkerSnapshot(
            v.instance_id, v.url, v.client_id, v.client_host, v.rebalance_timeout_ms, assignors, classic
        )
        return ConnectWorkerRecord(k.group_id, k.member_id, snapshot)
    if key_type == TARGET_KEY:
        k = schemas.ConnectGroupTargetAssignmentKey.decode(key)
        if value is None:
            return ConnectTargetRecord(k.group_id, None)
        v = schemas.ConnectGroupTargetAssignmentValue.decode(value)
        members = tuple(
            (
                m.member_id,
                TargetMember(work_of(m.connectors_and_tasks), m.error, m.metadata_version, bytes(m.metadata)),
            )
            for m in v.members
        )
        target = ConnectTarget(v.assignment_epoch, v.error, v.assignor_name, v.computed_by, members)
        return ConnectTargetRecord(k.group_id, target)
    if key_type == CURRENT_KEY:
        k = schemas.ConnectGroupCurrentMemberAssignmentKey.decode(key)
        if value is None:
            return ConnectCurrentAssignmentRecord(k.group_id, k.member_id, None)
        v = schemas.ConnectGroupCurrentMemberAssignmentValue.decode(value)
        assignment = MemberAssignment(
            MemberState(v.state),
            v.member_epoch,
            v.previous_member_epoch,
            work_of(v.assigned),
            work_of(v.pending_revocation),
        )
        return ConnectCurrentAssignmentRecord(k.group_id, k.member_id, assignment)
    raise ValueError(f"unknown connect group record type {key_type}")

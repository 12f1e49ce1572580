"""The records a `connect` group is kept in, as typed values, and their bytes.

The draft's record set (group metadata, connectors/tasks covered, member metadata, target
assignment, current member assignment) with key types in the project's private block
10000-10004: the draft's 3-8 are Apache Kafka's consumer-group record types. A null value is
a tombstone. The draft's group-configuration record is not written: connect groups have no
per-group configuration (key type 10005 stays reserved for it).

Items are `Work` (connect_rebalance/work.py): (connector, task) pairs.
"""

from __future__ import annotations

import struct
from dataclasses import dataclass
from typing import Any

from connect_rebalance.protocol import coordinator_records as schemas
from connect_rebalance.work import Work, work_field, work_of

from .client_assignment import ClientAssignorSpec
from .reconciliation import MemberAssignment, MemberState, TargetMember

KEY_TYPES = range(10000, 10005)
GROUP_KEY, COVERED_KEY, MEMBER_KEY, TARGET_KEY, CURRENT_KEY = KEY_TYPES


@dataclass(frozen=True, slots=True)
class ClassicWorkerMetadata:
    """What a worker speaking the classic protocol inside a connect group keeps (online migration):
    its JoinGroup session timeout and protocols (Kafka Connect's WorkerState bytes), and the
    work it reported running at its last JoinGroup (its SyncGroup assignment is a delta from it)."""

    session_timeout_ms: int
    protocols: tuple[tuple[str, bytes], ...]
    owned: frozenset[Work] = frozenset()


@dataclass(frozen=True, slots=True)
class ConnectWorkerSnapshot:
    instance_id: str | None
    url: str
    client_id: str
    client_host: str
    rebalance_timeout_ms: int
    client_assignors: tuple[ClientAssignorSpec, ...]
    classic: ClassicWorkerMetadata | None = None


@dataclass(frozen=True, slots=True)
class ConnectTarget:
    epoch: int
    error: int
    assignor: str
    computed_by: str
    members: tuple[tuple[str, TargetMember[Work]], ...]


@dataclass(frozen=True, slots=True)
class ConnectGroupEpochRecord:
    group_id: str
    epoch: int | None  # None: the group is deleted


@dataclass(frozen=True, slots=True)
class ConnectCoveredRecord:
    group_id: str
    epoch: int | None
    items: frozenset[Work] = frozenset()


@dataclass(frozen=True, slots=True)
class ConnectWorkerRecord:
    group_id: str
    member_id: str
    value: ConnectWorkerSnapshot | None


@dataclass(frozen=True, slots=True)
class ConnectTargetRecord:
    group_id: str
    value: ConnectTarget | None


@dataclass(frozen=True, slots=True)
class ConnectCurrentAssignmentRecord:
    group_id: str
    member_id: str
    value: MemberAssignment[Work] | None


ConnectRecord = (
    ConnectGroupEpochRecord
    | ConnectCoveredRecord
    | ConnectWorkerRecord
    | ConnectTargetRecord
    | ConnectCurrentAssignmentRecord
)
CONNECT_RECORD_TYPES = (
    ConnectGroupEpochRecord,
    ConnectCoveredRecord,
    ConnectWorkerRecord,
    ConnectTargetRecord,
    ConnectCurrentAssignmentRecord,
)


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

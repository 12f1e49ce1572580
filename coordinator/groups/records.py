"""The records the group coordinator writes, as typed values.

The core emits and replays these dataclasses; their bytes are the IO edge's business
(coordinator/group_record_codec.py, after the versioned schemas in
connect_rebalance/protocol/schemas).
"""

from __future__ import annotations

from dataclasses import dataclass

from coordinator.groups.client_assignment import ClientAssignorSpec
from coordinator.groups.connect_records import ConnectRecord
from coordinator.groups.reconciliation import MemberAssignment


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


@dataclass(frozen=True, slots=True)
class GroupConfigRecord:
    """A group's dynamic configuration after a change (group_configs.py), whatever the group's
    type and whether or not it exists; None: nothing is overridden any more."""

    group_id: str
    configs: tuple[tuple[str, str], ...] | None


Record = (
    OffsetCommitRecord
    | GroupMetadataRecord
    | ConsumerGroupEpochRecord
    | ConsumerMemberRecord
    | TargetEpochRecord
    | TargetMemberRecord
    | CurrentAssignmentRecord
    | ConnectRecord
    | GroupConfigRecord
)

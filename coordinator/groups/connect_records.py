"""The records a `connect` group is kept in, as typed values.

The draft's record set (group metadata, connectors/tasks covered, member metadata, target
assignment, current member assignment) with key types in the project's private block
10000-10004: the draft's 3-8 are Apache Kafka's consumer-group record types. A null value is
a tombstone. The draft's group-configuration record (key type 10005) is written for every
group type's dynamic configuration, apart from the group's records (group_configs.py).

Items are `Work` (connect_rebalance/work.py): (connector, task) pairs.
"""

from __future__ import annotations

from dataclasses import dataclass

from connect_rebalance.work import Work
from coordinator.groups.client_assignment import ClientAssignorSpec
from coordinator.groups.reconciliation import MemberAssignment, TargetMember


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

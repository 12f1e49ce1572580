"""KIP-848 consumer groups from a member's side, with client-side assignment.

ConsumerGroupHeartbeat (68) is Kafka's; its `ClientAssignors` request field and
`ShouldComputeAssignment` answer field are the project's tagged fields (tag 10000), and
ConsumerGroupPrepareAssignment / ConsumerGroupInstallAssignment are API keys 10010 / 10011 of
the project's private block (docs/protocol.md). Real Kafka clients never need this module;
it lets tests and tools run a client-side assignor against the coordinator.

Partitions travel as `(topic id, partition)` pairs; answers keep the wire's field names.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from typing import Any

from connect_rebalance.protocol.api_keys import ApiKey

from .client import AssignmentGroupApi
from .connect_group import ClientAssignor

HEARTBEAT_VERSION = 1  # the member generates its own id
JOIN_EPOCH, LEAVE_EPOCH = 0, -1

TopicPartition = tuple[str, int]


def partitions_field(items: Iterable[TopicPartition]) -> list[dict[str, Any]]:
    """`[]TopicPartitions` entries (topic id and sorted partitions) from (topic id, partition) pairs."""
    by_topic: dict[str, list[int]] = {}
    for topic_id, partition in items:
        by_topic.setdefault(str(topic_id), []).append(partition)
    return [{"topic_id": t, "partitions": sorted(p)} for t, p in sorted(by_topic.items())]


def partitions_of(entries: Iterable[Mapping[str, Any]] | None) -> frozenset[TopicPartition]:
    """(topic id, partition) pairs from decoded `[]TopicPartitions` entries."""
    return frozenset((str(e["topic_id"]), p) for e in entries or () for p in e["partitions"])


def assignor_field(assignor: ClientAssignor) -> dict[str, Any]:
    """A consumer heartbeat's `Assignor` entry (KIP-848 names the metadata `MetadataBytes`)."""
    fields = assignor.field()
    fields["metadata_bytes"] = fields.pop("metadata")
    return fields


@dataclass(frozen=True)
class MemberTarget:
    """One member's part of an assignment being installed."""

    member_id: str
    partitions: frozenset[TopicPartition]
    metadata_version: int = 0
    metadata: bytes = b""


def heartbeat_fields(
    group_id: str,
    member_id: str,
    epoch: int,
    *,
    topics: Iterable[str] | None = None,
    rebalance_timeout_ms: int = -1,
    owned: Iterable[TopicPartition] | None = None,
    assignors: Iterable[ClientAssignor] | None = None,
    instance_id: str | None = None,
    rack_id: str | None = None,
) -> dict[str, Any]:
    """ConsumerGroupHeartbeat v1 fields; None (and -1) mean "unchanged since the last heartbeat"."""
    return {
        "group_id": group_id,
        "member_id": member_id,
        "member_epoch": epoch,
        "instance_id": instance_id,
        "rack_id": rack_id,
        "rebalance_timeout_ms": rebalance_timeout_ms,
        "subscribed_topic_names": None if topics is None else list(topics),
        "subscribed_topic_regex": None,
        "server_assignor": None,
        "topic_partitions": None if owned is None else partitions_field(owned),
        "client_assignors": None if assignors is None else [assignor_field(a) for a in assignors],
    }


def install_fields(
    group_id: str,
    member_id: str,
    epoch: int,
    group_epoch: int,
    members: Iterable[MemberTarget],
    error: int = 0,
) -> dict[str, Any]:
    return {
        "group_id": group_id,
        "member_id": member_id,
        "member_epoch": epoch,
        "group_epoch": group_epoch,
        "error": error,
        "members": [
            {
                "member_id": m.member_id,
                "partitions": partitions_field(m.partitions),
                "metadata_version": m.metadata_version,
                "metadata_bytes": m.metadata,
            }
            for m in members
        ],
    }


class ConsumerGroupApi(AssignmentGroupApi):
    """Heartbeat (v1), Prepare, Install and Describe for consumer groups over one connection."""

    heartbeat_api = (ApiKey.CONSUMER_GROUP_HEARTBEAT, HEARTBEAT_VERSION)
    prepare_key = ApiKey.CONSUMER_GROUP_PREPARE_ASSIGNMENT
    install_key = ApiKey.CONSUMER_GROUP_INSTALL_ASSIGNMENT
    describe_api = (ApiKey.CONSUMER_GROUP_DESCRIBE, 1)

    def heartbeat_fields(self, group_id: str, member_id: str, epoch: int, **fields: Any) -> dict[str, Any]:
        return heartbeat_fields(group_id, member_id, epoch, **fields)

    def install_fields(self, *args: Any, **kwargs: Any) -> dict[str, Any]:
        return install_fields(*args, **kwargs)

"""The connect group APIs from a worker's side: request fields in, answers as dicts out.

API keys 10000-10003 are the project's private block (docs/protocol.md). Work travels as
`connect_rebalance.work.Work`; answers keep the wire's field names.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from typing import Any

from connect_rebalance.protocol.api_keys import ApiKey

from ..work import Work, work_field
from .client import AssignmentGroupApi

JOIN_EPOCH, LEAVE_EPOCH = 0, -1


@dataclass(frozen=True)
class ClientAssignor:
    """One client-side assignor a worker offers: its versions, reason and metadata."""

    name: str
    minimum_version: int
    maximum_version: int
    metadata_version: int
    metadata: bytes = b""
    reason: int = 0

    def field(self) -> dict[str, Any]:
        return {
            "name": self.name,
            "minimum_version": self.minimum_version,
            "maximum_version": self.maximum_version,
            "reason": self.reason,
            "metadata_version": self.metadata_version,
            "metadata": self.metadata,
        }


@dataclass(frozen=True)
class InstalledMember:
    """One member's part of an assignment being installed."""

    member_id: str
    work: frozenset[Work]
    metadata_version: int = 0
    metadata: bytes = b""
    error: int = 0


def heartbeat_fields(
    group_id: str,
    member_id: str,
    epoch: int,
    *,
    url: str | None = None,
    instance_id: str | None = None,
    rebalance_timeout_ms: int = -1,
    assignors: Iterable[ClientAssignor] | None = None,
    owned: Iterable[Work] | None = None,
) -> dict[str, Any]:
    """ConnectGroupHeartbeat fields; None (and -1) mean "unchanged since the last heartbeat"."""
    return {
        "group_id": group_id,
        "member_id": member_id,
        "member_epoch": epoch,
        "instance_id": instance_id,
        "url": url,
        "rebalance_timeout_ms": rebalance_timeout_ms,
        "server_assignor": None,
        "client_assignors": None if assignors is None else [a.field() for a in assignors],
        "owned_connectors_and_tasks": None if owned is None else work_field(owned),
    }


def install_fields(
    group_id: str,
    member_id: str,
    epoch: int,
    group_epoch: int,
    covered: Iterable[Work],
    members: Mapping[str, InstalledMember] | Iterable[InstalledMember],
    error: int = 0,
) -> dict[str, Any]:
    entries = members.values() if isinstance(members, Mapping) else members
    return {
        "group_id": group_id,
        "member_id": member_id,
        "member_epoch": epoch,
        "group_epoch": group_epoch,
        "error": error,
        "connectors_and_tasks": work_field(covered),
        "members": [
            {
                "member_id": m.member_id,
                "error": m.error,
                "connectors_and_tasks": work_field(m.work),
                "metadata_version": m.metadata_version,
                "metadata": m.metadata,
            }
            for m in entries
        ],
    }


class ConnectGroupApi(AssignmentGroupApi):
    """The four connect group calls over one ProtocolClient connection."""

    heartbeat_api = (ApiKey.CONNECT_GROUP_HEARTBEAT, 0)
    prepare_key = ApiKey.CONNECT_GROUP_PREPARE_ASSIGNMENT
    install_key = ApiKey.CONNECT_GROUP_INSTALL_ASSIGNMENT
    describe_api = (ApiKey.CONNECT_GROUP_DESCRIBE, 0)

    def heartbeat_fields(self, group_id: str, member_id: str, epoch: int, **fields: Any) -> dict[str, Any]:
        return heartbeat_fields(group_id, member_id, epoch, **fields)

    def install_fields(self, *args: Any, **kwargs: Any) -> dict[str, Any]:
        return install_fields(*args, **kwargs)

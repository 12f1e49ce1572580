"""docs/decisions.md's consumer-group entries over TCP against a coordinator process: where we
answer otherwise than Apache Kafka 4.x, a client on the wire sees what the entry says."""

from __future__ import annotations

import time
import uuid
from typing import Any

import pytest

from connect_rebalance.errors import ErrorCode
from connect_rebalance.processes import CoordinatorProcess
from connect_rebalance.protocol.api_keys import ApiKey
from tests.support.group_scenario import create_topic
from tests.support.wire import RawConnection

pytestmark = pytest.mark.integration


def joining(member_id: str, instance_id: str | None = None, regex: str | None = None) -> dict[str, Any]:
    """A ConsumerGroupHeartbeat v1 join (epoch 0), as librdkafka sends one."""
    return {"group_id": "cg", "member_id": member_id, "member_epoch": 0, "instance_id": instance_id,
            "rack_id": None, "rebalance_timeout_ms": 30000,
            "subscribed_topic_names": None if regex else ["orders"], "subscribed_topic_regex": regex,
            "server_assignor": None, "topic_partitions": []}  # fmt: skip


def partitions(answer: Any) -> list[int]:
    return sorted(p for t in answer.assignment.topic_partitions for p in t.partitions)


def assigned(connection: RawConnection, join: dict[str, Any]) -> Any:
    """Join, then heartbeat until the target (computed off the event loop, as Kafka 4.3 can)
    has reached the member; the answer that carries its partitions."""
    answer = connection.request(ApiKey.CONSUMER_GROUP_HEARTBEAT, 1, join)
    deadline = time.monotonic() + 30
    while answer.error_code == 0 and (answer.assignment is None or not partitions(answer)):
        assert time.monotonic() < deadline, "no assignment within 30 s"
        fields = join if answer.member_epoch == 0 else {
            **join, "member_epoch": answer.member_epoch, "rebalance_timeout_ms": -1,
            "subscribed_topic_names": None, "subscribed_topic_regex": None, "topic_partitions": [],
        }  # fmt: skip
        answer = connection.request(ApiKey.CONSUMER_GROUP_HEARTBEAT, 1, fields)
    return answer


def test_12_and_13_a_static_rejoin_with_its_own_member_id_and_a_regex_resolved_at_once(
    group_coordinator: CoordinatorProcess,
) -> None:
    create_topic(group_coordinator.bootstrap, "orders", 4)
    connection = RawConnection(group_coordinator.bootstrap)
    try:
        member = str(uuid.uuid4())
        first = assigned(connection, joining(member, instance_id="host-1"))
        assert first.error_code == 0 and partitions(first) == [0, 1, 2, 3]
        again = connection.request(ApiKey.CONSUMER_GROUP_HEARTBEAT, 1, joining(member, instance_id="host-1"))
        assert (again.error_code, again.member_epoch, partitions(again)) == (
            0,
            first.member_epoch,
            [0, 1, 2, 3],
        )
        other = connection.request(
            ApiKey.CONSUMER_GROUP_HEARTBEAT, 1, joining(str(uuid.uuid4()), instance_id="host-1")
        )
        assert other.error_code == ErrorCode.UNRELEASED_INSTANCE_ID

        by_pattern = joining(str(uuid.uuid4()), regex="ord.*") | {"group_id": "pattern"}
        resolved = assigned(connection, by_pattern)
        assert resolved.error_code == 0 and partitions(resolved) == [0, 1, 2, 3]
        assert resolved.member_epoch == 1, "the pattern's topics are in the first target: no later epoch"
    finally:
        connection.close()

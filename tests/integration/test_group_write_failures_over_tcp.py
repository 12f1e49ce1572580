"""Changes the coordinator cannot store, over TCP against a coordinator process: a commit for a
40,000-character group id, a SyncGroup carrying 20 MB of metadata, a ConsumerGroupHeartbeat with
a 20 MB subscription, a ConnectGroupHeartbeat with 20 MB of assignor metadata. Each is answered
with an error and a message on the same connection, which stays open; ListGroups, the describe
APIs and OffsetFetch show nothing of it, and neither does the coordinator after kill -9.
"""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from connect_rebalance.errors import ErrorCode
from connect_rebalance.processes import CoordinatorProcess
from connect_rebalance.protocol.api_keys import ApiKey
from connect_rebalance.protocol.connect_group import ClientAssignor, heartbeat_fields
from tests.support.group_scenario import create_topic
from tests.support.group_wire import commit, fetched, listed
from tests.support.wire import RawConnection

pytestmark = pytest.mark.integration
TWENTY_MB = 20 * 1024 * 1024


@pytest.fixture
def coordinator(tmp_path: Path) -> Iterator[CoordinatorProcess]:
    process = CoordinatorProcess(tmp_path / "data", {"group.initial.rebalance.delay.ms": "0"}).start()
    try:
        yield process
    finally:
        process.kill()


def join(conn: RawConnection, member_id: str, metadata: bytes) -> Any:
    return conn.request(ApiKey.JOIN_GROUP, 5, {
        "group_id": "huge-metadata", "session_timeout_ms": 10000, "rebalance_timeout_ms": 10000,
        "member_id": member_id, "group_instance_id": None, "protocol_type": "consumer",
        "protocols": [{"name": "range", "metadata": metadata}],
    })  # fmt: skip


def test_changes_that_cannot_be_stored_are_refused_with_a_message_and_leave_nothing(
    coordinator: CoordinatorProcess,
) -> None:
    create_topic(coordinator.bootstrap, "orders", 1)
    conn = RawConnection(coordinator.bootstrap, timeout=60)
    try:
        assert commit(conn, "kept", 7) == [ErrorCode.NONE]

        # OffsetCommit: the group id does not fit in a record key.
        assert commit(conn, "g" * 40000, 5) == [ErrorCode.UNKNOWN_SERVER_ERROR]
        assert fetched(conn, "g" * 40000) == -1 and listed(conn) == [("kept", "Empty")]

        # JoinGroup and SyncGroup: the leader's SyncGroup would store 20 MB of metadata.
        first = join(conn, "", b"m" * TWENTY_MB)
        assert first.error_code == ErrorCode.MEMBER_ID_REQUIRED
        joined = join(conn, first.member_id, b"m" * TWENTY_MB)
        assert (joined.error_code, joined.leader) == (ErrorCode.NONE, first.member_id)
        before = conn.request(ApiKey.DESCRIBE_GROUPS, 5, {"groups": ["huge-metadata"]}).groups[0]
        synced = conn.request(ApiKey.SYNC_GROUP, 3, {
            "group_id": "huge-metadata", "generation_id": joined.generation_id, "member_id": first.member_id,
            "group_instance_id": None, "assignments": [{"member_id": first.member_id, "assignment": b"all"}],
        })  # fmt: skip
        assert synced.error_code == ErrorCode.UNKNOWN_SERVER_ERROR and synced.assignment == b""
        after = conn.request(ApiKey.DESCRIBE_GROUPS, 5, {"groups": ["huge-metadata"]}).groups[0]
        assert after == before and after.group_state == "CompletingRebalance"

        # ConsumerGroupHeartbeat: the member's record would hold a 20 MB subscription.
        topics = [f"topic-{i:07d}-{'t' * 80}" for i in range(TWENTY_MB // 92)]
        consumer = conn.request(ApiKey.CONSUMER_GROUP_HEARTBEAT, 0, {
            "group_id": "huge-subscription", "member_id": "", "member_epoch": 0, "instance_id": None,
            "rack_id": None, "rebalance_timeout_ms": 30000, "subscribed_topic_names": topics,
            "server_assignor": None, "topic_partitions": [],
        })  # fmt: skip
        assert (
            consumer.error_code == ErrorCode.UNKNOWN_SERVER_ERROR
            and "max.message.bytes" in consumer.error_message
        )
        described = conn.request(ApiKey.CONSUMER_GROUP_DESCRIBE, 0, {"group_ids": ["huge-subscription"]})
        assert described.groups[0].error_code == ErrorCode.GROUP_ID_NOT_FOUND

        # ConnectGroupHeartbeat: the worker's record would hold 20 MB of assignor metadata.
        assignor = ClientAssignor("incremental", 1, 2, 2, b"w" * TWENTY_MB)
        worker = conn.request(ApiKey.CONNECT_GROUP_HEARTBEAT, 0, heartbeat_fields(
            "huge-worker", "w1", 0, assignors=[assignor], owned=[], url="http://w1:8083",
            rebalance_timeout_ms=60000,
        ))  # fmt: skip
        assert worker.error_code == ErrorCode.UNKNOWN_SERVER_ERROR and worker.error_message
        described = conn.request(ApiKey.CONNECT_GROUP_DESCRIBE, 0, {"group_ids": ["huge-worker"]})
        assert described.groups[0].error_code == ErrorCode.GROUP_ID_NOT_FOUND

        # The connection served all of this; it still does.
        assert listed(conn) == [("huge-metadata", "CompletingRebalance"), ("kept", "Empty")]
        assert commit(conn, "kept", 8) == [ErrorCode.NONE]
    finally:
        conn.close()

    coordinator.kill()
    coordinator.start()
    conn = RawConnection(coordinator.bootstrap, timeout=60)
    try:
        assert listed(conn) == [("kept", "Empty")], "a restart shows nothing of what could not be stored"
        assert fetched(conn, "kept") == 8 and fetched(conn, "g" * 40000) == -1
    finally:
        conn.close()

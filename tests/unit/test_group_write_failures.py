"""Records are the only way group state changes: when an outcome's records cannot be written,
the state is as before, every answer of the outcome is an error with a message, and a restart
(replaying what was written) shows nothing of it. A refused join creates no group.

Given a group in some state, when writing fails during OffsetCommit, JoinGroup/SyncGroup,
ConsumerGroupHeartbeat or ConnectGroupHeartbeat, then ListGroups, the describe APIs,
OffsetFetch, the groups' state and their deadlines are exactly as before.
"""

from __future__ import annotations

from typing import Any

import pytest

from connect_rebalance.errors import ErrorCode
from connect_rebalance.protocol.api_keys import ApiKey
from connect_rebalance.protocol.connect_group import heartbeat_fields
from tests.support.connect_driver import ConnectDriver
from tests.support.group_harness import GroupHarness
from tests.support.group_state import persisted, replayed, seen, state

pytestmark = pytest.mark.unit
FAILURE = "disk full (injected)"


def failing(h: GroupHarness, group_id: str, act: Any) -> Any:
    """Run `act` with every write failing; check nothing changed, live or after a restart."""
    before, before_seen = state(h.core), seen(h, group_id)
    written = len(h.records)
    h.failing_writes = FAILURE
    try:
        answer = act()
    finally:
        h.failing_writes = None
    assert len(h.records) == written, "nothing of the failed outcome is in the log"
    assert state(h.core) == before, "memory is as it was"
    assert seen(h, group_id) == before_seen, "clients and admins see what they saw"
    assert persisted(replayed(h)) == persisted(h.core), "a restart shows nothing of it"
    return answer


def commit(h: GroupHarness, group_id: str, member_id: str = "", generation: int = -1, offset: int = 5) -> Any:
    return h.call(
        ApiKey.OFFSET_COMMIT, 8, group_id=group_id, generation_id_or_member_epoch=generation,
        member_id=member_id, group_instance_id=None, topics=[{"name": "orders", "partitions": [
            {"partition_index": 0, "committed_offset": offset, "committed_leader_epoch": -1,
             "committed_metadata": ""}]}],
    )  # fmt: skip


def partition_errors(answer: dict[str, Any]) -> list[int]:
    return [p["error_code"] for t in answer["topics"] for p in t["partitions"]]


def test_a_failed_offset_commit_changes_nothing_and_creates_no_group() -> None:
    h = GroupHarness()
    members = h.form_group(2)
    assert partition_errors(commit(h, "g", members[0], 1, offset=3)) == [0]
    answer = failing(h, "g", lambda: commit(h, "g", members[0], 1, offset=9))
    assert partition_errors(answer) == [ErrorCode.COORDINATOR_NOT_AVAILABLE]
    fresh = failing(h, "standalone", lambda: commit(h, "standalone"))
    assert partition_errors(fresh) == [ErrorCode.COORDINATOR_NOT_AVAILABLE]
    assert "standalone" not in h.core.groups, "a simple commit that failed creates no group"
    assert partition_errors(commit(h, "g", members[0], 1, offset=9)) == [0], "the next commit succeeds"


def test_a_failed_sync_leaves_the_rebalance_where_it_was() -> None:
    h = GroupHarness()
    first = h.answer(h.join(client_id="a"))
    assert first is not None and first["error_code"] == ErrorCode.MEMBER_ID_REQUIRED
    joined = h.answer(h.join(first["member_id"], client_id="a"))
    assert joined is not None and joined["error_code"] == 0
    leader, generation = joined["member_id"], joined["generation_id"]
    answer = failing(h, "g", lambda: h.call(
        ApiKey.SYNC_GROUP, 3, group_id="g", generation_id=generation, member_id=leader,
        group_instance_id=None, assignments=[{"member_id": leader, "assignment": b"all"}],
    ))  # fmt: skip
    assert answer["error_code"] == ErrorCode.COORDINATOR_NOT_AVAILABLE and answer["assignment"] == b""
    assert h.core.groups["g"].state.value == "CompletingRebalance"
    again = h.answer(h.sync(leader, generation, {leader: b"all"}))
    assert again is not None and (again["error_code"], again["assignment"]) == (0, b"all")


def test_a_failed_static_rejoin_keeps_the_member_it_would_have_replaced() -> None:
    h = GroupHarness()
    joined = h.answer(h.join(client_id="s", instance_id="host-1"))
    assert joined is not None and joined["error_code"] == 0
    h.sync(joined["member_id"], joined["generation_id"], {joined["member_id"]: b"all"})
    answer = failing(h, "g", lambda: h.answer(h.join(client_id="s", instance_id="host-1")))
    assert answer["error_code"] == ErrorCode.COORDINATOR_NOT_AVAILABLE
    assert list(h.core.groups["g"].members) == [joined["member_id"]]


def consumer_join(h: GroupHarness, member: str, **kw: Any) -> dict[str, Any]:
    return h.consumer_heartbeat(member, 0, topics=["orders"], owned={}, rebalance_timeout_ms=30000, **kw)


def test_a_failed_consumer_group_heartbeat_changes_nothing() -> None:
    h = GroupHarness()
    failed = failing(h, "cg", lambda: consumer_join(h, "A"))
    assert (failed["error_code"], failed["error_message"]) == (ErrorCode.COORDINATOR_NOT_AVAILABLE, FAILURE)
    assert failed["assignment"] is None and "cg" not in h.core.groups, "a join that failed creates no group"
    a = consumer_join(h, "A")
    assert a["error_code"] == 0 and a["member_epoch"] == 1
    b = failing(h, "cg", lambda: consumer_join(h, "B"))
    assert b["error_code"] == ErrorCode.COORDINATOR_NOT_AVAILABLE and b["member_epoch"] == -1
    assert consumer_join(h, "B")["member_epoch"] == 2, "the join that failed did not count"
    revoke = failing(h, "cg", lambda: h.consumer_heartbeat("A", 1, owned={"orders": list(range(12))}))
    assert revoke["error_code"] == ErrorCode.COORDINATOR_NOT_AVAILABLE and revoke["assignment"] is None
    told = h.consumer_heartbeat("A", 1, owned={"orders": list(range(12))})
    assert told["member_epoch"] == 1 and len(h.assigned(told)["orders"]) == 6, "told to revoke, as before"


def test_a_failed_connect_group_heartbeat_changes_nothing() -> None:
    h = GroupHarness()

    def call(api_key: int, fields: dict[str, Any]) -> dict[str, Any]:
        return h.call(api_key, 0, **fields)

    d = ConnectDriver(call, group_id="connect-cluster")
    failed = failing(h, "connect-cluster", lambda: d.join("W1"))
    assert (failed["error_code"], failed["error_message"]) == (ErrorCode.COORDINATOR_NOT_AVAILABLE, FAILURE)
    assert "connect-cluster" not in h.core.groups
    assert d.join("W1")["should_compute_assignment"]
    d.compute("W1", {"W1": "AC0 AT0 AT1"})
    d.beat("W1")
    answer = failing(h, "connect-cluster", lambda: d.join("W2"))
    assert answer["error_code"] == ErrorCode.COORDINATOR_NOT_AVAILABLE
    assert list(d.state()["members"]) == ["W1"]


def test_refused_joins_create_no_group() -> None:
    h = GroupHarness()
    fields = heartbeat_fields("workers", "W1", 0, owned=[], assignors=[], rebalance_timeout_ms=0)
    no_url = h.call(ApiKey.CONNECT_GROUP_HEARTBEAT, 0, **fields)
    assert no_url["error_code"] == ErrorCode.INVALID_REQUEST and no_url["error_message"]
    no_timeout = h.consumer_heartbeat("A", 0, topics=["orders"], owned={}, group_id="consumers")
    assert no_timeout["error_code"] == ErrorCode.INVALID_REQUEST
    unsupported = consumer_join(h, "A", assignor="no-such-assignor")
    assert unsupported["error_code"] == ErrorCode.UNSUPPORTED_ASSIGNOR
    listed = h.call(ApiKey.LIST_GROUPS, 5, states_filter=[], types_filter=[])
    assert listed["groups"] == [] and h.core.groups == {}
    described = h.call(ApiKey.CONNECT_GROUP_DESCRIBE, 0, group_ids=["workers"])
    assert described["groups"][0]["error_code"] == ErrorCode.GROUP_ID_NOT_FOUND

"""Committed offsets and group administration in the pure core: commit validation, simple
commits, fetch layouts, retention, OffsetDelete, ListGroups, DescribeGroups, DeleteGroups."""

from __future__ import annotations

import pytest

from connect_rebalance.errors import ErrorCode
from connect_rebalance.protocol.api_keys import ApiKey
from coordinator.groups.classic import ClassicState
from coordinator.groups.records import GroupMetadataRecord
from coordinator.groups.settings import GroupSettings
from tests.support.group_harness import GroupHarness, consumer_subscription

pytestmark = pytest.mark.unit


def commit(
    h: GroupHarness,
    generation: int,
    member_id: str,
    partitions: dict[int, int],
    group_id: str = "g",
    topic: str = "orders",
    version: int = 8,
    metadata: str = "",
) -> dict[int, int]:
    partition_rows = [
        {
            "partition_index": p,
            "committed_offset": o,
            "committed_leader_epoch": 3,
            "committed_metadata": metadata,
        }
        for p, o in partitions.items()
    ]
    answer = h.call(
        ApiKey.OFFSET_COMMIT,
        version,
        group_id=group_id,
        generation_id_or_member_epoch=generation,
        member_id=member_id,
        group_instance_id=None,
        retention_time_ms=-1,
        topics=[{"name": topic, "partitions": partition_rows}],
    )
    return {p["partition_index"]: p["error_code"] for p in answer["topics"][0]["partitions"]}


def fetch(h: GroupHarness, group_id: str = "g", topics=None, version: int = 8) -> dict[tuple[str, int], int]:
    if version >= 8:
        answer = h.call(
            ApiKey.OFFSET_FETCH,
            version,
            groups=[{"group_id": group_id, "topics": topics}],
            require_stable=True,
        )
        rows = answer["groups"][0]["topics"]
    else:
        answer = h.call(ApiKey.OFFSET_FETCH, version, group_id=group_id, topics=topics)
        rows = answer["topics"]
    return {(t["name"], p["partition_index"]): p["committed_offset"] for t in rows for p in t["partitions"]}


def test_members_commit_and_fetch_offsets_in_both_layouts() -> None:
    h = GroupHarness()
    a, b = h.form_group(2)
    assert commit(h, 1, a, {0: 10, 1: 11}) == {0: 0, 1: 0}
    assert commit(h, 1, b, {2: 12}) == {2: 0}
    assert fetch(h) == {("orders", 0): 10, ("orders", 1): 11, ("orders", 2): 12}
    wanted = [{"name": "orders", "partition_indexes": [1, 5]}]
    assert fetch(h, topics=wanted, version=3) == {("orders", 1): 11, ("orders", 5): -1}
    assert fetch(h, group_id="nobody") == {}


def test_commits_are_validated_against_the_generation() -> None:
    h = GroupHarness()
    a, b = h.form_group(2)
    assert commit(h, 0, a, {0: 1}) == {0: ErrorCode.ILLEGAL_GENERATION}
    assert commit(h, 1, "ghost", {0: 1}) == {0: ErrorCode.UNKNOWN_MEMBER_ID}
    assert commit(h, 1, a, {0: 1}, topic="no-such-topic") == {0: ErrorCode.UNKNOWN_TOPIC_OR_PARTITION}
    assert commit(h, 1, a, {99: 1}) == {99: ErrorCode.UNKNOWN_TOPIC_OR_PARTITION}
    assert commit(h, 1, a, {0: 1}, metadata="x" * 5000) == {0: ErrorCode.OFFSET_METADATA_TOO_LARGE}
    h.join(a, client_id="c0")  # a rebalance starts: the old generation may still commit while preparing
    assert commit(h, 1, b, {3: 3}) == {3: 0}
    h.join(b, client_id="c1")  # now CompletingRebalance
    assert h.core.groups["g"].state == ClassicState.COMPLETING_REBALANCE
    assert commit(h, 2, a, {3: 4}) == {3: ErrorCode.REBALANCE_IN_PROGRESS}
    assert commit(h, -1, "", {3: 5}) == {3: ErrorCode.UNKNOWN_MEMBER_ID}, "no simple commits to a live group"
    assert commit(h, 5, "m", {0: 1}, group_id="missing") == {0: ErrorCode.ILLEGAL_GENERATION}
    assert commit(h, 5, "m", {0: 1}, group_id="missing", version=9) == {0: ErrorCode.GROUP_ID_NOT_FOUND}


def test_simple_commits_create_an_empty_group_that_lists_and_describes() -> None:
    h = GroupHarness()
    assert commit(h, -1, "", {0: 42}, group_id="standalone") == {0: 0}
    assert fetch(h, "standalone") == {("orders", 0): 42}
    listed = h.call(ApiKey.LIST_GROUPS, 5, states_filter=[], types_filter=[])["groups"]
    assert listed == [
        {"group_id": "standalone", "protocol_type": "", "group_state": "Empty", "group_type": "classic"}
    ]
    described = h.call(
        ApiKey.DESCRIBE_GROUPS, 5, groups=["standalone", "nobody"], include_authorized_operations=False
    )["groups"]
    assert described[0]["group_state"] == "Empty" and described[0]["error_code"] == 0
    assert described[1]["group_state"] == "Dead" and described[1]["error_code"] == 0
    v6 = h.call(ApiKey.DESCRIBE_GROUPS, 6, groups=["nobody"], include_authorized_operations=False)["groups"][
        0
    ]
    assert v6["error_code"] == ErrorCode.GROUP_ID_NOT_FOUND


def test_a_simple_commit_carrying_a_member_id_is_accepted_wherever_the_group_has_no_members() -> None:
    """librdkafka's `assign()`-ed consumer under group.protocol=consumer commits at generation -1
    with its own member id: Kafka accepts it for a missing group (which it creates), an Empty
    classic group and a consumer group with no members, and refuses it where members are."""
    h = GroupHarness(topics={"orders": 3})
    own = "assign-mode-member"
    assert commit(h, -1, own, {0: 5}, group_id="solo", version=9) == {0: 0}, "the group is created"
    assert h.core.groups["solo"].state == ClassicState.EMPTY
    assert commit(h, -1, own, {0: 7}, group_id="solo", version=9) == {0: 0}, "the Empty group takes it"
    assert fetch(h, "solo") == {("orders", 0): 7}

    [a] = h.form_group(1)
    assert commit(h, -1, own, {0: 1}) == {0: ErrorCode.UNKNOWN_MEMBER_ID}, "a classic group with members"
    assert commit(h, -1, a, {0: 1}) == {0: ErrorCode.ILLEGAL_GENERATION}, "a member, at no generation"

    joined = h.consumer_heartbeat("m", 0, topics=["orders"], owned={}, rebalance_timeout_ms=30000)
    assert joined["error_code"] == 0
    assert commit(h, -1, own, {0: 1}, group_id="cg", version=9) == {0: ErrorCode.UNKNOWN_MEMBER_ID}
    h.consumer_heartbeat("m", -1)  # leaves: the consumer group stays, with no members
    assert h.core.groups["cg"].type_name == "consumer" and not h.core.groups["cg"].members
    assert commit(h, -1, own, {0: 9}, group_id="cg", version=9) == {0: 0}
    assert commit(h, -1, own, {0: 11}, group_id="cg", version=9) == {0: 0}
    assert fetch(h, "cg") == {("orders", 0): 11}


def test_list_groups_filters_by_state_and_type_and_describe_shows_members() -> None:
    h = GroupHarness()
    a, b = h.form_group(2)
    commit(h, -1, "", {0: 1}, group_id="idle")
    stable = h.call(ApiKey.LIST_GROUPS, 4, states_filter=["stable"])["groups"]
    assert [g["group_id"] for g in stable] == ["g"]
    assert [
        g["group_id"]
        for g in h.call(ApiKey.LIST_GROUPS, 5, states_filter=[], types_filter=["consumer"])["groups"]
    ] == []
    assert len(h.call(ApiKey.LIST_GROUPS, 0)["groups"]) == 2
    [g] = h.call(ApiKey.DESCRIBE_GROUPS, 5, groups=["g"], include_authorized_operations=False)["groups"]
    assert g["group_state"] == "Stable" and g["protocol_type"] == "consumer" and g["protocol_data"] == "range"
    assert [(m["member_id"], m["member_assignment"]) for m in g["members"]] == [
        (a, f"assign-{a}".encode()), (b, f"assign-{b}".encode())]  # fmt: skip


def test_delete_groups_needs_an_empty_group_and_removes_its_offsets() -> None:
    h = GroupHarness()
    [a] = h.form_group(1)
    commit(h, 1, a, {0: 7})
    results = h.call(ApiKey.DELETE_GROUPS, 2, groups_names=["g", "nobody"])["results"]
    assert [r["error_code"] for r in results] == [ErrorCode.NON_EMPTY_GROUP, ErrorCode.GROUP_ID_NOT_FOUND]
    h.call(ApiKey.LEAVE_GROUP, 1, group_id="g", member_id=a)
    assert h.call(ApiKey.DELETE_GROUPS, 2, groups_names=["g"])["results"][0]["error_code"] == 0
    assert "g" not in h.core.groups and fetch(h) == {}
    assert h.records[-1] == GroupMetadataRecord("g", None)


def test_offset_delete_refuses_topics_a_live_consumer_group_subscribes_to() -> None:
    h = GroupHarness(topics={"orders": 3, "old": 1})
    subscription = consumer_subscription(["orders"])
    member = h.answer(h.join(client_id="c", protocols=[("range", subscription)]))["member_id"]
    h.join(member, client_id="c", protocols=[("range", subscription)])
    h.sync(member, 1, {member: b""})
    commit(h, 1, member, {0: 5})
    commit(h, 1, member, {0: 9}, topic="old")
    answer = h.call(ApiKey.OFFSET_DELETE, 0, group_id="g", topics=[
        {"name": "orders", "partitions": [{"partition_index": 0}]},
        {"name": "old", "partitions": [{"partition_index": 0}]}])  # fmt: skip
    errors = {t["name"]: t["partitions"][0]["error_code"] for t in answer["topics"]}
    assert errors == {"orders": ErrorCode.GROUP_SUBSCRIBED_TO_TOPIC, "old": 0}
    unknown = h.call(ApiKey.OFFSET_DELETE, 0, group_id="g", topics=[
        {"name": "nowhere", "partitions": [{"partition_index": 0}]},
        {"name": "old", "partitions": [{"partition_index": 1}]}])  # fmt: skip
    assert [p["error_code"] for t in unknown["topics"] for p in t["partitions"]] == [
        ErrorCode.UNKNOWN_TOPIC_OR_PARTITION, ErrorCode.UNKNOWN_TOPIC_OR_PARTITION
    ]  # fmt: skip
    assert fetch(h) == {("orders", 0): 5}
    missing = h.call(ApiKey.OFFSET_DELETE, 0, group_id="nobody", topics=[])
    assert missing["error_code"] == ErrorCode.GROUP_ID_NOT_FOUND


def test_a_deleted_topic_takes_every_groups_offsets_for_it_and_the_sweep_catches_any_missed() -> None:
    h = GroupHarness(
        GroupSettings(initial_rebalance_delay_ms=0, offsets_retention_check_interval_ms=600_000),
        topics={"orders": 3, "old": 1, "lost": 1},
    )
    h.core.load_complete(0)
    [a] = h.form_group(1)
    commit(h, 1, a, {0: 5}, topic="old")
    commit(h, 1, a, {0: 6})
    for topic in ("old", "orders", "lost"):
        commit(h, -1, "", {0: 7}, group_id="simple", topic=topic)
    h.delete_topic("old")
    assert fetch(h) == {("orders", 0): 6}
    assert fetch(h, "simple") == {("orders", 0): 7, ("lost", 0): 7}
    h.delete_topic("lost", tell_the_groups=False)  # the coordinator stopped before it heard
    assert fetch(h, "simple") == {("orders", 0): 7, ("lost", 0): 7}
    h.advance(600_000)  # the retention sweep finds offsets of a topic that no longer exists
    assert fetch(h, "simple") == {("orders", 0): 7}
    assert fetch(h) == {("orders", 0): 6}, "a live group keeps what it committed for live topics"


def test_offsets_expire_a_retention_period_after_the_group_empties_then_the_group_goes() -> None:
    day = 86_400_000
    h = GroupHarness(
        GroupSettings(
            initial_rebalance_delay_ms=0,
            offsets_retention_ms=7 * day,
            offsets_retention_check_interval_ms=600_000,
        )
    )
    h.core.load_complete(0)
    [a] = h.form_group(1, session_timeout_ms=1_800_000)
    commit(h, 1, a, {0: 100})
    for _ in range(8 * 24 * 3):  # a live group's offsets never expire
        h.advance(1_200_000)
        assert h.heartbeat(a, 1) == ErrorCode.NONE
    assert fetch(h) == {("orders", 0): 100}
    h.call(ApiKey.LEAVE_GROUP, 1, group_id="g", member_id=a)
    h.advance(7 * day - 700_000)
    assert fetch(h) == {("orders", 0): 100}
    h.advance(1_400_000)
    assert fetch(h) == {}
    assert "g" not in h.core.groups, "an empty group with no offsets is deleted"

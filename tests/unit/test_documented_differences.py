"""Where the coordinator deliberately answers otherwise than Apache Kafka 4.x, as
docs/decisions.md says (each test names its entry): if one of these fails, the behaviour or
the document is wrong. Entries 16 and 17 (classic protocol votes and group.max.size) are
checked beside the rules they refine, in test_classic_group_kafka_rules.py."""

from __future__ import annotations

import struct

import pytest

from connect_rebalance.errors import ErrorCode
from connect_rebalance.protocol.api_keys import ApiKey
from coordinator.group_record_codec import encode_record
from coordinator.groups.group_configs import SET, AlterGroupConfigs, GroupConfigChange
from coordinator.groups.records import GroupConfigRecord
from coordinator.groups.requests import GroupRequest
from coordinator.groups.settings import GroupSettings
from tests.support.group_harness import GroupHarness

pytestmark = pytest.mark.unit


def join(h: GroupHarness, member_id: str, instance_id: str | None = None, regex: str | None = None):  # type: ignore[no-untyped-def]
    return h.consumer_heartbeat(
        member_id, 0, topics=None if regex else ["orders"], regex=regex, owned={},
        rebalance_timeout_ms=30000, instance_id=instance_id,
    )  # fmt: skip


def test_12_an_active_static_member_rejoining_with_its_own_member_id_gets_its_assignment_back() -> None:
    h = GroupHarness(topics={"orders": 4})
    first = join(h, "S", instance_id="host-1")
    held = h.assigned(first)
    settled = h.consumer_heartbeat("S", first["member_epoch"], owned=held, instance_id="host-1")
    again = join(h, "S", instance_id="host-1")  # Kafka: UNRELEASED_INSTANCE_ID
    assert again["error_code"] == ErrorCode.NONE and h.assigned(again) == held
    assert again["member_epoch"] == settled["member_epoch"], "the same member, at its epoch"
    other = join(h, "T", instance_id="host-1")
    assert other["error_code"] == ErrorCode.UNRELEASED_INSTANCE_ID, "another member id is still refused"


def test_13_a_regex_subscription_is_resolved_in_the_joins_answer() -> None:
    h = GroupHarness(topics={"logs-a": 2, "other": 1})
    first = join(h, "A", regex="logs-.*")
    assert first["member_epoch"] == 1 and h.assigned(first) == {"logs-a": [0, 1]}


def test_14_patterns_are_python_regular_expressions_and_skip_internal_topics() -> None:
    topics = {"logs-a": 2, "logs-b": 1, "__consumer_offsets": 50}
    h = GroupHarness(topics=topics)
    every = join(h, "A", regex=".*")
    assert h.assigned(every) == {"logs-a": [0, 1], "logs-b": [0]}, "no topic whose name starts with __"
    h = GroupHarness(topics=topics)
    ahead = join(h, "A", regex="(?!logs-b)logs-.*")  # RE2/J refuses lookahead
    assert ahead["error_code"] == ErrorCode.NONE and h.assigned(ahead) == {"logs-a": [0, 1]}
    for pattern in (r"\p{L}+", r"\Qlogs\E.*"):  # RE2/J syntax that Python's re does not have
        assert join(h, "C", regex=pattern)["error_code"] == ErrorCode.INVALID_REGULAR_EXPRESSION


def test_15_a_restarted_static_classic_member_is_described_with_its_new_client_id() -> None:
    h = GroupHarness(GroupSettings(initial_rebalance_delay_ms=0))
    first = h.answer(h.join(client_id="old-process", instance_id="host-1"))
    h.sync(first["member_id"], 1, {first["member_id"]: b"all"}, instance_id="host-1")
    h.join(client_id="new-process", instance_id="host-1")
    [group] = h.call(ApiKey.DESCRIBE_GROUPS, 5, groups=["g"], include_authorized_operations=False)["groups"]
    assert [(m["client_id"], m["member_assignment"]) for m in group["members"]] == [("new-process", b"all")]


def test_20_a_groups_configuration_is_one_record_at_key_type_10005_apart_from_the_groups() -> None:
    h = GroupHarness(topics={"orders": 2})
    change = GroupConfigChange("cg", (("consumer.heartbeat.interval.ms", SET, "6000"),))
    outcome = h.core.handle(
        GroupRequest(0, ApiKey.INCREMENTAL_ALTER_CONFIGS, 1, AlterGroupConfigs((change,), False)), 0
    )
    assert outcome.records == [GroupConfigRecord("cg", (("consumer.heartbeat.interval.ms", "6000"),))]
    key, _ = encode_record(outcome.records[0])
    assert struct.unpack_from(">h", key) == (10005,), "the connect group draft's record, for every group type"
    member = join(h, "A")
    h.consumer_heartbeat("A", -1)
    assert member["heartbeat_interval_ms"] == 6000
    before = len(h.records)
    assert h.call(ApiKey.DELETE_GROUPS, 2, groups_names=["cg"])["results"][0]["error_code"] == 0
    assert not any(isinstance(r, GroupConfigRecord) for r in h.records[before:]), (
        "deleting the group keeps it"
    )

"""Dynamic group configuration in the pure core: validation against the coordinator's bounds,
a store apart from the groups (set before a group exists, kept when it is deleted), replay
through the record bytes, and the effect on consumer and connect groups' heartbeats and
sessions (a connect worker is also told the group's session timeout)."""

from __future__ import annotations

from typing import Any

import pytest

from connect_rebalance.errors import ErrorCode, KafkaApiError
from connect_rebalance.protocol.api_keys import ApiKey
from coordinator.group_record_codec import decode_record, encode_record
from coordinator.groups.coordinator import GroupCoordinator
from coordinator.groups.group_configs import (
    APPEND,
    DEFAULT_CONFIG,
    DELETE,
    DYNAMIC_GROUP_CONFIG,
    SET,
    AlterGroupConfigs,
    DescribeGroupConfigs,
    GroupConfigChange,
    altered,
)
from coordinator.groups.records import GroupConfigRecord
from coordinator.groups.requests import GroupRequest
from coordinator.groups.settings import GroupSettings
from tests.support import connect_case_studies as case_studies
from tests.support.connect_driver import ConnectDriver
from tests.support.group_harness import GroupHarness

pytestmark = pytest.mark.unit

SESSION, HEARTBEAT = "consumer.session.timeout.ms", "consumer.heartbeat.interval.ms"
CONNECT_SESSION, CONNECT_HEARTBEAT = "connect.session.timeout.ms", "connect.heartbeat.interval.ms"
ASSIGNMENT_INTERVAL = "consumer.assignment.interval.ms"


def alter(  # type: ignore[no-untyped-def]
    h: GroupHarness,
    group: str,
    *changes: tuple[str, int, str | None],
    validate_only: bool = False,
    replace: bool = False,
):
    """IncrementalAlterConfigs (or AlterConfigs: `replace`) on one GROUP resource, as the IO
    edge hands it to the core; its answer is encoded as the wire's (the harness checks) and
    written unless writes fail."""
    body = AlterGroupConfigs((GroupConfigChange(group, tuple(changes), replace),), validate_only)
    request_id = 1000 + len(h.answers)
    h._api_of[request_id] = (ApiKey.INCREMENTAL_ALTER_CONFIGS, 1)
    h._absorb(
        h.core.handle(GroupRequest(request_id, ApiKey.INCREMENTAL_ALTER_CONFIGS, 1, body), h.now), request_id
    )
    return h.answers[request_id]["responses"][0]


def described(core: GroupCoordinator, group: str) -> dict[str, tuple[int, int]]:
    body = DescribeGroupConfigs((group,))
    outcome = core.handle(GroupRequest(0, ApiKey.DESCRIBE_CONFIGS, 4, body), 0)
    return outcome.replies[0]["results"][0]["configs"]  # type: ignore[no-any-return]


def join(h: GroupHarness, member: str) -> dict[str, Any]:
    return h.consumer_heartbeat(member, 0, topics=["orders"], owned={}, rebalance_timeout_ms=30000)


def refusal(explicit: dict[str, str], *changes: tuple[str, int, str | None]) -> str:
    """The INVALID_CONFIG message the changes are refused with."""
    return refused_with(explicit, list(changes), GroupSettings())


def refused_with(explicit: dict[str, str], changes: list[Any], settings: GroupSettings) -> str:
    try:
        accepted = altered(explicit, changes, settings)
    except KafkaApiError as exc:
        assert exc.code == ErrorCode.INVALID_CONFIG
        return exc.message
    raise AssertionError(f"accepted, not refused: {sorted(accepted.values())}")


def test_values_are_checked_against_the_coordinators_bounds_and_each_other() -> None:
    settings = GroupSettings()  # session [45000, 60000], heartbeat [5000, 15000], Kafka's defaults
    assert altered({}, [(HEARTBEAT, SET, "7000")], settings) == {HEARTBEAT: "7000"}
    assert altered({HEARTBEAT: "7000"}, [(HEARTBEAT, SET, "15000")], settings) == {HEARTBEAT: "15000"}
    assert refusal({}, (HEARTBEAT, SET, "4999")) == (
        "consumer.heartbeat.interval.ms is 4999, outside [group.consumer.min.heartbeat.interval.ms, "
        "group.consumer.max.heartbeat.interval.ms] = [5000, 15000]"
    )
    assert "group.consumer.max.session.timeout.ms" in refusal({}, (SESSION, SET, "60001"))
    assert "Unknown group config name: consumer.nope" in refusal({}, ("consumer.nope", SET, "1"))
    assert "must be an integer" in refusal({}, (HEARTBEAT, SET, "soon"))
    assert "APPEND and SUBTRACT" in refusal({}, (HEARTBEAT, APPEND, "6000"))
    assert "named more than once" in refusal({}, (HEARTBEAT, SET, "6000"), (HEARTBEAT, DELETE, None))
    # Session above heartbeat, on the effective values (the override or the default).
    lower = GroupSettings(consumer_min_session_timeout_ms=6000)
    assert refused_with({HEARTBEAT: "15000"}, [(SESSION, SET, "15000")], lower) == (
        "consumer.session.timeout.ms (15000) must be greater than consumer.heartbeat.interval.ms (15000)"
    )
    assert altered({HEARTBEAT: "15000"}, [(SESSION, SET, "15001")], lower)[SESSION] == "15001"
    assert altered({HEARTBEAT: "7000"}, [(HEARTBEAT, DELETE, None)], settings) == {}


def test_a_group_config_is_set_before_its_group_exists_and_kept_when_the_group_is_deleted() -> None:
    h = GroupHarness(topics={"orders": 2})
    assert described(h.core, "cg")[HEARTBEAT] == (5000, DEFAULT_CONFIG)
    assert alter(h, "cg", (HEARTBEAT, SET, "7000"))["error_code"] == 0
    assert "cg" not in h.core.groups, "setting a group's config does not create the group"
    assert described(h.core, "cg")[HEARTBEAT] == (7000, DYNAMIC_GROUP_CONFIG)
    a = join(h, "A")
    assert a["heartbeat_interval_ms"] == 7000, "the group, once created, follows its config"
    h.consumer_heartbeat("A", -1)
    assert h.call(ApiKey.DELETE_GROUPS, 2, groups_names=["cg"])["results"][0]["error_code"] == 0
    assert "cg" not in h.core.groups
    assert described(h.core, "cg")[HEARTBEAT] == (7000, DYNAMIC_GROUP_CONFIG), "kept after deletion"
    assert join(h, "B")["heartbeat_interval_ms"] == 7000, "and applied to the group created again"


def test_a_refused_or_validate_only_change_writes_nothing() -> None:
    h = GroupHarness(topics={"orders": 2})
    refused = alter(h, "cg", (HEARTBEAT, SET, "16000"))
    assert refused["error_code"] == ErrorCode.INVALID_CONFIG and "16000" in refused["error_message"]
    assert alter(h, "cg", (HEARTBEAT, SET, "8000"), validate_only=True)["error_code"] == 0
    assert h.records == [] and described(h.core, "cg")[HEARTBEAT] == (5000, DEFAULT_CONFIG)


def test_replaying_the_records_rebuilds_every_groups_configuration() -> None:
    h = GroupHarness(topics={"orders": 2})
    alter(h, "cg", (HEARTBEAT, SET, "7000"), (SESSION, SET, "50000"))
    alter(h, "other", (SESSION, SET, "55000"))
    alter(h, "other", (SESSION, DELETE, None))  # nothing left: a tombstone
    alter(h, "cg", (SESSION, DELETE, None))
    left = [GroupConfigRecord("other", None), GroupConfigRecord("cg", ((HEARTBEAT, "7000"),))]
    assert h.records[-2:] == left
    replayed = GroupCoordinator(GroupSettings(), h.topics.get, topics_view=h.metadata)
    for record in h.records:
        replayed.replay(decode_record(*encode_record(record)))  # through the bytes, as at start-up
    assert replayed.ctx.group_configs == h.core.ctx.group_configs == {"cg": {HEARTBEAT: "7000"}}


def test_the_next_heartbeat_carries_the_new_interval_and_the_session_follows_without_an_epoch_bump() -> None:
    h = GroupHarness(topics={"orders": 2})
    a = join(h, "A")
    assert a["heartbeat_interval_ms"] == 5000
    epoch = h.core.groups["cg"].group_epoch
    alter(h, "cg", (HEARTBEAT, SET, "9000"), (SESSION, SET, "60000"))
    assert h.records[-1] == GroupConfigRecord("cg", ((HEARTBEAT, "9000"), (SESSION, "60000")))
    answer = h.consumer_heartbeat("A", a["member_epoch"])
    assert (answer["heartbeat_interval_ms"], answer["member_epoch"]) == (9000, a["member_epoch"])
    assert h.core.groups["cg"].group_epoch == epoch, "a config change is not a rebalance"
    h.advance(55000)  # past the default 45 s session, within the group's 60 s
    assert "A" in h.core.groups["cg"].members, "the session lasts the group's 60 s"
    h.advance(6000)
    assert "A" not in h.core.groups["cg"].members


def test_the_groups_interval_is_the_ceiling_of_the_adaptive_interval() -> None:
    # A budget of one heartbeat a second: each member spreads the interval by a second.
    settings = GroupSettings(
        initial_rebalance_delay_ms=0, adaptive_heartbeat=True, adaptive_heartbeat_budget=1,
        consumer_min_heartbeat_interval_ms=1000,
    )  # fmt: skip
    h = GroupHarness(settings, topics={"orders": 2})
    join(h, "A")
    join(h, "B")
    join(h, "C")
    h.consumer_heartbeat("A", 3, owned={"orders": [0]})
    assert h.consumer_heartbeat("C", 3)["heartbeat_interval_ms"] == 3000, "adaptive: 3 members, 3 s"
    alter(h, "cg", (HEARTBEAT, SET, "2000"))
    assert h.consumer_heartbeat("C", 3)["heartbeat_interval_ms"] == 2000, "the group's interval caps it"
    alter(h, "cg", (HEARTBEAT, SET, "9000"))
    assert h.consumer_heartbeat("C", 3)["heartbeat_interval_ms"] == 3000, "below the ceiling it adapts"


def test_a_change_that_cannot_be_written_is_taken_back() -> None:
    h = GroupHarness(topics={"orders": 2})
    alter(h, "cg", (HEARTBEAT, SET, "7000"))
    h.failing_writes = "disk full"
    failed = alter(h, "cg", (HEARTBEAT, SET, "8000"))
    assert (failed["error_code"], failed["error_message"]) == (
        ErrorCode.COORDINATOR_NOT_AVAILABLE,
        "disk full",
    )
    assert described(h.core, "cg")[HEARTBEAT] == (7000, DYNAMIC_GROUP_CONFIG), "memory is what the log holds"


def test_connect_values_are_checked_against_the_connect_bounds_and_each_other() -> None:
    settings = GroupSettings()  # connect: session [6000, 1800000], heartbeat [1000, 15000]
    assert altered({}, [(CONNECT_SESSION, SET, "60000")], settings) == {CONNECT_SESSION: "60000"}
    assert altered({}, [(CONNECT_HEARTBEAT, SET, "1000")], settings) == {CONNECT_HEARTBEAT: "1000"}
    assert refusal({}, (CONNECT_SESSION, SET, "5999")) == (
        "connect.session.timeout.ms is 5999, outside [group.connect.min.session.timeout.ms, "
        "group.connect.max.session.timeout.ms] = [6000, 1800000]"
    )
    assert "group.connect.max.heartbeat.interval.ms] = [1000, 15000]" in refusal(
        {}, (CONNECT_HEARTBEAT, SET, "15001")
    )
    # Session above heartbeat within the connect pair, on the effective values.
    assert refusal({CONNECT_SESSION: "8000"}, (CONNECT_HEARTBEAT, SET, "8000")) == (
        "connect.session.timeout.ms (8000) must be greater than connect.heartbeat.interval.ms (8000)"
    )
    # The consumer and connect settings of one group are independent of each other.
    mixed = altered({HEARTBEAT: "15000"}, [(CONNECT_SESSION, SET, "6000")], settings)
    assert mixed == {HEARTBEAT: "15000", CONNECT_SESSION: "6000"}


def test_a_connect_workers_next_heartbeat_carries_the_groups_interval_and_session_which_it_follows() -> None:
    h = GroupHarness(GroupSettings(connect_session_timeout_ms=10000))
    d = ConnectDriver(lambda api_key, fields: h.call(api_key, 0, **fields))
    case_studies.empty_group_then_w1_joins(d)
    first = d.beat("W1")
    assert (first["heartbeat_interval_ms"], first["session_timeout_ms"]) == (3000, 10000), "the defaults"
    epoch = d.state()["group_epoch"]
    changed = alter(h, "connect-cluster", (CONNECT_SESSION, SET, "30000"), (CONNECT_HEARTBEAT, SET, "5000"))
    assert changed["error_code"] == 0
    answer = d.beat("W1")
    assert (answer["heartbeat_interval_ms"], answer["session_timeout_ms"]) == (5000, 30000)
    assert (answer["member_epoch"], d.state()["group_epoch"]) == (first["member_epoch"], epoch), (
        "a config change is not a rebalance"
    )
    h.advance(25000)  # past the default 10 s session, within the group's 30 s
    assert "W1" in d.state()["members"], "the session lasts the group's 30 s"
    h.advance(6000)
    assert "W1" not in d.state()["members"]


def test_legacy_alter_configs_replaces_the_whole_configuration() -> None:
    """AlterConfigs, as Kafka 4.x's controller applies it: the configs not sent go back to
    their defaults; a refused replacement changes nothing."""
    h = GroupHarness(topics={"orders": 2})
    alter(h, "cg", (HEARTBEAT, SET, "7000"), (CONNECT_SESSION, SET, "60000"))
    assert alter(h, "cg", (CONNECT_SESSION, SET, "30000"), replace=True)["error_code"] == 0
    assert h.records[-1] == GroupConfigRecord("cg", ((CONNECT_SESSION, "30000"),))
    # Without the group's 30 s session (not sent), a 12 s heartbeat is above the default 10 s one.
    refused = alter(h, "cg", (CONNECT_HEARTBEAT, SET, "12000"), replace=True)
    assert (refused["error_code"], refused["error_message"]) == (
        ErrorCode.INVALID_CONFIG,
        "connect.session.timeout.ms (10000) must be greater than connect.heartbeat.interval.ms (12000)",
    )
    assert described(h.core, "cg")[CONNECT_SESSION] == (30000, DYNAMIC_GROUP_CONFIG)
    assert alter(h, "cg", replace=True)["error_code"] == 0
    assert h.records[-1] == GroupConfigRecord("cg", None), "nothing sent: every config back to its default"


def test_a_groups_assignment_interval_decides_when_its_target_is_computed() -> None:
    """`consumer.assignment.interval.ms`: epoch bumps within the group's own interval share one
    server-side computation, started when that interval, not the coordinator's, is over."""
    settings = GroupSettings(consumer_assignor_offload=True, consumer_assignment_interval_ms=100)
    h = GroupHarness(settings, topics={"orders": 12})
    assert refusal({}, (ASSIGNMENT_INTERVAL, SET, "10001")) == (
        f"{ASSIGNMENT_INTERVAL} is 10001, outside [group.consumer.min.assignment.interval.ms, "
        "group.consumer.max.assignment.interval.ms] = [0, 10000]"
    )
    alter(h, "cg", (ASSIGNMENT_INTERVAL, SET, "2000"))
    assert described(h.core, "cg")[ASSIGNMENT_INTERVAL] == (2000, DYNAMIC_GROUP_CONFIG)
    for member in "ABC":
        join(h, member)
        h.advance(500)
    assert h.effects == [], "1.5 s after the first bump: within the group's 2 s, nothing computed"
    h.advance(500)
    assert [effect.epoch for effect in h.effects] == [3], "one computation for the three joins"

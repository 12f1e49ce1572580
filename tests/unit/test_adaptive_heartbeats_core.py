"""Adaptive heartbeat intervals, on the pure core: the coordinator gives each settled member the
shortest interval at which all its members together stay within the heartbeat budget, between
the floor and the group type's interval; a member with reconciliation work pending is asked
back sooner still. Clients use the interval they are given, so this needs no client change."""

from __future__ import annotations

import pytest

from coordinator.groups.settings import GroupSettings
from tests.support.connect_driver import ConnectDriver
from tests.support.group_harness import GroupHarness

pytestmark = pytest.mark.unit


def harness(budget: int) -> GroupHarness:
    settings = GroupSettings(
        adaptive_heartbeat=True, adaptive_min_heartbeat_interval_ms=250, adaptive_heartbeat_budget=budget
    )
    return GroupHarness(settings, topics={"orders": 12})


def settle(h: GroupHarness, members: int, group_id: str = "cg") -> int:
    """`members` consumers join and reconcile; returns the settled interval the last is given."""
    epochs, owned = {}, {}
    for i in range(members):
        answer = h.consumer_heartbeat(f"m{i}", 0, topics=["orders"], owned={}, rebalance_timeout_ms=30000,
                                      group_id=group_id)  # fmt: skip
        epochs[f"m{i}"], owned[f"m{i}"] = answer["member_epoch"], h.assigned(answer).get("orders", [])
    for _ in range(4):  # revoke, then pick up what others released
        for m in epochs:
            answer = h.consumer_heartbeat(m, epochs[m], owned={"orders": owned[m]}, group_id=group_id)
            epochs[m] = answer["member_epoch"]
            owned[m] = (
                h.assigned_or_none(answer).get("orders", owned[m]) if answer["assignment"] else owned[m]
            )
    assert h.core.groups[group_id].state.value == "Stable"
    last = h.consumer_heartbeat("m0", epochs["m0"], owned={"orders": owned["m0"]}, group_id=group_id)
    return int(last["heartbeat_interval_ms"])


def test_a_lightly_loaded_coordinator_asks_for_heartbeats_at_the_floor() -> None:
    assert settle(harness(budget=2000), 3) == 250


def test_the_interval_grows_with_the_members_to_stay_within_the_budget() -> None:
    h = harness(budget=10)
    assert settle(h, 6) == 600, "6 members at 10 heartbeats/s: every 600 ms"


def test_the_interval_never_exceeds_the_group_types_setting() -> None:
    h = harness(budget=1)
    assert settle(h, 8) == 5000, "8 s would be within budget, but 5 s is the consumer groups' interval"


def test_every_member_of_the_coordinator_counts_and_connect_workers_too() -> None:
    h = harness(budget=10)
    d = ConnectDriver(lambda key, fields: h.call(key, 0, **fields), group_id="workers")
    for worker in ("W1", "W2", "W3", "W4"):
        d.join(worker)
    assert settle(h, 2) == 600, "2 consumers and 4 workers"
    worker = d.beat("W1")
    assert worker["heartbeat_interval_ms"] in (500, 600), "a worker is given the same spread (or less)"


def test_a_member_with_work_pending_is_asked_back_sooner() -> None:
    h = harness(budget=1)
    settle(h, 2)
    joined = h.consumer_heartbeat("late", 0, topics=["orders"], owned={}, rebalance_timeout_ms=30000)
    assert joined["heartbeat_interval_ms"] == 500, "waiting for partitions others still hold"

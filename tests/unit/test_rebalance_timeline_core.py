"""The rebalance timeline the core keeps per group, on a virtual clock: each rebalance's
triggers, what each member gave up and was given, when each reached the new epoch, and the
time to balance, bounded to the last N rebalances; the histogram and paused counts agree."""

from __future__ import annotations

from typing import Any

import pytest

from connect_rebalance.consumer_protocol import encode_assignment
from coordinator.group_record_codec import decode_record, encode_record
from coordinator.groups.coordinator import GroupCoordinator
from coordinator.groups.settings import GroupSettings
from tests.support.connect_driver import ConnectDriver
from tests.support.group_harness import GroupHarness, consumer_subscription

pytestmark = pytest.mark.unit


def join(h: GroupHarness, member: str, topics: list[str] | None = None) -> dict[str, Any]:
    return h.consumer_heartbeat(member, 0, topics=topics or ["orders"], owned={}, rebalance_timeout_ms=30000)


def entries(h: GroupHarness, group_id: str = "cg") -> list[dict[str, Any]]:
    return [e.as_json() for e in h.core.metrics.timelines.of(group_id)]


def moves(entry: dict[str, Any]) -> dict[str, tuple[tuple[str, ...], tuple[str, ...], int | None]]:
    return {
        m["member"]: (tuple(m["revoked"]), tuple(m["assigned"]), m["reached_ms"]) for m in entry["members"]
    }


def causes(entry: dict[str, Any]) -> list[tuple[str, str]]:
    return [(t["cause"], t["member"]) for t in entry["triggers"]]


def a_and_b() -> tuple[GroupHarness, list[int]]:
    """Given a consumer group where A holds 12 partitions, when B joins at t=1000 and A gives
    up six at t=2000 and B takes them at t=2500, the group is balanced; returns A's half."""
    h = GroupHarness(topics={"orders": 12})
    join(h, "A")
    h.advance(1000)
    join(h, "B")
    h.advance(700)
    kept = h.assigned(h.consumer_heartbeat("A", 1, owned={"orders": list(range(12))}))["orders"]
    h.advance(300)
    h.consumer_heartbeat("A", 1, owned={"orders": kept})
    h.advance(500)
    h.consumer_heartbeat("B", 2)
    assert h.core.groups["cg"].state.value == "Stable"
    return h, kept


def test_a_join_is_an_entry_with_its_trigger_moves_reach_times_and_time_to_balance() -> None:
    h, kept = a_and_b()
    first, second = entries(h)
    assert causes(first) == [("join", "A")]
    assert (first["from_epoch"], first["to_epoch"], first["time_to_balance_ms"]) == (0, 1, 0)
    assert moves(first) == {"A": ((), tuple(sorted(f"orders-{p}" for p in range(12))), 0)}

    assert causes(second) == [("join", "B")]
    assert (second["from_epoch"], second["to_epoch"], second["started_ms"]) == (1, 2, 1000)
    assert second["time_to_balance_ms"] == 1500, "from B's join until B holds its half"
    moved = tuple(sorted(f"orders-{p}" for p in range(12) if p not in kept))
    assert moves(second) == {
        "A": (moved, (), 1000),  # acknowledged its revocation at t=2000: Stable at epoch 2
        "B": ((), moved, 1500),
    }
    assert second["paused"] == 6


def test_a_leave_a_session_expiry_and_a_subscription_change_each_name_their_trigger() -> None:
    h, kept = a_and_b()
    b_half = tuple(sorted(f"orders-{p}" for p in range(12) if p not in kept))
    h.consumer_heartbeat("B", -1)  # leaves: its half goes back to A
    h.advance(200)
    h.consumer_heartbeat("A", 2, owned={"orders": kept})
    leave = entries(h)[-1]
    assert causes(leave) == [("leave", "B")]
    assert (leave["time_to_balance_ms"], leave["paused"]) == (200, 6)
    assert moves(leave) == {"B": (b_half, (), None), "A": ((), b_half, 200)}

    join(h, "C")
    answer = h.consumer_heartbeat("A", 3, owned={"orders": list(range(12))})
    a_keeps = h.assigned(answer)["orders"]
    h.consumer_heartbeat("A", 3, owned={"orders": a_keeps})
    h.consumer_heartbeat("C", 4)
    assert h.core.groups["cg"].state.value == "Stable"
    h.advance(45000 - 1)  # C falls silent; A heartbeats on
    h.consumer_heartbeat("A", 4, owned={"orders": a_keeps})
    h.advance(1)  # C's session ends now
    assert "C" not in h.core.groups["cg"].members
    h.advance(300)
    h.consumer_heartbeat("A", 4, owned={"orders": a_keeps})
    expiry = entries(h)[-1]
    assert causes(expiry) == [("session expiry", "C")]
    assert expiry["time_to_balance_ms"] == 300
    assert moves(expiry)["C"][0] == tuple(sorted(f"orders-{p}" for p in range(12) if p not in a_keeps))

    h.advance(1000)
    h.consumer_heartbeat("A", 5, topics=["orders", "payments"])
    assert causes(entries(h)[-1]) == [("subscription change", "A")]


def test_the_timeline_keeps_the_last_n_rebalances_and_the_histogram_counts_each() -> None:
    h = GroupHarness(GroupSettings(rebalance_timeline_size=3), topics={"orders": 12})
    join(h, "A")
    for i in range(5):
        h.advance(100)
        h.consumer_heartbeat("A", i + 1, topics=["orders"] if i % 2 else ["orders", "payments"])
    kept = h.core.metrics.timelines.of("cg")
    assert [e.to_epoch for e in kept] == [4, 5, 6], "the oldest rebalances are dropped"
    histogram = h.core.metrics.balanced_by_type["consumer"]
    assert sum(histogram.counts) == 6, "every rebalance is counted, kept on the timeline or not"
    assert h.core.metrics.groups["cg"].reconciles == 6


def test_epoch_bumps_during_a_rebalance_join_it_as_further_triggers() -> None:
    h = GroupHarness(topics={"orders": 12})
    join(h, "A")
    h.advance(100)
    join(h, "B")
    h.advance(100)
    join(h, "C")  # before anyone reconciled to epoch 2
    entry = h.core.metrics.groups["cg"].rebalance
    assert entry is not None
    assert [(c.cause, c.member, c.epoch, c.at_ms) for c in entry.triggers] == [
        ("join", "B", 2, 0),
        ("join", "C", 3, 100),
    ]


def test_a_connect_join_that_moves_one_task_names_it_revoked_and_assigned() -> None:
    h = GroupHarness(GroupSettings(connect_session_timeout_ms=10000))
    d = ConnectDriver(lambda api_key, fields: h.call(api_key, 0, **fields))
    d.join("W1")
    d.compute("W1", {"W1": "AC0 AT0 AT1"})
    d.beat("W1")
    h.advance(1000)
    d.join("W2")
    h.advance(100)
    assert d.beat("W1")["should_compute_assignment"]
    d.compute("W1", {"W1": "AC0 AT0", "W2": "AT1"})
    h.advance(100)
    d.beat("W1")  # told to give AT1 up
    h.advance(100)
    d.beat("W1")  # stopped it
    h.advance(200)
    d.beat("W2")  # runs it
    entry = entries(h, "connect-cluster")[-1]
    assert causes(entry) == [("join", "W2")]
    assert moves(entry) == {"W1": (("A-1",), (), 300), "W2": ((), ("A-1",), 500)}
    assert (entry["time_to_balance_ms"], entry["paused"]) == (500, 1)


def test_a_classic_group_entry_names_the_join_and_the_partition_that_moved() -> None:
    h = GroupHarness(topics={"orders": 2})
    protocols = [("range", consumer_subscription(["orders"]))]

    def joined(member_id: str) -> dict[str, Any]:
        answer = h.answer(h.join(member_id, protocols=protocols))
        assert answer is not None
        return answer

    a = joined("")["member_id"]
    first = joined(a)
    h.sync(a, first["generation_id"], {a: encode_assignment([("orders", 0), ("orders", 1)])})
    h.advance(1000)
    b = joined("")["member_id"]
    waiting_b = h.join(b, protocols=protocols)  # parked until A rejoins
    h.advance(400)
    second = joined(a)
    assert h.answer(waiting_b) is not None
    h.advance(100)
    h.sync(b, second["generation_id"])
    h.sync(
        a,
        second["generation_id"],
        {a: encode_assignment([("orders", 0)]), b: encode_assignment([("orders", 1)])},
    )
    entry = entries(h, "g")[-1]
    assert causes(entry) == [("join", b)]
    assert moves(entry) == {a: (("orders-1",), (), 100), b: ((), ("orders-1",), 100)}
    assert entry["time_to_balance_ms"] == 100, "from the new generation until the leader's SyncGroup"


def test_a_write_that_fails_takes_its_rebalance_back_off_the_timeline() -> None:
    h = GroupHarness(topics={"orders": 12})
    join(h, "A")
    h.failing_writes = "disk full"
    join(h, "B")
    h.failing_writes = None
    assert h.core.metrics.groups["cg"].rebalance is None, "B never joined"
    h.consumer_heartbeat("A", 1)
    assert [causes(e) for e in entries(h)] == [[("join", "A")]]


def test_after_a_restart_the_group_is_known_at_its_epoch_with_an_empty_timeline() -> None:
    h, kept = a_and_b()
    restarted = GroupCoordinator(h.core.settings, h.topics.get, topics_view=h.metadata)
    for record in h.records:
        restarted.replay(decode_record(*encode_record(record)))  # through the bytes, as at start-up
    restarted.load_complete(h.now)
    view = restarted.metrics.timeline("cg")
    assert view is not None
    assert (view["epoch"], view["state"], view["rebalances"], view["under_way"]) == (2, "Stable", [], None), (
        "the records hold epochs and assignments, not when or why they changed"
    )
    h.core = restarted
    h.advance(100)
    h.consumer_heartbeat("B", -1)
    h.advance(100)
    h.consumer_heartbeat("A", 2, owned={"orders": kept})
    [left] = entries(h)
    assert causes(left) == [("leave", "B")] and left["time_to_balance_ms"] == 100
    assert moves(left)["A"][1] == tuple(sorted(f"orders-{p}" for p in range(12) if p not in kept))

"""Moved partitions as an operator counts them: a static member (`group.instance.id`) whose
process restarts under a new member id keeps its partitions, so they have not moved."""

from __future__ import annotations

import pytest

from tests.support.group_harness import GroupHarness

pytestmark = pytest.mark.unit


def join(h: GroupHarness, member: str, instance: str) -> None:
    h.consumer_heartbeat(
        member, 0, topics=["orders"], owned={}, rebalance_timeout_ms=30000, instance_id=instance
    )


def settle(h: GroupHarness, instances: dict[str, str]) -> None:
    """Every member heartbeats what it owns until the group is Stable (bounded rounds)."""
    group = h.core.groups["cg"]
    for _ in range(5):
        for member_id, instance in instances.items():
            assignment = group.members[member_id].assignment
            owned = {"orders": sorted(p for _, p in assignment.assigned)}
            h.consumer_heartbeat(member_id, assignment.member_epoch, owned=owned, instance_id=instance)
        if group.state.value == "Stable":
            return
    raise AssertionError(f"the group did not settle: {group.state}")


def test_a_static_member_restarting_under_a_new_member_id_moves_nothing() -> None:
    h = GroupHarness(topics={"orders": 12})
    join(h, "A", "a")
    join(h, "B", "b")
    settle(h, {"A": "a", "B": "b"})
    figures = h.core.metrics.groups["cg"]
    assert figures.moved == 6, "B took half of what A had"
    kept = sorted(p for _, p in h.core.groups["cg"].members["A"].assignment.assigned)

    # A's process restarts: a temporary leave, then a new process with the same instance id.
    h.consumer_heartbeat("A", -2, instance_id="a")
    h.advance(1000)
    answer = h.consumer_heartbeat(
        "A-restarted", 0, topics=["orders"], owned={}, rebalance_timeout_ms=30000, instance_id="a"
    )
    h.consumer_heartbeat("A-restarted", answer["member_epoch"], owned={"orders": kept}, instance_id="a")
    assert sorted(p for _, p in h.core.groups["cg"].members["A-restarted"].assignment.assigned) == kept
    assert (figures.moved, figures.rebalances) == (6, 2), "the same partitions, no new epoch"

    # C joins: only the 4 partitions C takes move, not the ones the restarted instance kept.
    join(h, "C", "c")
    settle(h, {"A-restarted": "a", "B": "b", "C": "c"})
    assert (figures.moved, figures.rebalances) == (10, 3)

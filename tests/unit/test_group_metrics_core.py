"""Rebalance figures the core counts per group, on a virtual clock: rebalances, the time
until every member has reconciled, partitions moved, members."""

from __future__ import annotations

import pytest

from coordinator.groups.settings import GroupSettings
from tests.support.group_harness import GroupHarness

pytestmark = pytest.mark.unit


def join(h: GroupHarness, member: str) -> dict:  # type: ignore[type-arg]
    return h.consumer_heartbeat(member, 0, topics=["orders"], owned={}, rebalance_timeout_ms=30000)


def test_a_join_counts_one_rebalance_its_reconcile_time_and_the_partitions_that_moved() -> None:
    h = GroupHarness(topics={"orders": 12})
    join(h, "A")
    figures = h.core.metrics.groups["cg"]
    assert (figures.group_type, figures.rebalances, figures.members, figures.reconciles) == (
        "consumer",
        1,
        1,
        1,
    )
    assert figures.moved == 0, "the first assignment moves nothing"

    h.advance(1000)
    join(h, "B")  # epoch 2: A must give up 6 partitions
    assert (figures.rebalances, figures.members, figures.started_ms) == (2, 2, 1000)
    h.advance(700)
    told = h.consumer_heartbeat("A", 1, owned={"orders": list(range(12))})
    kept = h.assigned(told)["orders"]
    h.advance(300)
    h.consumer_heartbeat("A", 1, owned={"orders": kept})
    assert figures.started_ms == 1000, "B does not hold its partitions yet"
    h.advance(500)
    h.consumer_heartbeat("B", 2)
    assert h.core.groups["cg"].state.value == "Stable"
    assert (figures.reconciles, figures.last_reconcile_ms, figures.moved) == (2, 1500, 6)
    assert figures.reconcile_ms_total == 1500

    h.consumer_heartbeat("B", -1)  # leaves: its 6 partitions go back to A
    assert (figures.rebalances, figures.members) == (3, 1)
    h.advance(200)
    h.consumer_heartbeat("A", 2, owned={"orders": kept})
    assert (figures.reconciles, figures.last_reconcile_ms, figures.moved) == (3, 200, 12)


def test_a_classic_group_counts_generations_and_a_deleted_group_is_forgotten() -> None:
    h = GroupHarness()
    members = h.form_group(2)
    figures = h.core.metrics.groups["g"]
    assert (figures.group_type, figures.rebalances, figures.members, figures.reconciles) == (
        "classic",
        1,
        2,
        1,
    )
    for member in members:
        h.call(13, 3, group_id="g", members=[{"member_id": member, "group_instance_id": None}])
    h.call(42, 2, groups_names=["g"])
    assert "g" not in h.core.metrics.groups


def test_target_computations_count_every_offloaded_result_a_stale_one_included() -> None:
    h = GroupHarness(GroupSettings(consumer_assignor_offload=True, consumer_assignment_interval_ms=100),
                     topics={"orders": 12})  # fmt: skip
    join(h, "A")
    h.advance(100)
    [stale] = h.effects
    h.effects.clear()
    join(h, "B")  # epoch 2 while epoch 1's target is computed
    h._absorb(h.core.target_computed(stale, stale.run(), h.now))
    figures = h.core.metrics.groups["cg"]
    assert figures.computations == 1, "the discarded result was a computation too"
    for member in "CDE":
        join(h, member)  # a burst inside the interval
    h.advance(100)
    h.run_effects()
    assert h.core.groups["cg"].assignment_epoch == 5
    assert figures.computations == 2, "the burst of joins shared one computation"

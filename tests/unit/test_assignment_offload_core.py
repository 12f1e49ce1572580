"""Server-side targets computed off the event loop, on the pure core with a virtual clock.

Given a consumer group whose target is computed by an effect the IO shell runs elsewhere
(`group.consumer.assignor.offload.enable`), with epoch bumps inside
`group.consumer.assignment.interval.ms` sharing one computation:
- a result for an epoch the group has since left is discarded, and the target computed again;
- a burst of joins inside the interval costs one computation;
- a restart in the middle of a computation computes again;
- while a target is computed, heartbeats are answered, and no member is given a partition
  another member still owns.
"""

from __future__ import annotations

import pytest

from connect_rebalance.errors import ErrorCode
from coordinator.groups.coordinator import GroupCoordinator
from coordinator.groups.settings import GroupSettings
from tests.support.group_harness import GroupHarness
from tests.support.group_state import persisted, replayed

pytestmark = pytest.mark.unit
INTERVAL_MS = 100


def harness() -> GroupHarness:
    settings = GroupSettings(consumer_assignor_offload=True, consumer_assignment_interval_ms=INTERVAL_MS)
    return GroupHarness(settings, topics={"orders": 12})


def join(h: GroupHarness, member: str) -> dict:  # type: ignore[type-arg]
    answer = h.consumer_heartbeat(member, 0, topics=["orders"], owned={}, rebalance_timeout_ms=30000)
    assert answer["error_code"] == ErrorCode.NONE
    return answer


def test_a_burst_of_joins_inside_the_interval_costs_one_computation() -> None:
    h = harness()
    for member in "ABCDE":
        join(h, member)
        h.advance(10)
    assert h.effects == [], "nothing is computed before the interval is over"
    h.advance(INTERVAL_MS)
    assert len(h.effects) == 1 and h.effects[0].epoch == 5
    h.run_effects()
    group = h.core.groups["cg"]
    assert (group.assignment_epoch, h.computations) == (5, 1)
    assert sorted(len(group.target_of(m)) for m in "ABCDE") == [2, 2, 2, 3, 3]


def test_a_result_for_an_epoch_the_group_has_left_is_discarded_and_computed_again() -> None:
    h = harness()
    join(h, "A")
    h.advance(INTERVAL_MS)
    [stale] = h.effects
    h.effects.clear()
    join(h, "B")  # epoch 2 while epoch 1's target is computed
    h._absorb(h.core.target_computed(stale, stale.run(), h.now))
    group = h.core.groups["cg"]
    assert group.assignment_epoch == 0 and group.target == {}, "epoch 1's result is not written"
    assert len(h.effects) == 0, "the rerun waits for the interval"
    h.advance(INTERVAL_MS)
    [fresh] = h.effects
    assert fresh.epoch == 2 and set(fresh.members) == {"A", "B"}
    h.run_effects()
    assert group.assignment_epoch == 2 and {len(group.target_of(m)) for m in "AB"} == {6}


def test_heartbeats_are_answered_while_a_target_is_computed_and_nothing_is_owned_twice() -> None:
    h = harness()
    join(h, "A")
    h.advance(INTERVAL_MS)
    h.run_effects()
    a = h.consumer_heartbeat("A", 0, topics=["orders"], owned={}, rebalance_timeout_ms=30000)
    assert h.assigned(a) == {"orders": list(range(12))}
    b_epoch = join(h, "B")["member_epoch"]
    h.advance(INTERVAL_MS)
    assert len(h.effects) == 1
    during = h.consumer_heartbeat("A", a["member_epoch"], owned={"orders": list(range(12))})
    assert during["error_code"] == ErrorCode.NONE and during["member_epoch"] == a["member_epoch"]
    h.run_effects()
    b = h.consumer_heartbeat("B", b_epoch)
    assert b["member_epoch"] == 2 and not h.assigned_or_none(b), "B gets nothing while A still owns it all"
    told = h.consumer_heartbeat("A", a["member_epoch"], owned={"orders": list(range(12))})
    kept = h.assigned(told)["orders"]
    assert len(kept) == 6
    h.consumer_heartbeat("A", told["member_epoch"], owned={"orders": kept})
    b = h.consumer_heartbeat("B", 2)
    assert sorted(h.assigned(b)["orders"] + kept) == list(range(12))


def test_a_restart_in_the_middle_of_a_computation_computes_again() -> None:
    h = harness()
    join(h, "A")
    join(h, "B")
    h.advance(INTERVAL_MS)
    assert len(h.effects) == 1, "a computation is under way when the coordinator dies"
    restarted = replayed(h)
    assert persisted(restarted) == persisted(h.core)
    restarted.load_complete(h.now)
    h.core, h.effects = restarted, []
    join(h, "A")  # the first heartbeat after the restart (it bumps the epoch: see consumer.py)
    h.advance(INTERVAL_MS)
    assert len(h.effects) == 1 and h.effects[0].epoch == 3 and set(h.effects[0].members) == {"A", "B"}
    h.run_effects()
    group = h.core.groups["cg"]
    assert group.assignment_epoch == 3 and {len(group.target_of(m)) for m in "AB"} == {6}


def test_with_offload_off_the_target_is_computed_inline() -> None:
    h = GroupHarness(topics={"orders": 12})
    assert isinstance(h.core, GroupCoordinator)
    join(h, "A")
    assert h.core.groups["cg"].assignment_epoch == 1 and h.effects == []

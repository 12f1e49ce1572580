"""A lost worker's work, on a virtual clock: held for the scheduled delay, returned to the
worker if it bounces back, handed out once the delay ends; a worker that left on purpose
has its work reassigned at once."""

from __future__ import annotations

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from connect_rebalance.work import CONNECTOR, Work
from workers.distributed.assignor.lost_work import ComputingMemory, HeldWork, plan

pytestmark = pytest.mark.unit

WORK = frozenset([("c", CONNECTOR)] + [("c", i) for i in range(8)])


def settled(members: dict[str, str]) -> tuple[dict[str, frozenset[Work]], dict[Work, str]]:
    target, held = plan(members, {}, WORK, {}, set(), HeldWork(), 0.0, 10.0)
    assert not held.held
    return target, {item: members[m] for m, items in target.items() for item in items}


def test_a_crashed_workers_work_is_held_until_the_delay_ends() -> None:
    members = {"m1": "w1", "m2": "w2", "m3": "w3"}
    target, owners = settled(members)
    lost = target["m2"]
    survivors = {"m1": "w1", "m3": "w3"}
    current = {m: target[m] for m in survivors}
    held_target, held = plan(survivors, current, WORK, owners, set(), HeldWork(), 100.0, 10.0)
    assert held_target == current, "nothing moves while w2's work is held"
    assert set(held.held) == lost and held.next_deadline() == 110.0
    later, held = plan(survivors, current, WORK, owners, set(), held, 105.0, 10.0)
    assert later == current and held.next_deadline() == 110.0, "the deadline does not slide"
    after, held = plan(survivors, current, WORK, owners, set(), held, 110.0, 10.0)
    assert not held.held and set().union(*after.values()) == WORK
    assert all(current[m] <= after[m] for m in survivors), "the survivors keep their work"


def test_a_bounced_worker_gets_exactly_its_work_back() -> None:
    members = {"m1": "w1", "m2": "w2", "m3": "w3"}
    target, owners = settled(members)
    survivors = {"m1": "w1", "m3": "w3"}
    current = {m: target[m] for m in survivors}
    _, held = plan(survivors, current, WORK, owners, set(), HeldWork(), 100.0, 10.0)
    back = {**survivors, "m2-again": "w2"}
    returned, held = plan(back, current, WORK, owners, set(), held, 104.0, 10.0)
    assert returned["m2-again"] == target["m2"] and not held.held
    assert all(returned[m] == target[m] for m in survivors), "nothing else moves"


def test_a_worker_that_left_on_purpose_has_its_work_reassigned_at_once() -> None:
    members = {"m1": "w1", "m2": "w2", "m3": "w3"}
    target, owners = settled(members)
    survivors = {"m1": "w1", "m3": "w3"}
    current = {m: target[m] for m in survivors}
    after, held = plan(survivors, current, WORK, owners, {"w2"}, HeldWork(), 100.0, 10.0)
    assert not held.held and set().union(*after.values()) == WORK


def test_a_worker_that_did_not_compute_every_target_since_forgets_what_it_held() -> None:
    """w1 computes the target holding w2's work; w3 computes the next ones (w2 bounces back,
    then crashes again); when w1 computes again, the old delay is not reused: w2's work is
    held for a whole delay from the second crash."""
    members = {"m1": "w1", "m2": "w2", "m3": "w3"}
    target, owners = settled(members)
    survivors = {"m1": "w1", "m3": "w3"}
    current = {m: target[m] for m in survivors}
    w1 = ComputingMemory()
    w1.recall(assignment_epoch=3, group_epoch=4)
    _, w1.held = plan(survivors, current, WORK, owners, set(), w1.held, 100.0, 10.0)
    assert w1.held.next_deadline() == 110.0
    w1.recall(assignment_epoch=6, group_epoch=7)  # epochs 5 and 6 were computed by w3
    _, w1.held = plan(survivors, current, WORK, owners, set(), w1.held, 108.0, 10.0)
    assert set(w1.held.held) == target["m2"] and w1.held.next_deadline() == 118.0


def test_a_worker_that_computed_every_target_since_keeps_the_deadline() -> None:
    memory = ComputingMemory()
    memory.recall(assignment_epoch=3, group_epoch=4)
    memory.held = HeldWork({("c", 0): ("w2", 110.0)})
    memory.last_owner = {("c", 0): "w2"}
    memory.recall(assignment_epoch=4, group_epoch=5)
    assert memory.held.next_deadline() == 110.0 and memory.last_owner == {("c", 0): "w2"}


@settings(max_examples=100, deadline=None)
@given(
    alive=st.sets(st.sampled_from(["w1", "w2", "w3", "w4"]), min_size=1),
    left=st.sets(st.sampled_from(["w1", "w2", "w3", "w4"])),
    now=st.floats(min_value=0, max_value=30),
)
def test_nothing_is_assigned_twice_and_only_held_work_is_unassigned(
    alive: set[str], left: set[str], now: float
) -> None:
    everyone = {f"m{i}": f"w{i}" for i in range(1, 5)}
    target, owners = settled(everyone)
    members = {m: w for m, w in everyone.items() if w in alive}
    current = {m: target[m] for m in members}
    after, held = plan(members, current, WORK, owners, left, HeldWork(), now, 10.0)
    assigned = [item for items in after.values() for item in items]
    assert len(assigned) == len(set(assigned)), "an item assigned twice"
    assert set(assigned) | set(held.held) == WORK and not set(assigned) & set(held.held)
    assert all(owners[item] not in alive and owners[item] not in left for item in held.held)

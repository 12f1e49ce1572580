"""Kafka Connect's balance rule: connectors balanced within one, tasks balanced within one,
each connector's tasks spread, and nothing moves without a reason."""

from __future__ import annotations

from collections.abc import Mapping

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from connect_rebalance.work import CONNECTOR, Work
from workers.distributed.assignor.balanced_target import balanced_target

pytestmark = pytest.mark.unit


def work_of(tasks_per_connector: list[int]) -> frozenset[Work]:
    items: set[Work] = set()
    for n, tasks in enumerate(tasks_per_connector):
        items |= {(f"c{n}", CONNECTOR)} | {(f"c{n}", t) for t in range(tasks)}
    return frozenset(items)


def connectors(items: frozenset[Work]) -> int:
    return sum(1 for _, task in items if task == CONNECTOR)


def tasks(items: frozenset[Work], of: str | None = None) -> int:
    return sum(1 for c, task in items if task != CONNECTOR and of in (None, c))


def spread(counts: list[int]) -> int:
    return max(counts) - min(counts)


def assert_balanced(target: Mapping[str, frozenset[Work]], work: frozenset[Work]) -> None:
    """Kafka Connect's rule and this project's spread, as a user reading statuses checks them."""
    assigned = [item for items in target.values() for item in items]
    assert len(assigned) == len(set(assigned)), "an item is assigned twice"
    assert set(assigned) == work, "an item is not assigned"
    assert spread([connectors(items) for items in target.values()]) <= 1, "connectors not balanced"
    assert spread([tasks(items) for items in target.values()]) <= 1, "tasks not balanced"
    for connector in {c for c, _ in work}:
        counts = [tasks(items, connector) for items in target.values()]
        assert spread(counts) <= 1, f"{connector}'s tasks pile up: {counts}"


def moved(before: Mapping[str, frozenset[Work]], after: Mapping[str, frozenset[Work]]) -> int:
    """Items a member held and no longer holds: each one a task stopped and started elsewhere."""
    return sum(len(items - after.get(m, frozenset())) for m, items in before.items())


def test_a_third_worker_joining_six_one_task_connectors_takes_connectors_and_tasks_alike() -> None:
    """The pile-up seen on main: two workers with three connectors and three tasks each; a
    third joined and ended with no connector and four tasks (3/3/0 and 1/1/4)."""
    work = work_of([1] * 6)
    w1 = frozenset({("c0", CONNECTOR), ("c1", CONNECTOR), ("c2", CONNECTOR), ("c3", 0), ("c4", 0), ("c5", 0)})
    before = {"w1": w1, "w2": work - w1}
    after = balanced_target(["w1", "w2", "w3"], before, work)
    assert_balanced(after, work)
    assert [(connectors(after[m]), tasks(after[m])) for m in ("w1", "w2", "w3")] == [(2, 2)] * 3
    assert all(after[m] <= before[m] for m in before), "the two that stay only give up work"
    assert moved(before, after) == 4


def test_one_worker_holding_every_task_of_a_connector_spreads_them() -> None:
    """After a kill -9 and a bounce: one worker held all three tasks of a connector and the
    other only connector instances."""
    work = work_of([3, 0, 0, 0])
    before = {"w1": frozenset({("c0", 0), ("c0", 1), ("c0", 2)}), "w2": work_of([0] * 4)}
    after = balanced_target(["w1", "w2"], before, work)
    assert_balanced(after, work)
    assert tasks(after["w1"]) == 2 and tasks(after["w2"]) == 1
    assert connectors(after["w1"]) == connectors(after["w2"]) == 2


def test_new_connectors_tasks_spread_over_every_worker() -> None:
    work = work_of([2, 5, 4, 4, 3, 1])
    fresh = balanced_target([f"m{i}" for i in range(5)], {}, work)
    assert_balanced(fresh, work)


def test_a_joining_worker_takes_only_what_it_runs_from_a_big_cluster() -> None:
    """100 workers, 1,000 connectors of 1 to 20 tasks: the 101st takes its share, and every
    item that moves moves to it (no shuffling among the others)."""
    work = work_of([1 + (n * 7) % 20 for n in range(1000)])
    names = [f"w{i:03}" for i in range(100)]
    before = balanced_target(names, {}, work)
    after = balanced_target([*names, "w100"], before, work)
    assert_balanced(after, work)
    assert moved(before, after) == len(after["w100"])


def test_a_leaving_workers_work_is_all_that_moves() -> None:
    work = work_of([4, 3, 5, 2, 6, 1])
    names = ["w1", "w2", "w3", "w4"]
    before = balanced_target(names, {}, work)
    after = balanced_target(["w1", "w2", "w3"], before, work)
    assert_balanced(after, work)
    assert moved({m: before[m] for m in ("w1", "w2", "w3")}, after) == 0


def test_a_task_claimed_by_two_workers_is_kept_by_the_one_with_fewer_tasks() -> None:
    work = work_of([2])
    claims = {"w1": work, "w2": frozenset({("c0", 0)})}
    after = balanced_target(["w1", "w2"], claims, work)
    assert after == {"w1": {("c0", CONNECTOR), ("c0", 1)}, "w2": {("c0", 0)}}


def test_work_that_no_longer_exists_is_dropped() -> None:
    work = work_of([1])
    after = balanced_target(["w1"], {"w1": work_of([3, 2])}, work)
    assert after == {"w1": work}


@settings(max_examples=300, deadline=None)
@given(
    task_counts=st.lists(st.integers(0, 12), max_size=8),
    members=st.integers(1, 7),
    claims=st.lists(st.integers(-1, 7), max_size=120),
)
def test_any_holding_gives_a_balanced_target_which_is_its_own_target(
    task_counts: list[int], members: int, claims: list[int]
) -> None:
    """Whatever members hold (nothing, everything, items twice, items of members gone), the
    target is balanced; a balanced target handed back moves nothing; and members keep up
    to what the balance allows: a member keeps every connector up to its share."""
    work = work_of(task_counts)
    names = [f"m{i}" for i in range(members)]
    holding: dict[str, set[Work]] = {m: set() for m in [*names, "gone"]}
    for item, claim in zip(sorted(work), claims, strict=False):
        if claim >= 0:
            holding[names[claim % members] if claim < 7 else "gone"].add(item)
    current = {m: frozenset(items) for m, items in holding.items()}
    target = balanced_target(names, current, work)
    assert_balanced(target, work)
    assert balanced_target(names, target, work) == target, "a balanced target moves nothing"
    share = connectors(work) // members
    for m in names:
        kept = connectors(target[m] & current[m])
        assert kept >= min(connectors(current[m] & work), share), "a connector moved without a reason"


def test_member_order_does_not_matter() -> None:
    work = work_of([3, 3, 2])
    names = ["w1", "w2", "w3"]
    first = balanced_target(names, {}, work)
    assert balanced_target(list(reversed(names)), {}, work) == first
    assert sorted(tasks(items) for items in first.values()) == [2, 3, 3]

"""The sticky, balanced target: totals within one, each connector's tasks spread, and
members keep what they hold up to their share."""

from __future__ import annotations

from collections import Counter

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from connect_rebalance.work import CONNECTOR, Work
from workers.sticky_plan import sticky_balanced

pytestmark = pytest.mark.unit


def work_of(tasks_per_connector: list[int]) -> frozenset[Work]:
    items: set[Work] = set()
    for n, tasks in enumerate(tasks_per_connector):
        items |= {(f"c{n}", CONNECTOR)} | {(f"c{n}", t) for t in range(tasks)}
    return frozenset(items)


def task_spread(plan: dict[str, frozenset[Work]], connector: str) -> int:
    counts = Counter({m: 0 for m in plan})
    counts.update(m for m, items in plan.items() for c, t in items if c == connector and t != CONNECTOR)
    return max(counts.values()) - min(counts.values())


def test_new_connectors_tasks_spread_over_every_worker() -> None:
    work = work_of([2] * 7)
    plan = sticky_balanced(["a", "b", "c"], {}, work)
    assert sorted(len(items) for items in plan.values()) == [7, 7, 7]
    assert all(task_spread(plan, f"c{n}") <= 1 for n in range(7))


def test_a_joining_worker_takes_from_the_connectors_others_hold_most_of() -> None:
    work = work_of([6, 6])
    before = {m: frozenset(i for i in work if i[0] == c) for m, c in (("a", "c0"), ("b", "c1"))}
    after = sticky_balanced(["a", "b", "c"], before, work)
    assert all(after[m] <= before[m] for m in before), "the members that stay only give up work"
    assert sorted(len(items) for items in after.values()) == [4, 5, 5]
    taken = Counter(c for c, _ in after["c"])
    assert taken == {"c0": 2, "c1": 2}, "the new worker takes from both connectors alike"


@settings(max_examples=200, deadline=None)
@given(
    tasks=st.lists(st.integers(0, 8), min_size=1, max_size=6),
    members=st.integers(1, 5),
    seed=st.randoms(use_true_random=False),
)
def test_totals_within_one_everything_assigned_once_and_members_keep_up_to_their_share(
    tasks: list[int], members: int, seed: object
) -> None:
    work = work_of(tasks)
    names = [f"m{i}" for i in range(members)]
    current: dict[str, set[Work]] = {m: set() for m in names}
    for item in sorted(work):
        current[seed.choice(names)].add(item)  # type: ignore[attr-defined]
    plan = sticky_balanced(names, {m: frozenset(i) for m, i in current.items()}, work)
    sizes = [len(items) for items in plan.values()]
    assert max(sizes) - min(sizes) <= 1
    assert sum(sizes) == len(work) and frozenset().union(*plan.values()) == work
    share = -(-len(work) // members)
    for m in names:
        assert len(plan[m] & current[m]) >= min(len(current[m]), len(work) // members), "kept up to its share"
        assert len(plan[m]) <= share
    fresh = sticky_balanced(names, {}, work)
    assert all(task_spread(fresh, f"c{n}") <= 1 for n in range(len(tasks))), "new work spreads per connector"


def test_new_work_spreads_per_connector_even_when_the_last_shares_fill() -> None:
    """Tasks of 2, 5, 4, 4, 3 and 1 on five new workers: dealt in task-number order, the last
    connector's tasks went to the two workers with room left, two of c1's on one worker and
    none on another. Dealt connector by connector, in turn, every connector spreads."""
    work = work_of([2, 5, 4, 4, 3, 1])
    fresh = sticky_balanced([f"m{i}" for i in range(5)], {}, work)
    assert all(task_spread(fresh, f"c{n}") <= 1 for n in range(6))
    assert {len(items) for items in fresh.values()} == {5}

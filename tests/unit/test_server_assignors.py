"""Server-side assignors: uniform (balanced, sticky, homogeneous and heterogeneous
subscriptions) and range (contiguous, co-partitioned)."""

from __future__ import annotations

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from coordinator.groups.assignors import ASSIGNORS, AssignmentMember, RangeAssignor, UniformAssignor

pytestmark = pytest.mark.unit


def members(
    subs: dict[str, set[str]],
    targets: dict[str, set[tuple[str, int]]] | None = None,
    instances: dict[str, str] | None = None,
) -> dict[str, AssignmentMember]:
    targets, instances = targets or {}, instances or {}
    return {
        m: AssignmentMember(m, frozenset(t), frozenset(targets.get(m, set())), instances.get(m))
        for m, t in subs.items()
    }


def test_uniform_is_balanced_and_moves_only_what_balance_needs_when_a_member_joins() -> None:
    uniform = UniformAssignor()
    three = uniform.assign(members({m: {"orders"} for m in "abc"}), {"orders": 12})
    assert sorted(len(p) for p in three.values()) == [4, 4, 4]
    four = uniform.assign(
        members({m: {"orders"} for m in "abcd"}, {m: set(three[m]) for m in "abc"}), {"orders": 12}
    )
    assert sorted(len(p) for p in four.values()) == [3, 3, 3, 3]
    moved = sum(len(four[m] - three[m]) for m in "abc")
    assert moved == 0 and len(four["d"]) == 3, "only the newcomer's three partitions moved"


def test_range_co_partitions_topics_and_puts_static_members_first() -> None:
    result = RangeAssignor().assign(
        members({"m-z": {"t1", "t2"}, "m-a": {"t1", "t2"}}, instances={"m-z": "host-0"}), {"t1": 3, "t2": 3}
    )
    assert result["m-z"] == {("t1", 0), ("t1", 1), ("t2", 0), ("t2", 1)}
    assert result["m-a"] == {("t1", 2), ("t2", 2)}


def test_uniform_heterogeneous_assigns_each_topic_to_its_subscribers_only() -> None:
    result = UniformAssignor().assign(members({"a": {"x"}, "b": {"x", "y"}, "c": {"y"}}), {"x": 6, "y": 6})
    assert all(tp[0] == "x" for tp in result["a"]) and all(tp[0] == "y" for tp in result["c"])
    assert sorted(len(p) for p in result.values()) == [4, 4, 4]


@settings(max_examples=200, deadline=None)
@given(
    name=st.sampled_from(sorted(ASSIGNORS)),
    topics=st.dictionaries(st.sampled_from(["t1", "t2", "t3"]), st.integers(0, 9), min_size=1),
    subscriptions=st.dictionaries(
        st.sampled_from(list("abcdef")),
        st.sets(st.sampled_from(["t1", "t2", "t3", "gone"]), min_size=1),
        min_size=1,
    ),  # fmt: skip
)
def test_every_subscribed_partition_is_assigned_once_to_a_subscriber(name, topics, subscriptions) -> None:  # type: ignore[no-untyped-def]
    result = ASSIGNORS[name].assign(members(subscriptions), topics)
    owners: dict[tuple[str, int], str] = {}
    for member, partitions in result.items():
        for tp in partitions:
            assert tp[0] in subscriptions[member], "only subscribers get a topic's partitions"
            assert tp not in owners, f"{tp} assigned to {owners[tp]} and {member}"
            owners[tp] = member
    expected = {
        (t, p) for t, n in topics.items() for p in range(n) if any(t in s for s in subscriptions.values())
    }
    assert set(owners) == expected
    if name == "uniform" and len({frozenset(s) for s in subscriptions.values()}) == 1:
        sizes = [len(p) for p in result.values()]
        assert max(sizes) - min(sizes) <= 1

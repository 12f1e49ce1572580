"""Server-side assignors: uniform (balanced, sticky, homogeneous and heterogeneous
subscriptions) and range (contiguous, co-partitioned), through the coordinator's interface.

Property tests check the invariants on arbitrary groups: every subscribed partition is assigned
exactly once and only to a subscriber of its topic; uniform sizes differ by at most one when
subscriptions are the same, and otherwise they are the most even the subscriptions allow (no
chain of moves from a member to one holding two fewer; the largest and smallest sizes those of
the best assignment, found by max-flow); members keep what balance allows."""

from __future__ import annotations

import pickle
from collections import deque

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from coordinator.assignors import (
    ASSIGNORS,
    Assignment,
    AssignmentMember,
    PartitionSet,
    RangeAssignor,
    UniformAssignor,
)

pytestmark = pytest.mark.unit

TopicPartition = tuple[str, int]


def members(
    subs: dict[str, set[str]],
    targets: dict[str, set[TopicPartition]] | frozenset | Assignment | None = None,
    instances: dict[str, str] | None = None,
) -> dict[str, AssignmentMember]:
    targets, instances = targets or {}, instances or {}
    return {
        m: AssignmentMember(m, frozenset(t), frozenset(targets.get(m, set())), instances.get(m))  # type: ignore[union-attr]
        for m, t in subs.items()
    }


def carried(subs: dict[str, set[str]], previous: Assignment) -> dict[str, AssignmentMember]:
    """Members whose current target is the object the assignor returned (as the coordinator does)."""
    return {m: AssignmentMember(m, frozenset(t), previous.get(m, frozenset())) for m, t in subs.items()}


def sizes(result: Assignment) -> list[int]:
    return sorted(len(p) for p in result.values())


def assert_exactly_once_to_subscribers(
    result: Assignment, subscriptions: dict[str, set[str]], topics: dict[str, int]
) -> None:
    assert set(result) == set(subscriptions), "every member gets an entry"
    owners: dict[TopicPartition, str] = {}
    for member, partitions in result.items():
        for tp in partitions:
            assert tp[0] in subscriptions[member], f"{member} got {tp} without subscribing to {tp[0]}"
            assert tp not in owners, f"{tp} assigned to {owners[tp]} and {member}"
            owners[tp] = member
    expected = {
        (t, p) for t, n in topics.items() for p in range(n) if any(t in s for s in subscriptions.values())
    }
    assert set(owners) == expected, "every subscribed partition is assigned"


def assert_no_chain_to_two_fewer(result: Assignment, subscriptions: dict[str, set[str]]) -> None:
    """No member can give a partition to a subscriber of its topic, who gives one on, ... until
    a member holding two fewer than the first gains one (strong balance; a single move is the
    shortest such chain)."""
    gives_to = {
        holder: {
            other
            for other, topics in subscriptions.items()
            if other != holder and topics & {t for t, _ in held}
        }
        for holder, held in result.items()
    }
    for start in result:
        reached, queue = {start}, deque([start])
        while queue:
            for other in gives_to[queue.popleft()] - reached:
                first, last = len(result[start]), len(result[other])
                assert first - last <= 1, f"a chain of moves from {start} ({first}) reaches {other} ({last})"
                reached.add(other)
                queue.append(other)


def max_flow(topics: dict[str, int], subscriptions: dict[str, set[str]], cap: int) -> int:
    """Most partitions that can be assigned to subscribers with at most `cap` per member."""
    nodes = ["source", *topics, *subscriptions, "sink"]
    capacity = {u: dict.fromkeys(nodes, 0) for u in nodes}
    for t, n in topics.items():
        capacity["source"][t] = n
        for m, subscribed in subscriptions.items():
            capacity[t][m] = n if t in subscribed else 0
    for m in subscriptions:
        capacity[m]["sink"] = cap
    flow = 0
    while True:  # augmenting paths, breadth first
        parent = {"source": "source"}
        queue = deque(["source"])
        while queue and "sink" not in parent:
            u = queue.popleft()
            for v, c in capacity[u].items():
                if c > 0 and v not in parent:
                    parent[v] = u
                    queue.append(v)
        if "sink" not in parent:
            return flow
        path, v = [], "sink"
        while v != "source":
            path.append((parent[v], v))
            v = parent[v]
        pushed = min(capacity[u][v] for u, v in path)
        for u, v in path:
            capacity[u][v] -= pushed
            capacity[v][u] += pushed
        flow += pushed


def best_largest_and_smallest(topics: dict[str, int], subscriptions: dict[str, set[str]]) -> tuple[int, int]:
    """The smallest largest size and the largest smallest size any assignment can reach."""
    subscribed = {t: n for t, n in topics.items() if any(t in s for s in subscriptions.values())}
    total, count = sum(subscribed.values()), len(subscriptions)
    # Neither can pass the even split: search upward from its ceiling and downward from its floor.
    largest = next(
        c for c in range(-(-total // count), total + 1) if max_flow(subscribed, subscriptions, c) == total
    )
    smallest = next(
        level
        for level in range(total // count, -1, -1)
        if max_flow(subscribed, subscriptions, level) == level * count
    )
    return largest, smallest


def test_uniform_is_balanced_and_moves_only_what_balance_needs_when_a_member_joins() -> None:
    uniform = UniformAssignor()
    three = uniform.assign(members({m: {"orders"} for m in "abc"}), {"orders": 12})
    assert sizes(three) == [4, 4, 4]
    four = uniform.assign(
        members({m: {"orders"} for m in "abcd"}, {m: set(three[m]) for m in "abc"}), {"orders": 12}
    )
    assert sizes(four) == [3, 3, 3, 3]
    moved = sum(len(four[m] - three[m]) for m in "abc")
    assert moved == 0 and len(four["d"]) == 3, "only the newcomer's three partitions moved"


def test_range_co_partitions_topics_and_puts_static_members_first() -> None:
    result = RangeAssignor().assign(
        members({"m-z": {"t1", "t2"}, "m-a": {"t1", "t2"}}, instances={"m-z": "host-0"}), {"t1": 3, "t2": 3}
    )
    assert result["m-z"] == {("t1", 0), ("t1", 1), ("t2", 0), ("t2", 1)}
    assert result["m-a"] == {("t1", 2), ("t2", 2)}


def test_range_gives_each_topics_subscribers_contiguous_ranges_in_member_order() -> None:
    result = RangeAssignor().assign(
        members({"c": {"x", "y"}, "a": {"x"}, "b": {"x", "y"}}), {"x": 7, "y": 3, "z": 4}
    )
    assert result == {
        "a": {("x", 0), ("x", 1), ("x", 2)},
        "b": {("x", 3), ("x", 4), ("y", 0), ("y", 1)},
        "c": {("x", 5), ("x", 6), ("y", 2)},
    }, "x: 3+2+2 over a, b, c; y: 2+1 over b, c; z has no subscriber"


def test_uniform_heterogeneous_assigns_each_topic_to_its_subscribers_only() -> None:
    subscriptions = {"a": {"x"}, "b": {"x", "y"}, "c": {"y"}}
    result = UniformAssignor().assign(members(subscriptions), {"x": 6, "y": 6})
    assert all(tp[0] == "x" for tp in result["a"]) and all(tp[0] == "y" for tp in result["c"])
    assert sorted(len(p) for p in result.values()) == [4, 4, 4], (
        "no single move helps at 3/4/5, a chain does: c gives y to b, b gives x to a"
    )


def test_uniform_heterogeneous_newcomer_takes_from_the_most_loaded_subscribers_only() -> None:
    subscriptions = {"a": {"x"}, "b": {"x"}, "c": {"y"}}
    first = UniformAssignor().assign(members(subscriptions), {"x": 8, "y": 3})
    assert sizes(first) == [3, 4, 4]
    subscriptions["d"] = {"x"}
    second = UniformAssignor().assign(carried(subscriptions, first), {"x": 8, "y": 3})
    assert second["c"] is first["c"], "a member outside the change keeps its very set"
    assert sorted(len(second[m]) for m in "abd") == [2, 3, 3]
    assert sum(len(second[m] - first[m]) for m in "abc") == 0, "only the newcomer gains partitions"


def test_a_returned_target_fed_back_is_kept_as_the_same_objects() -> None:
    subscriptions = {m: {"t1", "t2"} for m in "abcde"}
    topics = {"t1": 7, "t2": 9}
    for assignor in ASSIGNORS.values():
        first = assignor.assign(members(subscriptions), topics)
        again = assignor.assign(carried(subscriptions, first), topics)
        assert all(again[m] is first[m] for m in subscriptions), f"{assignor.name}: nothing changed"
        plain = {m: frozenset(p) for m, p in first.items()}  # as replayed from the log
        assert assignor.assign(carried(subscriptions, plain), topics) == first


def test_a_target_is_a_frozenset_and_copies_as_a_plain_one() -> None:
    result = UniformAssignor().assign(members({"a": {"t"}}), {"t": 3})
    assert isinstance(result["a"], PartitionSet) and isinstance(result["a"], frozenset)
    copied = pickle.loads(pickle.dumps(result["a"]))
    assert type(copied) is frozenset and copied == {("t", 0), ("t", 1), ("t", 2)}


def test_partitions_of_topics_no_longer_subscribed_or_gone_are_dropped() -> None:
    previous = {"a": {("x", 0), ("x", 1), ("gone", 0), ("y", 7)}, "b": {("y", 0)}}
    for assignor in ASSIGNORS.values():
        result = assignor.assign(members({"a": {"x"}, "b": {"x", "y"}}, previous), {"x": 2, "y": 2})
        assert_exactly_once_to_subscribers(result, {"a": {"x"}, "b": {"x", "y"}}, {"x": 2, "y": 2})


TOPICS = ["t1", "t2", "t3", "t4"]
topic_counts = st.dictionaries(st.sampled_from(TOPICS), st.integers(0, 12), min_size=1)
subscription_map = st.dictionaries(
    st.sampled_from([f"m{i}" for i in range(8)]),
    st.sets(st.sampled_from([*TOPICS, "gone"]), min_size=1),
    min_size=1,
)


@st.composite
def groups(draw: st.DrawFn, homogeneous: bool | None = None):  # type: ignore[no-untyped-def]
    """Topics, subscriptions and a current target that may hold anything (stale, foreign, gone)."""
    topics = draw(topic_counts)
    if homogeneous:
        names = draw(st.lists(st.sampled_from([f"m{i}" for i in range(9)]), min_size=1, unique=True))
        shared = draw(st.sets(st.sampled_from([*TOPICS, "gone"]), min_size=1))
        subscriptions = {m: set(shared) for m in names}
    else:
        subscriptions = draw(subscription_map)
    candidates = [(t, p) for t in [*TOPICS, "gone"] for p in range(14)]
    previous = {
        m: draw(st.sets(st.sampled_from(candidates), max_size=10)) for m in subscriptions
    }  # fmt: skip
    return topics, subscriptions, previous


@settings(max_examples=300, deadline=None)
@given(name=st.sampled_from(sorted(ASSIGNORS)), group=groups())
def test_every_subscribed_partition_is_assigned_once_to_a_subscriber(name, group) -> None:  # type: ignore[no-untyped-def]
    topics, subscriptions, previous = group
    result = ASSIGNORS[name].assign(members(subscriptions, previous), topics)
    assert_exactly_once_to_subscribers(result, subscriptions, topics)


@settings(max_examples=300, deadline=None)
@given(group=groups(homogeneous=True))
def test_uniform_homogeneous_sizes_differ_by_at_most_one_and_keep_all_that_balance_allows(group) -> None:  # type: ignore[no-untyped-def]
    topics, subscriptions, previous = group
    result = UniformAssignor().assign(members(subscriptions, previous), topics)
    assert max(sizes(result)) - min(sizes(result)) <= 1
    # Stickiness: as many previous partitions are kept as any balanced assignment could keep.
    valid = {(t, p) for t, n in topics.items() for p in range(n) if t in next(iter(subscriptions.values()))}
    claimed: set[TopicPartition] = set()
    held = {}
    for m in subscriptions:  # a partition two members claim counts once
        held[m] = (previous[m] & valid) - claimed
        claimed |= held[m]
    minimum, extra = divmod(len(valid), len(subscriptions))
    best = sum(min(len(h), minimum) for h in held.values()) + min(
        extra, sum(1 for h in held.values() if len(h) > minimum)
    )
    assert sum(len(result[m] & held[m]) for m in subscriptions) == best


@settings(max_examples=300, deadline=None)
@given(group=groups())
def test_uniform_heterogeneous_is_as_balanced_as_the_subscriptions_allow(group) -> None:  # type: ignore[no-untyped-def]
    topics, subscriptions, previous = group
    result = UniformAssignor().assign(members(subscriptions, previous), topics)
    assert_no_chain_to_two_fewer(result, subscriptions)
    largest, smallest = best_largest_and_smallest(topics, subscriptions)
    assert (max(sizes(result)), min(sizes(result))) == (largest, smallest), "the best any assignment reaches"


@st.composite
def larger_groups(draw: st.DrawFn):  # type: ignore[no-untyped-def]
    """Up to 40 members sharing a few subscriptions (classes of several members), 10 topics, and
    current targets that may hold anything."""
    names = [f"t{i}" for i in range(10)]
    topics = {t: draw(st.integers(0, 40)) for t in names}
    shapes = draw(st.lists(st.sets(st.sampled_from(names), min_size=1, max_size=4), min_size=2, max_size=6))
    chosen = draw(st.lists(st.sampled_from(range(len(shapes))), min_size=2, max_size=40))
    subscriptions = {f"m{i}": shapes[c] for i, c in enumerate(chosen)}
    candidates = [(t, p) for t in names for p in range(40)]
    previous = {m: draw(st.sets(st.sampled_from(candidates), max_size=12)) for m in subscriptions}
    return topics, subscriptions, previous


@settings(max_examples=100, deadline=None)
@given(group=larger_groups())
def test_uniform_heterogeneous_leaves_no_chain_to_two_fewer_in_larger_groups(group) -> None:  # type: ignore[no-untyped-def]
    topics, subscriptions, previous = group
    result = UniformAssignor().assign(members(subscriptions, previous), topics)
    assert_exactly_once_to_subscribers(result, subscriptions, topics)
    assert_no_chain_to_two_fewer(result, subscriptions)
    again = UniformAssignor().assign(carried(subscriptions, result), topics)
    assert again == result, "a balanced target is kept as it is"


@settings(max_examples=200, deadline=None)
@given(group=groups(), newcomer=st.sets(st.sampled_from(TOPICS), min_size=1))
def test_uniform_keeps_a_balanced_target_and_a_newcomer_only_takes(group, newcomer) -> None:  # type: ignore[no-untyped-def]
    topics, subscriptions, previous = group
    uniform = UniformAssignor()
    settled = uniform.assign(members(subscriptions, previous), topics)
    again = uniform.assign(carried(subscriptions, settled), topics)
    assert again == settled, "a balanced target is kept as it is"
    if len({frozenset(s) for s in subscriptions.values()}) == 1:
        joined = {**subscriptions, "new": next(iter(subscriptions.values()))}
        after = uniform.assign(carried(joined, settled), topics)
        assert all(after[m] <= settled[m] for m in subscriptions), "existing members only give up"
        moved = sum(len(settled[m] - after[m]) for m in subscriptions)
        assert moved == len(after["new"]), "every moved partition went to the newcomer"


@settings(max_examples=200, deadline=None)
@given(group=groups(), shuffle=st.randoms(use_true_random=False))
def test_range_is_co_partitioned_and_independent_of_member_order_and_history(group, shuffle) -> None:  # type: ignore[no-untyped-def]
    topics, subscriptions, previous = group
    result = RangeAssignor().assign(members(subscriptions, previous), topics)
    order = list(subscriptions)
    shuffle.shuffle(order)
    assert RangeAssignor().assign(members({m: subscriptions[m] for m in order}), topics) == result
    for member, partitions in result.items():
        by_topic: dict[str, set[int]] = {}
        for t, p in partitions:
            by_topic.setdefault(t, set()).add(p)
        for t, numbers in by_topic.items():
            assert numbers == set(range(min(numbers), max(numbers) + 1)), f"{member}'s {t} is contiguous"
        for t1 in by_topic:  # same subscribers and partition count: the same partition numbers
            for t2 in by_topic:
                same_subscribers = all((t1 in s) == (t2 in s) for s in subscriptions.values())
                if same_subscribers and topics[t1] == topics[t2]:
                    assert by_topic[t1] == by_topic[t2]

"""Moved items as an operator counts them: a static member (`group.instance.id`) whose process
restarts under a new member id keeps its partitions, so they have not moved; a lost worker's
connectors and tasks, held back for the scheduled delay, have moved once another worker runs them."""

from __future__ import annotations

import pytest

from coordinator.groups.settings import GroupSettings
from tests.support import connect_case_studies as case_studies
from tests.support.connect_driver import ConnectDriver
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


def test_a_lost_workers_work_held_for_the_delay_counts_as_moved_when_reassigned() -> None:
    """The draft's 'Worker Leaving the Group': W2's BC0 and BT1 wait, owned by nobody, for the
    scheduled delay, then go to W1 and W3. They moved, though the group settled in between."""
    h = GroupHarness(GroupSettings(connect_session_timeout_ms=10000))
    d = ConnectDriver(lambda api_key, fields: h.call(api_key, 0, **fields))

    def expire(gone: str, alive: list[str]) -> None:
        while gone in d.state()["members"]:
            h.advance(1000)
            for w in alive:
                d.beat(w)

    case_studies.a_worker_leaving(d, expire)
    figures = h.core.metrics.groups["connect-cluster"]
    # W2 joins and takes BC0 BT1 from W1 (2), W3 joins and takes AT2 (1), W2 is lost and after
    # the delay BC0 goes to W1 and BT1 to W3 (2).
    assert (figures.moved, figures.rebalances, figures.members) == (5, 5, 2)

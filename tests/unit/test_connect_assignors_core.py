"""Connect groups with two client assignors, eager and incremental, in the pure core.

The coordinator (virtual clock): the assignor is the first, in priority order, that every
worker supports with overlapping versions, and a worker that would leave none is refused
with UNSUPPORTED_ASSIGNOR; a target computed by `eager` makes every worker give up
everything before anything is assigned, and a property test checks that over random
scripts of a group mixing eager-only workers with workers offering both. The workers'
side (workers/distributed/assignor/assignors.py): what a worker offers follows `connect.protocol`; an eager
target ignores stickiness and holds nothing back for a crashed worker.
"""

from __future__ import annotations

from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from connect_rebalance.errors import ErrorCode
from connect_rebalance.protocol.connect_group import ClientAssignor
from connect_rebalance.work import CONNECTOR, Work, work_of
from tests.support.connect_case_studies import computing
from tests.support.connect_driver import ConnectDriver, notation
from tests.unit.test_connect_group_core import WORKERS, Cluster, driver, operation
from workers.distributed.assignor import assignors
from workers.distributed.assignor.lost_work import HeldWork

pytestmark = pytest.mark.unit
EAGER = ClientAssignor("eager", 1, 1, 1)
SESSIONED = ClientAssignor("sessioned", 1, 1, 1)
BOTH = [SESSIONED, EAGER]  # what connect.protocol=sessioned or compatible offers


def offered(d: ConnectDriver, worker: str) -> list[tuple[str, int, int]]:
    member = next(m for m in d.describe()["members"] if m["member_id"] == worker)
    return [(a["name"], a["minimum_version"], a["maximum_version"]) for a in member["assignors"]]


def assert_nothing_assigned_while_work_from_an_older_epoch_is_held(d: ConnectDriver) -> None:
    """The eager barrier, from the coordinator's view: while any worker still holds (runs or
    must stop) work from before the current target, no worker has anything of that target."""
    group = d.describe()
    if group["assignor_name"] != "eager":
        return
    epoch, members = group["assignment_epoch"], group["members"]
    held = [m for m in members if work_of(m["assignment"]) | work_of(m["pending_revocation"])]
    stopping = [m["member_id"] for m in held if m["member_epoch"] < epoch]
    assigned = [m["member_id"] for m in held if m["member_epoch"] == epoch]
    assert not (stopping and assigned), f"{assigned} got work while {stopping} still hold older work"


def settle(d: ConnectDriver, *workers: str) -> None:
    for _ in range(4):
        for worker in workers:
            d.beat(worker)
            assert_nothing_assigned_while_work_from_an_older_epoch_is_held(d)


# -- which assignor the group uses ---------------------------------------------------------


def test_the_first_assignor_in_priority_order_that_every_worker_supports_with_overlapping_versions() -> None:
    _, d = driver()
    d.join("W1", assignors=[ClientAssignor("sessioned", 1, 3, 1), ClientAssignor("eager", 1, 1, 1)])
    d.join("W2", assignors=[ClientAssignor("sessioned", 2, 3, 2), ClientAssignor("eager", 0, 1, 0)])
    d.join("W5", assignors=[ClientAssignor("eager", 1, 1, 1), ClientAssignor("sessioned", 1, 3, 1)])
    chosen = computing(d, "W1", "W2", "W5")
    assert chosen == "W1", "the only worker whose sessioned versions cover 1-3"
    prepared = d.compute(chosen, {"W1": "AC0 AT1", "W2": "BC0", "W5": "BT1"})
    # W1, the longest-standing worker, lists sessioned first (W5 lists eager first).
    assert (prepared["assignor_name"], prepared["assignor_minimum_version"],
            prepared["assignor_maximum_version"]) == ("sessioned", 1, 3)  # fmt: skip
    assert d.describe()["assignor_name"] == "sessioned"

    # An eager-only worker: eager is the one assignor all four support; versions 0-1 overlap at 1.
    assert d.join("W3", assignors=[ClientAssignor("eager", 1, 1, 1)])["error_code"] == 0
    chosen = computing(d, "W1", "W2", "W5", "W3")
    assert chosen == "W2", "the only worker whose eager versions cover 0-1"
    prepared = d.compute(chosen, {"W1": "AC0", "W2": "AT1", "W5": "BC0", "W3": "BT1"})
    assert (prepared["assignor_name"], prepared["assignor_minimum_version"],
            prepared["assignor_maximum_version"]) == ("eager", 0, 1)  # fmt: skip
    assert d.describe()["assignor_name"] == "eager"

    # A joiner sharing no assignor with overlapping versions is refused, and says why.
    refused = d.join("W4", assignors=[ClientAssignor("sessioned", 1, 3, 1), ClientAssignor("eager", 2, 2, 2)])
    assert refused["error_code"] == ErrorCode.UNSUPPORTED_ASSIGNOR
    assert "[sessioned v1-3, eager v2-2]" in refused["error_message"]
    assert "[eager v1-1]" in refused["error_message"], "the group's offers are named"
    assert "W4" not in d.state()["members"]

    # So is a worker changing its assignors to leave the group without one.
    group_epoch = d.describe()["group_epoch"]
    changed = d.beat("W2", assignors=[ClientAssignor("sessioned", 2, 3, 2)])
    assert changed["error_code"] == ErrorCode.UNSUPPORTED_ASSIGNOR
    assert offered(d, "W2") == [("sessioned", 2, 3), ("eager", 0, 1)], "its assignors are unchanged"
    assert d.describe()["group_epoch"] == group_epoch

    # The eager-only worker leaves: the group is incremental again from the next target.
    d.leave("W3")
    chosen = computing(d, "W1", "W2", "W5")
    assert chosen == "W1", "W2 no longer covers the span (sessioned 1-3)"
    assert d.compute(chosen, {"W1": "AC0 AT1", "W2": "BC0", "W5": "BT1"})["assignor_name"] == "sessioned"
    assert d.describe()["assignor_name"] == "sessioned"


# -- an eager round --------------------------------------------------------------------------


def a_third_worker_joins(offers: list[ClientAssignor]) -> tuple[ConnectDriver, int]:
    """W1 runs AC0 AT1 AT2, W2 runs BC0 BT1; W3 joins and a target is installed in which W1
    keeps AC0 AT1 and W3 gets BT1 and the new CC0, which nobody runs."""
    _, d = driver()
    d.join("W1", assignors=offers)
    d.join("W2", assignors=offers)
    d.compute(computing(d, "W1", "W2"), {"W1": "AC0 AT1 AT2", "W2": "BC0 BT1"})
    settle(d, "W1", "W2")
    assert (notation(d.runs["W1"]), notation(d.runs["W2"])) == ("AC0 AT1 AT2", "BC0 BT1")
    d.join("W3", assignors=offers)
    d.compute(computing(d, "W1", "W2", "W3"), {"W1": "AC0 AT1", "W2": "AT2 BC0", "W3": "BT1 CC0"})
    return d, d.describe()["assignment_epoch"]


def test_an_eager_round_revokes_everything_before_anything_is_assigned() -> None:
    d, epoch = a_third_worker_joins([EAGER])
    assert d.describe()["assignor_name"] == "eager"
    steps = []
    for worker in ("W1", "W3", "W1", "W2", "W3", "W2", "W1", "W3"):
        d.beat(worker)
        assert_nothing_assigned_while_work_from_an_older_epoch_is_held(d)
        steps.append((worker, d.epoch[worker], notation(d.runs[worker])))
    assert steps == [
        ("W1", epoch - 1, ""),  # told to stop everything, AC0 AT1 included, at its old epoch
        ("W3", epoch, ""),  # CC0 is free, but W1 and W2 have not stopped everything yet
        ("W1", epoch, ""),  # W1 reported it stopped: the new epoch, nothing yet (W2 still runs)
        ("W2", epoch - 1, ""),  # told to stop everything
        ("W3", epoch, ""),  # W2 has not reported it yet
        ("W2", epoch, "AT2 BC0"),  # the last one stopped: W2 starts its part at once
        ("W1", epoch, "AC0 AT1"),  # AC0 and AT1 start again
        ("W3", epoch, "BT1 CC0"),
    ]
    assert d.describe()["group_state"] == "Stable"


def test_a_worker_joining_during_an_eager_round_joins_that_round() -> None:
    d, epoch = a_third_worker_joins([EAGER])
    for worker in ("W1", "W2", "W1"):  # W1 and W2 are told to stop everything; W1 has stopped
        d.beat(worker)
    d.join("W4", assignors=[EAGER])
    d.beat("W2")  # the last one stops: the target of `epoch` is free, but a newer one is due
    assert (d.epoch["W2"], notation(d.runs["W2"])) == (epoch, "")
    d.beat("W1")
    d.beat("W3")
    assert not any(d.runs.values()), "nothing starts only to be stopped again"
    target = {"W1": "AC0 BT1", "W2": "AT1", "W3": "AT2", "W4": "BC0 CC0"}
    d.compute(computing(d, "W1", "W2", "W3", "W4"), target)
    settle(d, "W1", "W2", "W3", "W4")
    assert {w: notation(d.runs[w]) for w in target} == target


def test_a_restarted_coordinator_carries_on_with_the_eager_round() -> None:
    h, d = driver()
    d.join("W1", assignors=[EAGER])
    d.join("W2", assignors=[EAGER])
    d.compute(computing(d, "W1", "W2"), {"W1": "AC0 AT1 AT2", "W2": "BC0 BT1"})
    settle(d, "W1", "W2")
    d.join("W3", assignors=[EAGER])
    d.compute(computing(d, "W1", "W2", "W3"), {"W1": "AC0 AT1", "W2": "AT2 BC0", "W3": "BT1 CC0"})
    d.beat("W1")  # told to stop everything
    restarted, d2 = driver()
    for record in h.records:
        restarted.core.replay(record)
    restarted.core.load_complete(h.now)
    d2.epoch, d2.runs = dict(d.epoch), dict(d.runs)
    assert d2.describe()["assignor_name"] == "eager"
    d2.beat("W3")
    assert d2.runs["W3"] == frozenset(), "W1 and W2 have not stopped everything yet"
    settle(d2, "W1", "W2", "W3")
    assert {w: notation(d2.runs[w]) for w in ("W1", "W2", "W3")} == {
        "W1": "AC0 AT1", "W2": "AT2 BC0", "W3": "BT1 CC0"
    }  # fmt: skip


def test_the_same_round_under_the_incremental_assignor_stops_only_what_moves() -> None:
    d, epoch = a_third_worker_joins(BOTH)
    assert d.describe()["assignor_name"] == "sessioned"
    d.beat("W1")
    assert (d.epoch["W1"], notation(d.runs["W1"])) == (epoch - 1, "AC0 AT1"), "AT2 stops, AC0 AT1 run on"
    d.beat("W3")
    assert (d.epoch["W3"], notation(d.runs["W3"])) == (epoch, "CC0"), "free work starts at once"


def test_an_eager_only_worker_turns_the_group_eager_and_back_when_it_leaves() -> None:
    d, epoch = a_third_worker_joins(BOTH)
    settle(d, "W1", "W2", "W3")
    d.join("E", assignors=[EAGER])
    assert d.beat("W1")["member_epoch"] == epoch, "nothing changes until the next target"
    target = {"W1": "AC0 AT1", "W2": "AT2", "W3": "BC0 BT1", "E": "CC0"}
    d.compute(computing(d, "W1", "W2", "W3", "E"), target)
    assert d.describe()["assignor_name"] == "eager"
    d.beat("W1")
    assert notation(d.runs["W1"]) == "", "W1 keeps AC0 AT1 but stops them first"
    settle(d, "W1", "W2", "W3", "E")
    assert {w: notation(d.runs[w]) for w in target} == target

    d.leave("E")
    d.compute(computing(d, "W1", "W2", "W3"), {"W1": "AC0 AT1", "W2": "AT2 CC0", "W3": "BC0 BT1"})
    assert d.describe()["assignor_name"] == "sessioned"
    d.beat("W1")
    assert notation(d.runs["W1"]) == "AC0 AT1", "incremental again: what stays runs on"
    d.beat("W2")
    assert notation(d.runs["W2"]) == "AT2 CC0"


# -- a property: random scripts over a group mixing both kinds of workers ----------------------


class MixedCluster(Cluster):
    def check_nothing_held_twice(self) -> None:
        super().check_nothing_held_twice()
        assert_nothing_assigned_while_work_from_an_older_epoch_is_held(self.d)

    def _beat(self, worker: str) -> None:
        """Under an eager target a worker reaches a new epoch only having stopped everything."""
        epoch, ran = self.d.epoch.get(worker, 0), self.d.runs.get(worker, frozenset())
        answer = self.d.beat(worker)
        moved = answer["error_code"] == 0 and answer["member_epoch"] > epoch
        if moved and self.d.describe()["assignor_name"] == "eager":
            assert not ran, f"{worker} kept {notation(ran)} into epoch {answer['member_epoch']}"
        self._check_error(worker)


# Heartbeats and computations are frequent, so eager rounds are often caught half-way.
busy_operation = st.one_of(
    operation,
    st.tuples(st.just("beat"), st.sampled_from(WORKERS)),
    st.tuples(st.just("compute"), st.integers(0, 2**16)),
)


@settings(max_examples=100, deadline=None)
@given(st.lists(busy_operation, min_size=20, max_size=80))
def test_eager_workers_joining_and_leaving_never_get_work_before_everyone_stopped(
    script: list[tuple[str, Any]],
) -> None:
    cluster = MixedCluster({"W1": BOTH, "W2": [EAGER], "W3": BOTH, "W4": [EAGER]})
    for op in script:
        cluster.run(op)
    cluster.quiesce()


# -- the workers' side -------------------------------------------------------------------------


def test_what_a_worker_offers_follows_connect_protocol() -> None:
    assert assignors.offered("eager") == ("eager",)
    assert assignors.offered("compatible") == assignors.offered("sessioned") == ("sessioned", "eager")


ITEMS = frozenset({("a", CONNECTOR), ("b", CONNECTOR), *(("a", i) for i in range(4)), ("b", 0), ("b", 1)})
MEMBERS = {"m1": "w1", "m2": "w2", "m3": "w3"}


def plan(assignor: str, current: dict[str, frozenset[Work]], last_owner: dict[Work, str]) -> Any:
    return assignors.plan(assignor, MEMBERS, current, ITEMS, last_owner, set(), HeldWork(), 100.0, 300.0)


def test_an_eager_target_ignores_stickiness() -> None:
    dealt = {  # Kafka Connect's EagerAssignor: connectors by name, then tasks, one cursor over members
        "m1": frozenset({("a", CONNECTOR), ("a", 1), ("b", 0)}),
        "m2": frozenset({("b", CONNECTOR), ("a", 2), ("b", 1)}),
        "m3": frozenset({("a", 0), ("a", 3)}),
    }
    current = {"m1": frozenset({("a", CONNECTOR), ("a", 0), ("a", 2)}),
               "m2": frozenset({("b", CONNECTOR), ("a", 1), ("b", 0)}),
               "m3": frozenset({("a", 3), ("b", 1)})}  # fmt: skip
    sticky, _ = plan(assignors.SESSIONED, current, {})
    assert sticky == current, "balanced already: the incremental assignor moves nothing"
    eager, _ = plan(assignors.EAGER, current, {})
    assert eager == dealt == plan(assignors.EAGER, {}, {})[0], "dealt afresh, whatever each member ran"


def test_lost_work_is_not_held_under_eager() -> None:
    current = {"m1": frozenset({("a", CONNECTOR), ("a", 0)}), "m2": frozenset({("b", CONNECTOR), ("b", 0)}),
               "m3": frozenset()}  # fmt: skip
    lost = ITEMS - current["m1"] - current["m2"]
    ran_on_a_crashed_worker = dict.fromkeys(lost, "w9")
    target, held = plan(assignors.SESSIONED, current, ran_on_a_crashed_worker)
    assert set(held.held) == lost and not lost & set().union(*target.values()), "incremental holds it"
    target, held = plan(assignors.EAGER, current, ran_on_a_crashed_worker)
    assert held.held == {} and set().union(*target.values()) == ITEMS, "eager deals it out at once"

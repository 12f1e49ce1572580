"""The worker assignor in Kafka Connect's scenarios (its IncrementalCooperativeAssignorTest),
on a virtual clock, and a property test over random histories.

The assignor here computes each member's target (`workers/distributed/assignor/`: the
balance rule of balanced_target.py, and lost_work.py's memory of who ran what); moving an item is then
revoke-then-assign, done by the coordinator on `connect` and by `incremental_deltas` in two
rounds on `classic`. So where Kafka Connect's tests assert a revoking round and then an
assigning one, these assert the target and, for classic, the two rounds' deltas.

Where this assignor does more than Kafka Connect's, the scenario says so: each connector's
tasks are spread too, a worker that left on purpose has its work placed at once, and a new
computing worker still holds a crashed worker's work (it learns who ran what from the status
topic) instead of treating it as new.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Mapping
from dataclasses import dataclass, field

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from connect_rebalance.work import CONNECTOR, Work
from workers.distributed.assignor import assignors
from workers.distributed.assignor.lost_work import ComputingMemory
from workers.distributed.membership.classic import incremental_deltas

pytestmark = pytest.mark.unit
DELAY = 300.0  # scheduled.rebalance.max.delay.ms, as Kafka Connect's default (seconds here)


def connector_work(name: str, tasks: int) -> frozenset[Work]:
    return frozenset({(name, CONNECTOR), *((name, t) for t in range(tasks))})


@dataclass
class Cluster:
    """A group as the computing worker sees it: members (member id -> worker id), what each
    holds now (the current target), the configured work, and the computing worker's memory.
    `status` is who the status topic says last ran each item (what a new computing worker
    goes by)."""

    work: frozenset[Work]
    delay: float = DELAY
    now: float = 0.0
    members: dict[str, str] = field(default_factory=dict)
    holding: dict[str, frozenset[Work]] = field(default_factory=dict)
    left: set[str] = field(default_factory=set)
    memory: ComputingMemory = field(default_factory=ComputingMemory)
    status: dict[Work, str] = field(default_factory=dict)
    epoch: int = 0
    joins: Counter[str] = field(default_factory=Counter)

    def join(self, worker: str) -> str:
        self.joins[worker] += 1
        member = f"{worker}#{self.joins[worker]}"
        self.members[member] = worker
        self.holding[member] = frozenset()
        self.left.discard(worker)  # its presence record says UP again
        return member

    def crash(self, worker: str) -> None:
        for member in [m for m, w in self.members.items() if w == worker]:
            del self.members[member], self.holding[member]

    def leave(self, worker: str) -> None:
        self.crash(worker)
        self.left.add(worker)  # the LEFT presence record, written before leaving

    def new_computing_worker(self) -> None:
        """Another worker computes from now on: it remembers nothing, the status topic all."""
        self.memory = ComputingMemory()

    def plan(self) -> dict[str, frozenset[Work]]:
        """The next target, not applied (a rebalance whose assignment is not delivered)."""
        memory = self.memory
        memory.recall(self.epoch, self.epoch + 1)
        target, memory.held = assignors.plan(
            assignors.SESSIONED, self.members, self.holding, self.work,
            {**self.status, **memory.last_owner}, self.left, memory.held, self.now, self.delay,
        )  # fmt: skip
        for member, items in target.items():
            memory.last_owner.update(dict.fromkeys(items, self.members[member]))
        return target

    def rebalance(self) -> dict[str, frozenset[Work]]:
        target = self.plan()
        self.holding = dict(target)
        self.epoch += 1
        for member, items in target.items():
            self.status.update(dict.fromkeys(items, self.members[member]))
        return target

    def by_worker(self) -> dict[str, frozenset[Work]]:
        return {self.members[m]: items for m, items in self.holding.items()}

    def counts(self) -> tuple[list[int], list[int]]:
        """Sorted per-worker counts of connectors and of tasks (Kafka Connect's assertions)."""
        held = list(self.holding.values())
        connectors = sorted(sum(1 for _, t in items if t == CONNECTOR) for items in held)
        tasks = sorted(sum(1 for _, t in items if t != CONNECTOR) for items in held)
        return connectors, tasks

    def held(self) -> set[Work]:
        return set(self.memory.held.held)


def assert_balanced_and_complete(cluster: Cluster) -> None:
    """Kafka Connect's assertBalancedAllocation and assertCompleteAllocation, with the spread."""
    assigned = [item for items in cluster.holding.values() for item in items]
    assert len(assigned) == len(set(assigned)), "an item assigned twice"
    assert set(assigned) == cluster.work, f"not assigned: {sorted(cluster.work - set(assigned))}"
    connectors, tasks = cluster.counts()
    assert connectors[-1] - connectors[0] <= 1 and tasks[-1] - tasks[0] <= 1, (connectors, tasks)
    for name in {c for c, _ in cluster.work}:
        own = [sum(1 for c, t in items if c == name and t != CONNECTOR) for items in cluster.holding.values()]
        assert max(own) - min(own) <= 1, f"{name}'s tasks pile up: {own}"


def two_connectors() -> Cluster:
    """Kafka Connect's fixture: connector1 and connector2, four tasks each, on worker1."""
    cluster = Cluster(connector_work("connector1", 4) | connector_work("connector2", 4))
    cluster.join("worker1")
    cluster.rebalance()
    return cluster


# -- joins ------------------------------------------------------------------------------


def test_a_worker_joins_and_takes_half_after_worker1_revokes_it() -> None:
    cluster = two_connectors()
    assert cluster.counts() == ([2], [8])
    owned = dict(cluster.holding)
    cluster.join("worker2")
    target = cluster.rebalance()
    assert cluster.counts() == ([1, 1], [4, 4]) and not cluster.held()
    # On classic: the first round revokes what moves, the follow-up assigns it.
    first = incremental_deltas({**owned, "worker2#1": frozenset()}, target, 0)
    assert first.members["worker2#1"] == (frozenset(), frozenset()), "nothing given while worker1 holds it"
    assert first.members["worker1#1"][1] == owned["worker1#1"] - target["worker1#1"]
    second = incremental_deltas({"worker1#1": target["worker1#1"], "worker2#1": frozenset()}, target, 0)
    assert second.members["worker2#1"] == (target["worker2#1"], frozenset())
    assert_balanced_and_complete(cluster)


def test_workers_joining_one_after_another_each_take_only_their_share() -> None:
    """testAssignmentsWhenWorkersJoinAfterRevocations: three connectors of four tasks, workers
    2 to 6 joining in a row. Kafka Connect delays successive revoking rounds (40 ms, 1.6 s,
    ...) and balances at the end; a target here is balanced at every join, and each join
    moves only what the joining worker takes."""
    cluster = Cluster(connector_work("c1", 4) | connector_work("c2", 4) | connector_work("c3", 4))
    cluster.join("w1")
    cluster.rebalance()
    for n in range(2, 7):
        before = cluster.by_worker()
        cluster.join(f"w{n}")
        cluster.rebalance()
        assert_balanced_and_complete(cluster)
        after = cluster.by_worker()
        moved = sum(len(items - after[w]) for w, items in before.items())
        assert moved == len(after[f"w{n}"]), f"w{n}'s join moved items between the others"
    assert cluster.counts() == ([0, 0, 0, 1, 1, 1], [2, 2, 2, 2, 2, 2])


def test_deleted_connectors_leave_the_rest_balanced() -> None:
    cluster = Cluster(connector_work("c1", 4) | connector_work("c2", 4) | connector_work("c3", 4))
    cluster.join("w1"), cluster.join("w2")
    cluster.rebalance()
    assert cluster.counts() == ([1, 2], [6, 6])
    cluster.work = cluster.work - connector_work("c3", 4)
    cluster.rebalance()
    assert cluster.counts() == ([1, 1], [4, 4])
    assert_balanced_and_complete(cluster)


# -- the scheduled delay ----------------------------------------------------------------


def test_with_no_delay_a_lost_workers_work_is_placed_at_once() -> None:
    """testScheduledDelayIsDisabled and testImmediateRevocationsWhenMaxDelayIs0."""
    cluster = two_connectors()
    cluster.delay = 0.0
    cluster.join("worker2")
    cluster.rebalance()
    cluster.crash("worker2")
    cluster.rebalance()
    assert cluster.counts() == ([2], [8]) and not cluster.held()


def test_a_worker_lost_for_good_has_its_work_held_for_the_delay_then_placed() -> None:
    """testTaskAssignmentWhenWorkerLeavesPermanently: held for the delay, which does not slide."""
    cluster = two_connectors()
    cluster.join("worker2")
    cluster.rebalance()
    lost = cluster.by_worker()["worker2"]
    cluster.crash("worker2")
    cluster.now = 1000.0
    cluster.rebalance()
    assert cluster.held() == lost and cluster.memory.held.next_deadline() == 1000.0 + DELAY
    assert cluster.counts() == ([1], [4]), "nothing moves while the work is held"
    cluster.now += DELAY / 2
    cluster.rebalance()
    assert cluster.memory.held.next_deadline() == 1000.0 + DELAY, "the deadline does not slide"
    cluster.now = 1000.0 + DELAY
    cluster.rebalance()
    assert not cluster.held() and cluster.counts() == ([2], [8])


def test_a_worker_joining_during_the_delay_gets_its_share_of_the_rest_and_the_lost_work_waits() -> None:
    """testWorkerJoiningDuringDelayedRebalance: the joiner is balanced in at once over the work
    not held; the lost work is placed when the delay ends, and the result is balanced."""
    cluster = Cluster(connector_work("c1", 4) | connector_work("c2", 4) | connector_work("c3", 4))
    for worker in ("w1", "w2", "w3"):
        cluster.join(worker)
    cluster.rebalance()
    lost = cluster.by_worker()["w3"]
    cluster.crash("w3")
    cluster.now = 10.0
    cluster.rebalance()
    cluster.now = 10.0 + DELAY / 2
    cluster.join("w4")
    cluster.rebalance()
    assert cluster.held() == lost
    assert cluster.by_worker()["w4"], "the joiner takes its share of what is not held"
    cluster.now = 10.0 + DELAY
    cluster.rebalance()
    assert not cluster.held()
    assert_balanced_and_complete(cluster)


def test_a_worker_bouncing_back_within_the_delay_gets_exactly_its_work_back() -> None:
    """testTaskAssignmentWhenWorkerBounces: nothing else moves, the delay ends at once."""
    cluster = two_connectors()
    cluster.join("worker2")
    cluster.rebalance()
    before = cluster.by_worker()
    cluster.crash("worker2")
    cluster.now = 50.0
    cluster.rebalance()
    cluster.now = 50.0 + 3 * DELAY / 4
    cluster.join("worker2")
    cluster.rebalance()
    assert cluster.by_worker() == before and not cluster.held()


def test_a_worker_that_left_on_purpose_has_its_work_placed_at_once() -> None:
    """Beyond Kafka Connect: a graceful leave (its LEFT record) is not waited for."""
    cluster = two_connectors()
    cluster.join("worker2")
    cluster.rebalance()
    cluster.leave("worker2")
    cluster.rebalance()
    assert cluster.counts() == ([2], [8]) and not cluster.held()


# -- the computing worker (Kafka Connect's leader) leaves or bounces ----------------------


def test_the_computing_worker_lost_for_good_has_its_work_held_by_the_next_one() -> None:
    """testTaskAssignmentWhenLeaderLeavesPermanently: Kafka Connect's new leader has no
    previous assignment and places the missing work at once. Here the next computing worker
    reads who ran it from the status topic, so a crashed leader's work waits for the delay
    like any crashed worker's (a bounce gets it back), and is then placed."""
    cluster = Cluster(connector_work("c1", 4) | connector_work("c2", 4))
    for worker in ("w1", "w2", "w3"):
        cluster.join(worker)
    cluster.rebalance()
    lost = cluster.by_worker()["w1"]
    cluster.crash("w1")
    cluster.new_computing_worker()
    cluster.rebalance()
    assert cluster.held() == lost
    cluster.now = DELAY
    cluster.rebalance()
    assert cluster.counts() == ([1, 1], [4, 4])
    assert_balanced_and_complete(cluster)


def test_the_computing_worker_bouncing_back_gets_its_work_back() -> None:
    """testTaskAssignmentWhenLeaderBounces."""
    cluster = Cluster(connector_work("c1", 4) | connector_work("c2", 4))
    for worker in ("w1", "w2", "w3"):
        cluster.join(worker)
    cluster.rebalance()
    before = cluster.by_worker()
    cluster.crash("w1")
    cluster.new_computing_worker()
    cluster.rebalance()
    cluster.join("w1")
    cluster.new_computing_worker()
    cluster.rebalance()
    assert cluster.by_worker() == before and not cluster.held()


def test_a_new_computing_worker_with_no_status_to_go_by_places_everything_at_once() -> None:
    """Kafka Connect's new leader, when the status topic names nobody (a fresh cluster)."""
    cluster = two_connectors()
    cluster.join("worker2")
    cluster.rebalance()
    cluster.crash("worker2")
    cluster.new_computing_worker()
    cluster.status = {}
    cluster.rebalance()
    assert cluster.counts() == ([2], [8]) and not cluster.held()


# -- an assignment that was not delivered, deletions and duplicated claims ----------------


def test_an_assignment_that_was_not_delivered_is_computed_again_the_same() -> None:
    """testTaskAssignmentWhenFirstAssignmentAttemptFails and ...SubsequentAssignmentAttemptFails:
    the members still hold what they held; computing again gives the same target."""
    cluster = Cluster(connector_work("connector1", 4) | connector_work("connector2", 4))
    cluster.join("worker1"), cluster.join("worker2")
    first = cluster.plan()  # never delivered: nobody holds anything yet
    assert cluster.holding == {"worker1#1": frozenset(), "worker2#1": frozenset()}
    assert cluster.rebalance() == first
    cluster.join("worker3")
    failed = cluster.plan()
    assert cluster.rebalance() == failed
    assert_balanced_and_complete(cluster)


def test_a_deleted_connector_leaves_every_target_and_nothing_of_it_is_held() -> None:
    cluster = two_connectors()
    cluster.join("worker2")
    cluster.rebalance()
    cluster.crash("worker2")
    cluster.rebalance()
    cluster.work = cluster.work - connector_work("connector2", 4)
    cluster.rebalance()
    assert not any(c == "connector2" for c, _ in cluster.held())
    assert all(c != "connector2" for items in cluster.holding.values() for c, _ in items)


def test_an_item_two_workers_claim_is_kept_by_one() -> None:
    """testTaskAssignmentWhenTasksDuplicatedInWorkerAssignment: worker2 joins already running
    connector1 and its tasks, which worker1 runs too. Kafka Connect revokes both copies; the
    target here keeps each item with one of them, and the result is balanced."""
    cluster = two_connectors()
    member = cluster.join("worker2")
    cluster.holding[member] = connector_work("connector1", 4)
    cluster.rebalance()
    assigned = [item for items in cluster.holding.values() for item in items]
    assert len(assigned) == len(set(assigned))
    assert cluster.counts() == ([1, 1], [4, 4])


# -- random histories -------------------------------------------------------------------

WORKERS = ["w1", "w2", "w3", "w4", "w5"]
events = st.one_of(
    st.tuples(st.just("join"), st.sampled_from(WORKERS)),
    st.tuples(st.just("crash"), st.sampled_from(WORKERS)),
    st.tuples(st.just("leave"), st.sampled_from(WORKERS)),
    st.tuples(st.just("bounce"), st.sampled_from(WORKERS)),
    st.tuples(st.just("create"), st.integers(0, 7)),
    st.tuples(st.just("reconfigure"), st.integers(0, 7)),
    st.tuples(st.just("delete"), st.integers(0, 7)),
    st.tuples(st.just("wait"), st.floats(0, 2 * DELAY)),
    st.tuples(st.just("new-computing-worker"), st.just(0)),
)


def apply(cluster: Cluster, event: tuple[str, object], tasks: Mapping[str, int]) -> None:
    kind, arg = event
    live = set(cluster.members.values())
    if kind == "join" and arg not in live:
        cluster.join(str(arg))
    elif kind in ("crash", "leave") and arg in live and len(live) > 1:
        (cluster.crash if kind == "crash" else cluster.leave)(str(arg))
    elif kind == "bounce" and arg in live:
        cluster.crash(str(arg))
        cluster.join(str(arg))
    elif kind in ("create", "reconfigure"):
        name = f"c{arg}"
        cluster.work = frozenset(i for i in cluster.work if i[0] != name) | connector_work(name, tasks[name])
    elif kind == "delete":
        cluster.work = frozenset(i for i in cluster.work if i[0] != f"c{arg}")
    elif kind == "wait":
        cluster.now += float(arg)  # type: ignore[arg-type]
    elif kind == "new-computing-worker":
        cluster.new_computing_worker()


@settings(max_examples=200, deadline=None)
@given(
    history=st.lists(events, max_size=40),
    task_counts=st.lists(st.integers(0, 9), min_size=8, max_size=8),
    reconfigured=st.lists(st.integers(0, 9), min_size=8, max_size=8),
)
def test_any_history_once_quiet_is_balanced_spread_and_complete(
    history: list[tuple[str, object]], task_counts: list[int], reconfigured: list[int]
) -> None:
    """Random joins, crashes, graceful leaves, bounces, connector creations, reconfigurations
    and deletions, with time passing. After every rebalance: nothing is assigned twice and
    every item is assigned or held for a lost worker. Once quiet (the delay has passed):
    connectors and tasks are each balanced within one, each connector's tasks are spread,
    and every lost item has been placed."""
    cluster = Cluster(frozenset())
    cluster.join("w1")
    sizes = {f"c{n}": task_counts[n] for n in range(8)}
    for event in history:
        if event[0] == "reconfigure":
            sizes[f"c{event[1]}"] = reconfigured[int(event[1])]  # type: ignore[call-overload]
        apply(cluster, event, sizes)
        cluster.rebalance()
        assigned = [item for items in cluster.holding.values() for item in items]
        assert len(assigned) == len(set(assigned)), "an item assigned twice"
        assert set(assigned) | cluster.held() == cluster.work and not set(assigned) & cluster.held()
    cluster.now += cluster.delay
    cluster.rebalance()
    assert not cluster.held(), "lost work still held after the delay"
    assert_balanced_and_complete(cluster)
    again = dict(cluster.holding)
    cluster.rebalance()
    assert cluster.holding == again, "a quiet group's target moves nothing"

"""Connect groups in the pure core, on a virtual clock: the draft's case studies, request
validation, fencing and the lost-response case, assignor and worker selection, install
validation, re-selection when the chosen worker does not install, replay, and a property
test that no connector or task is ever held by two workers and a quiet group converges."""

from __future__ import annotations

from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from connect_rebalance.errors import ErrorCode
from connect_rebalance.protocol.connect_group import ClientAssignor
from connect_rebalance.work import work_of
from coordinator.groups.settings import GroupSettings
from tests.support import connect_case_studies as case_studies
from tests.support.connect_case_studies import EVERYTHING, Expire, computing
from tests.support.connect_driver import ConnectDriver, notation, work
from tests.support.group_harness import GroupHarness

pytestmark = pytest.mark.unit


SESSION_MS = 10000


def driver(harness: GroupHarness | None = None) -> tuple[GroupHarness, ConnectDriver]:
    h = harness or GroupHarness(GroupSettings(connect_session_timeout_ms=SESSION_MS))
    return h, ConnectDriver(lambda api_key, fields: h.call(api_key, 0, **fields))


def expire_on_the_virtual_clock(h: GroupHarness, d: ConnectDriver) -> Expire:
    def expire(gone: str, alive: list[str]) -> None:
        silent_ms = 0
        while gone in d.state()["members"] and silent_ms <= SESSION_MS:
            h.advance(1000)
            silent_ms += 1000
            for w in alive:
                d.beat(w)
        assert gone not in d.state()["members"], (
            f"{gone} is still a member {silent_ms} ms after its last heartbeat"
        )

    return expire


def two_workers() -> tuple[GroupHarness, ConnectDriver]:
    h, d = driver()
    case_studies.empty_group_then_w1_joins(d)
    case_studies.w2_joins(d)
    return h, d


def test_case_study_empty_group_then_w1_joins_and_gets_everything() -> None:
    case_studies.empty_group_then_w1_joins(driver()[1])


def test_case_study_w2_joins_and_w1_revokes_bc0_bt1_before_w2_gets_them() -> None:
    two_workers()


def test_case_study_a_worker_leaving_keeps_assignments_then_a_reason_change_reassigns() -> None:
    h, d = driver()
    case_studies.a_worker_leaving(d, expire_on_the_virtual_clock(h, d))


def test_case_study_a_worker_bouncing_back_within_the_delay_gets_its_work_back() -> None:
    h, d = driver()
    case_studies.a_worker_bouncing(d, expire_on_the_virtual_clock(h, d))


@pytest.mark.parametrize(
    ("change", "message"),
    [
        ({"group_id": ""}, "GroupId"),
        ({"member_id": ""}, "MemberId"),
        ({"member_epoch": -3}, "MemberEpoch"),
        ({"instance_id": ""}, "InstanceId"),
        ({"rebalance_timeout_ms": 0}, "RebalanceTimeoutMs"),
        ({"url": None}, "Url"),
        ({"client_assignors": []}, "ClientAssignors"),
        ({"server_assignor": "uniform"}, "ServerAssignor and ClientAssignors"),
        ({"owned_connectors_and_tasks": {"connectors": ["A"], "tasks": []}}, "OwnedConnectorsAndTasks"),
    ],
)
def test_heartbeat_validation_names_the_bad_field(change: dict[str, Any], message: str) -> None:
    h, _ = driver()
    fields = {
        "group_id": "g", "member_id": "W1", "member_epoch": 0, "instance_id": None, "url": "http://w1",
        "rebalance_timeout_ms": 60000, "server_assignor": None,
        "client_assignors": [ClientAssignor("incremental", 1, 2, 2).field()],
        "owned_connectors_and_tasks": None,
    }  # fmt: skip
    fields.update(change)
    answer = h.call(10000, 0, **fields)
    assert answer["error_code"] == ErrorCode.INVALID_REQUEST and message in answer["error_message"]


@pytest.mark.parametrize(
    ("assignor", "message"),
    [
        (ClientAssignor("", 1, 2, 2), "Name"),
        (ClientAssignor("x", -2, 2, 2), "MinimumVersion"),
        (ClientAssignor("x", 3, 2, 2), "MaximumVersion"),
        (ClientAssignor("x", 1, 2, 5), "MetadataVersion"),
    ],
)
def test_assignor_validation(assignor: ClientAssignor, message: str) -> None:
    _, d = driver()
    answer = d.join("W1", assignors=[assignor])
    assert answer["error_code"] == ErrorCode.INVALID_REQUEST and message in answer["error_message"]


def test_a_server_assignor_is_unsupported() -> None:
    h, _ = driver()
    answer = h.call(
        10000, 0, group_id="g", member_id="W1", member_epoch=0, instance_id=None, url="http://w1",
        rebalance_timeout_ms=60000, server_assignor="uniform", client_assignors=None,
        owned_connectors_and_tasks=None,
    )  # fmt: skip
    assert answer["error_code"] == ErrorCode.UNSUPPORTED_ASSIGNOR


def test_fencing_removes_the_worker_and_the_lost_response_case_is_accepted() -> None:
    h, d = two_workers()
    epoch = d.epoch["W1"]
    # W1's last answer (moving it to `epoch`) is lost: it retries at its previous epoch,
    # reporting only work it still has a right to.
    assert d.beat("W1", epoch=epoch - 1)["error_code"] == 0
    group_epoch = d.describe()["group_epoch"]
    fenced = d.beat("W2", epoch=epoch + 5)
    assert fenced["error_code"] == ErrorCode.FENCED_MEMBER_EPOCH
    state = d.state()
    assert "W2" not in state["members"] and state["group_epoch"] == group_epoch + 1, "the draft: removed"
    assert d.beat("W2")["error_code"] == ErrorCode.UNKNOWN_MEMBER_ID
    rejoined = d.join("W2")
    assert rejoined["error_code"] == 0


def test_a_stale_epoch_owning_more_than_assigned_is_fenced() -> None:
    h, d = two_workers()
    epoch = d.epoch["W1"]
    answer = d.beat("W1", epoch=epoch - 1, owned=work(EVERYTHING))
    assert answer["error_code"] == ErrorCode.FENCED_MEMBER_EPOCH


def test_assignor_selection_and_unsupported_assignors() -> None:
    _, d = driver()
    d.join("W1", assignors=[ClientAssignor("sessioned", 1, 2, 2), ClientAssignor("eager", 0, 0, 0)])
    d.join("W2", assignors=[ClientAssignor("eager", 0, 0, 0)])
    assert d.prepare("W1")["assignor_name"] == "eager", "the only assignor both support"
    refused = d.join("W3", assignors=[ClientAssignor("sessioned", 1, 2, 2)])
    assert refused["error_code"] == ErrorCode.UNSUPPORTED_ASSIGNOR
    disjoint = d.join("W4", assignors=[ClientAssignor("eager", 3, 4, 3)])
    assert disjoint["error_code"] == ErrorCode.UNSUPPORTED_ASSIGNOR, "version ranges do not overlap"


def test_the_worker_whose_versions_cover_everyone_computes() -> None:
    _, d = driver()
    d.join("B", assignors=[ClientAssignor("incremental", 3, 4, 3)])
    d.join("C", assignors=[ClientAssignor("incremental", 2, 4, 3)])
    d.join("A", assignors=[ClientAssignor("incremental", 1, 5, 3)])
    assert computing(d, "B", "C", "A") == "A"
    prepared = d.prepare("A")
    assert (prepared["assignor_minimum_version"], prepared["assignor_maximum_version"]) == (1, 5)
    assert d.prepare("B")["error_code"] == ErrorCode.UNKNOWN_MEMBER_ID, "B is not the chosen worker"


def test_install_validation() -> None:
    _, d = driver()
    d.join("W1")
    d.join("W2")
    chosen = computing(d, "W1", "W2")
    prepared = d.prepare(chosen)
    epoch = prepared["group_epoch"]
    bad = [
        ({"W1": "AC0", "W2": "AC0"}, None, "assigned to both"),
        ({"W1": "AC0", "W2": "AT1"}, "AC0 AT1 AT2", "declared as covered but not assigned"),
        ({"W1": "AC0 AT1"}, "AC0", "not declared"),
        ({"W1": "AC0", "W9": "AT1"}, None, "not in the group"),
    ]
    for plan, covered, message in bad:
        answer = d.install(chosen, epoch, plan, covered)
        assert answer["error_code"] == ErrorCode.INVALID_ASSIGNMENT and message in answer["error_message"]
    wrong_epoch = d.install(chosen, epoch - 1, {"W1": "AC0"})
    assert wrong_epoch["error_code"] == ErrorCode.INVALID_ASSIGNMENT
    assert d.describe()["assignment_epoch"] == 0, "nothing invalid was installed"
    assert d.install(chosen, epoch, {"W1": "AC0", "W2": "AT1"})["error_code"] == 0
    assert d.describe()["assignment_epoch"] == epoch


def test_an_install_is_validated_against_the_group_it_was_prepared_for() -> None:
    _, d = driver()
    d.join("W1")
    d.join("W2")
    chosen = computing(d, "W1", "W2")
    prepared = d.prepare(chosen)
    d.join("W3")  # the group moves on while the assignment is computed
    other = "W2" if chosen == "W1" else "W1"
    assert d.install(chosen, prepared["group_epoch"], {chosen: "AC0", other: "AT1"})["error_code"] == 0
    group = d.describe()
    assert (group["group_epoch"], group["assignment_epoch"]) == (3, 2), "installed for epoch 2"
    assert d.beat(chosen)["should_compute_assignment"], "and asked again for epoch 3"


def test_an_assignor_error_keeps_the_current_target() -> None:
    _, d = driver()
    d.join("W1")
    d.compute("W1", {"W1": "AC0 AT1"})
    d.beat("W1")
    d.join("W2")
    prepared = d.prepare(computing(d, "W1", "W2"))
    assert d.install("W1", prepared["group_epoch"], {}, error=1)["error_code"] == 0
    answer = d.beat("W1")
    assert answer["member_epoch"] == 2 and answer["assignment"]["error"] == 1
    assert notation(d.runs["W1"]) == "AC0 AT1", "W1 keeps what it had"
    assert not answer["should_compute_assignment"], "no new computation until the group changes"


def test_another_worker_is_chosen_when_the_chosen_one_does_not_install_in_time() -> None:
    h, d = driver()
    d.join("W1")
    d.join("W2")
    chosen = computing(d, "W1", "W2")
    other = "W2" if chosen == "W1" else "W1"
    d.prepare(chosen)  # ... and never installs
    for _ in range(25):
        h.advance(3000)
        d.beat(chosen)
        d.beat(other)
    assert d.last[other]["should_compute_assignment"], "the rebalance timeout (60 s) passed: re-selected"
    assert d.prepare(chosen)["error_code"] == ErrorCode.UNKNOWN_MEMBER_ID
    d.compute(other, {other: "AC0"})
    assert d.describe()["group_state"] in ("Reconciling", "Stable")


def test_a_worker_that_does_not_revoke_within_its_rebalance_timeout_is_removed() -> None:
    h, d = driver()
    d.join("W1")
    d.compute("W1", {"W1": EVERYTHING})
    d.beat("W1")
    d.join("W2")
    d.compute(computing(d, "W1", "W2"), {"W1": "AC0", "W2": "AT1 AT2 BC0 BT1"})
    d.beat("W1", owned=work(EVERYTHING))
    for _ in range(25):  # W1 keeps heartbeating but never stops the revoked work
        h.advance(3000)
        d.beat("W1", owned=work(EVERYTHING))
        d.beat("W2")
    assert "W1" not in d.state()["members"]


def test_replaying_the_records_rebuilds_the_same_groups() -> None:
    h, d = driver()
    case_studies.three_workers(d)
    d.join("W4")
    d.beat("W1")
    fresh, d2 = driver(GroupHarness(GroupSettings(connect_session_timeout_ms=10000)))
    for record in h.records:
        fresh.core.replay(record)
    fresh.core.load_complete(0)
    assert d2.state() == d.state()
    assert d2.describe()["computing_member_id"] == d.describe()["computing_member_id"]


# -- the property test -------------------------------------------------------------------

WORKERS = ["W1", "W2", "W3", "W4"]
ALL_WORK = sorted(work("AC0 AT1 AT2 AT3 BC0 BT1 BT2 CC0 CT1"))
operation = st.one_of(
    st.tuples(st.just("join"), st.sampled_from(WORKERS)),
    st.tuples(st.just("leave"), st.sampled_from(WORKERS)),
    st.tuples(st.just("crash"), st.sampled_from(WORKERS)),
    st.tuples(st.just("beat"), st.sampled_from(WORKERS)),
    st.tuples(st.just("lose-answer"), st.sampled_from(WORKERS)),
    st.tuples(st.just("reason"), st.sampled_from(WORKERS)),
    st.tuples(st.just("compute"), st.integers(0, 2**16)),
    st.tuples(st.just("tick"), st.integers(100, 4000)),
)


class Cluster:
    """Simulated workers: a worker runs work from when it is given it until it stops it.
    `assignors` says what each worker offers (the driver's default otherwise)."""

    def __init__(self, assignors: dict[str, list[ClientAssignor]] | None = None) -> None:
        self.h, self.d = driver()
        self.alive: set[str] = set()
        self.crashed: set[str] = set()
        self.assignors = assignors or {}

    def join(self, worker: str) -> dict[str, Any]:
        return self.d.join(worker, assignors=self.assignors.get(worker))

    def run(self, op: tuple[str, Any]) -> None:
        kind, arg = op
        if kind == "join" and arg not in self.alive:
            if self.join(arg)["error_code"] == 0:
                self.alive.add(arg)
                self.crashed.discard(arg)
        elif kind == "leave" and arg in self.alive:
            self.d.leave(arg)
            self.alive.discard(arg)
        elif kind == "crash" and arg in self.alive:
            self.alive.discard(arg)
            self.crashed.add(arg)  # it stops heartbeating; its session will expire
            self.d.runs.pop(arg, None)
        elif kind == "beat" and arg in self.alive:
            self._beat(arg)
        elif kind == "lose-answer" and arg in self.alive:
            before = (self.d.epoch.get(arg), self.d.runs.get(arg))
            self._beat(arg)
            self.d.epoch[arg], self.d.runs[arg] = before  # the answer never arrived
        elif kind == "reason" and arg in self.alive:
            self.d.change_reason(arg, self.h.now % 100)
            self._check_error(arg)
        elif kind == "compute":
            self._compute(arg)
        elif kind == "tick":
            self.h.advance(arg)
        self.check_nothing_held_twice()

    def _beat(self, worker: str) -> None:
        self.d.beat(worker)
        self._check_error(worker)

    def _check_error(self, worker: str) -> None:
        if self.d.last[worker]["error_code"] != 0:
            # fenced or unknown: stop everything and rejoin as the draft says
            self.d.runs[worker] = frozenset()
            if self.join(worker)["error_code"] != 0:
                self.alive.discard(worker)

    def _compute(self, seed: int) -> None:
        told = [w for w in sorted(self.alive) if self.d.last.get(w, {}).get("should_compute_assignment")]
        chosen = told[0] if told else None
        if chosen is None:
            return
        prepared = self.d.prepare(chosen)
        if prepared["error_code"] != 0:
            return
        members = sorted(m["member_id"] for m in prepared["members"])
        plan = {m: [] for m in members}
        for i, item in enumerate(ALL_WORK):
            plan[members[(i + seed) % len(members)]].append(notation(frozenset([item])))
        answer = self.d.install(chosen, prepared["group_epoch"], {m: " ".join(v) for m, v in plan.items()})
        assert answer["error_code"] == 0, answer

    def check_nothing_held_twice(self) -> None:
        held: dict[Any, str] = {}
        for m in self.d.describe().get("members", []):
            for item in work_of(m["assignment"]) | work_of(m["pending_revocation"]):
                assert item not in held, f"{item} held by {held[item]} and {m['member_id']}"
                held[item] = m["member_id"]
        ran: dict[Any, str] = {}
        for worker in self.alive:
            for item in self.d.runs.get(worker, frozenset()):
                assert item not in ran, f"{item} runs on {ran[item]} and {worker}"
                ran[item] = worker

    def quiesce(self) -> None:
        """Nothing changes any more: the live workers heartbeat and compute until stable."""
        self.h.advance(15000)  # crashed workers' sessions expire
        for _ in range(12):
            for w in sorted(self.alive):
                self._beat(w)
            self._compute(0)
            self.check_nothing_held_twice()
        group = self.d.describe()
        if not self.alive:
            return
        assert group["group_state"] == "Stable", group
        for m in group["members"]:
            assert work_of(m["assignment"]) == work_of(m["target_assignment"])
            assert self.d.runs[m["member_id"]] == work_of(m["assignment"])
        assigned = set().union(*(self.d.runs[w] for w in self.alive))
        assert assigned == set(ALL_WORK), "every connector and task runs somewhere"


@settings(max_examples=150, deadline=None)
@given(st.lists(operation, min_size=1, max_size=60))
def test_no_work_is_ever_held_twice_and_a_quiet_group_converges(script: list[tuple[str, Any]]) -> None:
    cluster = Cluster()
    for op in script:
        cluster.run(op)
    cluster.quiesce()


def test_heartbeat_intervals_are_short_while_a_target_is_computed_or_work_moves() -> None:
    _, d = two_workers()
    assert d.beat("W1")["heartbeat_interval_ms"] == 3000, "stable: the configured interval"
    d.join("W3")
    assert d.beat("W2")["heartbeat_interval_ms"] == 500, "a new target is being computed"
    d.compute(computing(d, "W1", "W2", "W3"), {"W1": "AC0 AT1", "W2": "BC0", "W3": "AT2 BT1"})
    revoking = d.beat("W1")
    assert revoking["heartbeat_interval_ms"] == 500, "W1 has work to stop"
    d.beat("W1")
    d.beat("W2")
    d.beat("W2")
    d.beat("W3")
    assert d.describe()["group_state"] == "Stable"
    assert d.beat("W3")["heartbeat_interval_ms"] == 3000

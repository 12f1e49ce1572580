"""Online migration between classic `connect` groups and connect groups in the pure core, on a
virtual clock: the upgrade (epochs, workers, what each runs, parked requests answered), classic
workers' JoinGroup/SyncGroup/Heartbeat inside a connect group with revoke before assign across
both kinds of workers, the eager protocol refused, the downgrade back to a classic group, and
replay of the records giving the same group (durability)."""

from __future__ import annotations

from typing import Any

import pytest

from connect_rebalance.connect_protocol import (
    ConnectAssignment,
    WorkerState,
    decode_assignment,
    decode_metadata,
    encode_assignment,
    encode_metadata,
)
from connect_rebalance.errors import ErrorCode
from connect_rebalance.protocol.api_keys import ApiKey
from connect_rebalance.protocol.connect_group import InstalledMember, install_fields
from connect_rebalance.work import work_of
from coordinator.group_record_codec import decode_record, encode_record
from coordinator.groups.classic import ClassicGroup, ClassicState
from coordinator.groups.connect import ConnectGroup
from coordinator.groups.coordinator import GroupCoordinator
from coordinator.groups.records import GroupMetadataRecord
from coordinator.groups.settings import GroupSettings
from tests.support.connect_driver import ConnectDriver, notation, work
from tests.support.group_harness import GroupHarness

pytestmark = pytest.mark.unit

GROUP = "g"
SESSIONED = ("sessioned", "compatible", "default")


def harness(**settings: Any) -> tuple[GroupHarness, ConnectDriver]:
    h = GroupHarness(GroupSettings(initial_rebalance_delay_ms=0, **settings))
    return h, ConnectDriver(lambda api_key, fields: h.call(api_key, 0, **fields), group_id=GROUP)


def url(worker: str) -> str:
    return f"http://{worker}:8083"


def protocols(worker: str, runs: str = "", offset: int = 5, names: tuple[str, ...] = SESSIONED) -> list:  # type: ignore[type-arg]
    """Kafka Connect's JoinGroup protocols: WorkerState bytes per protocol, `runs` as the allocation."""
    versions = {"sessioned": 2, "compatible": 1, "default": 0}
    out = []
    for name in names:
        v = versions[name]
        allocation = ConnectAssignment(v, 0, "", "", offset, work(runs)) if v and runs else None
        out.append((name, encode_metadata(WorkerState(v, url(worker), offset, allocation))))
    return out


def classic_join(h: GroupHarness, worker: str, member_id: str = "", runs: str = "", **kw: Any) -> int:
    return h.join(member_id, client_id=worker, group_id=GROUP, protocols=protocols(worker, runs, **kw),
                  protocol_type="connect")  # fmt: skip


def classic_group(
    h: GroupHarness, deal: dict[str, str], names: tuple[str, ...] = SESSIONED
) -> tuple[dict[str, str], int]:
    """Classic workers form a Stable generation; the leader deals `deal` (worker -> work) out."""
    ids = {}
    for worker in deal:
        first = h.answer(classic_join(h, worker, names=names))
        assert first is not None and first["error_code"] == ErrorCode.MEMBER_ID_REQUIRED
        ids[worker] = first["member_id"]
    joins = {w: classic_join(h, w, ids[w], names=names) for w in deal}
    h.advance(0)
    answer = h.answer(joins[next(iter(deal))])
    assert answer is not None and answer["error_code"] == 0, answer
    generation, leader = answer["generation_id"], answer["leader"]
    version = 0 if answer["protocol_name"] == "default" else 2
    assignments = {
        ids[w]: encode_assignment(ConnectAssignment(version, 0, leader, "http://l", 5, work(items)))
        for w, items in deal.items()
    }
    syncs = [h.sync(ids[w], generation, group_id=GROUP) for w in deal if ids[w] != leader]
    h.sync(leader, generation, assignments, group_id=GROUP)
    assert all(h.answer(s)["error_code"] == 0 for s in syncs)
    return ids, generation


def member(d: ConnectDriver, member_id: str) -> dict[str, Any]:
    return next(m for m in d.describe()["members"] if m["member_id"] == member_id)


def listed(h: GroupHarness) -> dict[str, Any]:
    return next(g for g in h.call(ApiKey.LIST_GROUPS, 5, states_filter=[], types_filter=[])["groups"]
                if g["group_id"] == GROUP)  # fmt: skip


def rejoin(h: GroupHarness, worker: str, member_id: str, runs: str) -> dict[str, Any]:
    answer = h.answer(classic_join(h, worker, member_id, runs))
    assert answer is not None
    return answer


def sync(h: GroupHarness, member_id: str, generation: int) -> tuple[int, ConnectAssignment | None]:
    answer = h.answer(h.sync(member_id, generation, group_id=GROUP))
    assert answer is not None
    data = answer["assignment"]
    return answer["error_code"], decode_assignment(data) if data else None


def heartbeat(h: GroupHarness, member_id: str, generation: int) -> int:
    return h.heartbeat(member_id, generation, group_id=GROUP)


def upgraded() -> tuple[GroupHarness, ConnectDriver, dict[str, str], int]:
    """W0 runs A's connector and task 0, W1 tasks 1 and 2; then connect worker C1 joins."""
    h, d = harness()
    ids, generation = classic_group(h, {"w0": "AC0 AT0", "w1": "AT1 AT2"})
    joined = d.join("C1")
    assert joined["error_code"] == 0, joined
    return h, d, ids, generation


def same_target(d: ConnectDriver, ids: dict[str, str]) -> None:
    """C1 installs the next target, moving nothing: the classic workers must learn its epoch."""
    d.compute("C1", {ids["w0"]: "AC0 AT0", ids["w1"]: "AT1 AT2", "C1": ""})


# -- upgrade ----------------------------------------------------------------------------------


def test_a_connect_join_converts_the_classic_group_at_its_generation() -> None:
    h, d, ids, generation = upgraded()
    group = h.core.groups[GROUP]
    assert isinstance(group, ConnectGroup)
    assert GroupMetadataRecord(GROUP, None) in h.records  # the classic group is tombstoned
    state = d.state()
    # The join bumped the converted epoch; the target is still the classic generation's.
    assert (state["group_epoch"], state["assignment_epoch"]) == (generation + 1, generation)
    assert state["members"][ids["w0"]] == (generation, "AC0 AT0", "AC0 AT0")
    assert state["members"][ids["w1"]] == (generation, "AT1 AT2", "AT1 AT2")
    assert notation(work_of(d.describe()["target_connectors_and_tasks"])) == "AC0 AT0 AT1 AT2"
    assert member(d, ids["w0"])["url"] == url("w0")
    assert d.last["C1"]["should_compute_assignment"] is True  # the only worker that can compute
    assert (listed(h)["group_type"], listed(h)["protocol_type"]) == ("connect", "connect")


def test_what_a_classic_member_runs_is_its_allocation_plus_its_last_delta_and_the_first_claimer_wins() -> (
    None
):
    h, d = harness()
    ids, generation = classic_group(h, {"w0": "AT0", "w1": "AT1"})
    # w0 rejoins saying it runs AT0 and AT1 (the leader's rejoin parks: a rebalance starts).
    parked = classic_join(h, "w0", ids["w0"], runs="AT0 AT1 AT2")
    assert h.answer(parked) is None
    d.join("C1")
    assert h.answer(parked)["error_code"] == ErrorCode.REBALANCE_IN_PROGRESS
    state = d.state()["members"]
    assert state[ids["w0"]][1] == "AT0 AT1 AT2" and state[ids["w1"]][1] == ""  # w0 claimed AT1 first


def test_the_last_assignment_s_revocations_are_not_owned() -> None:
    h, d = harness()
    ids, generation = classic_group(h, {"w0": "AT0 AT1"})
    group = h.core.groups[GROUP]
    assert isinstance(group, ClassicGroup)
    member0 = group.members[ids["w0"]]
    member0.assignment = encode_assignment(ConnectAssignment(2, 0, "", "", 5, work("AT2"), work("AT1")))
    member0.protocols = protocols("w0", runs="AT0 AT1")
    d.join("C1")
    assert d.state()["members"][ids["w0"]][1] == "AT0 AT2"


@pytest.mark.parametrize(
    ("policy", "converts"), [("upgrade", True), ("downgrade", False), ("disabled", False)]
)
def test_the_upgrade_follows_group_connect_migration_policy(policy: str, converts: bool) -> None:
    h, d = harness(connect_migration_policy=policy)
    classic_group(h, {"w0": "AT0"})
    answer = d.join("C1")
    assert (answer["error_code"] == 0) is converts
    if not converts:
        assert answer["error_code"] == ErrorCode.GROUP_ID_NOT_FOUND
        assert "group.connect.migration.policy" in answer["error_message"]


def test_an_eager_classic_group_is_refused_naming_connect_protocol() -> None:
    h, d = harness()
    classic_group(h, {"w0": "AT0"}, names=("default",))
    answer = d.join("C1")
    assert answer["error_code"] == ErrorCode.GROUP_ID_NOT_FOUND
    assert "connect.protocol" in answer["error_message"] and "eager" in answer["error_message"]
    assert isinstance(h.core.groups[GROUP], ClassicGroup)


def test_a_consumer_classic_group_and_an_oversized_group_are_refused() -> None:
    h, d = harness(connect_max_size=1)
    classic_group(h, {"w0": "AT0", "w1": "AT1"})
    answer = d.join("C1")
    assert (
        answer["error_code"] == ErrorCode.GROUP_ID_NOT_FOUND
        and "group.connect.max.size" in answer["error_message"]
    )


# -- classic workers inside a connect group ---------------------------------------------------------


def test_classic_join_sync_heartbeat_with_revoke_before_assign() -> None:
    h, d, ids, g = upgraded()
    w0 = ids["w0"]
    # C1's join is a new group epoch, but until C1 installs a target a rejoin changes nothing.
    assert heartbeat(h, w0, g) == ErrorCode.NONE
    joined = rejoin(h, "w0", w0, "AC0 AT0")  # a rejoin of its own accord
    assert (joined["error_code"], joined["generation_id"], joined["leader"], joined["members"]) == (
        0,
        g,
        "",
        [],
    )
    assert joined["protocol_name"] == "sessioned"
    assert sync(h, w0, g) == (0, ConnectAssignment(2, 0, "", "", 5))  # nothing new, no header installed yet

    # C1 computes: it sees the classic workers with their embedded protocol version and bytes.
    prepared = d.prepare("C1")
    classic = {m["member_id"]: m for m in prepared["members"] if m["member_id"] != "C1"}
    assert {m["assignor"]["metadata_version"] for m in classic.values()} == {2}
    assert all(not bytes(m["assignor"]["metadata"]).startswith(b"{") for m in classic.values())
    header = encode_assignment(ConnectAssignment(2, 0, "C1", url("c1"), 9, frozenset(), frozenset(), 0))
    plan = [
        InstalledMember(w0, work("AC0"), 2, header),
        InstalledMember(ids["w1"], work("AT1 AT2"), 2, header),
        InstalledMember("C1", work("AT0"), 1, b"{}"),
    ]
    covered = work("AC0 AT0 AT1 AT2")
    fields = install_fields(GROUP, "C1", d.epoch["C1"], prepared["group_epoch"], covered, plan)
    installed = h.call(10002, 0, **fields)
    assert installed["error_code"] == 0, installed

    # C1 moves to the new epoch but AT0 is still w0's: not assigned to C1 yet.
    d.beat("C1")
    assert d.runs["C1"] == frozenset() and member(d, "C1")["member_state"] == "Unreleased"
    # w0 is told to rejoin; its join keeps it at its epoch, and the sync says: stop AT0.
    assert heartbeat(h, w0, g) == ErrorCode.REBALANCE_IN_PROGRESS
    joined = rejoin(h, "w0", w0, "AC0 AT0")
    assert joined["generation_id"] == g
    code, assignment = sync(h, w0, g)
    assert code == 0 and assignment is not None
    assert (assignment.assigned, assignment.revoked) == (frozenset(), work("AT0"))
    assert (assignment.leader, assignment.leader_url, assignment.config_offset) == ("C1", url("c1"), 9)
    d.beat("C1")
    assert d.runs["C1"] == frozenset()  # still held by w0 until it rejoins without it
    assert heartbeat(h, w0, g) == ErrorCode.REBALANCE_IN_PROGRESS  # Unrevoked: rejoin
    joined = rejoin(h, "w0", w0, "AC0")
    assert joined["generation_id"] == prepared["group_epoch"]
    assert sync(h, w0, joined["generation_id"])[1].revoked == frozenset()  # type: ignore[union-attr]
    assert heartbeat(h, w0, joined["generation_id"]) == ErrorCode.NONE
    d.beat("C1")
    assert d.runs["C1"] == work("AT0")


def test_a_classic_worker_joining_a_connect_group_gets_the_work_it_is_given_as_a_delta() -> None:
    h, d, ids, g = upgraded()
    first = h.answer(classic_join(h, "w2"))
    assert first["error_code"] == ErrorCode.MEMBER_ID_REQUIRED
    w2 = first["member_id"]
    joined = rejoin(h, "w2", w2, "")
    epoch = joined["generation_id"]
    assert epoch == g and d.state()["group_epoch"] == g + 2  # its join is a new group epoch
    prepared = d.prepare("C1")
    assert prepared["group_epoch"] == g + 2
    d.install("C1", prepared["group_epoch"], {ids["w0"]: "AC0 AT0", ids["w1"]: "AT1", w2: "AT2", "C1": ""})
    d.beat("C1")
    assert heartbeat(h, w2, epoch) == ErrorCode.REBALANCE_IN_PROGRESS
    joined = rejoin(h, "w2", w2, "")
    assert joined["generation_id"] == g + 2
    code, assignment = sync(h, w2, g + 2)
    # w1 still runs AT2: w2 is not given it before w1 rejoins without it.
    assert code == 0 and assignment is not None and assignment.assigned == frozenset()
    rejoin(h, "w1", ids["w1"], "AT1 AT2")
    assert sync(h, ids["w1"], g)[1].revoked == work("AT2")  # type: ignore[union-attr]
    assert rejoin(h, "w1", ids["w1"], "AT1")["generation_id"] == g + 2
    assert heartbeat(h, w2, g + 2) == ErrorCode.REBALANCE_IN_PROGRESS  # AT2 is free now
    rejoin(h, "w2", w2, "")
    assert sync(h, w2, g + 2)[1].assigned == work("AT2")  # type: ignore[union-attr]


def test_classic_requests_with_a_wrong_generation_or_an_eager_only_worker_are_refused() -> None:
    h, d, ids, g = upgraded()
    assert heartbeat(h, ids["w0"], g + 5) == ErrorCode.ILLEGAL_GENERATION
    assert sync(h, ids["w0"], g + 5)[0] == ErrorCode.ILLEGAL_GENERATION
    assert heartbeat(h, "nobody", g) == ErrorCode.UNKNOWN_MEMBER_ID
    eager = h.answer(h.join("", client_id="w9", group_id=GROUP, protocols=protocols("w9", names=("default",)),
                            protocol_type="connect"))  # fmt: skip
    assert eager["error_code"] == ErrorCode.INCONSISTENT_GROUP_PROTOCOL
    other = h.answer(h.join("", client_id="k", group_id=GROUP, protocols=[("range", b"x")]))
    assert other["error_code"] == ErrorCode.INCONSISTENT_GROUP_PROTOCOL


def test_a_classic_worker_that_does_not_rejoin_when_told_is_removed_after_its_rebalance_timeout() -> None:
    h, d, ids, g = upgraded()
    same_target(d, ids)
    assert heartbeat(h, ids["w0"], g) == ErrorCode.REBALANCE_IN_PROGRESS
    for _ in range(40):  # keeps heartbeating, never rejoins
        h.advance(1000)
        d.beat("C1")
        if ids["w0"] not in d.state()["members"]:
            break
        heartbeat(h, ids["w0"], g)
    assert ids["w0"] not in d.state()["members"] and h.now <= 31000


# -- downgrade --------------------------------------------------------------------------------


def test_the_last_connect_worker_leaving_turns_the_group_classic_and_the_workers_rejoin() -> None:
    h, d, ids, g = upgraded()
    d.leave("C1")
    group = h.core.groups[GROUP]
    assert isinstance(group, ClassicGroup) and group.protocol_type == "connect"
    assert group.state == ClassicState.PREPARING_REBALANCE
    assert (listed(h)["group_type"], listed(h)["protocol_type"]) == ("classic", "connect")
    # Their next heartbeat at the generation they hold says rejoin (not ILLEGAL_GENERATION).
    assert heartbeat(h, ids["w0"], g) == ErrorCode.REBALANCE_IN_PROGRESS
    assert decode_assignment(group.members[ids["w1"]].assignment).assigned == work("AT1 AT2")
    joins = [classic_join(h, "w0", ids["w0"], "AC0 AT0"), classic_join(h, "w1", ids["w1"], "AT1 AT2")]
    answers = [h.answer(j) for j in joins]
    assert all(a is not None and a["error_code"] == 0 for a in answers)
    assert answers[0]["generation_id"] == g + 1 and answers[0]["protocol_name"] == "sessioned"
    leader = answers[0]["leader"]
    assert (
        leader in ids.values() and len(next(a for a in answers if a["member_id"] == leader)["members"]) == 2
    )


def test_a_worker_behind_the_others_at_a_downgrade_is_told_illegal_generation_and_rejoins_with_its_work() -> (
    None
):
    """The classic group takes the epoch of the workers that caught up with the last target: they
    are told to rejoin; a worker still an epoch behind is told ILLEGAL_GENERATION, as Kafka tells
    a member of an older generation. It is still a member: its rejoin, reporting what it runs,
    joins the next generation and the leader sees that work as its own."""
    h, d, ids, g = upgraded()
    same_target(d, ids)
    assert heartbeat(h, ids["w1"], g) == ErrorCode.REBALANCE_IN_PROGRESS
    assert rejoin(h, "w1", ids["w1"], "AT1 AT2")["generation_id"] == g + 1  # w0 stays at g
    d.leave("C1")
    group = h.core.groups[GROUP]
    assert isinstance(group, ClassicGroup) and group.generation == g + 1
    assert heartbeat(h, ids["w1"], g + 1) == ErrorCode.REBALANCE_IN_PROGRESS
    assert heartbeat(h, ids["w0"], g) == ErrorCode.ILLEGAL_GENERATION
    joins = {w: classic_join(h, w, ids[w], runs) for w, runs in (("w0", "AC0 AT0"), ("w1", "AT1 AT2"))}
    answers = {w: h.answer(j) for w, j in joins.items()}
    assert [(a["error_code"], a["generation_id"]) for a in answers.values()] == [(0, g + 2)] * 2
    leader = next(a for a in answers.values() if a["member_id"] == a["leader"])
    seen = {m["member_id"]: decode_metadata(m["metadata"]) for m in leader["members"]}
    allocation = seen[ids["w0"]].allocation
    assert allocation is not None and allocation.assigned == work("AC0 AT0"), "w0 reports its work kept"


def test_no_downgrade_when_the_policy_forbids_it() -> None:
    h, d = harness(connect_migration_policy="upgrade")
    classic_group(h, {"w0": "AT0"})
    d.join("C1")
    d.leave("C1")
    assert isinstance(h.core.groups[GROUP], ConnectGroup)


def test_a_classic_leave_removes_the_worker_and_a_connect_group_of_classic_workers_goes_back() -> None:
    h, d, ids, g = upgraded()
    left = h.call(
        ApiKey.LEAVE_GROUP, 3, group_id=GROUP, members=[{"member_id": ids["w1"], "group_instance_id": None}]
    )
    assert left["members"][0]["error_code"] == 0
    assert ids["w1"] not in d.state()["members"]
    assert d.leave("C1")["error_code"] == 0
    assert isinstance(h.core.groups[GROUP], ClassicGroup)
    assert set(h.core.groups[GROUP].members) == {ids["w0"]}


# -- records and replay -----------------------------------------------------------------------


def replayed(h: GroupHarness) -> GroupCoordinator:
    core = GroupCoordinator(h.core.settings, h.topics.get, topics_view=h.metadata)
    for record in h.records:
        core.replay(decode_record(*encode_record(record)))  # through the bytes, as at start-up
    return core


def test_replay_rebuilds_the_connect_group_with_its_classic_workers() -> None:
    h, d, ids, g = upgraded()
    same_target(d, ids)
    assert heartbeat(h, ids["w0"], g) == ErrorCode.REBALANCE_IN_PROGRESS
    rejoin(h, "w0", ids["w0"], "AC0 AT0")
    live = h.core.groups[GROUP]
    back = replayed(h).groups[GROUP]
    assert isinstance(live, ConnectGroup) and isinstance(back, ConnectGroup)
    assert back.group_epoch == live.group_epoch and back.assignment_epoch == live.assignment_epoch
    assert back.covered == live.covered
    for member_id, worker in live.members.items():
        restored = back.members[member_id]
        assert (restored.classic, restored.assignment, restored.url) == (worker.classic, worker.assignment,
                                                                         worker.url)  # fmt: skip
    assert back.ownership.snapshot() == live.ownership.snapshot()
    assert back.members[ids["w0"]].classic.owned == work("AC0 AT0")  # type: ignore[union-attr]
    assert back.target == live.target


def test_replay_rebuilds_the_classic_group_after_a_downgrade() -> None:
    h, d, ids, g = upgraded()
    d.leave("C1")
    back = replayed(h).groups[GROUP]
    assert isinstance(back, ClassicGroup) and back.protocol_type == "connect"
    assert set(back.members) == set(ids.values()) and back.generation == g


def test_the_heartbeat_api_is_answered_for_a_classic_worker_over_the_encoded_response() -> None:
    h, d, ids, g = upgraded()
    same_target(d, ids)
    answer = h.call(
        ApiKey.HEARTBEAT, 4, group_id=GROUP, generation_id=g, member_id=ids["w1"], group_instance_id=None
    )
    assert answer["error_code"] == ErrorCode.REBALANCE_IN_PROGRESS


def test_worker_records_carry_classic_metadata_and_records_written_before_it_still_decode() -> None:
    from connect_rebalance.protocol import coordinator_records as schemas
    from coordinator.group_record_codec import MEMBER_KEY
    from coordinator.groups.connect_records import (
        ClassicWorkerMetadata,
        ConnectWorkerRecord,
        ConnectWorkerSnapshot,
    )

    classic = ClassicWorkerMetadata(10000, tuple(protocols("w0", "AT0")), work("AC0 AT0"))
    record = ConnectWorkerRecord(
        GROUP, "w0-1", ConnectWorkerSnapshot(None, url("w0"), "w0", "/h", 30000, (), classic)
    )
    assert decode_record(*encode_record(record)) == record
    # A value as written before online migration existed: no tagged field at all.
    key = schemas.ConnectGroupMemberMetadataKey(version=MEMBER_KEY, group_id=GROUP, member_id="c1").encode()
    old = schemas.ConnectGroupMemberMetadataValue(
        version=0, instance_id=None, url=url("c1"), client_id="c1", client_host="/h", rebalance_timeout_ms=1,
        assignors=[],
    ).encode()  # fmt: skip
    assert decode_record(bytes(key), bytes(old)).value.classic is None  # type: ignore[union-attr]


def test_group_connect_migration_policy_is_validated_by_name() -> None:
    from coordinator.configs.coordinator import ConfigError, CoordinatorConfig

    assert CoordinatorConfig.from_settings({"group.connect.migration.policy": "Downgrade"}).group_settings() \
        .connect_migration_policy == "downgrade"  # fmt: skip
    with pytest.raises(ConfigError, match="group.connect.migration.policy"):
        CoordinatorConfig.from_settings({"group.connect.migration.policy": "sometimes"})


def test_the_computing_worker_knows_a_classic_worker_by_its_url_and_installs_it_an_embedded_header() -> None:
    from workers.distributed.leader_planning import _classic_header, _is_classic, _worker_id_of
    from workers.distributed.membership.leader_info import LeaderInfo

    h, d, ids, g = upgraded()
    prepared = d.prepare("C1")
    by_member = {m["member_id"]: m for m in prepared["members"]}
    assert [_is_classic(by_member[m]) for m in (ids["w0"], ids["w1"], "C1")] == [True, True, False]
    by_url = {url("w0"): "worker-0"}  # from the presence records
    assert _worker_id_of(by_member[ids["w0"]], by_url) == "worker-0"
    assert _worker_id_of(by_member[ids["w1"]], by_url) == "w1:8083"  # no presence record: host:port
    header = decode_assignment(_classic_header(2, LeaderInfo("C1", url("c1"), 12, 3000)))
    assert header == ConnectAssignment(2, 0, "C1", url("c1"), 12, frozenset(), frozenset(), 3000)

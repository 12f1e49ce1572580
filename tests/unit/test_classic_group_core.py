"""The classic group state machine on a virtual clock: join/sync/heartbeat flows, static
members, session and rebalance timeouts, a thousand members, and replay of its records."""

from __future__ import annotations

import time

import pytest

from connect_rebalance.errors import ErrorCode
from connect_rebalance.protocol.api_keys import ApiKey
from coordinator.groups.classic import ClassicState
from coordinator.groups.coordinator import GroupCoordinator
from coordinator.groups.settings import GroupSettings
from tests.support.group_harness import GroupHarness

pytestmark = pytest.mark.unit


def state(h: GroupHarness, group_id: str = "g") -> ClassicState:
    return h.core.groups[group_id].state


def test_eager_flow_member_id_required_then_join_sync_and_heartbeat() -> None:
    h = GroupHarness()
    first = h.answer(h.join(client_id="a"))
    assert first["error_code"] == ErrorCode.MEMBER_ID_REQUIRED and first["member_id"].startswith("a-")
    a = first["member_id"]
    joined = h.answer(h.join(a, client_id="a"))
    assert joined["error_code"] == 0 and joined["generation_id"] == 1 and joined["leader"] == a
    assert [m["member_id"] for m in joined["members"]] == [a]
    assert joined["members"][0]["metadata"] == b"meta-a"
    assert state(h) == ClassicState.COMPLETING_REBALANCE
    synced = h.answer(h.sync(a, 1, {a: b"partitions 0-11"}))
    assert synced == {
        "error_code": 0,
        "protocol_type": "consumer",
        "protocol_name": "range",
        "assignment": b"partitions 0-11",
    }
    assert state(h) == ClassicState.STABLE
    assert h.heartbeat(a, 1) == ErrorCode.NONE
    assert h.heartbeat(a, 0) == ErrorCode.ILLEGAL_GENERATION
    assert h.heartbeat("nobody", 1) == ErrorCode.UNKNOWN_MEMBER_ID


def test_a_new_member_makes_everyone_rejoin_and_followers_wait_for_the_leaders_assignment() -> None:
    h = GroupHarness()
    a, b = h.form_group(2)
    c = h.answer(h.join(client_id="c2"))["member_id"]
    parked_c = h.join(c, client_id="c2")
    assert h.answer(parked_c) is None and state(h) == ClassicState.PREPARING_REBALANCE
    assert h.heartbeat(a, 1) == ErrorCode.REBALANCE_IN_PROGRESS
    parked_a = h.join(a, client_id="c0")
    assert h.answer(parked_a) is None
    parked_b = h.join(b, client_id="c1")
    answers = [h.answer(r) for r in (parked_a, parked_b, parked_c)]
    assert {x["generation_id"] for x in answers} == {2}
    leader = answers[0]["leader"]
    assert leader == a, "the leader keeps leading when it rejoins"
    assert len(answers[0]["members"]) == 3 and answers[1]["members"] == [] and answers[2]["members"] == []
    follower_sync = h.sync(b, 2)
    assert h.answer(follower_sync) is None, "a follower's sync waits for the leader's"
    h.sync(a, 2, {a: b"A", b: b"B"})  # c left out of the assignment gets nothing
    assert h.answer(follower_sync)["assignment"] == b"B"
    assert h.answer(h.sync(c, 2))["assignment"] == b""


def test_cooperative_clients_rebalance_twice_and_members_keep_their_session_meanwhile() -> None:
    """Cooperative-sticky clients rejoin right after a rebalance that revoked partitions."""
    h = GroupHarness()
    protocols = [("cooperative-sticky", b"owned"), ("range", b"owned")]
    first = [h.answer(h.join(client_id=f"m{i}", protocols=protocols))["member_id"] for i in range(2)]
    joins = [h.join(m, client_id=f"m{i}", protocols=protocols) for i, m in enumerate(first)]
    assert h.answer(joins[0])["protocol_name"] == "cooperative-sticky"
    h.sync(first[0], 1, {first[0]: b"p0-5", first[1]: b"p6-11"})
    h.sync(first[1], 1)
    for round_ in (2, 3):  # the second round is the cooperative follow-up
        rejoins = [
            h.join(m, client_id=f"m{i}", protocols=[("cooperative-sticky", b"round"), ("range", b"")])
            for i, m in enumerate(first)
        ]
        assert {h.answer(r)["generation_id"] for r in rejoins} == {round_}
        h.sync(first[1], round_)
        h.sync(first[0], round_, {first[0]: b"x", first[1]: b"y"})
        assert state(h) == ClassicState.STABLE


def test_protocols_must_be_shared_and_the_vote_picks_the_favourite() -> None:
    h = GroupHarness()
    a = h.answer(h.join(client_id="a", protocols=[("range", b""), ("roundrobin", b"")]))["member_id"]
    b = h.answer(h.join(client_id="b", protocols=[("roundrobin", b""), ("range", b"")]))["member_id"]
    c = h.answer(h.join(client_id="c", protocols=[("roundrobin", b"")]))["member_id"]
    joins = [
        h.join(a, client_id="a", protocols=[("range", b""), ("roundrobin", b"")]),
        h.join(b, client_id="b", protocols=[("roundrobin", b""), ("range", b"")]),
        h.join(c, client_id="c", protocols=[("roundrobin", b"")]),
    ]
    assert {h.answer(j)["protocol_name"] for j in joins} == {"roundrobin"}
    refused = h.answer(h.join(client_id="d", protocols=[("sticky", b"")]))
    assert refused["error_code"] == ErrorCode.INCONSISTENT_GROUP_PROTOCOL
    other_type = h.answer(h.join(client_id="e", protocol_type="connect", protocols=[("roundrobin", b"")]))
    assert other_type["error_code"] == ErrorCode.INCONSISTENT_GROUP_PROTOCOL


def test_join_validation_errors() -> None:
    h = GroupHarness()
    assert h.answer(h.join(group_id=""))["error_code"] == ErrorCode.INVALID_GROUP_ID
    assert h.answer(h.join(session_timeout_ms=10))["error_code"] == ErrorCode.INVALID_SESSION_TIMEOUT
    assert h.answer(h.join(member_id="ghost"))["error_code"] == ErrorCode.UNKNOWN_MEMBER_ID
    assert h.answer(h.join(protocols=[]))["error_code"] == ErrorCode.INCONSISTENT_GROUP_PROTOCOL
    old = h.answer(h.join(version=3, client_id="old"))
    assert old["error_code"] == 0 or h.answer(h.join(version=3)) is None, (
        "v0-v3 join directly, no MEMBER_ID_REQUIRED"
    )


def test_session_expiry_removes_a_silent_member_and_rebalances_the_rest() -> None:
    h = GroupHarness()
    a, b = h.form_group(2)
    for _ in range(3):  # b stays silent; its 10 s session has not run out yet
        h.advance(3000)
        assert h.heartbeat(a, 1) == ErrorCode.NONE
    h.advance(1000)
    assert b not in h.core.groups["g"].members
    assert h.heartbeat(a, 1) == ErrorCode.REBALANCE_IN_PROGRESS
    assert state(h) == ClassicState.PREPARING_REBALANCE
    rejoin = h.answer(h.join(a, client_id="c0"))
    assert rejoin["generation_id"] == 2 and [m["member_id"] for m in rejoin["members"]] == [a]
    assert h.heartbeat(b, 1) == ErrorCode.UNKNOWN_MEMBER_ID


def test_a_member_that_does_not_rejoin_is_removed_at_the_rebalance_timeout() -> None:
    h = GroupHarness()
    a, b, c = h.form_group(3)
    slow_join = h.join(a, client_id="c0")  # a rebalance starts; b rejoins, c is busy processing
    h.join(b, client_id="c1")
    for _ in range(9):  # c's heartbeat thread keeps its session; heartbeats do not count as rejoining
        h.advance(3000)
        assert h.heartbeat(c, 1) == ErrorCode.REBALANCE_IN_PROGRESS
    h.advance(2_999)
    assert h.answer(slow_join) is None, "the join phase waits for c up to the rebalance timeout"
    h.advance(1)
    answered = h.answer(slow_join)
    assert answered["generation_id"] == 2
    assert sorted(m["member_id"] for m in answered["members"]) == sorted([a, b])
    late = h.answer(h.join(c, client_id="c2"))
    assert late["error_code"] == ErrorCode.UNKNOWN_MEMBER_ID


def test_members_that_never_sync_are_removed_after_the_rebalance_timeout() -> None:
    h = GroupHarness()
    a, b = h.form_group(2)
    _ja, jb = h.join(a, client_id="c0"), h.join(b, client_id="c1")
    assert h.answer(jb)["generation_id"] == 2
    h.sync(a, 2, {a: b"A", b: b"B"})
    for _ in range(10):  # both heartbeat, but b joined and never synced
        h.advance(3000)
        h.heartbeat(a, 2)
        h.heartbeat(b, 2)
    assert b not in h.core.groups["g"].members and state(h) == ClassicState.PREPARING_REBALANCE


def test_initial_rebalance_delay_gathers_a_starting_fleet_into_one_generation() -> None:
    h = GroupHarness(GroupSettings(initial_rebalance_delay_ms=3000))
    ids = [h.answer(h.join(client_id=f"w{i}"))["member_id"] for i in range(3)]
    first = h.join(ids[0], client_id="w0")
    h.advance(2000)
    second = h.join(ids[1], client_id="w1")  # a new member extends the delay by 3 s
    h.advance(2000)
    third = h.join(ids[2], client_id="w2")
    assert h.answer(first) is None
    h.advance(3000)
    assert h.answer(first) is None, "another member arrived during the extension"
    h.advance(3000)
    assert {h.answer(r)["generation_id"] for r in (first, second, third)} == {1}


def test_static_member_restart_keeps_its_assignment_without_a_rebalance() -> None:
    h = GroupHarness()
    alone = h.answer(h.join(client_id="s", instance_id="host-1"))
    assert alone["error_code"] == 0 and alone["generation_id"] == 1, "static members skip MEMBER_ID_REQUIRED"
    static = alone["member_id"]
    h.sync(static, 1, {static: b"everything"}, instance_id="host-1")
    dynamic = h.answer(h.join(client_id="d"))["member_id"]
    dynamic_join = h.join(dynamic, client_id="d")
    static_join = h.join(static, client_id="s", instance_id="host-1")
    generation = h.answer(dynamic_join)["generation_id"]
    assert generation == 2 and h.answer(static_join)["leader"] == static
    h.sync(dynamic, generation)
    h.sync(static, generation, {static: b"static-part", dynamic: b"dynamic-part"}, instance_id="host-1")
    assert state(h) == ClassicState.STABLE
    # The static member's process restarts: it joins with no member id and the same instance id.
    restarted = h.answer(h.join(client_id="s", instance_id="host-1"))
    assert restarted["error_code"] == 0 and restarted["member_id"] != static
    assert restarted["generation_id"] == generation and state(h) == ClassicState.STABLE
    assert restarted["leader"] == static and restarted["members"] == [], "v<9: the leader as it was"
    synced = h.answer(h.sync(restarted["member_id"], generation, instance_id="host-1"))
    assert synced["assignment"] == b"static-part"
    assert h.heartbeat(static, generation, instance_id="host-1") == ErrorCode.FENCED_INSTANCE_ID
    assert h.heartbeat(dynamic, generation) == ErrorCode.NONE, "the other member did not notice"
    assert h.core.groups["g"].generation == generation


def test_a_v9_static_leader_that_rejoins_is_told_to_skip_assignment() -> None:
    h = GroupHarness()
    first = h.answer(h.join(client_id="s", instance_id="i", version=9))
    h.sync(first["member_id"], 1, {first["member_id"]: b"x"}, instance_id="i")
    again = h.answer(h.join(client_id="s", instance_id="i", version=9))
    assert again["skip_assignment"] is True and len(again["members"]) == 1


def test_leave_group_batched_with_static_and_unknown_members() -> None:
    h = GroupHarness()
    a, b, c = h.form_group(3)
    left = h.call(ApiKey.LEAVE_GROUP, 3, group_id="g", members=[
        {"member_id": b, "group_instance_id": None}, {"member_id": "ghost", "group_instance_id": None},
        {"member_id": "", "group_instance_id": "never-joined"}])  # fmt: skip
    assert [m["error_code"] for m in left["members"]] == [
        0,
        ErrorCode.UNKNOWN_MEMBER_ID,
        ErrorCode.UNKNOWN_MEMBER_ID,
    ]
    assert state(h) == ClassicState.PREPARING_REBALANCE and b not in h.core.groups["g"].members
    old_style = h.call(ApiKey.LEAVE_GROUP, 1, group_id="g", member_id="ghost")
    assert old_style["error_code"] == ErrorCode.UNKNOWN_MEMBER_ID


def test_the_last_member_leaving_empties_the_group_and_bumps_the_generation() -> None:
    h = GroupHarness()
    [a] = h.form_group(1)
    h.call(ApiKey.LEAVE_GROUP, 1, group_id="g", member_id=a)
    assert state(h) == ClassicState.EMPTY and h.core.groups["g"].generation == 2
    assert h.records[-1].value is not None and h.records[-1].value.members == ()


def test_a_thousand_members_form_one_group_within_a_second_of_virtual_time() -> None:
    h = GroupHarness()
    started = time.perf_counter()
    ids = h.form_group(1000)
    wall = time.perf_counter() - started
    group = h.core.groups["g"]
    assert group.state == ClassicState.STABLE and len(group.members) == 1000 and group.generation == 1
    assert h.now <= 1000
    assert {m.assignment for m in group.members.values()} == {f"assign-{m}".encode() for m in ids}
    print(f"1,000-member group formed in {wall * 1000:.0f} ms of wall time")


def test_replaying_the_records_rebuilds_the_same_groups_and_offsets() -> None:
    h = GroupHarness()
    a, b, c = h.form_group(3)
    h.call(8, 8, group_id="g", generation_id_or_member_epoch=1, member_id=a, group_instance_id=None, topics=[
        {"name": "orders", "partitions": [{"partition_index": p, "committed_offset": 100 + p,
                                           "committed_leader_epoch": 0, "committed_metadata": "m"}
                                          for p in range(4)]}])  # fmt: skip
    h.call(ApiKey.LEAVE_GROUP, 1, group_id="g", member_id=c)
    rejoins = [h.join(m, client_id=f"c{i}") for i, m in enumerate((a, b))]
    generation = h.answer(rejoins[0])["generation_id"]
    h.sync(b, generation)
    h.sync(a, generation, {a: b"A2", b: b"B2"})
    h.form_group(2, group_id="second", prefix="s")
    replayed = GroupCoordinator(GroupSettings(), h.topics.get)
    for record in h.records:
        replayed.replay(record)
    assert {k: g.snapshot() for k, g in replayed.groups.items()} == {
        k: g.snapshot() for k, g in h.core.groups.items()
    }
    assert replayed.offsets.committed == h.core.offsets.committed
    assert replayed.groups["g"].state == ClassicState.STABLE


def test_kafka_connect_workers_form_a_connect_group_and_one_eager_worker_downgrades_it() -> None:
    """Kafka Connect's embedded protocol: protocol type "connect", protocols offered in
    preference order; every worker votes, so one eager-only worker makes it "default"."""
    h = GroupHarness()
    sessioned = [("sessioned", b"v2-meta"), ("compatible", b"v1-meta"), ("default", b"v0-meta")]
    workers = [h.answer(h.join(client_id=f"w{i}", protocol_type="connect", group_id="connect-cluster",
                               protocols=sessioned))["member_id"] for i in range(2)]  # fmt: skip

    def rejoin_all() -> list[int]:
        return [
            h.join(
                w, client_id=f"w{i}", protocol_type="connect", group_id="connect-cluster", protocols=sessioned
            )
            for i, w in enumerate(workers)
        ]

    joins = rejoin_all()
    leader_view = h.answer(joins[0])
    assert leader_view["protocol_type"] == "connect" and leader_view["protocol_name"] == "sessioned"
    assert [m["metadata"] for m in leader_view["members"]] == [b"v2-meta", b"v2-meta"]
    eager = h.answer(h.join(client_id="old", protocol_type="connect", group_id="connect-cluster",
                            protocols=[("default", b"v0-meta")]))["member_id"]  # fmt: skip
    h.join(eager, client_id="old", protocol_type="connect", group_id="connect-cluster",
           protocols=[("default", b"v0-meta")])  # fmt: skip
    rejoins = rejoin_all()
    answer = h.answer(rejoins[0])
    assert answer["protocol_name"] == "default"
    assert {m["metadata"] for m in answer["members"]} == {b"v0-meta"}

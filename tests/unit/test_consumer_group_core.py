"""KIP-848 consumer groups in the pure core, on a virtual clock: joins, incremental
reconciliation (revoke before assign, members keeping partitions never pause), fencing,
the lost-response case, leaving, static members, session and rebalance timeouts,
validation errors, and regex subscriptions."""

from __future__ import annotations

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from connect_rebalance.errors import ErrorCode
from connect_rebalance.protocol.api_keys import ApiKey
from tests.support.group_harness import GroupHarness

pytestmark = pytest.mark.unit


def join(h: GroupHarness, member: str, topics=("orders",), **kw) -> dict:  # type: ignore[no-untyped-def]
    return h.consumer_heartbeat(member, 0, topics=list(topics), owned={}, rebalance_timeout_ms=30000, **kw)


def test_a_first_member_gets_everything_and_a_second_gets_half_after_the_first_revokes() -> None:
    h = GroupHarness(topics={"orders": 12})
    a = join(h, "A")
    assert (a["error_code"], a["member_epoch"]) == (0, 1) and h.assigned(a) == {"orders": list(range(12))}
    b = join(h, "B")
    assert b["member_epoch"] == 2 and h.assigned(b) == {}, "nothing is free until A lets go"
    a2 = h.consumer_heartbeat("A", 1, owned={"orders": list(range(12))})
    assert a2["member_epoch"] == 1 and len(h.assigned(a2)["orders"]) == 6, (
        "A is told to keep 6, still at epoch 1"
    )
    kept = h.assigned(a2)["orders"]
    b2 = h.consumer_heartbeat("B", 2)
    assert b2["assignment"] is None, "B's assignment has not changed yet"
    a3 = h.consumer_heartbeat("A", 1, owned={"orders": kept})
    assert a3["member_epoch"] == 2
    b3 = h.consumer_heartbeat("B", 2)
    assert sorted(h.assigned(b3)["orders"] + kept) == list(range(12))
    assert h.core.groups["cg"].state.value == "Stable"


def test_members_with_reconciliation_work_pending_are_asked_back_sooner() -> None:
    h = GroupHarness(topics={"orders": 4})
    assert join(h, "A")["heartbeat_interval_ms"] == 5000, "A holds its target: the default interval"
    b = join(h, "B")
    assert b["heartbeat_interval_ms"] == 500, "B waits for partitions A still holds"
    told = h.consumer_heartbeat("A", 1, owned={"orders": [0, 1, 2, 3]})
    assert told["heartbeat_interval_ms"] == 500, "A has partitions to revoke"
    done = h.consumer_heartbeat("A", 1, owned={"orders": h.assigned(told)["orders"]})
    assert (done["member_epoch"], done["heartbeat_interval_ms"]) == (2, 5000)
    assert h.consumer_heartbeat("B", 2)["heartbeat_interval_ms"] == 5000, "B got the rest: settled"


def test_fencing_and_the_lost_response_case() -> None:
    h = GroupHarness(topics={"orders": 4})
    join(h, "A")
    assert h.consumer_heartbeat("A", 5)["error_code"] == ErrorCode.FENCED_MEMBER_EPOCH
    join(h, "B")  # epoch 2; A must give up two partitions
    told = h.consumer_heartbeat("A", 1, owned={"orders": [0, 1, 2, 3]})
    kept = h.assigned(told)["orders"]
    moved_on = h.consumer_heartbeat("A", 1, owned={"orders": kept})
    assert moved_on["member_epoch"] == 2
    # That answer was lost: A still sends epoch 1, owning only what it kept.
    assert h.consumer_heartbeat("A", 1, owned={"orders": kept})["error_code"] == 0
    assert (
        h.consumer_heartbeat("A", 1, owned={"orders": [0, 1, 2, 3]})["error_code"]
        == ErrorCode.FENCED_MEMBER_EPOCH
    )
    assert h.consumer_heartbeat("ghost", 3)["error_code"] == ErrorCode.UNKNOWN_MEMBER_ID


def test_leaving_bumps_the_epoch_and_the_rest_take_over() -> None:
    h = GroupHarness(topics={"orders": 6})
    join(h, "A")
    join(h, "B")
    a = h.consumer_heartbeat("A", 1, owned={"orders": list(range(6))})
    h.consumer_heartbeat("A", 1, owned={"orders": h.assigned(a)["orders"]})
    h.consumer_heartbeat("B", 2)
    left = h.consumer_heartbeat("B", -1)
    assert (left["error_code"], left["member_epoch"]) == (0, -1)
    back = h.consumer_heartbeat("A", 2, owned={"orders": h.assigned(a)["orders"]})
    assert back["member_epoch"] == 3 and h.assigned(back) == {"orders": list(range(6))}


def test_session_expiry_and_rebalance_timeout_remove_members() -> None:
    h = GroupHarness(topics={"orders": 4})
    join(h, "A")
    join(h, "B")
    h.consumer_heartbeat("A", 1, owned={"orders": [0, 1, 2, 3]})  # told to revoke; never acknowledges
    for _ in range(6):
        h.advance(5000)
        h.consumer_heartbeat("B", 2)
        h.consumer_heartbeat("A", 1)  # heartbeats without owned partitions do not acknowledge
    assert "A" not in h.core.groups["cg"].members, "fenced at its 30 s rebalance timeout"
    h.advance(45_001)
    assert "B" not in h.core.groups["cg"].members, "B's session ran out"


def test_a_static_member_restarts_in_place_after_a_temporary_leave() -> None:
    h = GroupHarness(topics={"orders": 4})
    s = join(h, "s-1", instance_id="host-1")
    d = join(h, "d-1")
    s2 = h.consumer_heartbeat("s-1", 1, owned={"orders": h.assigned(s)["orders"]}, instance_id="host-1")
    kept = h.assigned(s2)["orders"]
    h.consumer_heartbeat("s-1", 1, owned={"orders": kept}, instance_id="host-1")
    h.consumer_heartbeat("d-1", d["member_epoch"])
    epoch = h.core.groups["cg"].group_epoch
    assert join(h, "s-2", instance_id="host-1")["error_code"] == ErrorCode.UNRELEASED_INSTANCE_ID
    assert h.consumer_heartbeat("s-1", -2, instance_id="host-1")["member_epoch"] == -2
    back = join(h, "s-2", instance_id="host-1")
    assert back["error_code"] == 0 and sorted(h.assigned(back)["orders"]) == sorted(kept)
    assert h.core.groups["cg"].group_epoch == epoch, "nobody else rebalanced"


def test_validation_errors() -> None:
    h = GroupHarness(topics={"orders": 4})
    assert h.consumer_heartbeat("", 0, topics=["orders"], owned={}, rebalance_timeout_ms=1)["error_code"] == (
        ErrorCode.INVALID_REQUEST
    )
    assert (
        h.consumer_heartbeat("A", 0, topics=["orders"], owned={})["error_code"] == ErrorCode.INVALID_REQUEST
    )
    assert join(h, "A", assignor="sticky")["error_code"] == ErrorCode.UNSUPPORTED_ASSIGNOR
    bad = h.consumer_heartbeat("A", 0, topics=None, regex="(", owned={}, rebalance_timeout_ms=1)
    assert bad["error_code"] == ErrorCode.INVALID_REGULAR_EXPRESSION
    assert h.consumer_heartbeat("A", -3)["error_code"] == ErrorCode.INVALID_REQUEST
    assert h.consumer_heartbeat("A", 4, group_id="none")["error_code"] == ErrorCode.UNKNOWN_MEMBER_ID
    v0 = h.consumer_heartbeat("", 0, topics=["orders"], owned={}, rebalance_timeout_ms=1, version=0)
    assert v0["error_code"] == 0 and v0["member_id"], "a v0 join without a member id gets one"


def test_a_regex_subscription_picks_up_a_topic_created_later() -> None:
    h = GroupHarness(topics={"logs-a": 2})
    first = h.consumer_heartbeat("A", 0, topics=None, regex="logs-.*", owned={}, rebalance_timeout_ms=1000)
    assert h.assigned(first) == {"logs-a": [0, 1]}
    h.topics["logs-b"] = 3
    later = h.consumer_heartbeat("A", first["member_epoch"], owned={"logs-a": [0, 1]})
    assert later["member_epoch"] > first["member_epoch"]
    assert h.assigned(later) == {"logs-a": [0, 1], "logs-b": [0, 1, 2]}


def test_what_the_group_subscribes_to_follows_members_changing_and_leaving() -> None:
    """The group's subscription is the union of its members' (kept per distinct subscription,
    not rebuilt from every member): a topic nobody subscribes to any more leaves it."""
    h = GroupHarness(topics={"orders": 2, "payments": 2, "refunds": 2})
    a = join(h, "A", topics=("orders",))
    join(h, "B", topics=("orders", "payments"))
    join(h, "C", topics=("orders", "payments"))
    assert h.core.groups["cg"].subscribed_names == {"orders", "payments"}
    assert h.consumer_heartbeat("B", -1)["error_code"] == 0
    assert h.core.groups["cg"].subscribed_names == {"orders", "payments"}, "C still wants payments"
    assert h.consumer_heartbeat("C", -1)["error_code"] == 0
    moved = h.consumer_heartbeat("A", a["member_epoch"], topics=["refunds"], owned={"orders": [0, 1]})
    assert h.core.groups["cg"].subscribed_names == {"refunds"}
    done = h.consumer_heartbeat("A", moved["member_epoch"], owned={})
    assert h.assigned(done) == {"refunds": [0, 1]}


def consumer_state(core) -> dict:  # type: ignore[no-untyped-def]
    """What a consumer group persists: epochs, targets, members and their assignments."""
    from coordinator.groups.consumer import ConsumerGroup

    return {
        group_id: (
            group.group_epoch,
            group.assignment_epoch,
            group.assignor_name,
            dict(group.target),
            {m.member_id: (m.profile, m.assignment) for m in group.members.values()},
            group.ownership.snapshot(),
        )  # fmt: skip
        for group_id, group in core.groups.items()
        if isinstance(group, ConsumerGroup)
    }


def assert_replay_rebuilds(h: GroupHarness) -> None:
    from coordinator.group_record_codec import decode_record, encode_record
    from coordinator.groups.coordinator import GroupCoordinator
    from coordinator.groups.settings import GroupSettings

    replayed = GroupCoordinator(GroupSettings(), h.topics.get, topics_view=h.metadata)
    for record in h.records:
        replayed.replay(decode_record(*encode_record(record)))  # through the bytes, as at start-up
    assert consumer_state(replayed) == consumer_state(h.core)


def test_replaying_the_records_rebuilds_the_same_consumer_groups() -> None:
    h = GroupHarness(topics={"orders": 6})
    a = join(h, "A")
    join(h, "B", instance_id="host-b")
    told = h.consumer_heartbeat("A", a["member_epoch"], owned={"orders": list(range(6))})
    assert_replay_rebuilds(h)  # mid-reconciliation: A still holds partitions it must revoke
    h.consumer_heartbeat("A", 1, owned={"orders": h.assigned(told)["orders"]})
    h.consumer_heartbeat("B", 2, instance_id="host-b")
    h.consumer_heartbeat("B", -2, instance_id="host-b")
    join(h, "B2", instance_id="host-b")
    join(h, "C")
    h.consumer_heartbeat("C", -1)
    assert_replay_rebuilds(h)


class Simulated:
    """Members that do what a consumer does: report what they own, revoke when told."""

    def __init__(self, h: GroupHarness) -> None:
        self.h = h
        self.epoch: dict[str, int] = {}
        self.owned: dict[str, dict[str, list[int]]] = {}

    def beat(self, member: str, acknowledge: bool = True, topics: list[str] | None = None) -> None:
        if member not in self.epoch:
            answer = join(self.h, member, topics=topics or ["orders", "audit"])
        else:
            owned = self.owned[member] if acknowledge else None
            answer = self.h.consumer_heartbeat(member, self.epoch[member], owned=owned, topics=topics)
        if answer["error_code"] in (ErrorCode.FENCED_MEMBER_EPOCH, ErrorCode.UNKNOWN_MEMBER_ID):
            self.epoch.pop(member, None)  # a fenced member drops everything and rejoins later
            self.owned.pop(member, None)
            return
        assert answer["error_code"] == 0, answer
        self.epoch[member] = answer["member_epoch"]
        if answer["assignment"] is not None:
            self.owned[member] = self.h.assigned(answer)

    def leave(self, member: str) -> None:
        if member in self.epoch:
            self.h.consumer_heartbeat(member, -1)
            self.epoch.pop(member)
            self.owned.pop(member)

    def check_no_partition_owned_twice(self) -> None:
        group = self.h.core.groups.get("cg")
        if group is None:
            return
        seen: dict[tuple[str, int], str] = {}
        for member_id, member in group.members.items():
            for item in member.assignment.held:
                assert item not in seen, f"{item} held by {seen[item]} and {member_id}"
                seen[item] = member_id


steps = st.lists(
    st.tuples(
        st.sampled_from(["beat", "beat", "beat", "leave", "crash", "resubscribe", "grow"]),
        st.sampled_from(["A", "B", "C", "D"]),
        st.booleans(),
    ),
    max_size=50,
)


@settings(max_examples=150, deadline=None)
@given(script=steps)
def test_no_partition_is_owned_twice_and_a_quiet_group_converges(script) -> None:  # type: ignore[no-untyped-def]
    h = GroupHarness(topics={"orders": 6, "audit": 2})
    sim = Simulated(h)
    for kind, member, flag in script:
        if kind == "beat":
            sim.beat(member, acknowledge=flag)
        elif kind == "leave":
            sim.leave(member)
        elif kind == "crash" and member in sim.epoch:
            h.advance(45_001)  # everyone silent past the session timeout: all are removed
            sim.epoch.clear()
            sim.owned.clear()
        elif kind == "resubscribe" and member in sim.epoch:
            sim.beat(member, topics=["orders"] if flag else ["orders", "audit"])
        elif kind == "grow":
            h.topics["orders"] += 1
        sim.check_no_partition_owned_twice()
    for _ in range(4):  # quiet: everyone heartbeats, acknowledging
        for member in sorted(sim.epoch):
            sim.beat(member)
            sim.check_no_partition_owned_twice()
    assert_replay_rebuilds(h)
    group = h.core.groups.get("cg")
    if group is not None and group.members:
        assert group.state.value == "Stable"
        assigned = [item for m in group.members.values() for item in m.assignment.assigned]
        subscribed = {t for m in group.members.values() for t in m.subscribed_topic_names}
        expected = {(h.metadata.topic_id(t), p) for t in subscribed for p in range(h.topics[t])}
        assert sorted(assigned) == sorted(expected), "every subscribed partition is owned once"


def test_a_describe_shows_every_change_and_an_unchanged_group_hands_back_what_it_described() -> None:
    """A describe is kept until a record changes the group or a topic changes (a monitor
    polling a big group then costs no rebuilding and no encoding); it is never stale."""
    h = GroupHarness(topics={"orders": 4, "audit": 2})

    def members() -> tuple:  # type: ignore[type-arg]
        answer = h.call(
            ApiKey.CONSUMER_GROUP_DESCRIBE, 1, group_ids=["cg"], include_authorized_operations=False
        )
        return answer["groups"][0]["members"]  # type: ignore[no-any-return]

    def held(described: tuple) -> dict[str, dict[str, list[int]]]:  # type: ignore[type-arg]
        return {
            m["member_id"]: {t["topic_name"]: t["partitions"] for t in m["assignment"]["topic_partitions"]}
            for m in described
        }

    join(h, "A", topics=("orders", "audit"))
    first = members()
    assert members() is first, "nothing changed: the same members, described once"
    assert held(first) == {"A": {"orders": [0, 1, 2, 3], "audit": [0, 1]}}
    join(h, "B", topics=("orders", "audit"))
    assert [m["member_id"] for m in members()] == ["A", "B"]
    kept = h.assigned(h.consumer_heartbeat("A", 1, owned={"orders": [0, 1, 2, 3], "audit": [0, 1]}))
    h.consumer_heartbeat("A", 1, owned=kept)  # A has let go of what B is to get
    assert held(members())["A"] == {n: sorted(p) for n, p in kept.items() if p}
    h.failing_writes = "the disk is full"
    before = members()
    assert join(h, "C")["error_code"] == ErrorCode.COORDINATOR_NOT_AVAILABLE
    assert members() == before, "a change taken back is not described"
    h.failing_writes = None
    h.delete_topic("audit")
    renamed = members()
    assert renamed is not before and all(
        t["topic_name"] != "audit" for m in renamed for t in m["assignment"]["topic_partitions"]
    ), "a deleted topic is not named"

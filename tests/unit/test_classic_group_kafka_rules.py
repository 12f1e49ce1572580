"""Classic-group rules real clients meet, as Apache Kafka 4.x's GroupMetadataManager has them:
a static member restarting into a Stable group (decided by the protocol the group would
select, not by the metadata bytes, which the Java consumer changes on every restart),
DescribeGroups by state, and the group.max.size check of `acceptJoiningMember`."""

from __future__ import annotations

import struct

import pytest
from kafka.protocol.consumer.metadata import ConsumerProtocolAssignment, ConsumerProtocolSubscription

from connect_rebalance.errors import ErrorCode
from connect_rebalance.protocol.api_keys import ApiKey
from coordinator.groups.classic import ClassicState
from coordinator.groups.coordinator import GroupCoordinator
from coordinator.groups.settings import GroupSettings
from tests.support.group_harness import GroupHarness

pytestmark = pytest.mark.unit

DELAY_MS = 100  # group.initial.rebalance.delay.ms: the members below form one generation


def java_subscription(generation: int, owned: list[int], user_data: bytes | None = None) -> bytes:
    """ConsumerProtocol v3 as the Java consumer sends it: its generation and owned partitions."""
    owned_partitions = [ConsumerProtocolSubscription.TopicPartition(topic="orders", partitions=owned)]
    return bytes(
        ConsumerProtocolSubscription(
            version=3, topics=["orders"], user_data=user_data,
            owned_partitions=owned_partitions if owned else [], generation_id=generation, rack_id=None,
        ).encode(header=True)
    )  # fmt: skip


def cooperative_sticky(generation: int, owned: list[int]) -> bytes:
    """The cooperative-sticky assignor's subscription: its user data is the generation (int32)."""
    return java_subscription(generation, owned, user_data=struct.pack(">i", generation))


def java_protocols(generation: int = -1, owned: list[int] | None = None) -> list[tuple[str, bytes]]:
    """The Java consumer's default partition.assignment.strategy: range, then cooperative-sticky."""
    owned = owned or []
    return [("range", java_subscription(generation, owned)),
            ("cooperative-sticky", cooperative_sticky(generation, owned))]  # fmt: skip


def assignment(partitions: list[int]) -> bytes:
    topics = [ConsumerProtocolAssignment.TopicPartition(topic="orders", partitions=partitions)]
    return bytes(ConsumerProtocolAssignment(version=0, assigned_partitions=topics, user_data=None).encode())


def described(h: GroupHarness) -> dict:
    [group] = h.call(ApiKey.DESCRIBE_GROUPS, 5, groups=["g"], include_authorized_operations=False)["groups"]
    return group


class StaticGroup:
    """Static members (instance ids "a", "b", ...) of group "g" on a harness, and their member ids."""

    def __init__(self, h: GroupHarness, instances: list[str]) -> None:
        self.h = h
        self.member_ids: dict[str, str] = {}
        self.split = {i: list(range(k, 12, len(instances))) for k, i in enumerate(instances)}
        self.protocols = {i: java_protocols() for i in instances}

    def rebalance(self, protocols: dict[str, list[tuple[str, bytes]]]) -> int:
        """Every member (re)joins with `protocols` and syncs; the leader assigns `split`."""
        h = self.h
        joins = {
            i: h.join(self.member_ids.get(i, ""), client_id=i, instance_id=i, protocols=p)
            for i, p in protocols.items()
        }
        h.advance(2 * DELAY_MS)  # the initial delay, extended once for the later arrivals
        answers = {i: h.answer(r) for i, r in joins.items()}
        assert all(a is not None and a["error_code"] == 0 for a in answers.values()), answers
        self.member_ids = {i: a["member_id"] for i, a in answers.items()}
        self.protocols = dict(protocols)
        generation = answers[next(iter(answers))]["generation_id"]
        leader = next(i for i, a in answers.items() if a["members"])
        for i, member_id in self.member_ids.items():
            assignments = (
                {self.member_ids[j]: assignment(ps) for j, ps in self.split.items()} if i == leader else None
            )
            h.sync(member_id, generation, assignments, instance_id=i)
        assert h.core.groups["g"].state == ClassicState.STABLE
        return generation

    def settled_at_second_generation(self) -> int:
        """Formed, then a second rebalance in which each member's metadata names generation 1
        and the partitions it owns, as the Java consumer's rejoin does."""
        self.rebalance(dict(self.protocols))
        return self.rebalance({i: java_protocols(1, self.split[i]) for i in self.member_ids})

    def leader(self) -> str:
        leader_id = self.h.core.groups["g"].leader_id
        return next(i for i, m in self.member_ids.items() if m == leader_id)


def harness(**settings: int) -> GroupHarness:
    return GroupHarness(GroupSettings(initial_rebalance_delay_ms=DELAY_MS, **settings))


# -- a static member restarting into a Stable group ------------------------------------------


@pytest.mark.parametrize("restarting", ["leader", "follower"])
def test_a_java_static_member_restart_is_answered_at_once_at_the_same_generation(restarting: str) -> None:
    h = harness()
    group = StaticGroup(h, ["a", "b", "c"])
    generation = group.settled_at_second_generation()
    figures = h.core.metrics.groups["g"]
    rebalances = figures.rebalances
    instance = group.leader() if restarting == "leader" else next(i for i in "abc" if i != group.leader())
    old_id = group.member_ids[instance]
    leader_before = h.core.groups["g"].leader_id
    # The restarted process knows no generation and owns nothing: other bytes, same protocols.
    fresh = java_protocols(-1, [])
    assert fresh != group.protocols[instance]

    answer = h.answer(h.join(client_id=instance, instance_id=instance, protocols=fresh))

    assert answer is not None, "answered at once, not parked for a rebalance"
    assert (answer["error_code"], answer["generation_id"], answer["protocol_name"]) == (
        0,
        generation,
        "range",
    )
    new_id = answer["member_id"]
    assert new_id != old_id
    assert answer["leader"] == leader_before and answer["members"] == [], "v5: the leader as it was"
    assert h.core.groups["g"].state == ClassicState.STABLE and figures.rebalances == rebalances
    synced = h.answer(h.sync(new_id, generation, instance_id=instance))
    assert synced["error_code"] == 0 and synced["assignment"] == assignment(group.split[instance])
    for other, member_id in group.member_ids.items():
        if other != instance:
            assert h.heartbeat(member_id, generation, instance_id=other) == ErrorCode.NONE, (
                "nobody else noticed"
            )
    assert h.heartbeat(old_id, generation, instance_id=instance) == ErrorCode.FENCED_INSTANCE_ID

    # The member's new metadata is kept: described, written, and rebuilt by replay.
    shown = {m["member_id"]: m["member_metadata"] for m in described(h)["members"]}
    assert shown[new_id] == fresh[0][1]
    record = h.records[-1].value
    assert {m.member_id: m.subscription for m in record.members}[new_id] == fresh[0][1]
    replayed = GroupCoordinator(GroupSettings(), h.topics.get)
    for r in h.records:
        replayed.replay(r)
    assert replayed.groups["g"].members[new_id].metadata("range") == fresh[0][1]
    assert replayed.groups["g"].generation == generation


def test_a_cooperative_sticky_static_member_restart_keeps_the_generation() -> None:
    h = harness()
    group = StaticGroup(h, ["a", "b"])
    group.protocols = {i: [("cooperative-sticky", cooperative_sticky(-1, []))] for i in "ab"}
    group.rebalance(dict(group.protocols))
    generation = group.rebalance(
        {i: [("cooperative-sticky", cooperative_sticky(1, group.split[i]))] for i in "ab"}
    )

    answer = h.answer(
        h.join(client_id="b", instance_id="b", protocols=[("cooperative-sticky", cooperative_sticky(-1, []))])
    )

    assert answer["error_code"] == 0 and answer["generation_id"] == generation
    assert h.core.groups["g"].state == ClassicState.STABLE
    synced = h.answer(h.sync(answer["member_id"], generation, instance_id="b"))
    assert synced["assignment"] == assignment(group.split["b"])
    assert h.heartbeat(group.member_ids["a"], generation, instance_id="a") == ErrorCode.NONE


def test_a_tied_vote_is_decided_as_before_when_a_static_member_restarts() -> None:
    """a prefers range, b cooperative-sticky: the tie goes to the first member's choice. The
    restarted a takes a's place, so the group would still select range: no rebalance."""
    h = harness()
    group = StaticGroup(h, ["a", "b"])
    generation = group.rebalance({"a": java_protocols(), "b": list(reversed(java_protocols()))})
    assert h.core.groups["g"].protocol_name == "range"
    answer = h.answer(h.join(client_id="a", instance_id="a", protocols=java_protocols(1, group.split["a"])))
    assert answer["generation_id"] == generation and h.core.groups["g"].state == ClassicState.STABLE


def test_a_static_restart_that_changes_the_selected_protocol_rebalances() -> None:
    h = harness()
    group = StaticGroup(h, ["a", "b"])
    generation = group.rebalance(dict(group.protocols))
    # b now offers cooperative-sticky only: the group can no longer run range.
    parked = h.join(
        client_id="b", instance_id="b", protocols=[("cooperative-sticky", cooperative_sticky(-1, []))]
    )
    assert h.answer(parked) is None and h.core.groups["g"].state == ClassicState.PREPARING_REBALANCE
    assert h.heartbeat(group.member_ids["a"], generation, instance_id="a") == ErrorCode.REBALANCE_IN_PROGRESS
    rejoined = h.answer(
        h.join(group.member_ids["a"], client_id="a", instance_id="a", protocols=java_protocols())
    )
    assert rejoined["generation_id"] == generation + 1 and rejoined["protocol_name"] == "cooperative-sticky"
    assert h.answer(parked)["generation_id"] == generation + 1


def test_a_lone_static_member_that_now_prefers_another_protocol_rebalances_to_it() -> None:
    h = harness()
    group = StaticGroup(h, ["a"])
    generation = group.rebalance({"a": java_protocols()})
    answer = h.answer(h.join(client_id="a", instance_id="a", protocols=list(reversed(java_protocols()))))
    assert answer["generation_id"] == generation + 1 and answer["protocol_name"] == "cooperative-sticky"


def test_a_static_restart_while_the_group_completes_a_rebalance_starts_another() -> None:
    """The leader may be assigning to the old member id: Kafka rebalances again."""
    h = harness()
    group = StaticGroup(h, ["a", "b"])
    generation = group.rebalance(dict(group.protocols))
    follower = next(i for i in "ab" if i != group.leader())
    h.join(
        group.member_ids[group.leader()],
        client_id="x",
        instance_id=group.leader(),
        protocols=java_protocols(),
    )
    h.join(group.member_ids[follower], client_id="x", instance_id=follower, protocols=java_protocols())
    assert h.core.groups["g"].state == ClassicState.COMPLETING_REBALANCE
    waiting = h.sync(group.member_ids[follower], generation + 1, instance_id=follower)
    restarted = h.join(client_id="x", instance_id=follower, protocols=java_protocols())
    assert h.answer(waiting)["error_code"] == ErrorCode.FENCED_INSTANCE_ID, "the old member is fenced"
    assert h.answer(restarted) is None and h.core.groups["g"].state == ClassicState.PREPARING_REBALANCE


# -- DescribeGroups by state -----------------------------------------------------------------


def test_describe_shows_protocol_and_metadata_only_while_stable() -> None:
    h = GroupHarness()
    a, b = h.form_group(2)
    stable = described(h)
    assert (stable["group_state"], stable["protocol_type"], stable["protocol_data"]) == (
        "Stable",
        "consumer",
        "range",
    )
    assert all(m["member_metadata"] for m in stable["members"])
    held = {m["member_id"]: m["member_assignment"] for m in stable["members"]}
    assert held == {a: f"assign-{a}".encode(), b: f"assign-{b}".encode()}

    h.join(a, client_id="c0", protocols=[("range", b"a again")])
    preparing = described(h)
    assert (preparing["group_state"], preparing["protocol_type"], preparing["protocol_data"]) == (
        "PreparingRebalance", "consumer", "")  # fmt: skip
    assert [m["member_metadata"] for m in preparing["members"]] == [b"", b""]
    assert {m["member_id"]: m["member_assignment"] for m in preparing["members"]} == held, (
        "members hold their assignment until the next one (Kafka 4.x describes it)"
    )

    h.join(b, client_id="c1", protocols=[("range", b"b again")])
    waiting = h.sync(b, 2)
    completing = described(h)
    assert (completing["group_state"], completing["protocol_data"]) == ("CompletingRebalance", "")
    assert [m["member_metadata"] for m in completing["members"]] == [b"", b""]

    h.sync(a, 2, {a: b"A2", b: b"B2"})
    assert h.answer(waiting)["assignment"] == b"B2"
    again = described(h)
    assert (again["group_state"], again["protocol_data"]) == ("Stable", "range")
    assert [(m["member_metadata"], m["member_assignment"]) for m in again["members"]] == [
        (b"a again", b"A2"), (b"b again", b"B2")]  # fmt: skip


# -- group.max.size: Kafka's acceptJoiningMember ----------------------------------------------


def test_an_empty_group_takes_every_join_and_the_last_to_rejoin_over_the_limit_is_refused() -> None:
    """Kafka's testDynamicMembersJoinGroupWithMaxSizeAndRequiredKnownMember, with a limit of 3."""
    h = harness(max_group_size=3)
    first = [h.answer(h.join(client_id=f"m{i}")) for i in range(4)]
    assert [a["error_code"] for a in first] == [ErrorCode.MEMBER_ID_REQUIRED] * 4, "Empty: all accepted"
    ids = [a["member_id"] for a in first]
    assert h.core.groups["g"].state == ClassicState.EMPTY and len(h.core.groups["g"].pending_members) == 4

    second = [h.join(m, client_id=f"m{i}") for i, m in enumerate(ids)]
    refused = h.answer(second[3])
    assert refused["error_code"] == ErrorCode.GROUP_MAX_SIZE_REACHED and refused["member_id"] == ""
    assert ids[3] not in h.core.groups["g"].pending_members, "refused: no longer pending"
    h.advance(2 * DELAY_MS)  # the initial delay, extended once: then the generation forms
    answers = [h.answer(r) for r in second[:3]]
    assert {a["generation_id"] for a in answers} == {1} and len(h.core.groups["g"].members) == 3

    third = [h.answer(h.join(m, client_id=f"m{i}")) for i, m in enumerate(ids)]
    refused = (ErrorCode.GROUP_MAX_SIZE_REACHED, -1)
    assert [(a["error_code"], a["generation_id"]) for a in third] == [(0, 1)] * 3 + [refused], (
        "members rejoin a full group, others are refused"
    )


def test_members_still_to_rejoin_after_member_id_required_do_not_count() -> None:
    """A Stable group of 1 with a limit of 2: two newcomers are both given a member id; while
    preparing the rebalance the limit counts members awaiting their join answer, so the last
    member to rejoin (here the old one) is the one left out."""
    h = harness(max_group_size=2)
    group = StaticGroup(h, ["a"])
    group.rebalance({"a": java_protocols()})
    old = group.member_ids["a"]
    newcomers = [h.answer(h.join(client_id=f"n{i}")) for i in range(2)]
    assert [a["error_code"] for a in newcomers] == [ErrorCode.MEMBER_ID_REQUIRED] * 2
    joins = [h.join(a["member_id"], client_id=f"n{i}") for i, a in enumerate(newcomers)]
    assert h.core.groups["g"].state == ClassicState.PREPARING_REBALANCE
    left_out = h.answer(h.join(old, client_id="a", instance_id="a", protocols=java_protocols()))
    assert left_out["error_code"] == ErrorCode.GROUP_MAX_SIZE_REACHED
    answers = [h.answer(r) for r in joins]
    assert [a["error_code"] for a in answers] == [0, 0] and answers[0]["generation_id"] == 2
    assert set(h.core.groups["g"].members) == {a["member_id"] for a in newcomers}
    assert "a" not in h.core.groups["g"].static_members


def test_a_full_stable_group_takes_its_members_but_no_newcomer_nor_a_static_restart() -> None:
    """Kafka counts a static member that restarts (no member id) as a newcomer."""
    h = harness(max_group_size=2)
    group = StaticGroup(h, ["a", "b"])
    generation = group.rebalance(dict(group.protocols))
    assert h.answer(h.join(client_id="n"))["error_code"] == ErrorCode.GROUP_MAX_SIZE_REACHED
    restart = h.answer(h.join(client_id="a", instance_id="a", protocols=java_protocols()))
    assert restart["error_code"] == ErrorCode.GROUP_MAX_SIZE_REACHED
    follower = next(i for i in "ab" if i != group.leader())
    again = h.answer(h.join(group.member_ids[follower], client_id=follower, instance_id=follower,
                            protocols=group.protocols[follower]))  # fmt: skip
    assert again["error_code"] == 0 and again["generation_id"] == generation, "a member is always in"
    assert set(h.core.groups["g"].members) == set(group.member_ids.values())

"""Online migration between classic and consumer groups in the pure core, on a virtual clock:
the upgrade's conditions under each policy, the conversion itself, classic members' JoinGroup/
SyncGroup/Heartbeat/LeaveGroup inside a consumer group (revoke before assign across both kinds
of members), the downgrade, replay after each conversion, and group.consumer.max.size."""

from __future__ import annotations

import pytest

from connect_rebalance.consumer_protocol import decode_assignment, decode_subscription, encode_assignment
from connect_rebalance.errors import ErrorCode
from connect_rebalance.protocol.api_keys import ApiKey
from coordinator.configs.coordinator import ConfigError, CoordinatorConfig
from coordinator.group_record_codec import decode_record, encode_record
from coordinator.groups.classic import ClassicGroup, ClassicState
from coordinator.groups.consumer import ConsumerGroup
from coordinator.groups.coordinator import GroupCoordinator
from coordinator.groups.records import ConsumerGroupEpochRecord, GroupMetadataRecord
from coordinator.groups.settings import GroupSettings
from tests.support.group_harness import GroupHarness

pytestmark = pytest.mark.unit

GROUP = "cg"  # the harness's consumer_heartbeat default group id


def subscription(topics=("orders",), owned: dict[str, list[int]] | None = None) -> bytes:  # type: ignore[no-untyped-def]
    """ConsumerProtocol subscription bytes: v0 (eager, owns nothing), v1 when `owned` is given."""
    from kafka.protocol.consumer.metadata import ConsumerProtocolSubscription

    if owned is None:
        return bytes(
            ConsumerProtocolSubscription(version=0, topics=list(topics), user_data=None).encode(header=True)
        )
    tps = [{"topic": t, "partitions": p} for t, p in owned.items()]
    return bytes(
        ConsumerProtocolSubscription(
            version=1, topics=list(topics), user_data=None, owned_partitions=tps
        ).encode(header=True)
    )


def harness(partitions: int = 6, **settings) -> GroupHarness:  # type: ignore[no-untyped-def]
    return GroupHarness(
        GroupSettings(initial_rebalance_delay_ms=0, **settings), topics={"orders": partitions}
    )


def classic_group(h: GroupHarness, count: int = 2, protocol_type: str = "consumer") -> tuple[list[str], int]:
    """`count` classic members form a Stable generation; partitions are dealt out round-robin."""
    protocols = [("range", subscription())]
    ids = []
    for i in range(count):
        first = h.answer(
            h.join(client_id=f"k{i}", group_id=GROUP, protocols=protocols, protocol_type=protocol_type)
        )
        assert first is not None and first["error_code"] == ErrorCode.MEMBER_ID_REQUIRED
        ids.append(first["member_id"])
    joins = [
        h.join(m, client_id=f"k{i}", group_id=GROUP, protocols=protocols, protocol_type=protocol_type)
        for i, m in enumerate(ids)
    ]
    h.advance(0)
    generation = h.answer(joins[0])["generation_id"]
    leader = h.answer(joins[0])["leader"]
    deal = {
        m: [("orders", p) for p in range(h.topics["orders"]) if p % count == i] for i, m in enumerate(ids)
    }
    syncs = [h.sync(m, generation, group_id=GROUP) for m in ids if m != leader]
    h.sync(leader, generation, {m: encode_assignment(d) for m, d in deal.items()}, group_id=GROUP)
    assert all(h.answer(s)["error_code"] == 0 for s in syncs)
    return ids, generation


def consumer_join(h: GroupHarness, member: str, **kw) -> dict:  # type: ignore[no-untyped-def]
    return h.consumer_heartbeat(member, 0, topics=["orders"], owned={}, rebalance_timeout_ms=30000, **kw)


def classic_join(h: GroupHarness, member: str, owned: dict[str, list[int]] | None = None, **kw) -> dict:  # type: ignore[no-untyped-def]
    answer = h.answer(
        h.join(
            member, client_id=member, group_id=GROUP, protocols=[("range", subscription(owned=owned))], **kw
        )
    )
    assert answer is not None, "a classic member of a consumer group is answered at once"
    return answer


def classic_sync(h: GroupHarness, member: str, generation: int) -> tuple[int, list[int]]:
    answer = h.answer(h.sync(member, generation, group_id=GROUP))
    assert answer is not None
    return answer["error_code"], sorted(p for _, p in decode_assignment(answer["assignment"]))


def held(h: GroupHarness) -> dict[int, str]:
    """Partition -> the member the coordinator counts as holding it (never two)."""
    group = h.core.groups[GROUP]
    assert isinstance(group, ConsumerGroup)
    return {p: member for (_, p), member in group.ownership.snapshot().items()}


def offset_commit(h: GroupHarness, member: str, generation: int) -> int:
    """The error code of an OffsetCommit v8 of orders-0 by `member` at `generation`."""
    answer = h.call(ApiKey.OFFSET_COMMIT, 8, group_id=GROUP, generation_id_or_member_epoch=generation,
                    member_id=member, group_instance_id=None, topics=[{"name": "orders", "partitions": [
                        {"partition_index": 0, "committed_offset": 5, "committed_leader_epoch": 0,
                         "committed_metadata": ""}]}])  # fmt: skip
    return answer["topics"][0]["partitions"][0]["error_code"]


# -- upgrade --------------------------------------------------------------------------------


def test_a_consumer_protocol_join_converts_a_classic_group_at_its_generation() -> None:
    h = harness()
    (a, b), generation = classic_group(h)
    c = consumer_join(h, "C")
    assert c["error_code"] == 0
    group = h.core.groups[GROUP]
    assert isinstance(group, ConsumerGroup)
    assert group.members[a].classic is not None and group.members["C"].classic is None
    assert group.members[a].assignment.member_epoch == generation
    assert sorted(p for _, p in group.members[a].assignment.assigned) == [0, 2, 4]
    assert sorted(p for _, p in group.members[b].assignment.assigned) == [1, 3, 5]
    assert group.members[a].subscribed_topic_names == {"orders"}
    assert c["member_epoch"] == generation + 1 and h.assigned(c) == {}, "C waits: everything is held"
    assert GroupMetadataRecord(GROUP, None) in h.records, "the classic form is tombstoned"


@pytest.mark.parametrize(
    ("policy", "converts"),
    [("bidirectional", True), ("upgrade", True), ("downgrade", False), ("disabled", False)],
)
def test_the_upgrade_follows_the_migration_policy(policy: str, converts: bool) -> None:
    h = harness(consumer_migration_policy=policy)
    classic_group(h)
    answer = consumer_join(h, "C")
    assert answer["error_code"] == (ErrorCode.NONE if converts else ErrorCode.GROUP_ID_NOT_FOUND)
    assert isinstance(h.core.groups[GROUP], ConsumerGroup if converts else ClassicGroup)


def test_the_upgrade_is_refused_for_other_protocol_types_too_many_members_or_custom_user_data() -> None:
    h = harness()
    classic_group(h, protocol_type="connect")
    assert consumer_join(h, "C")["error_code"] == ErrorCode.GROUP_ID_NOT_FOUND

    h = harness(consumer_max_size=2)
    classic_group(h, count=3)
    assert consumer_join(h, "C")["error_code"] == ErrorCode.GROUP_ID_NOT_FOUND

    h = harness()
    h.form_group(2, group_id=GROUP)  # assignments are opaque bytes, not ConsumerProtocol
    refused = consumer_join(h, "C")
    assert (
        refused["error_code"] == ErrorCode.GROUP_ID_NOT_FOUND and "Cannot upgrade" in refused["error_message"]
    )
    assert h.core.groups[GROUP].state == ClassicState.STABLE, "a refused upgrade leaves the group as it was"


def test_an_empty_classic_group_becomes_a_consumer_group_whatever_the_policy() -> None:
    h = harness(consumer_migration_policy="disabled")
    (a, b), generation = classic_group(h)
    for member in (a, b):
        h.call(ApiKey.LEAVE_GROUP, 1, group_id=GROUP, member_id=member)
    assert consumer_join(h, "C")["error_code"] == 0
    assert isinstance(h.core.groups[GROUP], ConsumerGroup)


def test_parked_joins_are_answered_rebalance_in_progress_at_conversion() -> None:
    h = harness()
    (a, b), generation = classic_group(h)
    parked = h.join(a, client_id="k0", group_id=GROUP, protocols=[("range", subscription())])
    assert h.answer(parked) is None, "a's rejoin waits for b in PreparingRebalance"
    assert consumer_join(h, "C")["error_code"] == 0
    assert h.answer(parked)["error_code"] == ErrorCode.REBALANCE_IN_PROGRESS


# -- classic members inside a consumer group ---------------------------------------------------


def test_eager_classic_members_rejoin_and_partitions_move_only_once_released() -> None:
    h = harness()
    (a, b), generation = classic_group(h)
    c = consumer_join(h, "C")
    epoch = c["member_epoch"]
    assert h.heartbeat(a, generation, group_id=GROUP) == ErrorCode.REBALANCE_IN_PROGRESS
    before = held(h)
    assert sorted(before) == list(range(6)) and "C" not in before.values()
    rejoined = classic_join(h, a)  # eager: revoked everything, owns nothing
    assert (rejoined["error_code"], rejoined["generation_id"], rejoined["leader"]) == (0, epoch, "")
    code, a_parts = classic_sync(h, a, epoch)
    assert code == 0 and len(a_parts) == 2
    assert h.heartbeat(a, epoch, group_id=GROUP) == ErrorCode.NONE
    c2 = h.consumer_heartbeat("C", epoch)
    c_parts = h.assigned(c2).get("orders", []) if c2["assignment"] else []
    assert set(c_parts).isdisjoint(p for p, m in held(h).items() if m == b), "b still holds its partitions"
    classic_join(h, b)
    code, b_parts = classic_sync(h, b, epoch)
    c3 = h.consumer_heartbeat("C", epoch)
    c_parts = h.assigned(c3)["orders"]
    assert sorted(a_parts + b_parts + c_parts) == list(range(6))
    assert h.core.groups[GROUP].state.value == "Stable"


def test_a_cooperative_classic_member_keeps_what_it_must_revoke_until_it_rejoins_without_it() -> None:
    h = harness(partitions=4)
    (a,), generation = classic_group(h, count=1)
    epoch = consumer_join(h, "C")["member_epoch"]
    told = classic_join(h, a, owned={"orders": [0, 1, 2, 3]})
    assert told["generation_id"] == generation, "a stays at its epoch until it revokes"
    code, kept = classic_sync(h, a, generation)
    assert code == 0 and len(kept) == 2
    assert sorted(held(h)) == [0, 1, 2, 3] and set(held(h).values()) == {a}, "a still holds all four"
    assert h.heartbeat(a, generation, group_id=GROUP) == ErrorCode.REBALANCE_IN_PROGRESS
    assert h.consumer_heartbeat("C", epoch)["assignment"] is None, "C gets nothing a still holds"
    done = classic_join(h, a, owned={"orders": kept})
    assert done["generation_id"] == epoch
    c = h.consumer_heartbeat("C", epoch)
    assert sorted(h.assigned(c)["orders"] + kept) == [0, 1, 2, 3]


def test_classic_members_are_checked_for_generation_and_commit_with_their_member_epoch() -> None:
    h = harness()
    (a, b), generation = classic_group(h)
    consumer_join(h, "C")
    assert h.heartbeat(a, generation + 7, group_id=GROUP) == ErrorCode.ILLEGAL_GENERATION
    assert h.heartbeat("nobody", generation, group_id=GROUP) == ErrorCode.UNKNOWN_MEMBER_ID
    assert offset_commit(h, a, generation) == ErrorCode.NONE, "v8 is fine for a classic member"
    assert offset_commit(h, a, generation + 1) == ErrorCode.ILLEGAL_GENERATION


def test_a_new_classic_member_joins_a_mixed_group_and_one_leaves_with_leave_group() -> None:
    h = harness()
    (a, b), generation = classic_group(h)
    consumer_join(h, "C")
    first = h.answer(h.join(client_id="new", group_id=GROUP, protocols=[("range", subscription())]))
    assert first["error_code"] == ErrorCode.MEMBER_ID_REQUIRED
    joined = classic_join(h, first["member_id"])
    assert joined["error_code"] == 0 and len(h.core.groups[GROUP].members) == 4
    bad = h.answer(h.join(client_id="x", group_id=GROUP, protocols=[("other", subscription())]))
    assert bad["error_code"] == ErrorCode.INCONSISTENT_GROUP_PROTOCOL
    left = h.call(
        ApiKey.LEAVE_GROUP, 3, group_id=GROUP, members=[{"member_id": b, "group_instance_id": None}]
    )
    assert left["members"][0]["error_code"] == 0 and b not in h.core.groups[GROUP].members


def test_a_classic_member_that_stops_heartbeating_is_removed_after_its_own_session_timeout() -> None:
    h = harness()
    (a, b), generation = classic_group(h)
    consumer_join(h, "C")
    h.advance(9000)
    assert h.heartbeat(a, generation, group_id=GROUP) == ErrorCode.REBALANCE_IN_PROGRESS
    h.consumer_heartbeat("C", h.core.groups[GROUP].members["C"].assignment.member_epoch)
    h.advance(1500)  # b's 10 s session is over; a heartbeated at 9 s
    assert b not in h.core.groups[GROUP].members and a in h.core.groups[GROUP].members


def test_mixed_groups_describe_and_list_sensibly() -> None:
    h = harness()
    (a, b), generation = classic_group(h)
    consumer_join(h, "C")
    described = h.call(
        ApiKey.CONSUMER_GROUP_DESCRIBE, 1, group_ids=[GROUP], include_authorized_operations=False
    )["groups"][0]
    types = {m["member_id"]: m["member_type"] for m in described["members"]}
    assert types == {a: 0, b: 0, "C": 1}
    listed = h.call(ApiKey.LIST_GROUPS, 5, states_filter=[], types_filter=[])["groups"]
    assert [(g["group_id"], g["group_type"], g["protocol_type"]) for g in listed] == [
        (GROUP, "consumer", "consumer")
    ]
    old = h.call(ApiKey.DESCRIBE_GROUPS, 6, groups=[GROUP], include_authorized_operations=False)["groups"][0]
    assert old["error_code"] == ErrorCode.GROUP_ID_NOT_FOUND, (
        "as Kafka: describe it with ConsumerGroupDescribe"
    )


# -- downgrade ------------------------------------------------------------------------------


def upgraded(h: GroupHarness) -> tuple[list[str], int]:
    """Two eager classic members and consumer member C, settled at one epoch."""
    (a, b), generation = classic_group(h)
    epoch = consumer_join(h, "C")["member_epoch"]
    for member in (a, b):
        classic_join(h, member)
        assert classic_sync(h, member, epoch)[0] == 0
    h.consumer_heartbeat("C", epoch)
    assert h.core.groups[GROUP].state.value == "Stable"
    return [a, b], epoch


def test_when_the_last_consumer_protocol_member_leaves_the_group_turns_classic_and_rebalances() -> None:
    h = harness()
    (a, b), epoch = upgraded(h)
    h.consumer_heartbeat("C", -1)
    group = h.core.groups[GROUP]
    assert isinstance(group, ClassicGroup) and group.state == ClassicState.PREPARING_REBALANCE
    assert group.generation == epoch and group.protocol_name == "range" and group.protocol_type == "consumer"
    targets = [sorted(p for _, p in decode_assignment(group.members[m].assignment)) for m in (a, b)]
    assert all(len(t) == 2 for t in targets), "each member's target, serialized (C's share not yet dealt)"
    assert h.heartbeat(a, epoch, group_id=GROUP) == ErrorCode.REBALANCE_IN_PROGRESS, "rejoin"
    joins = [h.join(m, client_id=m, group_id=GROUP, protocols=[("range", subscription())]) for m in (a, b)]
    h.advance(0)
    answers = [h.answer(j) for j in joins]
    assert all(x["error_code"] == 0 and x["generation_id"] == epoch + 1 for x in answers)
    leader = answers[0]["leader"]
    assert len(answers[[a, b].index(leader)]["members"]) == 2, "the classic leader assigns again"


def test_a_classic_member_one_epoch_behind_the_departure_is_told_to_rejoin_and_keeps_what_it_owns() -> None:
    """The departure that triggers the downgrade bumps the group epoch past the settled classic
    members' epoch. The classic group is at their epoch, not that one: their heartbeat and sync
    are REBALANCE_IN_PROGRESS (ILLEGAL_GENERATION would make a consumer give its partitions up
    as lost), their commits still count, and a cooperative member rejoins as the same member
    reporting what it owns, which its leader sees."""
    h = harness()
    (a, b), epoch = upgraded(h)
    owns = {m: sorted(p for p, holder in held(h).items() if holder == m) for m in (a, b)}
    h.consumer_heartbeat("C", -1)
    bumped = [r.epoch for r in h.records if isinstance(r, ConsumerGroupEpochRecord) and r.epoch is not None]
    assert bumped[-1] == epoch + 1, "C's departure bumped the group epoch before the conversion"
    assert h.heartbeat(a, epoch, group_id=GROUP) == ErrorCode.REBALANCE_IN_PROGRESS
    assert h.core.groups[GROUP].generation == epoch
    assert h.answer(h.sync(b, epoch, group_id=GROUP))["error_code"] == ErrorCode.REBALANCE_IN_PROGRESS
    assert offset_commit(h, a, epoch) == ErrorCode.NONE, "its progress on what it owns is kept"
    cooperative = {m: [("range", subscription(owned={"orders": owns[m]}))] for m in (a, b)}
    joins = {m: h.join(m, client_id=m, group_id=GROUP, protocols=cooperative[m]) for m in (a, b)}
    h.advance(0)
    answers = {m: h.answer(j) for m, j in joins.items()}
    assert all(x["error_code"] == 0 and x["generation_id"] == epoch + 1 for x in answers.values())
    leader = answers[a]["leader"]
    seen = {m["member_id"]: decode_subscription(m["metadata"]) for m in answers[leader]["members"]}
    assert {m: sorted(p for _, p in seen[m].owned) for m in (a, b)} == owns, "the leader sees what each kept"


def test_a_classic_member_behind_the_others_at_a_downgrade_is_told_illegal_generation_and_rejoins() -> None:
    """Kafka's rule for a generation older than the group's: the member that lags is told
    ILLEGAL_GENERATION while the one that caught up is told to rejoin; both stay members and
    form the next generation together."""
    h = harness()
    (a, b), epoch = upgraded(h)
    consumer_join(h, "D")  # a new group epoch: a catches up with it, b does not
    assert h.heartbeat(a, epoch, group_id=GROUP) == ErrorCode.REBALANCE_IN_PROGRESS
    caught_up = classic_join(h, a)["generation_id"]
    assert caught_up == epoch + 1
    h.consumer_heartbeat("C", -1)
    h.consumer_heartbeat("D", -1)
    group = h.core.groups[GROUP]
    assert isinstance(group, ClassicGroup) and group.generation == caught_up
    assert h.heartbeat(a, caught_up, group_id=GROUP) == ErrorCode.REBALANCE_IN_PROGRESS
    assert h.heartbeat(b, epoch, group_id=GROUP) == ErrorCode.ILLEGAL_GENERATION
    joins = [h.join(m, client_id=m, group_id=GROUP, protocols=[("range", subscription())]) for m in (a, b)]
    h.advance(0)
    assert [(x["error_code"], x["generation_id"]) for x in map(h.answer, joins)] == [(0, caught_up + 1)] * 2


def test_the_downgrade_also_follows_a_session_expiry_and_respects_the_policy() -> None:
    h = harness()
    (a, b), epoch = upgraded(h)
    for _ in range(15):  # a and b keep heartbeating; C goes silent (45 s session)
        h.advance(4000)
        if isinstance(h.core.groups[GROUP], ClassicGroup):
            break
        for m in (a, b):
            assert h.heartbeat(m, epoch, group_id=GROUP) == ErrorCode.NONE
    assert isinstance(h.core.groups[GROUP], ClassicGroup)

    h = harness(consumer_migration_policy="upgrade")
    upgraded(h)
    h.consumer_heartbeat("C", -1)
    assert isinstance(h.core.groups[GROUP], ConsumerGroup), (
        "upgrade-only: classic members stay in a consumer group"
    )


def test_a_classic_join_to_an_empty_consumer_group_makes_it_classic() -> None:
    h = harness()
    consumer_join(h, "C")
    h.consumer_heartbeat("C", -1)
    first = h.answer(h.join(client_id="k", group_id=GROUP, protocols=[("range", subscription())]))
    assert first["error_code"] == ErrorCode.MEMBER_ID_REQUIRED
    assert isinstance(h.core.groups[GROUP], ClassicGroup)


# -- records and replay ---------------------------------------------------------------------


def replayed(h: GroupHarness) -> GroupCoordinator:
    core = GroupCoordinator(h.core.settings, h.topics.get, topics_view=h.metadata)
    for record in h.records:
        core.replay(decode_record(*encode_record(record)))  # through the bytes, as at start-up
    return core


def test_replay_rebuilds_the_converted_consumer_group_with_its_classic_members() -> None:
    h = harness()
    (a, b), generation = classic_group(h)
    consumer_join(h, "C")
    classic_join(h, a)
    core = replayed(h)
    live, back = h.core.groups[GROUP], core.groups[GROUP]
    assert isinstance(back, ConsumerGroup) and isinstance(live, ConsumerGroup)
    assert (back.group_epoch, back.assignment_epoch, back.target) == (
        live.group_epoch,
        live.assignment_epoch,
        live.target,
    )
    for member_id, member in live.members.items():
        again = back.members[member_id]
        assert (again.assignment, again.classic, again.subscribed_topic_names) == (
            member.assignment,
            member.classic,
            member.subscribed_topic_names,
        )
    assert back.ownership.snapshot() == live.ownership.snapshot()
    core.load_complete(h.now)
    # Its classic members keep being served by the consumer group.
    h.core = core
    epoch = core.groups[GROUP].members[a].assignment.member_epoch
    assert h.heartbeat(a, epoch, group_id=GROUP) in (ErrorCode.NONE, ErrorCode.REBALANCE_IN_PROGRESS)


def test_replay_rebuilds_the_classic_group_after_a_downgrade() -> None:
    h = harness()
    (a, b), epoch = upgraded(h)
    h.consumer_heartbeat("C", -1)
    back = replayed(h).groups[GROUP]
    live = h.core.groups[GROUP]
    assert isinstance(back, ClassicGroup) and isinstance(live, ClassicGroup)
    assert (back.generation, back.protocol_name, set(back.members)) == (live.generation, "range", {a, b})
    assert [m.assignment for m in back.members.values()] == [m.assignment for m in live.members.values()]


# -- group.consumer.max.size ----------------------------------------------------------------


def test_a_full_consumer_group_refuses_new_members_but_not_a_static_replacement() -> None:
    h = harness(consumer_max_size=2)
    consumer_join(h, "A")
    consumer_join(h, "B", instance_id="host-b")
    assert consumer_join(h, "X")["error_code"] == ErrorCode.GROUP_MAX_SIZE_REACHED
    epoch = h.core.groups[GROUP].members["B"].assignment.member_epoch
    h.consumer_heartbeat("B", -2, instance_id="host-b")
    again = consumer_join(h, "B2", instance_id="host-b")
    assert again["error_code"] == 0 and epoch > 0, "a static replacement does not grow the group"
    full = h.answer(h.join(client_id="k", group_id=GROUP, protocols=[("range", subscription())]))
    assert full["error_code"] == ErrorCode.GROUP_MAX_SIZE_REACHED, "classic joins count too"


# -- settings -------------------------------------------------------------------------------


def test_the_settings_are_named_and_validated_as_kafka_names_them() -> None:
    config = CoordinatorConfig.from_settings(
        {"group.consumer.migration.policy": "Upgrade", "group.consumer.max.size": "7"}
    )
    settings = config.group_settings()
    assert (settings.consumer_migration_policy, settings.consumer_max_size) == ("upgrade", 7)
    assert CoordinatorConfig.from_settings({}).group_settings().consumer_migration_policy == "bidirectional"
    with pytest.raises(ConfigError, match="group.consumer.migration.policy"):
        CoordinatorConfig.from_settings({"group.consumer.migration.policy": "sideways"})
    with pytest.raises(ConfigError, match="group.consumer.max.size"):
        CoordinatorConfig.from_settings({"group.consumer.max.size": "0"})


def test_a_classic_member_told_to_rejoin_that_never_does_is_removed_after_its_rebalance_timeout() -> None:
    h = harness()
    (a, b), generation = classic_group(h)  # rebalance timeout 30 s (the harness's join default)
    consumer_join(h, "C")
    for member in (a, b):
        assert h.heartbeat(member, generation, group_id=GROUP) == ErrorCode.REBALANCE_IN_PROGRESS
    b_epoch = classic_join(h, b)["generation_id"]  # b rejoins, heartbeats, but never syncs
    for _ in range(8):  # a keeps heartbeating without rejoining
        h.advance(4000)
        if a not in h.core.groups[GROUP].members:
            break
        assert h.heartbeat(a, generation, group_id=GROUP) == ErrorCode.REBALANCE_IN_PROGRESS
        assert h.heartbeat(b, b_epoch, group_id=GROUP) == ErrorCode.NONE
        h.consumer_heartbeat("C", h.core.groups[GROUP].members["C"].assignment.member_epoch)
    assert 28000 <= h.now <= 32000, "both went at their 30 s rebalance timeout, not a 10 s session"
    members = h.core.groups[GROUP].members
    assert a not in members, "a held its partitions past its rebalance timeout without rejoining"
    assert b not in members, "b joined but did not sync within its rebalance timeout"
    c = h.consumer_heartbeat("C", members["C"].assignment.member_epoch)
    assert sorted(h.assigned(c)["orders"]) == list(range(6)), "C alone gets everything once both are gone"


def test_a_static_classic_member_restarted_on_the_consumer_protocol_takes_its_own_place() -> None:
    """A rolling upgrade of static members: the classic member never left temporarily (the
    classic protocol has no such leave), so its consumer-protocol successor replaces it rather
    than being refused UNRELEASED_INSTANCE_ID, which librdkafka treats as fatal."""
    h = harness()
    (a, _), generation = classic_group(h)
    assert consumer_join(h, "C")["error_code"] == 0  # the group is a consumer group now
    static = classic_join(h, "", instance_id="host-s")
    assert static["error_code"] == 0
    assert h.core.groups[GROUP].static_member("host-s") is not None
    restarted = consumer_join(h, "S2", instance_id="host-s")
    assert restarted["error_code"] == 0, restarted
    group = h.core.groups[GROUP]
    assert group.static_member("host-s").member_id == "S2" and group.members["S2"].classic is None

"""KIP-848 consumer groups with librdkafka's `group.protocol=consumer`: members 1 -> 3 -> 1
on a 12-partition topic under continuous production, every record consumed exactly once
(counted when its commit succeeded), and members that keep partitions through a rebalance
never pause on them; after a rebalance, a commit at a member's previous epoch is refused
(STALE_MEMBER_EPOCH) and moves no offset; the admin client sees a CONSUMER group."""

from __future__ import annotations

import time
from collections.abc import Callable
from pathlib import Path

import pytest
from confluent_kafka import ConsumerGroupState, ConsumerGroupType, KafkaException
from confluent_kafka.admin import AdminClient

from connect_rebalance.errors import ErrorCode
from tests.support.group_scenario import (
    ContinuousProducer,
    MemberFleet,
    assert_exactly_once,
    committed_offset,
    create_topic,
    group_epoch,
    member_id_of,
    stale_commit,
    wait_until,
)

pytestmark = pytest.mark.integration

PARTITIONS = 12
# A kept partition's records keep arriving every poll (~0.2 s at 400 records/s); a member
# that stopped fetching it for a rebalance would wait a heartbeat interval (5 s) or more.
# The bound leaves room for a loaded 2-core machine.
MAX_GAP_S = 2.5


def settle(fleet: MemberFleet, members: list[str]) -> float:
    """Wait until, by the members' own callbacks, `members` hold all partitions once, evenly;
    returns the wall time the group was seen settled."""

    def settled() -> bool:
        fleet.consumed_at_least(0)  # fails at once if a member died
        held = [fleet.holding(m) for m in members]
        every = sorted(p for ps in held for p in ps)
        return every == list(range(PARTITIONS)) and all(len(ps) == PARTITIONS // len(members) for ps in held)

    wait_until(settled, 60, f"{members} to hold the {PARTITIONS} partitions evenly", interval=0.2)
    return time.time()


def assert_kept_partitions_never_paused(fleet: MemberFleet, member: str, since: float, until: float) -> None:
    """`member` stayed in the group through the rebalance between `since` and `until`: the
    partitions it held before and after were never revoked (only the moved ones were), and
    it consumed each of them throughout, no gap between its records longer than MAX_GAP_S."""
    before, after = fleet.holding(member, since), fleet.holding(member, until)
    kept = before & after
    assert kept, f"{member} kept nothing: before {sorted(before)}, after {sorted(after)}"
    revoked: set[int] = set()
    for event in fleet.held_events(member):
        if since < event["t"] <= until and event["e"] == "revoked":
            assert not kept & set(event["ps"]), f"{member} had kept partitions revoked: {event}"
            revoked |= set(event["ps"])
    assert revoked == before - after, f"{member} revoked {sorted(revoked)}, moved {sorted(before - after)}"
    times: dict[int, list[float]] = {p: [] for p in kept}
    for row in fleet.records(member):
        if row["p"] in kept:
            times[row["p"]].append(row["t"])
    for partition, seen in times.items():
        during = [t for t in seen if since <= t <= until]
        assert during, f"{member} consumed nothing of kept partition {partition} during the rebalance"
        assert any(t > until for t in seen), f"{member} stopped consuming kept partition {partition}"
        gaps = [b - a for a, b in zip(seen, seen[1:], strict=False) if b >= since and a <= until]
        assert max(gaps) <= MAX_GAP_S, (
            f"{member} paused kept partition {partition} for {max(gaps):.2f}s during the rebalance"
        )


def consuming_after(fleet: MemberFleet, members: list[str], after: float) -> Callable[[], bool]:
    """For wait_until: each member has committed records of every partition it holds after `after`."""

    def consuming() -> bool:
        return all(
            fleet.holding(m) <= {row["p"] for row in fleet.records(m) if row["t"] > after} for m in members
        )

    return consuming


@pytest.mark.parametrize("assignor", ["uniform", "range"])
def test_members_one_three_one_under_production_each_record_once_kept_partitions_never_pause(
    group_coordinator, fleets, tmp_path: Path, assignor: str
) -> None:
    """One member joins or leaves at a time (each event is one rebalance: with two at once a
    non-sticky assignor such as range may legitimately move a partition away and back);
    after each, the members that stayed are checked for pauses on the partitions they kept.
    Production runs until the last rebalance is over."""
    b = group_coordinator.bootstrap
    create_topic(b, "events", PARTITIONS)
    fleet = MemberFleet(tmp_path, b, "kip848", "events", "confluent-kafka-consumer", assignor)
    fleets.append(fleet)
    producer = ContinuousProducer(b, "events", 1_000_000, per_second=400).start()
    fleet.start("m1")
    settle(fleet, ["m1"])
    wait_until(lambda: fleet.consumed_at_least(400), 60, "one member consuming")
    m1, m1_epoch = member_id_of(b, "kip848", "m1"), group_epoch(group_coordinator, "kip848", "consumer")
    admin = AdminClient({"bootstrap.servers": b})
    steps = [("start", "m2", ["m1"]), ("start", "m3", ["m1", "m2"]),
             ("stop", "m3", ["m1", "m2"]), ("stop", "m2", ["m1"])]  # fmt: skip
    members = ["m1"]
    for action, name, stayed in steps:
        since = time.time()
        if action == "start":
            fleet.start(name)
            members.append(name)
        else:
            fleet.stop(name)
            members.remove(name)
        until = settle(fleet, members)
        if members == ["m1", "m2", "m3"]:
            described = admin.describe_consumer_groups(["kip848"])["kip848"].result(30)
            assert described.type == ConsumerGroupType.CONSUMER and len(described.members) == 3
            held = sorted(p.partition for m in described.members for p in m.assignment.topic_partitions)
            assert held == list(range(PARTITIONS))
        wait_until(consuming_after(fleet, stayed, until), 60, f"{stayed} to consume on", interval=0.2)
        for member in stayed:
            assert_kept_partitions_never_paused(fleet, member, since, until)
        if name == "m2" and action == "start":
            # m1 gave partitions up for m2 at a new epoch: a commit at its old one is a zombie's.
            stale = stale_commit(b, "kip848", m1, m1_epoch, "events", 0)
            assert stale == ErrorCode.STALE_MEMBER_EPOCH, f"a commit at m1's epoch {m1_epoch} got {stale}"
            assert committed_offset(b, "kip848", "events", 0) > 0, "the offset went back"
    listed = admin.list_consumer_groups(types={ConsumerGroupType.CONSUMER}).result(30).valid
    assert [g.group_id for g in listed] == ["kip848"]
    assert admin.list_consumer_groups(types={ConsumerGroupType.CLASSIC}).result(30).valid == []
    total = producer.finish()
    wait_until(lambda: fleet.consumed_at_least(total), 90, "the last member to consume the rest")
    assert admin.describe_consumer_groups(["kip848"])["kip848"].result(30).state == ConsumerGroupState.STABLE
    fleet.stop_all()
    assert_exactly_once(fleet.consumed(), total)


def test_consumer_group_membership_survives_kill9_and_consumption_finishes_exactly_once(
    group_coordinator, fleets, tmp_path: Path
) -> None:
    total = 4000
    b = group_coordinator.bootstrap
    create_topic(b, "events", 12)
    fleet = MemberFleet(tmp_path, b, "restarts", "events", "confluent-kafka-consumer", "uniform")
    fleets.append(fleet)
    producer = ContinuousProducer(b, "events", total, per_second=500).start()
    for name in ("m1", "m2"):
        fleet.start(name)
    wait_until(lambda: fleet.consumed_at_least(1200), 60, "two members consuming")
    admin = AdminClient({"bootstrap.servers": b})
    before = admin.describe_consumer_groups(["restarts"])["restarts"].result(30)
    group_coordinator.kill()
    group_coordinator.start()
    # A client that was connected to the killed process may take a while to notice; ask with
    # a fresh one, retrying until the deadline, as an operator would.
    fresh = AdminClient({"bootstrap.servers": b})
    described: list = []

    def describe_after_restart() -> bool:
        try:
            described.append(fresh.describe_consumer_groups(["restarts"])["restarts"].result(5))
        except (KafkaException, TimeoutError):
            return False
        return True

    wait_until(describe_after_restart, 60, "the restarted coordinator to describe the group")
    after = described[-1]
    assert after.type == ConsumerGroupType.CONSUMER
    assert {m.member_id for m in after.members} == {m.member_id for m in before.members}
    held = sorted(p.partition for m in after.members for p in m.assignment.topic_partitions)
    assert len(held) == len(set(held)), "no partition is held twice"  # some may be between owners

    def all_held_once() -> bool:
        if not describe_after_restart():
            return False
        current = described[-1]
        return sorted(p.partition for m in current.members for p in m.assignment.topic_partitions) == list(
            range(12)
        )

    wait_until(all_held_once, 60, "the restored group to hold every partition once")
    producer.join()
    wait_until(lambda: fleet.consumed_at_least(total), 120, "the members to rejoin and finish")
    fleet.stop_all()
    assert_exactly_once(fleet.consumed(), total)


def test_a_static_member_restarts_and_gets_its_partitions_back_without_others_moving(
    group_coordinator, fleets, tmp_path: Path
) -> None:
    total = 3000
    b = group_coordinator.bootstrap
    create_topic(b, "events", 12)
    fleet = MemberFleet(tmp_path, b, "static", "events", "confluent-kafka-consumer", "uniform")
    fleets.append(fleet)
    producer = ContinuousProducer(b, "events", total, per_second=300).start()
    fleet.start("static-1", instance_id="host-1")
    fleet.start("dyn-1")
    fleet.start("dyn-2")
    admin = AdminClient({"bootstrap.servers": b})

    def assignments() -> dict[str, list[int]]:
        group = admin.describe_consumer_groups(["static"])["static"].result(30)
        return {
            m.client_id: sorted(p.partition for p in m.assignment.topic_partitions) for m in group.members
        }

    def settled() -> bool:
        current = assignments()
        return (
            len(current) == 3
            and sorted(p for ps in current.values() for p in ps) == list(range(12))
            and all(len(ps) == 4 for ps in current.values())
        )

    wait_until(settled, 60, "three members with four partitions each")
    before = assignments()
    fleet.stop("static-1")  # leaves with epoch -2: its place is kept
    fleet.start("static-1b", instance_id="host-1")
    wait_until(lambda: "static-1b" in assignments() and settled(), 60, "the static member to come back")
    after = assignments()
    assert after["static-1b"] == before["static-1"], "the restarted static member got its partitions back"
    assert after["dyn-1"] == before["dyn-1"] and after["dyn-2"] == before["dyn-2"], "nobody else moved"
    producer.join()
    wait_until(lambda: fleet.consumed_at_least(total), 90, "everything to be consumed")
    fleet.stop_all()
    assert_exactly_once(fleet.consumed(), total)


def test_a_regex_subscription_picks_up_a_topic_created_later(group_coordinator, tmp_path: Path) -> None:
    from confluent_kafka import Consumer

    from tests.support.clients import produce_confluent

    b = group_coordinator.bootstrap
    create_topic(b, "logs-a", 2)
    produce_confluent(b, "logs-a", [(b"k", b"from a")])
    consumer = Consumer({"bootstrap.servers": b, "group.id": "pattern", "group.protocol": "consumer",
                         "auto.offset.reset": "earliest"})  # fmt: skip
    consumer.subscribe(["^logs-.*"])
    seen: list[tuple[str, bytes]] = []

    def received(value: bytes) -> bool:
        message = consumer.poll(0.2)
        if message is not None and message.error() is None:
            seen.append((message.topic(), message.value()))
        return any(v == value for _, v in seen)

    try:
        wait_until(lambda: received(b"from a"), 60, "the record of the existing topic")
        create_topic(b, "logs-b", 3)
        produce_confluent(b, "logs-b", [(b"k", b"from b")])
        wait_until(lambda: received(b"from b"), 60, "the record of the topic created later")
        assert ("logs-b", b"from b") in seen
    finally:
        consumer.close()

"""KIP-848 consumer groups with librdkafka's `group.protocol=consumer`: members 1 -> 3 -> 1
on a 12-partition topic under continuous production, every record consumed exactly once
(counted when its commit succeeded); the admin client sees a CONSUMER group."""

from __future__ import annotations

from pathlib import Path

import pytest
from confluent_kafka import ConsumerGroupState, ConsumerGroupType, KafkaException
from confluent_kafka.admin import AdminClient

from tests.support.group_scenario import (
    ContinuousProducer,
    MemberFleet,
    assert_exactly_once,
    create_topic,
    wait_until,
)

pytestmark = pytest.mark.integration


@pytest.mark.parametrize("assignor", ["uniform", "range"])
def test_members_one_three_one_under_production_consume_each_record_once(
    group_coordinator, fleets, tmp_path: Path, assignor: str
) -> None:
    total = 6000
    b = group_coordinator.bootstrap
    create_topic(b, "events", 12)
    fleet = MemberFleet(tmp_path, b, "kip848", "events", "confluent-kafka-consumer", assignor)
    fleets.append(fleet)
    producer = ContinuousProducer(b, "events", total, per_second=400).start()
    fleet.start("m1")
    wait_until(lambda: fleet.consumed_at_least(800), 60, "one member consuming")
    fleet.start("m2")
    fleet.start("m3")
    wait_until(lambda: fleet.consumed_at_least(2500), 60, "three members consuming")
    admin = AdminClient({"bootstrap.servers": b})
    described = admin.describe_consumer_groups(["kip848"])["kip848"].result(30)
    assert described.type == ConsumerGroupType.CONSUMER and len(described.members) == 3
    assert sorted(p.partition for m in described.members for p in m.assignment.topic_partitions) == list(
        range(12)
    )
    listed = admin.list_consumer_groups(types={ConsumerGroupType.CONSUMER}).result(30).valid
    assert [g.group_id for g in listed] == ["kip848"]
    assert admin.list_consumer_groups(types={ConsumerGroupType.CLASSIC}).result(30).valid == []
    fleet.stop("m2")
    fleet.stop("m3")
    producer.join()
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

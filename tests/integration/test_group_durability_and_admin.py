"""Group state across a coordinator crash, two groups side by side, and the admin clients
(confluent-kafka's and kafka-python's) listing, describing and deleting groups and reading
their committed offsets."""

from __future__ import annotations

import pytest
from confluent_kafka import (
    Consumer,
    ConsumerGroupState,
    ConsumerGroupTopicPartitions,
    KafkaException,
    TopicPartition,
)
from confluent_kafka.admin import AdminClient
from kafka import KafkaAdminClient
from kafka import TopicPartition as KpTopicPartition

from connect_rebalance.errors import ErrorCode
from connect_rebalance.processes import CoordinatorProcess
from tests.support.clients import consume_confluent_group, produce_confluent
from tests.support.group_scenario import (
    ContinuousProducer,
    MemberFleet,
    assert_exactly_once,
    create_topic,
    wait_until,
)

pytestmark = pytest.mark.integration


def describe(bootstrap: str, group: str):  # type: ignore[no-untyped-def]
    admin = AdminClient({"bootstrap.servers": bootstrap})
    return admin.describe_consumer_groups([group])[group].result(30)


def committed_offsets(bootstrap: str, group: str, topic: str, partitions: int) -> dict[int, int]:
    """The group's committed offsets as an admin client reads them (-1001: none)."""
    admin = AdminClient({"bootstrap.servers": bootstrap})
    wanted = ConsumerGroupTopicPartitions(group, [TopicPartition(topic, p) for p in range(partitions)])
    found = admin.list_consumer_group_offsets([wanted])[group].result(30)
    return {tp.partition: tp.offset for tp in found.topic_partitions}


def end_offsets(bootstrap: str, topic: str, partitions: int) -> dict[int, int]:
    consumer = Consumer({"bootstrap.servers": bootstrap, "group.id": "unused-assign-only"})
    try:
        return {
            p: consumer.get_watermark_offsets(TopicPartition(topic, p), timeout=30)[1]
            for p in range(partitions)
        }
    finally:
        consumer.close()


def test_membership_and_committed_offsets_survive_kill9_of_the_coordinator(
    group_coordinator, fleets, tmp_path
) -> None:
    """The group consumes and commits everything produced so far; the coordinator is killed
    with SIGKILL and restarted; its members, their assignment and the committed offsets are
    read back from it as they were. Then the members are replaced by new processes, which
    have only the committed offsets to go by, and the rest is consumed exactly once."""
    b, total, partitions = group_coordinator.bootstrap, 5000, 12
    create_topic(b, "events", partitions)
    fleet = MemberFleet(tmp_path, b, "durable", "events", "confluent-kafka", "range")
    fleets.append(fleet)
    producer = ContinuousProducer(b, "events", total, per_second=500).start()
    for name in ("m1", "m2", "m3"):
        fleet.start(name)
    wait_until(lambda: fleet.consumed_at_least(1500), 60, "the group to consume")
    produced = producer.pause()
    wait_until(lambda: fleet.consumed_at_least(produced), 60, "the group to consume what was produced")
    ends = end_offsets(b, "events", partitions)
    assert sum(ends.values()) == produced
    # Members commit each batch before counting it, so everything consumed is committed.
    committed = committed_offsets(b, "durable", "events", partitions)
    assert committed == ends, "the group committed everything it consumed"
    before = describe(b, "durable")
    assert before.state == ConsumerGroupState.STABLE and len(before.members) == 3

    group_coordinator.kill()
    group_coordinator.start()
    assert committed_offsets(b, "durable", "events", partitions) == committed, (
        "the committed offsets read back after the restart are those committed before it"
    )
    after = describe(b, "durable")
    assert after.state == ConsumerGroupState.STABLE
    assert {m.member_id for m in after.members} == {m.member_id for m in before.members}
    assert {
        m.member_id: sorted(p.partition for p in m.assignment.topic_partitions) for m in after.members
    } == {m.member_id: sorted(p.partition for p in m.assignment.topic_partitions) for m in before.members}

    # New processes remember nothing: they resume from the committed offsets, or re-read
    # (auto.offset.reset=earliest) and consume records twice.
    fleet.stop_all()  # nothing was pending: nothing more is committed
    assert committed_offsets(b, "durable", "events", partitions) == committed
    for name in ("m4", "m5", "m6"):
        fleet.start(name)
    producer.resume()
    producer.join()
    wait_until(lambda: fleet.consumed_at_least(total), 90, "the new members to consume the rest")
    fleet.stop_all()
    assert_exactly_once(fleet.consumed(), total)


def test_two_groups_with_different_clients_consume_the_same_topic_side_by_side(
    group_coordinator, fleets, tmp_path
):
    total = 4000
    create_topic(group_coordinator.bootstrap, "shared", 12)
    kp = MemberFleet(tmp_path, group_coordinator.bootstrap, "kp-group", "shared", "kafka-python", "range")
    ck = MemberFleet(
        tmp_path, group_coordinator.bootstrap, "ck-group", "shared", "confluent-kafka", "cooperative-sticky"
    )
    fleets.extend([kp, ck])
    producer = ContinuousProducer(group_coordinator.bootstrap, "shared", total, per_second=500).start()
    for name in ("a", "b", "c"):
        kp.start(name)
        ck.start(name)
    wait_until(lambda: kp.consumed_at_least(1000) and ck.consumed_at_least(1000), 60, "both groups consuming")
    kp.stop("a")
    ck.start("d")
    producer.join()
    wait_until(
        lambda: kp.consumed_at_least(total) and ck.consumed_at_least(total), 90, "both groups to finish"
    )
    kp.stop_all()
    ck.stop_all()
    assert_exactly_once(kp.consumed(), total)
    assert_exactly_once(ck.consumed(), total)


def test_admin_clients_list_describe_delete_groups_and_read_offsets(
    group_coordinator, fleets, tmp_path
) -> None:
    b = group_coordinator.bootstrap
    create_topic(b, "audited", 4)
    producer = ContinuousProducer(b, "audited", 400, per_second=2000).start()
    producer.join()
    fleet = MemberFleet(tmp_path, b, "audit", "audited", "confluent-kafka", "range")
    fleets.append(fleet)
    fleet.start("only")
    wait_until(lambda: fleet.consumed_at_least(400), 60, "the member to consume everything")

    admin = AdminClient({"bootstrap.servers": b})
    listed = admin.list_consumer_groups().result(30).valid
    assert [(g.group_id, g.state) for g in listed] == [("audit", ConsumerGroupState.STABLE)]
    [member] = describe(b, "audit").members
    assert member.client_id == "only"
    assert sorted(p.partition for p in member.assignment.topic_partitions) == [0, 1, 2, 3]
    offsets = admin.list_consumer_group_offsets([ConsumerGroupTopicPartitions("audit")])["audit"].result(30)
    assert sum(tp.offset for tp in offsets.topic_partitions) == 400
    with pytest.raises(KafkaException) as busy:
        admin.delete_consumer_groups(["audit"])["audit"].result(30)
    assert busy.value.args[0].code() == ErrorCode.NON_EMPTY_GROUP

    kp_admin = KafkaAdminClient(bootstrap_servers=b)
    try:
        assert [(g["group_id"], g["group_state"], g["group_type"]) for g in kp_admin.list_groups()] == [
            ("audit", "Stable", "classic")
        ]
        described = kp_admin.describe_groups(["audit"])["audit"]
        assert described["protocol_type"] == "consumer" and described["protocol_data"] == "range"
        [kp_member] = described["members"]
        assert kp_member["member_metadata"]["topics"] == ["audited"]
        assert sorted(kp_member["member_assignment"]["assigned_partitions"][0]["partitions"]) == [0, 1, 2, 3]
        kp_offsets = kp_admin.list_group_offsets({"audit": None})["audit"]
        assert {tp.partition: meta.offset for tp, meta in kp_offsets.items()} == {
            tp.partition: tp.offset for tp in offsets.topic_partitions
        }
        assert kp_admin.delete_groups(["audit"])["audit"] == "NonEmptyGroupError"
        fleet.stop("only")
        wait_until(lambda: describe(b, "audit").state == ConsumerGroupState.EMPTY, 30, "the group to empty")
        assert kp_admin.delete_groups(["audit", "never-existed"]) == {
            "audit": "OK",
            "never-existed": "GroupIdNotFoundError",
        }
    finally:
        kp_admin.close()
    assert admin.list_consumer_groups().result(30).valid == []
    gone = admin.list_consumer_group_offsets(
        [ConsumerGroupTopicPartitions("audit", [TopicPartition("audited", 0)])]
    )["audit"].result(30)
    assert gone.topic_partitions[0].offset < 0


def test_a_deleted_topic_takes_its_committed_offsets_along(group_coordinator) -> None:
    """A group's offsets for a deleted topic go with it, as Kafka's `onPartitionsDeleted`
    deletes them: a topic created again under the name is read by the group from its start,
    not from where the old topic's offsets pointed; the deletion survives a kill -9, and
    offsets of other topics stay."""
    b = group_coordinator.bootstrap
    create_topic(b, "reborn", 2)
    create_topic(b, "kept", 1)
    admin = AdminClient({"bootstrap.servers": b})
    commits = [TopicPartition("reborn", 0, 5), TopicPartition("reborn", 1, 7), TopicPartition("kept", 0, 3)]
    admin.alter_consumer_group_offsets([ConsumerGroupTopicPartitions("readers", commits)])["readers"].result(
        30
    )
    assert committed_offsets(b, "readers", "reborn", 2) == {0: 5, 1: 7}

    admin.delete_topics(["reborn"])["reborn"].result(30)
    assert committed_offsets(b, "readers", "reborn", 2) == {0: -1001, 1: -1001}  # none
    assert committed_offsets(b, "readers", "kept", 1) == {0: 3}
    group_coordinator.kill()
    group_coordinator.start()
    assert committed_offsets(b, "readers", "reborn", 2) == {0: -1001, 1: -1001}
    assert committed_offsets(b, "readers", "kept", 1) == {0: 3}

    create_topic(b, "reborn", 2)
    items = [(f"k{i}".encode(), f"v{i}".encode()) for i in range(20)]
    produce_confluent(b, "reborn", items)
    records = consume_confluent_group(b, "reborn", "readers", "classic", len(items), timeout=20)
    assert sorted(value for *_, value in records) == sorted(value for _, value in items)

    # OffsetDelete (kafka-python's admin client): a partition that does not exist is
    # UNKNOWN_TOPIC_OR_PARTITION, as Kafka answers it; the rest are deleted.
    kp_admin = KafkaAdminClient(bootstrap_servers=b)
    try:
        wanted = [KpTopicPartition("kept", 0), KpTopicPartition("kept", 4), KpTopicPartition("nowhere", 0)]
        errors = {
            (tp.topic, tp.partition): error.__name__
            for tp, error in kp_admin.delete_group_offsets("readers", wanted).items()
        }
    finally:
        kp_admin.close()
    assert errors == {
        ("kept", 0): "NoError", ("kept", 4): "UnknownTopicOrPartitionError",
        ("nowhere", 0): "UnknownTopicOrPartitionError",
    }  # fmt: skip
    assert committed_offsets(b, "readers", "kept", 1) == {0: -1001}


def test_the_internal_topic_is_compacted_and_still_replays_every_group(tmp_path) -> None:
    from kafka import KafkaConsumer, OffsetAndMetadata
    from kafka import TopicPartition as KpTopicPartition

    settings = {"offsets.topic.segment.bytes": "8192", "log.cleaner.backoff.ms": "200",
                "group.initial.rebalance.delay.ms": "0"}  # fmt: skip
    process = CoordinatorProcess(tmp_path / "data", settings).start()
    try:
        create_topic(process.bootstrap, "ledger", 4)
        consumer = KafkaConsumer(
            bootstrap_servers=process.bootstrap, group_id="busy", enable_auto_commit=False
        )
        partitions = [KpTopicPartition("ledger", p) for p in range(4)]
        consumer.assign(partitions)
        for i in range(1500):
            consumer.commit({tp: OffsetAndMetadata(i, "", -1) for tp in partitions})
        consumer.close()
        internal = tmp_path / "data" / "topics" / "__consumer_offsets" / "0"
        written = 1500 * 4 * 40  # well over 200 KB of offset records went in
        wait_until(lambda: sum(p.stat().st_size for p in internal.glob("*.log")) < written / 10, 30,
                   "the cleaner to compact __consumer_offsets")  # fmt: skip
        assert "compacted __consumer_offsets-0" in process.log_text()
        process.kill()
        process.start()
        check = KafkaConsumer(bootstrap_servers=process.bootstrap, group_id="busy", enable_auto_commit=False)
        assert [check.committed(tp) for tp in partitions] == [1499] * 4
        check.close()
    finally:
        process.kill()

"""Topic administration and offset lookups through confluent-kafka's and kafka-python's
admin clients, with the errors a Kafka user expects for bad requests."""

from __future__ import annotations

import time

import pytest
from confluent_kafka import KafkaException, TopicCollection, TopicPartition
from confluent_kafka.admin import AdminClient, ConfigResource, NewPartitions, NewTopic, OffsetSpec
from kafka import KafkaAdminClient
from kafka.admin import NewTopic as KpNewTopic

from connect_rebalance.errors import ErrorCode
from connect_rebalance.processes import CoordinatorProcess
from tests.support.clients import consume_confluent, produce_confluent

pytestmark = pytest.mark.integration


_ADMINS: dict[str, AdminClient] = {}


def admin(bootstrap: str) -> AdminClient:
    """One client per coordinator: an AdminClient dropped early cancels its futures."""
    if bootstrap not in _ADMINS:
        _ADMINS[bootstrap] = AdminClient({"bootstrap.servers": bootstrap})
    return _ADMINS[bootstrap]


@pytest.fixture(autouse=True, scope="module")
def _release_admin_clients():  # type: ignore[no-untyped-def]
    yield
    _ADMINS.clear()


def create(bootstrap: str, *topics: NewTopic, validate_only: bool = False) -> dict[str, Exception | None]:
    outcome: dict[str, Exception | None] = {}
    for name, future in admin(bootstrap).create_topics(list(topics), validate_only=validate_only).items():
        try:
            future.result(timeout=30)
            outcome[name] = None
        except KafkaException as exc:
            outcome[name] = exc
    return outcome


def error_of(exc: Exception | None) -> tuple[int, str]:
    """The Kafka error code and message a client surfaced."""
    assert exc is not None
    err = exc.args[0]
    return err.code(), err.str()


def test_create_topics_validates_like_kafka(shared_coordinator) -> None:
    b = shared_coordinator.bootstrap
    outcome = create(
        b,
        NewTopic("good-topic", 4, 1, config={"retention.ms": "60000", "cleanup.policy": "delete"}),
        NewTopic("too-many-replicas", 1, 3),
        NewTopic("bad/name", 1, 1),
        NewTopic("abc\n", 1, 1),
        NewTopic("..", 1, 1),
        NewTopic("bad-config-name", 1, 1, config={"retention.msx": "1"}),
        NewTopic("bad-config-value", 1, 1, config={"retention.ms": "soon"}),
        NewTopic("zero-partitions", 0, 1),
    )
    assert outcome["good-topic"] is None
    assert error_of(outcome["too-many-replicas"])[0] == ErrorCode.INVALID_REPLICATION_FACTOR
    assert error_of(outcome["bad/name"])[0] == ErrorCode.INVALID_TOPIC_EXCEPTION
    code, message = error_of(outcome["abc\n"])  # a trailing newline is not a legal character
    assert code == ErrorCode.INVALID_TOPIC_EXCEPTION and "'abc\\n'" in message
    assert error_of(outcome[".."])[0] == ErrorCode.INVALID_TOPIC_EXCEPTION
    name, message = error_of(outcome["bad-config-name"])
    assert name == ErrorCode.INVALID_CONFIG and "retention.msx" in message
    name, message = error_of(outcome["bad-config-value"])
    assert name == ErrorCode.INVALID_CONFIG and "retention.ms" in message
    assert error_of(outcome["zero-partitions"])[0] == ErrorCode.INVALID_PARTITIONS
    assert (
        error_of(create(b, NewTopic("good-topic", 1, 1))["good-topic"])[0] == ErrorCode.TOPIC_ALREADY_EXISTS
    )
    assert create(b, NewTopic("only-validated", 2, 1), validate_only=True)["only-validated"] is None
    assert "only-validated" not in admin(b).list_topics(timeout=10).topics
    metadata = admin(b).list_topics(timeout=10).topics["good-topic"]
    assert sorted(metadata.partitions) == [0, 1, 2, 3]
    assert all(p.leader == 1 and p.replicas == [1] and p.isrs == [1] for p in metadata.partitions.values())


def test_a_name_given_twice_in_one_create_is_refused_once_and_the_others_are_created(
    shared_coordinator,
) -> None:
    """Kafka answers a duplicated name once, INVALID_REQUEST, and creates nothing of it;
    librdkafka refuses a whole answer that names a topic twice."""
    b = shared_coordinator.bootstrap
    outcome = create(b, NewTopic("twice", 3, 1), NewTopic("once", 1, 1), NewTopic("twice", 1, 1))
    assert outcome["once"] is None
    assert error_of(outcome["twice"]) == (ErrorCode.INVALID_REQUEST, "Duplicate topic name.")
    topics = admin(b).list_topics(timeout=30).topics
    assert "once" in topics and "twice" not in topics


def test_a_name_that_differs_from_a_topic_only_by_dot_and_underscore_is_refused(shared_coordinator) -> None:
    """Kafka refuses `p_x` beside `p.x` (their metric names would be the same)."""
    b = shared_coordinator.bootstrap
    assert create(b, NewTopic("p.x", 1, 1)) == {"p.x": None}
    outcome = create(b, NewTopic("p_x", 1, 1), NewTopic("q_y.z", 1, 1))
    assert error_of(outcome["p_x"]) == (
        ErrorCode.INVALID_TOPIC_EXCEPTION, "Topic 'p_x' collides with existing topic: p.x"
    )  # fmt: skip
    assert outcome["q_y.z"] is None
    assert error_of(create(b, NewTopic("q.y_z", 1, 1))["q.y_z"])[0] == ErrorCode.INVALID_TOPIC_EXCEPTION
    assert "p_x" not in admin(b).list_topics(timeout=30).topics


def test_describe_configs_for_a_topic_and_the_broker(shared_coordinator) -> None:
    b = shared_coordinator.bootstrap
    create(b, NewTopic("configured", 1, 1, config={"retention.bytes": "1048576"}))
    resources = [ConfigResource("topic", "configured"), ConfigResource("broker", "1")]
    topic_configs, broker_configs = (f.result(30) for f in admin(b).describe_configs(resources).values())
    assert topic_configs["retention.bytes"].value == "1048576"
    assert not topic_configs["retention.bytes"].is_default
    assert topic_configs["retention.ms"].value == "604800000" and topic_configs["retention.ms"].is_default
    assert broker_configs["num.partitions"].value == "1"
    assert broker_configs["listeners"].value.endswith(":0")
    with pytest.raises(KafkaException) as missing:
        list(admin(b).describe_configs([ConfigResource("topic", "no-such-topic")]).values())[0].result(30)
    assert missing.value.args[0].code() == ErrorCode.UNKNOWN_TOPIC_OR_PARTITION


def test_partitions_can_be_added_but_not_removed(shared_coordinator) -> None:
    b = shared_coordinator.bootstrap
    create(b, NewTopic("growing", 2, 1))
    list(admin(b).create_partitions([NewPartitions("growing", 5)]).values())[0].result(30)
    assert len(admin(b).list_topics("growing", timeout=10).topics["growing"].partitions) == 5
    with pytest.raises(KafkaException) as shrink:
        list(admin(b).create_partitions([NewPartitions("growing", 3)]).values())[0].result(30)
    assert shrink.value.args[0].code() == ErrorCode.INVALID_PARTITIONS
    produce_confluent(b, "growing", [(b"k", b"to-new-partition")], partitioner="random")


def test_delete_topic_removes_its_data_and_a_recreated_topic_is_new(shared_coordinator) -> None:
    b = shared_coordinator.bootstrap
    create(b, NewTopic("doomed", 1, 1))
    produce_confluent(b, "doomed", [(b"k", b"old")])
    first_id = admin(b).describe_topics(TopicCollection(["doomed"]))["doomed"].result(30).topic_id
    list(admin(b).delete_topics(["doomed"]).values())[0].result(30)
    assert "doomed" not in admin(b).list_topics(timeout=10).topics
    with pytest.raises(KafkaException) as gone:
        list(admin(b).delete_topics(["doomed"]).values())[0].result(30)
    assert gone.value.args[0].code() == ErrorCode.UNKNOWN_TOPIC_OR_PARTITION
    create(b, NewTopic("doomed", 1, 1))
    second_id = admin(b).describe_topics(TopicCollection(["doomed"]))["doomed"].result(30).topic_id
    assert str(first_id) != str(second_id)
    produce_confluent(b, "doomed", [(b"k", b"new")])
    assert [v for *_, v in consume_confluent(b, "doomed", 1, 1)] == [b"new"]


def test_kafka_python_admin_lists_creates_and_deletes(shared_coordinator) -> None:
    client = KafkaAdminClient(bootstrap_servers=shared_coordinator.bootstrap)
    try:
        client.create_topics([KpNewTopic("kp-admin-topic", 3, 1)])
        assert "kp-admin-topic" in client.list_topics()
        described = client.describe_topics(["kp-admin-topic"])[0]
        assert len(described["partitions"]) == 3
        client.delete_topics(["kp-admin-topic"])
        assert "kp-admin-topic" not in client.list_topics()
    finally:
        client.close()


def test_list_offsets_earliest_latest_and_by_timestamp(shared_coordinator) -> None:
    b = shared_coordinator.bootstrap
    create(b, NewTopic("timed", 1, 1))
    base = 1_750_000_000_000
    from confluent_kafka import Producer

    producer = Producer({"bootstrap.servers": b, "linger.ms": 0})
    for i in range(10):
        producer.produce("timed", value=f"{i}".encode(), timestamp=base + i * 1000)
        producer.flush(10)
    tp = TopicPartition("timed", 0)
    specs = {
        "earliest": OffsetSpec.earliest(),
        "latest": OffsetSpec.latest(),
        "at 4.5s": OffsetSpec.for_timestamp(base + 4500),
        "max": OffsetSpec.max_timestamp(),
    }
    found = {name: admin(b).list_offsets({tp: spec})[tp].result(30) for name, spec in specs.items()}
    assert found["earliest"].offset == 0 and found["latest"].offset == 10
    assert found["at 4.5s"].offset == 5 and found["at 4.5s"].timestamp == base + 5000
    assert found["max"].offset == 9
    from confluent_kafka import Consumer

    consumer = Consumer({"bootstrap.servers": b, "group.id": "unused"})
    [after] = consumer.offsets_for_times([TopicPartition("timed", 0, base + 7000)], timeout=10)
    assert after.offset == 7
    [beyond] = consumer.offsets_for_times([TopicPartition("timed", 0, base + 10**9)], timeout=10)
    assert beyond.offset == -1
    consumer.close()


def test_a_waiting_fetch_is_answered_when_a_record_arrives_not_at_max_wait(shared_coordinator) -> None:
    from kafka import KafkaConsumer, KafkaProducer
    from kafka import TopicPartition as KpTopicPartition

    b = shared_coordinator.bootstrap
    create(b, NewTopic("long-poll", 1, 1))
    consumer = KafkaConsumer(bootstrap_servers=b, fetch_max_wait_ms=20000, auto_offset_reset="earliest")
    consumer.assign([KpTopicPartition("long-poll", 0)])
    assert consumer.poll(timeout_ms=500) == {}  # a fetch is now parked on the coordinator
    producer = KafkaProducer(bootstrap_servers=b)
    sent_at = time.monotonic()
    producer.send("long-poll", b"wake up").get(10)
    received = {}
    while not received and time.monotonic() - sent_at < 15:
        received = consumer.poll(timeout_ms=200)
    waited = time.monotonic() - sent_at
    consumer.close()
    producer.close()
    assert [m.value for batch in received.values() for m in batch] == [b"wake up"]
    assert waited < 10, f"the parked fetch waited {waited:.1f}s instead of waking on the append"


def test_topic_ids_and_data_persist_across_a_graceful_restart(tmp_path) -> None:
    process = CoordinatorProcess(tmp_path / "data").start()
    client = AdminClient({"bootstrap.servers": process.bootstrap})
    try:
        for future in client.create_topics(
            [NewTopic("kept", 2, 1, config={"retention.ms": "123456789"})]
        ).values():
            future.result(30)
        produce_confluent(
            process.bootstrap, "kept", [(str(i).encode(), f"v{i}".encode()) for i in range(100)]
        )
        topic_id = str(client.describe_topics(TopicCollection(["kept"]))["kept"].result(30).topic_id)
        process.restart()
        again = client.describe_topics(TopicCollection(["kept"]))["kept"].result(30)
        assert str(again.topic_id) == topic_id and len(again.partitions) == 2
        config = list(client.describe_configs([ConfigResource("topic", "kept")]).values())[0]
        assert config.result(30)["retention.ms"].value == "123456789"
        assert len(consume_confluent(process.bootstrap, "kept", 2, 100)) == 100
    finally:
        process.kill()


def test_auto_create_can_be_disabled(tmp_path) -> None:
    process = CoordinatorProcess(tmp_path / "data", {"auto.create.topics.enable": "false"}).start()
    try:
        from kafka import KafkaProducer
        from kafka.errors import KafkaTimeoutError

        producer = KafkaProducer(bootstrap_servers=process.bootstrap, max_block_ms=1500)
        with pytest.raises(KafkaTimeoutError):
            producer.send("never-created", b"x").get(5)
        producer.close()
        listed = AdminClient({"bootstrap.servers": process.bootstrap}).list_topics(timeout=10).topics
        assert "never-created" not in listed
    finally:
        process.kill()


def test_max_broker_partitions_refuses_creations_and_growth_past_it_with_policy_violation(tmp_path) -> None:
    process = CoordinatorProcess(tmp_path / "data", {"max.broker.partitions": "30"}).start()
    try:
        b = process.bootstrap
        # __consumer_offsets holds 1 of the 30.
        outcome = create(b, NewTopic("first", 20, 1))
        refused = create(b, NewTopic("second", 10, 1))
        fits = create(b, NewTopic("second", 9, 1))
        try:
            list(admin(b).create_partitions([NewPartitions("first", 21)]).values())[0].result(30)
            grown: KafkaException | None = None
        except KafkaException as exc:
            grown = exc
        listed = admin(b).list_topics(timeout=10).topics
    finally:
        process.kill()
    assert outcome == {"first": None} and fits == {"second": None}
    code, message = error_of(refused["second"])
    assert code == ErrorCode.POLICY_VIOLATION and "max.broker.partitions=30" in message, message
    assert grown is not None, "CreatePartitions past max.broker.partitions was taken"
    assert (
        grown.args[0].code() == ErrorCode.POLICY_VIOLATION and "max.broker.partitions" in grown.args[0].str()
    )
    assert {name: len(t.partitions) for name, t in listed.items() if not name.startswith("__")} == {
        "first": 20,
        "second": 9,
    }

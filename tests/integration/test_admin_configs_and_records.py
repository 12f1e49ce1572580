"""What confluent-kafka's AdminClient does to topics after their creation, against a
coordinator process: alter and incrementally alter their configs (applied live: retention
acts on the new value; kept across a kill -9), delete records before an offset (the low
watermark moves, a consumer reads from there, and it too outlives a kill -9), each refusal
with Kafka's code and a message; and the groups of every type listed and described."""

from __future__ import annotations

import time
from pathlib import Path

import pytest
from confluent_kafka import Consumer, ConsumerGroupState, ConsumerGroupType, KafkaException, Producer
from confluent_kafka import TopicPartition as Tp
from confluent_kafka.admin import AdminClient, AlterConfigOpType, ConfigEntry, ConfigResource, NewTopic
from confluent_kafka.admin import ResourceType as Rt

from connect_rebalance.errors import ErrorCode
from connect_rebalance.processes import CoordinatorProcess
from tests.support.clients import first_message
from tests.support.connect_driver import ConnectDriver, TcpTransport
from tests.support.group_scenario import wait_until

pytestmark = [pytest.mark.integration, pytest.mark.filterwarnings("ignore:alter_configs has been deprecated")]
HOUR_AGO_MS = int(time.time() * 1000) - 3_600_000


def admin_of(coordinator: CoordinatorProcess) -> AdminClient:
    return AdminClient({"bootstrap.servers": coordinator.bootstrap})


def make_topic(admin: AdminClient, name: str, partitions: int = 1, **config: str) -> None:
    admin.create_topics([NewTopic(name, partitions, 1, config=config)])[name].result(30)


def produce(bootstrap: str, topic: str, count: int, timestamp: int = 0, per_batch: int = 1000) -> None:
    producer = Producer({"bootstrap.servers": bootstrap, "linger.ms": 0})
    for i in range(count):
        producer.produce(topic, key=b"k%d" % i, value=b"v%d" % i, partition=0, timestamp=timestamp)
        if (i + 1) % per_batch == 0:
            assert producer.flush(30) == 0
    assert producer.flush(30) == 0


def watermarks(bootstrap: str, topic: str) -> tuple[int, int]:
    consumer = Consumer({"bootstrap.servers": bootstrap, "group.id": "watermarks"})
    try:
        return consumer.get_watermark_offsets(Tp(topic, 0), timeout=10)  # type: ignore[no-any-return]
    finally:
        consumer.close()


def first_offset_read(bootstrap: str, topic: str) -> int:
    """The offset of the first record a consumer reads from the earliest position."""
    message = first_message(bootstrap, topic)
    assert message is not None, f"nothing was read from {topic} in 30 s"
    return message.offset()  # type: ignore[no-any-return]


def explicit_configs(admin: AdminClient, topic: str) -> dict[str, str]:
    resource = ConfigResource(Rt.TOPIC, topic)
    described = admin.describe_configs([resource])[resource].result(30)
    return {name: entry.value for name, entry in described.items() if not entry.is_default}


def incremental(admin: AdminClient, topic: str, *changes: tuple[str, AlterConfigOpType, str | None]) -> None:
    entries = [ConfigEntry(name, value, incremental_operation=op) for name, op, value in changes]
    resource = ConfigResource(Rt.TOPIC, topic, incremental_configs=entries)
    admin.incremental_alter_configs([resource])[resource].result(30)


def refusal(call) -> tuple[int, str]:  # type: ignore[no-untyped-def]
    with pytest.raises(KafkaException) as refused:
        call()
    error = refused.value.args[0]
    return error.code(), error.str()


def test_topic_configs_change_live_and_retention_acts_on_the_new_value(tmp_path: Path) -> None:
    coordinator = CoordinatorProcess(tmp_path / "data", {"log.retention.check.interval.ms": "200"}).start()
    try:
        b = coordinator.bootstrap
        admin = admin_of(coordinator)
        make_topic(admin, "aging")
        produce(b, "aging", 50, timestamp=HOUR_AGO_MS)
        assert watermarks(b, "aging") == (0, 50)  # a week's retention by default: an hour-old record stays

        incremental(admin, "aging", ("retention.ms", AlterConfigOpType.SET, "60000"),
                    ("cleanup.policy", AlterConfigOpType.APPEND, "compact"))  # fmt: skip
        assert explicit_configs(admin, "aging") == {
            "retention.ms": "60000",
            "cleanup.policy": "delete,compact",
        }
        deadline = time.monotonic() + 30
        while watermarks(b, "aging") != (50, 50) and time.monotonic() < deadline:
            time.sleep(0.2)  # polling until the deadline: retention runs every 200 ms
        assert watermarks(b, "aging") == (50, 50), "retention did not act on the altered retention.ms"

        incremental(admin, "aging", ("cleanup.policy", AlterConfigOpType.SUBTRACT, "compact"),
                    ("segment.bytes", AlterConfigOpType.SET, "1048576"))  # fmt: skip
        assert explicit_configs(admin, "aging") == {
            "retention.ms": "60000", "cleanup.policy": "delete", "segment.bytes": "1048576"
        }  # fmt: skip
        # AlterConfigs replaces the whole set: what it leaves out goes back to its default.
        resource = ConfigResource(Rt.TOPIC, "aging", set_config={"max.message.bytes": "2000000"})
        admin.alter_configs([resource])[resource].result(30)
        assert explicit_configs(admin, "aging") == {"max.message.bytes": "2000000"}
        incremental(admin, "aging", ("retention.ms", AlterConfigOpType.SET, "86400000"),
                    ("max.message.bytes", AlterConfigOpType.DELETE, None))  # fmt: skip
        coordinator.kill()
        coordinator.start()
        assert explicit_configs(admin_of(coordinator), "aging") == {"retention.ms": "86400000"}
    finally:
        coordinator.kill()


def test_bad_config_changes_are_refused_with_kafka_codes_and_change_nothing(tmp_path: Path) -> None:
    coordinator = CoordinatorProcess(tmp_path / "data").start()
    try:
        admin = admin_of(coordinator)
        make_topic(admin, "kept")
        incremental(admin, "kept", ("retention.ms", AlterConfigOpType.SET, "5000"))

        def change(*changes: tuple[str, AlterConfigOpType, str | None]) -> tuple[int, str]:
            return refusal(lambda: incremental(admin, "kept", *changes))

        assert change(("retention.ms", AlterConfigOpType.APPEND, "1")) == (
            ErrorCode.INVALID_CONFIG, "APPEND applies to list configs only; 'retention.ms' is not a list"
        )  # fmt: skip
        assert change(("retension.ms", AlterConfigOpType.SET, "1")) == (
            ErrorCode.INVALID_CONFIG, "unknown topic config 'retension.ms'"
        )  # fmt: skip
        too_small = ("segment.bytes", AlterConfigOpType.SET, "1")
        assert change(too_small, ("retention.ms", AlterConfigOpType.SET, "9")) == (
            ErrorCode.INVALID_CONFIG,
            "invalid value '1' for topic config 'segment.bytes': must be at least 14",
        )  # fmt: skip
        assert change(("cleanup.policy", AlterConfigOpType.APPEND, "forever")) == (
            ErrorCode.INVALID_CONFIG,
            "invalid value 'delete,forever' for topic config 'cleanup.policy': "
            "'forever' is not one of compact, delete",
        )  # fmt: skip
        assert explicit_configs(admin, "kept") == {"retention.ms": "5000"}, "a refused change was applied"

        missing = ConfigResource(Rt.TOPIC, "missing", incremental_configs=[
            ConfigEntry("retention.ms", "1", incremental_operation=AlterConfigOpType.SET)])  # fmt: skip
        assert refusal(lambda: admin.incremental_alter_configs([missing])[missing].result(30)) == (
            ErrorCode.UNKNOWN_TOPIC_OR_PARTITION, "topic 'missing' does not exist"
        )  # fmt: skip
        node = str(admin.describe_cluster().result(30).nodes[0].id)
        broker = ConfigResource(Rt.BROKER, node, incremental_configs=[
            ConfigEntry("max.connections", "1", incremental_operation=AlterConfigOpType.SET)])  # fmt: skip
        code, message = refusal(lambda: admin.incremental_alter_configs([broker])[broker].result(30))
        assert code == ErrorCode.INVALID_CONFIG and "properties file" in message
        internal = ConfigResource(Rt.TOPIC, "__consumer_offsets", set_config={"retention.ms": "1"})
        code, message = refusal(lambda: admin.alter_configs([internal])[internal].result(30))
        assert code == ErrorCode.INVALID_REQUEST and "internal" in message
    finally:
        coordinator.kill()


def test_delete_records_moves_the_low_watermark_for_readers_and_across_a_kill9(tmp_path: Path) -> None:
    coordinator = CoordinatorProcess(tmp_path / "data").start()
    try:
        b = coordinator.bootstrap
        admin = admin_of(coordinator)
        make_topic(admin, "trimmed", **{"segment.bytes": "1024"})
        make_topic(admin, "compacted", **{"cleanup.policy": "compact"})
        produce(b, "trimmed", 200, per_batch=10)
        produce(b, "compacted", 10)
        segments_before = len(list((tmp_path / "data" / "topics" / "trimmed" / "0").glob("*.log")))

        [(_, deleted)] = admin.delete_records([Tp("trimmed", 0, 150)]).items()
        assert deleted.result(30).low_watermark == 150
        assert watermarks(b, "trimmed") == (150, 200)
        assert first_offset_read(b, "trimmed") == 150
        segments_after = len(list((tmp_path / "data" / "topics" / "trimmed" / "0").glob("*.log")))
        assert segments_after < segments_before, "the segments wholly below the new start were kept"

        coordinator.kill()
        coordinator.start()
        assert watermarks(b, "trimmed") == (150, 200), "the low watermark did not outlive a kill -9"
        admin = admin_of(coordinator)
        assert first_offset_read(b, "trimmed") == 150

        def deleting(topic: str, offset: int) -> tuple[int, str]:
            [(_, future)] = admin.delete_records([Tp(topic, 0, offset)]).items()
            return refusal(lambda: future.result(30))

        assert deleting("trimmed", 201)[0] == ErrorCode.OFFSET_OUT_OF_RANGE
        assert deleting("compacted", 5)[0] == ErrorCode.POLICY_VIOLATION
        [(_, everything)] = admin.delete_records([Tp("trimmed", 0, -1)]).items()  # OFFSET_END
        assert everything.result(30).low_watermark == 200
        assert watermarks(b, "trimmed") == (200, 200)
    finally:
        coordinator.kill()


def test_groups_of_every_type_are_listed_and_described(tmp_path: Path) -> None:
    coordinator = CoordinatorProcess(tmp_path / "data", {"group.initial.rebalance.delay.ms": "0"}).start()
    transport = TcpTransport(coordinator.bootstrap)
    members: list[Consumer] = []
    try:
        b = coordinator.bootstrap
        admin = admin_of(coordinator)
        make_topic(admin, "events", 2)
        workers = ConnectDriver(transport, "workers")
        workers.join("W1")
        workers.compute("W1", {"W1": "c1"})
        for group, protocol in (("classic-readers", "classic"), ("kip848-readers", "consumer")):
            member = Consumer({"bootstrap.servers": b, "group.id": group, "group.protocol": protocol})
            member.subscribe(["events"])
            members.append(member)

        def all_stable() -> bool:
            for member in members:
                member.poll(0.1)
            workers.beat("W1")
            listed = admin.list_consumer_groups().result(30).valid
            return sorted((g.group_id, g.state) for g in listed) == [
                ("classic-readers", ConsumerGroupState.STABLE), ("kip848-readers", ConsumerGroupState.STABLE)
            ]  # fmt: skip

        wait_until(all_stable, 60, "both consumer groups to be stable")
        listed = admin.list_consumer_groups().result(30).valid
        assert sorted((g.group_id, g.type) for g in listed) == [
            ("classic-readers", ConsumerGroupType.CLASSIC), ("kip848-readers", ConsumerGroupType.CONSUMER)
        ]  # fmt: skip
        assert [g.group_id for g in admin.list_consumer_groups(types={ConsumerGroupType.CONSUMER})
                .result(30).valid] == ["kip848-readers"]  # fmt: skip
        described = {g: f.result(30) for g, f in admin.describe_consumer_groups(
            ["classic-readers", "kip848-readers"]).items()}  # fmt: skip
        assert {g: (d.type, d.state, len(d.members)) for g, d in described.items()} == {
            "classic-readers": (ConsumerGroupType.CLASSIC, ConsumerGroupState.STABLE, 1),
            "kip848-readers": (ConsumerGroupType.CONSUMER, ConsumerGroupState.STABLE, 1),
        }
        for group in described.values():
            assert sorted(tp.partition for tp in group.members[0].assignment.topic_partitions) == [0, 1]
        # Every group, the connect group too, as ListGroups and DescribeGroups report them.
        with pytest.warns(DeprecationWarning):
            everything = sorted(g.id for g in admin.list_groups(timeout=30))
        assert everything == ["classic-readers", "kip848-readers", "workers"]
    finally:
        for member in members:
            member.close()
        transport.close()
        coordinator.kill()


def test_a_config_named_twice_or_without_a_value_is_an_invalid_request_for_every_resource_type(
    tmp_path: Path,
) -> None:
    """Kafka checks every resource's configs before its type's rules: a config named twice,
    or a null value (AlterConfigs: any; IncrementalAlterConfigs: but for a DELETE), is
    INVALID_REQUEST, and the other resources of the request are altered as sent."""
    from kafka import KafkaAdminClient
    from kafka.protocol.admin.configs import AlterConfigsRequest, IncrementalAlterConfigsRequest

    from connect_rebalance_cli.admin_command import send_request

    coordinator = CoordinatorProcess(tmp_path / "data").start()
    admin = KafkaAdminClient(bootstrap_servers=coordinator.bootstrap)
    try:
        make_topic(admin_of(coordinator), "kept")
        resource = IncrementalAlterConfigsRequest.AlterConfigsResource
        entry = resource.AlterableConfig

        def incremental(
            kind: int, name: str, *configs: tuple[str, int, str | None]
        ) -> tuple[int, str | None]:
            request = IncrementalAlterConfigsRequest(resources=[resource(
                resource_type=kind, resource_name=name,
                configs=[entry(name=n, config_operation=op, value=v) for n, op, v in configs],
            )], validate_only=False)  # fmt: skip
            [answer] = send_request(admin, request).responses
            return answer.error_code, answer.error_message

        for kind, name, config in ((2, "kept", "retention.ms"), (4, "1", "log.retention.ms"),
                                   (32, "a-group", "consumer.session.timeout.ms")):  # fmt: skip
            assert incremental(kind, name, (config, 0, "50000"), (config, 1, None)) == (
                ErrorCode.INVALID_REQUEST, f"configs named more than once: {config}"
            )  # fmt: skip
            assert incremental(kind, name, (config, 0, None)) == (
                ErrorCode.INVALID_REQUEST, f"null value for {config}: only a DELETE has no value"
            )  # fmt: skip
        legacy = AlterConfigsRequest.AlterConfigsResource
        request = AlterConfigsRequest(resources=[
            legacy(resource_type=2, resource_name="kept",
                   configs=[legacy.AlterableConfig(name="retention.ms", value=None)]),
            legacy(resource_type=2, resource_name="missing", configs=[]),
        ], validate_only=False)  # fmt: skip
        nulled, missing = send_request(admin, request).responses
        assert (nulled.error_code, nulled.error_message) == (
            ErrorCode.INVALID_REQUEST,
            "null value for retention.ms: leave a config out to return it to its default",
        )
        assert missing.error_code == ErrorCode.UNKNOWN_TOPIC_OR_PARTITION, (
            "the other resource was not altered"
        )
        assert explicit_configs(admin_of(coordinator), "kept") == {}, "a refused change was applied"
    finally:
        admin.close()
        coordinator.kill()

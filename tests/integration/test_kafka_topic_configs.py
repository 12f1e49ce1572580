"""Every topic config Kafka 4.x defines, through confluent-kafka's AdminClient over TCP: a
topic is created with all of them, DescribeConfigs gives each back with its value and
source, AlterConfigs and IncrementalAlterConfigs change them, a value Kafka would refuse
and an unknown name are INVALID_CONFIG naming the config, and those that have no effect
on this coordinator are named in one warning in its log. min.insync.replicas above the
one replica refuses acks=all writes, as Kafka does."""

from __future__ import annotations

import pytest
from confluent_kafka import KafkaError, KafkaException, Producer
from confluent_kafka.admin import (
    AdminClient,
    AlterConfigOpType,
    ConfigEntry,
    ConfigResource,
    ConfigSource,
    NewTopic,
)
from confluent_kafka.admin import ResourceType as Rt

from connect_rebalance.errors import ErrorCode
from connect_rebalance.processes import CoordinatorProcess
from coordinator.configs.topic_table import TOPIC_CONFIGS

pytestmark = [pytest.mark.integration, pytest.mark.filterwarnings("ignore:alter_configs has been deprecated")]

# Kafka 4.x's topic configs (LogConfig), each with a valid value other than its default.
EVERY_KAFKA_TOPIC_CONFIG = {
    "cleanup.policy": "compact,delete", "retention.ms": "86400000", "retention.bytes": "1073741824",
    "segment.bytes": "16777216", "segment.ms": "3600000", "index.interval.bytes": "8192",
    "max.message.bytes": "2097152", "flush.messages": "10000", "flush.ms": "5000",
    "min.insync.replicas": "1", "compression.type": "lz4", "message.timestamp.type": "CreateTime",
    "delete.retention.ms": "3600000", "preallocate": "false", "min.cleanable.dirty.ratio": "0.25",
    "remote.storage.enable": "false", "segment.jitter.ms": "1000", "segment.index.bytes": "1048576",
    "file.delete.delay.ms": "1000", "min.compaction.lag.ms": "1000", "max.compaction.lag.ms": "86400000",
    "unclean.leader.election.enable": "true", "leader.replication.throttled.replicas": "0:1",
    "follower.replication.throttled.replicas": "*", "compression.gzip.level": "6",
    "compression.lz4.level": "10", "compression.zstd.level": "-5",
    "message.timestamp.before.max.ms": "86400000", "message.timestamp.after.max.ms": "3600000",
    "message.timestamp.difference.max.ms": "86400000", "message.format.version": "3.0-IV1",
    "message.downconversion.enable": "false", "local.retention.ms": "-2", "local.retention.bytes": "-2",
    "remote.log.copy.disable": "false", "remote.log.delete.on.disable": "false",
}  # fmt: skip
WITHOUT_EFFECT = {name for name, definition in TOPIC_CONFIGS.items() if definition.no_effect}


def described(admin: AdminClient, topic: str) -> dict[str, tuple[str, ConfigSource]]:
    resource = ConfigResource(Rt.TOPIC, topic)
    entries = admin.describe_configs([resource])[resource].result(30)
    return {name: (entry.value, ConfigSource(entry.source)) for name, entry in entries.items()}


def incremental(admin: AdminClient, topic: str, *changes: tuple[str, AlterConfigOpType, str | None]) -> None:
    entries = [ConfigEntry(name, value, incremental_operation=op) for name, op, value in changes]
    resource = ConfigResource(Rt.TOPIC, topic, incremental_configs=entries)
    admin.incremental_alter_configs([resource])[resource].result(30)


def refusal(call) -> tuple[int, str] | None:  # type: ignore[no-untyped-def]
    """The Kafka error code and message of a call the client saw refused; None if it was not."""
    try:
        call()
    except KafkaException as refused:
        error = refused.args[0]
        return error.code(), error.str()
    return None


def warnings_for(coordinator: CoordinatorProcess, topic: str) -> list[str]:
    return [
        line
        for line in coordinator.log_text().splitlines()
        if f"WARNING coordinator.apis.topics: topic {topic}:" in line
    ]


def test_every_kafka_topic_config_is_accepted_described_altered_and_warned_of_when_it_has_no_effect(
    shared_coordinator: CoordinatorProcess,
) -> None:
    admin = AdminClient({"bootstrap.servers": shared_coordinator.bootstrap})
    created = admin.create_topics([NewTopic("every-config", 1, 1, config=EVERY_KAFKA_TOPIC_CONFIG)])
    assert refusal(lambda: created["every-config"].result(30)) is None
    dynamic = ConfigSource.DYNAMIC_TOPIC_CONFIG
    assert described(admin, "every-config") == {
        name: (value, dynamic) for name, value in EVERY_KAFKA_TOPIC_CONFIG.items()
    }

    # One warning, naming each config set that changes nothing here, and none of the others.
    # (Written before the answer: the coordinator's log lines are flushed as they are logged.)
    warnings = warnings_for(shared_coordinator, "every-config")
    assert len(warnings) == 1, warnings
    warning = warnings[0]
    assert {name for name in EVERY_KAFKA_TOPIC_CONFIG if f" {name}=" in warning} == WITHOUT_EFFECT
    assert "file.delete.delay.ms=1000 has no effect here: segments dropped by retention" in warning
    assert len(WITHOUT_EFFECT) == 20

    incremental(
        admin, "every-config",
        ("file.delete.delay.ms", AlterConfigOpType.SET, "2000"),
        ("unclean.leader.election.enable", AlterConfigOpType.DELETE, None),
        ("leader.replication.throttled.replicas", AlterConfigOpType.APPEND, "1:1"),
        ("retention.ms", AlterConfigOpType.SET, "7200000"),
    )  # fmt: skip
    after = described(admin, "every-config")
    assert after["file.delete.delay.ms"] == ("2000", dynamic)
    assert after["unclean.leader.election.enable"] == ("false", ConfigSource.DEFAULT_CONFIG)
    assert after["leader.replication.throttled.replicas"] == ("0:1,1:1", dynamic)
    assert after["retention.ms"] == ("7200000", dynamic)
    warnings = warnings_for(shared_coordinator, "every-config")
    assert len(warnings) == 2, warnings
    changed = warnings[1]
    assert (
        "file.delete.delay.ms=2000" in changed and "leader.replication.throttled.replicas=0:1,1:1" in changed
    )
    assert "unclean" not in changed and "retention.ms" not in changed and "segment.jitter.ms" not in changed

    def change(*changes: tuple[str, AlterConfigOpType, str | None]) -> tuple[int, str] | None:
        return refusal(lambda: incremental(admin, "every-config", *changes))

    assert change(("file.delete.delay.ms", AlterConfigOpType.SET, "-1")) == (
        ErrorCode.INVALID_CONFIG,
        "invalid value '-1' for topic config 'file.delete.delay.ms': must be at least 0",
    )  # fmt: skip
    assert change(("compression.lz4.level", AlterConfigOpType.SET, "18")) == (
        ErrorCode.INVALID_CONFIG,
        "invalid value '18' for topic config 'compression.lz4.level': must be between 1 and 17",
    )  # fmt: skip
    assert change(("min.compaction.lag.ms", AlterConfigOpType.SET, "100000000")) == (
        ErrorCode.INVALID_CONFIG,
        "conflict topic config setting min.compaction.lag.ms (100000000) > max.compaction.lag.ms (86400000)",
    )  # fmt: skip
    tiered = change(("remote.storage.enable", AlterConfigOpType.SET, "true"))
    assert tiered is not None and tiered[0] == ErrorCode.INVALID_CONFIG
    assert "Tiered Storage functionality is disabled" in tiered[1]
    assert described(admin, "every-config") == after, "a refused change was applied"

    # AlterConfigs replaces the whole set, no-effect configs included.
    whole = ConfigResource(Rt.TOPIC, "every-config", set_config={"segment.jitter.ms": "5"})
    admin.alter_configs([whole])[whole].result(30)
    explicit = {n: v for n, (v, source) in described(admin, "every-config").items() if source == dynamic}
    assert explicit == {"segment.jitter.ms": "5"}

    unknown = admin.create_topics([NewTopic("unknown-config", 1, 1, config={"file.delete.delay.msx": "1"})])
    assert refusal(lambda: unknown["unknown-config"].result(30)) == (
        ErrorCode.INVALID_CONFIG, "unknown topic config 'file.delete.delay.msx'"
    )  # fmt: skip


def test_min_insync_replicas_above_one_refuses_acks_all_writes_as_kafka_does_with_one_replica(
    shared_coordinator: CoordinatorProcess,
) -> None:
    admin = AdminClient({"bootstrap.servers": shared_coordinator.bootstrap})
    admin.create_topics([NewTopic("two-in-sync", 1, 1, config={"min.insync.replicas": "2"})])[
        "two-in-sync"
    ].result(30)
    warnings = warnings_for(shared_coordinator, "two-in-sync")
    assert len(warnings) == 1, warnings
    assert "min.insync.replicas=2: a write with acks=all is refused NOT_ENOUGH_REPLICAS" in warnings[0]

    def delivery(acks: str) -> KafkaError | None:
        reports: list[KafkaError | None] = []
        producer = Producer({"bootstrap.servers": shared_coordinator.bootstrap, "acks": acks, "retries": 0,
                             "linger.ms": 0})  # fmt: skip
        producer.produce("two-in-sync", b"value", on_delivery=lambda error, _message: reports.append(error))
        assert producer.flush(30) == 0
        return reports[0]

    refused = delivery("all")
    assert refused is not None and refused.code() == KafkaError.NOT_ENOUGH_REPLICAS, refused
    assert delivery("1") is None

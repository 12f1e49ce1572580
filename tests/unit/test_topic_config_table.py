"""Kafka's topic configs as Kafka validates them: every name of Kafka 4.x's LogConfig is
known, each value is read as Kafka's ConfigDef reads its type and checked by Kafka's
validator, and the configs that change nothing here are told apart with their reason."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from connect_rebalance.errors import ErrorCode, KafkaApiError
from coordinator.configs.coordinator import CoordinatorConfig
from coordinator.configs.topic_table import TOPIC_CONFIGS
from coordinator.configs.topics import config_warnings, log_settings, validate_topic_configs

pytestmark = pytest.mark.unit
CONFIG = CoordinatorConfig()


def problem(configs: dict[str, str | None]) -> str | None:
    try:
        validate_topic_configs(configs, CONFIG)
    except KafkaApiError as error:
        assert error.code == ErrorCode.INVALID_CONFIG
        return error.message
    return None


def test_every_config_takes_its_default_and_values_kafka_takes() -> None:
    assert len(TOPIC_CONFIGS) == 36
    for name, definition in TOPIC_CONFIGS.items():
        assert problem({name: definition.default(CONFIG)}) is None, name
    taken = {
        "cleanup.policy": ["compact , delete", "", "delete,delete"],  # an empty list: neither policy
        "preallocate": ["TRUE", " false "],
        "retention.bytes": ["-5"],  # no lower bound in Kafka
        "max.compaction.lag.ms": ["9223372036854775807"],
        "compression.gzip.level": ["-1", "1", "9"],
        "compression.zstd.level": ["-131072", "22"],
        "message.format.version": ["0.10.2", "0.10.2-IV0", "2.8.1", "3.0-IV1", "4.0"],
        "leader.replication.throttled.replicas": ["*", "0:1, 1:1", ""],
        "min.cleanable.dirty.ratio": ["1e-1", "1"],
        "min.insync.replicas": ["3"],
        "remote.storage.enable": ["false"],
        "local.retention.ms": ["-2"],
    }
    for name, values in taken.items():
        for value in values:
            assert problem({name: value}) is None, (name, value)


@pytest.mark.parametrize(
    ("name", "value", "reason"),
    [
        ("file.delete.delay.ms", "-1", "must be at least 0"),
        ("segment.bytes", "2147483648", "not a 32-bit integer"),
        ("segment.ms", "1_000", "not a 64-bit integer"),
        ("min.cleanable.dirty.ratio", "1.5", "must be between 0 and 1"),
        ("unclean.leader.election.enable", "yes", "must be true or false"),
        ("cleanup.policy", "compact,forever", "'forever' is not one of compact, delete"),
        ("compression.type", "brotli", "must be one of producer, uncompressed, gzip, snappy, lz4, zstd"),
        ("compression.gzip.level", "0", "must be between 1 and 9 or equal to -1"),
        ("compression.lz4.level", "18", "must be between 1 and 17"),
        ("message.format.version", "3.0-IV2", "3.0-IV2 is not a valid version"),
        ("follower.replication.throttled.replicas", "0:x", "must be the literal '*' or a list of replicas"),
        ("local.retention.bytes", "-3", "must be at least -2"),
        ("remote.storage.enable", "true", "Tiered Storage functionality is disabled in the broker."),
    ],
)
def test_a_value_kafka_refuses_is_refused_naming_the_config_and_why(
    name: str, value: str, reason: str
) -> None:
    message = problem({name: value})
    assert message is not None and message.startswith(f"invalid value {value!r} for topic config {name!r}: ")
    assert reason in message


def test_names_are_checked_first_then_values_then_across_configs() -> None:
    assert problem({"segment.bytes": "1", "file.delete.delay.msx": "1"}) == (
        "unknown topic config 'file.delete.delay.msx'"
    )  # fmt: skip
    assert problem({"min.compaction.lag.ms": "10", "max.compaction.lag.ms": "5"}) == (
        "conflict topic config setting min.compaction.lag.ms (10) > max.compaction.lag.ms (5)"
    )  # fmt: skip
    assert problem({"min.compaction.lag.ms": "10", "max.compaction.lag.ms": None}) is None  # its default


def test_configs_without_effect_are_warned_of_with_their_reason_and_the_applied_ones_are_not() -> None:
    assert (
        config_warnings({"retention.ms": "5", "cleanup.policy": "compact", "min.insync.replicas": "1"}) == []
    )
    assert config_warnings({"file.delete.delay.ms": "0", "unclean.leader.election.enable": "true"}) == [
        "file.delete.delay.ms=0 has no effect here: segments dropped by retention, compaction or "
        "DeleteRecords are deleted at once",
        "unclean.leader.election.enable=true has no effect here: there is one replica of each partition, "
        "the coordinator's own",
    ]
    assert config_warnings({"min.insync.replicas": " 2"}) == [
        "min.insync.replicas= 2: a write with acks=all is refused NOT_ENOUGH_REPLICAS, as each partition "
        "has one replica"
    ]
    without_effect = {name for name, d in TOPIC_CONFIGS.items() if d.no_effect}
    assert "remote.storage.enable" not in without_effect and "min.insync.replicas" not in without_effect
    assert len(without_effect) == 20


def test_log_settings_read_values_as_kafka_parses_them() -> None:
    settings = log_settings(
        {"cleanup.policy": " compact , delete ", "preallocate": "TRUE",
         "message.timestamp.type": " LogAppendTime", "compression.type": "zstd ", "min.insync.replicas": "2",
         "segment.bytes": " 4096"},
        CONFIG,
    )  # fmt: skip
    assert settings.cleanup_policy == {"compact", "delete"} and settings.preallocate
    assert settings.log_append_time and settings.compression == 4
    assert settings.min_insync_replicas == 2 and settings.segment_bytes == 4096
    assert log_settings({"cleanup.policy": ""}, CONFIG).cleanup_policy == frozenset()


def test_the_operations_guide_has_one_row_for_each_config_and_says_which_have_no_effect() -> None:
    guide = (Path(__file__).resolve().parents[2] / "docs" / "operations.md").read_text()
    section = guide.split("\n## Topic configs\n", 1)[1].split("\n## ", 1)[0]
    rows = [line.split(" | ") for line in section.splitlines() if line.startswith("| `")]
    named = {name: row[2] for row in rows for name in re.findall(r"`([a-z0-9.]+)`", row[0])}
    assert sorted(named) == sorted(TOPIC_CONFIGS)
    assert {name for name, effect in named.items() if effect.startswith("no effect")} == {
        name for name, definition in TOPIC_CONFIGS.items() if definition.no_effect
    }

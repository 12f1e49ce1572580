"""A source connector's topic creation settings (KIP-158) as Kafka Connect's TopicCreation and
TopicCreationGroup read them: which group a topic takes, what a group inherits from the
default group, and each setting's problem with Kafka's message."""

from __future__ import annotations

import logging

import pytest

from workers.config.topic_creation import topic_creation, topic_creation_problems

pytestmark = pytest.mark.unit
DEFAULTS = {"topic.creation.default.partitions": "3", "topic.creation.default.replication.factor": "-1"}


def problems_of(**settings: str) -> dict[str, str]:
    config = {key.replace("_", "."): value for key, value in settings.items()}
    return {p.name: p.message for p in topic_creation_problems({**DEFAULTS, **config})}


def test_a_topic_takes_the_first_listed_group_that_matches_it_else_the_default_group() -> None:
    creation = topic_creation(
        {
            **DEFAULTS,
            "topic.creation.default.retention.ms": "3600000",
            "topic.creation.groups": "compacted, audit",
            "topic.creation.compacted.include": "compact-.*, .*-state",
            "topic.creation.compacted.exclude": ".*-raw",
            "topic.creation.compacted.cleanup.policy": "compact",
            "topic.creation.audit.include": "audit-.*, compact-audit",
            "topic.creation.audit.partitions": "1",
        }
    )
    assert creation is not None
    assert [g.name for g in creation.groups] == ["compacted", "audit"]
    assert creation.group_for("compact-orders").name == "compacted"
    assert creation.group_for("orders-state").name == "compacted"
    assert creation.group_for("compact-audit").name == "compacted", "listed first, so it wins"
    assert creation.group_for("compact-orders-raw").name == "default", "an exclusion beats an inclusion"
    assert creation.group_for("audit-log").name == "audit"
    assert creation.group_for("xcompact-orders").name == "default", "a pattern matches the whole name"
    assert creation.group_for("orders").name == "default"

    compacted, audit = creation.groups
    assert (compacted.partitions, compacted.replication_factor) == (3, -1), "the default group's"
    assert (audit.partitions, audit.replication_factor) == (1, -1)
    assert compacted.configs == {"cleanup.policy": "compact"}, "a group's topic configs are its own"
    assert creation.default.configs == {"retention.ms": "3600000"}


def test_a_config_without_topic_creation_settings_asks_for_none() -> None:
    assert topic_creation({"topic": "out"}) is None
    assert topic_creation_problems({"topic": "out"}) == []


def test_a_group_with_no_include_patterns_takes_no_topic() -> None:
    creation = topic_creation({**DEFAULTS, "topic.creation.groups": "empty"})
    assert creation is not None and creation.group_for("anything").name == "default"
    assert creation.group_for("").name == "default"


def test_the_default_group_needs_partitions_and_replication_factor_as_kafka_requires() -> None:
    found = {p.name: p.message for p in topic_creation_problems({"topic.creation.groups": "a"})}
    assert found == {
        name: f'Missing required configuration "{name}" which has no default value.'
        for name in ("topic.creation.default.partitions", "topic.creation.default.replication.factor")
    }


def test_each_bad_setting_is_named_with_kafkas_message() -> None:
    assert problems_of(**{"topic.creation.default.partitions": "0"}) == {
        "topic.creation.default.partitions": "Invalid value 0 for configuration topic.creation.default."
        "partitions: Number of partitions must be positive, or -1 to use the broker's default"
    }
    assert problems_of(**{"topic.creation.default.replication.factor": "-2"}) == {
        "topic.creation.default.replication.factor": "Invalid value -2 for configuration topic.creation."
        "default.replication.factor: Replication factor must be positive and not larger than the number "
        "of brokers in the Kafka cluster, or -1 to use the broker's default"
    }
    assert problems_of(
        **{
            "topic.creation.groups": "g",
            "topic.creation.g.replication.factor": "40000",
            "topic.creation.g.partitions": "three",
        }
    ) == {  # fmt: skip
        "topic.creation.g.replication.factor": "Invalid value 40000 for configuration "
        "topic.creation.g.replication.factor: Not a number of type SHORT",
        "topic.creation.g.partitions": "Invalid value three for configuration topic.creation.g.partitions: "
        "Not a number of type INT",
    }
    assert problems_of(**{"topic.creation.groups": "g, h, g"}) == {
        "topic.creation.groups": "Invalid value [g, h, g] for configuration topic.creation.groups: "
        "Duplicate alias provided."
    }
    bad_regex = problems_of(**{"topic.creation.groups": "g", "topic.creation.g.include": "ok-.*, (open"})
    assert bad_regex["topic.creation.g.include"].startswith(
        "Invalid value [ok-.*, (open] for configuration topic.creation.g.include: Syntax error in regular "
        "expression: missing ), unterminated subpattern"
    )


def test_settings_kafka_would_store_and_never_use_are_refused() -> None:
    found = problems_of(**{"topic.creation.groups": "g", "topic.creation.unlisted.partitions": "5",
                           "topic.creation.default.include": "orders-.*"})  # fmt: skip
    assert set(found) == {"topic.creation.unlisted.partitions", "topic.creation.default.include"}
    assert (
        "names no topic creation group: list the group in topic.creation.groups"
        in (found["topic.creation.unlisted.partitions"])
    )
    assert (
        "the default group creates every topic no other group matches"
        in (found["topic.creation.default.include"])
    )


def test_listing_the_default_group_is_a_warning_as_in_kafka(caplog: pytest.LogCaptureFixture) -> None:
    with caplog.at_level(logging.WARNING, "workers.config.topic_creation"):
        assert problems_of(**{"topic.creation.groups": "default, g"}) == {}
        creation = topic_creation({**DEFAULTS, "topic.creation.groups": "default, g"})
    assert creation is not None and [g.name for g in creation.groups] == ["g"]
    assert "'default' topic creation group always exists and does not need to be listed explicitly" in (
        caplog.text
    )

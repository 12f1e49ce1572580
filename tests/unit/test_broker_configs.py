"""Dynamic broker configs on the pure core: which names each level takes, how an
IncrementalAlterConfigs change or an AlterConfigs replacement applies, which level wins,
and what the topics' defaults and DescribeConfigs become."""

from __future__ import annotations

import pytest

from connect_rebalance.errors import ErrorCode, KafkaApiError
from coordinator.configs.broker import (
    DEFAULT_LEVEL,
    DYNAMIC_BROKER_CONFIG,
    DYNAMIC_DEFAULT_BROKER_CONFIG,
    DynamicBrokerConfigs,
    changed,
    described,
    no_effect_warnings,
)
from coordinator.configs.coordinator import CoordinatorConfig
from coordinator.configs.topics import (
    APPEND,
    DEFAULT_CONFIG,
    DELETE,
    SET,
    STATIC_BROKER_CONFIG,
    SUBTRACT,
    effective_configs,
    log_settings,
)

pytestmark = pytest.mark.unit
CONFIG = CoordinatorConfig.from_settings({"log.retention.ms": "3600000"})
NODE = "1"


def refusal(call) -> tuple[int, str]:
    with pytest.raises(KafkaApiError) as refused:
        call()
    return refused.value.code, refused.value.message


def test_a_topic_default_set_on_the_broker_applies_to_every_topic_without_its_own_value() -> None:
    dynamic, config = changed(DynamicBrokerConfigs(), NODE, [("log.retention.ms", SET, "5000")], None, CONFIG)
    assert dynamic.own == {"log.retention.ms": "5000"}
    assert effective_configs({}, config)["retention.ms"] == ("5000", DYNAMIC_BROKER_CONFIG)
    assert log_settings({}, config).retention_ms == 5000
    assert log_settings({"retention.ms": "7"}, config).retention_ms == 7, "a topic's own value wins"
    assert effective_configs({}, CONFIG)["retention.ms"] == ("3600000", DEFAULT_CONFIG), "the file's is kept"


def test_the_brokers_own_level_wins_over_the_cluster_default_and_delete_falls_back() -> None:
    dynamic, _ = changed(
        DynamicBrokerConfigs(), DEFAULT_LEVEL, [("log.cleanup.policy", SET, "compact")], None, CONFIG
    )
    dynamic, config = changed(dynamic, NODE, [("log.cleanup.policy", APPEND, "delete")], None, CONFIG)
    assert dynamic.own == {"log.cleanup.policy": "compact,delete"}, "APPEND starts from the default level's"
    assert log_settings({}, config).cleanup_policy == frozenset({"compact", "delete"})
    dynamic, config = changed(dynamic, NODE, [("log.cleanup.policy", DELETE, None)], None, CONFIG)
    assert effective_configs({}, config)["cleanup.policy"] == ("compact", DYNAMIC_DEFAULT_BROKER_CONFIG)
    dynamic, config = changed(
        dynamic, DEFAULT_LEVEL, [("log.cleanup.policy", SUBTRACT, "compact")], None, CONFIG
    )
    assert dynamic.default == {"log.cleanup.policy": ""}
    assert log_settings({}, config).cleanup_policy == frozenset()


def test_kafka_settings_with_no_meaning_here_are_kept_with_why() -> None:
    changes = [("background.threads", SET, "9"), ("sasl.kerberos.min.time.before.relogin", SET, "58000")]
    dynamic, config = changed(DynamicBrokerConfigs(), NODE, changes, None, CONFIG)
    assert dynamic.own == {"background.threads": "9", "sasl.kerberos.min.time.before.relogin": "58000"}
    assert config.dynamic_topic_defaults == {}
    warnings = no_effect_warnings(dynamic.own)
    assert warnings[0].startswith("background.threads=9 has no effect here: the coordinator serves")
    assert "no Kerberos" in warnings[1]
    dynamic, _ = changed(dynamic, NODE, [("background.threads", DELETE, "")], None, CONFIG)
    assert dynamic.own == {"sasl.kerberos.min.time.before.relogin": "58000"}


def test_names_that_cannot_change_here_are_refused_naming_why() -> None:
    def refused_set(name: str, value: str, level: str = NODE) -> tuple[int, str]:
        return refusal(lambda: changed(DynamicBrokerConfigs(), level, [(name, SET, value)], None, CONFIG))

    assert refused_set("listeners", "PLAINTEXT://:9093") == (
        ErrorCode.INVALID_CONFIG,
        "broker config 'listeners' is read from the coordinator's properties file at start: "
        "change it there and restart",
    )
    assert "properties file at start" in refused_set("listener.name.internal.ssl.keystore.location", "/k")[1]
    assert "cannot be changed while the broker runs" in refused_set("log.dirs", "/tmp/x")[1]
    assert refused_set("log.retention.msec", "1") == (
        ErrorCode.INVALID_CONFIG,
        "unknown broker config 'log.retention.msec' (did you mean 'log.retention.ms'?)",
    )
    assert (
        "cluster-wide default" in refused_set("sasl.kerberos.min.time.before.relogin", "1", DEFAULT_LEVEL)[1]
    )
    assert refused_set("background.threads", "0") == (
        ErrorCode.INVALID_CONFIG,
        "invalid value '0' for broker config 'background.threads': must be at least 1",
    )
    code, message = refused_set("log.cleanup.policy", "forever")
    assert code == ErrorCode.INVALID_CONFIG and "broker config 'log.cleanup.policy'" in message
    assert (
        refusal(
            lambda: changed(DynamicBrokerConfigs(), NODE, [("log.retention.ms", APPEND, "1")], None, CONFIG)
        )[1]
        == "APPEND applies to list configs only; 'log.retention.ms' is not a list"
    )


def test_alter_configs_replaces_a_whole_level() -> None:
    dynamic, _ = changed(
        DynamicBrokerConfigs(own={"background.threads": "9"}),
        NODE,
        None,
        [("log.segment.bytes", "1024")],
        CONFIG,
    )
    assert dynamic.own == {"log.segment.bytes": "1024"}
    assert refusal(
        lambda: changed(
            DynamicBrokerConfigs(), NODE, None, [("log.roll.ms", "1"), ("log.roll.ms", "2")], CONFIG
        )
    ) == (ErrorCode.INVALID_CONFIG, "configs named more than once: log.roll.ms")


def test_describe_lists_each_value_in_force_first_with_every_level_as_synonyms() -> None:
    dynamic = DynamicBrokerConfigs(
        own={"log.retention.ms": "5"}, default={"log.retention.ms": "6", "num.io.threads": "2"}
    )
    static = CONFIG.kafka_settings()
    own = described(dynamic, static, NODE)
    assert own["log.retention.ms"] == [
        ("5", DYNAMIC_BROKER_CONFIG), ("6", DYNAMIC_DEFAULT_BROKER_CONFIG), ("3600000", STATIC_BROKER_CONFIG)
    ]  # fmt: skip
    assert own["num.io.threads"] == [("2", DYNAMIC_DEFAULT_BROKER_CONFIG)]
    assert own["node.id"] == [("1", STATIC_BROKER_CONFIG)]
    assert described(dynamic, static, DEFAULT_LEVEL) == {
        "log.retention.ms": [("6", DYNAMIC_DEFAULT_BROKER_CONFIG)],
        "num.io.threads": [("2", DYNAMIC_DEFAULT_BROKER_CONFIG)],
    }

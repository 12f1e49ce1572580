"""IncrementalAlterConfigs' and AlterConfigs' arithmetic on a topic's explicit configs,
as Kafka does it: SET, DELETE, APPEND and SUBTRACT one config each, the whole set replaced,
and every refusal naming the config."""

from __future__ import annotations

import pytest

from connect_rebalance.errors import ErrorCode, KafkaApiError
from coordinator.configs.coordinator import CoordinatorConfig
from coordinator.configs.topics import APPEND, DELETE, SET, SUBTRACT, incrementally_altered, replaced_configs

pytestmark = pytest.mark.unit
CONFIG = CoordinatorConfig()


def refused(call) -> str:  # type: ignore[no-untyped-def]
    with pytest.raises(KafkaApiError) as error:
        call()
    assert error.value.code == ErrorCode.INVALID_CONFIG
    return error.value.message


def test_each_operation_changes_one_config_and_leaves_the_others() -> None:
    start = {"retention.ms": "1000", "segment.bytes": "4096"}
    assert incrementally_altered(start, [("retention.ms", SET, "5000")], CONFIG) == {
        "retention.ms": "5000", "segment.bytes": "4096"
    }  # fmt: skip
    assert incrementally_altered(start, [("segment.bytes", DELETE, None)], CONFIG) == {"retention.ms": "1000"}
    assert incrementally_altered(start, [("flush.ms", DELETE, None)], CONFIG) == start  # nothing to delete
    # APPEND starts from the default's items when the config has no explicit value.
    appended = incrementally_altered({}, [("cleanup.policy", APPEND, "compact")], CONFIG)
    assert appended == {"cleanup.policy": "delete,compact"}
    assert incrementally_altered(appended, [("cleanup.policy", APPEND, "compact")], CONFIG) == appended
    assert incrementally_altered(appended, [("cleanup.policy", SUBTRACT, "delete")], CONFIG) == {
        "cleanup.policy": "compact"
    }  # fmt: skip
    # An empty list is a valid cleanup.policy, as in Kafka: neither deleted nor compacted.
    emptied = incrementally_altered({}, [("cleanup.policy", SUBTRACT, "delete")], CONFIG)
    assert emptied == {"cleanup.policy": ""}
    assert start == {"retention.ms": "1000", "segment.bytes": "4096"}, "the current configs were changed"


def test_refusals_name_the_config_and_the_reason() -> None:
    assert refused(lambda: incrementally_altered({}, [("retention.ms", APPEND, "1")], CONFIG)) == (
        "APPEND applies to list configs only; 'retention.ms' is not a list"
    )
    assert (
        refused(lambda: incrementally_altered({}, [("nope", SET, "1")], CONFIG))
        == "unknown topic config 'nope'"
    )
    assert refused(lambda: incrementally_altered({}, [("retention.ms", SET, None)], CONFIG)) == (
        "SET of 'retention.ms' needs a value"
    )
    assert refused(lambda: incrementally_altered({}, [("retention.ms", 7, "1")], CONFIG)) == (
        "unknown config operation 7 for 'retention.ms'"
    )
    assert (
        refused(
            lambda: incrementally_altered(
                {}, [("retention.ms", SET, "1"), ("retention.ms", DELETE, None)], CONFIG
            )
        )
        == "configs named more than once: retention.ms"
    )
    assert refused(lambda: incrementally_altered({}, [("cleanup.policy", APPEND, "never")], CONFIG)) == (
        "invalid value 'delete,never' for topic config 'cleanup.policy': "
        "'never' is not one of compact, delete"
    )


def test_alter_configs_replaces_the_whole_set() -> None:
    replaced = replaced_configs([("retention.ms", "1"), ("cleanup.policy", None)], CONFIG)
    assert replaced == {"retention.ms": "1"}
    assert replaced_configs([], CONFIG) == {}
    assert refused(lambda: replaced_configs([("segment.bytes", "1")], CONFIG)) == (
        "invalid value '1' for topic config 'segment.bytes': must be at least 14"
    )

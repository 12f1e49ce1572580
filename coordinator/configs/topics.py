"""A topic's configs: what CreateTopics, AlterConfigs and IncrementalAlterConfigs may set,
what DescribeConfigs reports, and the LogSettings its partitions run with.

Every config of Kafka's table (topic_table.py) is accepted with a value Kafka would
take; an unknown name or a bad value is INVALID_CONFIG naming the config, and the reason
for a bad value. A config that has no effect here is kept and described like the others;
`config_warnings` says so, for the admin APIs to log.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from connect_rebalance.errors import ErrorCode, KafkaApiError
from coordinator.configs.coordinator import CoordinatorConfig
from coordinator.configs.topic_table import INT, LIST, TOPIC_CONFIGS, cross_config_problem, parse
from coordinator.storage import batches
from coordinator.storage.partition_log import LogSettings

# DescribeConfigs config_source values.
DYNAMIC_TOPIC_CONFIG, STATIC_BROKER_CONFIG, DEFAULT_CONFIG = 1, 4, 5


def validate_topic_configs(configs: dict[str, str | None], config: CoordinatorConfig) -> dict[str, str]:
    """Return the explicitly set configs, or raise INVALID_CONFIG naming the bad one: an
    unknown name first (Kafka checks every name before any value), then a value Kafka's
    type and validator refuse, then Kafka's checks across configs."""
    for name in configs:
        if name not in TOPIC_CONFIGS:
            raise KafkaApiError(ErrorCode.INVALID_CONFIG, f"unknown topic config {name!r}")
    accepted = {name: value for name, value in configs.items() if value is not None}
    for name, value in accepted.items():
        problem = TOPIC_CONFIGS[name].problem(value)
        if problem is not None:
            raise KafkaApiError(
                ErrorCode.INVALID_CONFIG, f"invalid value {value!r} for topic config {name!r}: {problem}"
            )
    problem = cross_config_problem(_values(accepted, config))
    if problem is not None:
        raise KafkaApiError(ErrorCode.INVALID_CONFIG, problem)
    return accepted


def config_warnings(explicit: dict[str, str]) -> list[str]:
    """What an operator must be told of these explicit configs: each one that has no effect
    on this coordinator, with why, and a min.insync.replicas no write with acks=all can meet."""
    warnings = [
        f"{name}={value} has no effect here: {TOPIC_CONFIGS[name].no_effect}"
        for name, value in explicit.items()
        if TOPIC_CONFIGS[name].no_effect
    ]
    if "min.insync.replicas" in explicit and parse(INT, explicit["min.insync.replicas"]) > 1:
        warnings.append(
            f"min.insync.replicas={explicit['min.insync.replicas']}: a write with acks=all is refused "
            "NOT_ENOUGH_REPLICAS, as each partition has one replica"
        )
    return warnings


# IncrementalAlterConfigs' config_operation values.
SET, DELETE, APPEND, SUBTRACT = 0, 1, 2, 3
OPERATION_NAMES = {SET: "SET", DELETE: "DELETE", APPEND: "APPEND", SUBTRACT: "SUBTRACT"}


def no_repeats(names: list[str], code: ErrorCode = ErrorCode.INVALID_CONFIG) -> None:
    """`code` naming the configs named more than once, if any: INVALID_CONFIG for a resource
    type's own validation, INVALID_REQUEST for the admin APIs' first check of a request."""
    repeated = sorted({name for name in names if names.count(name) > 1})
    if repeated:
        raise KafkaApiError(code, f"configs named more than once: {', '.join(repeated)}")


def replaced_configs(configs: list[tuple[str, str | None]], config: CoordinatorConfig) -> dict[str, str]:
    """AlterConfigs: the whole new set of explicit configs (those left out take their
    defaults again), validated as CreateTopics validates."""
    no_repeats([name for name, _ in configs])
    return validate_topic_configs(dict(configs), config)


def applied_changes(
    explicit: dict[str, str],
    changes: list[tuple[str, int, str | None]],
    definition_of: Callable[[str], tuple[int, str] | None],
    kind: str,
) -> dict[str, str]:
    """The explicit configs after each IncrementalAlterConfigs (name, operation, value) in
    turn, for any resource whose configs `definition_of` types: (config type, current
    default), or None for a name it does not know. SET sets a value, DELETE returns a
    config to its default, APPEND and SUBTRACT add items to or remove them from a list
    config (its default's items when it has no explicit value), as Kafka applies them;
    INVALID_CONFIG names the first change that cannot apply. The values are not validated
    here: the resource's own rules do that on the result."""
    no_repeats([name for name, _, _ in changes])
    result = dict(explicit)
    for name, operation, value in changes:
        definition = definition_of(name)
        if definition is None:
            raise KafkaApiError(ErrorCode.INVALID_CONFIG, f"unknown {kind} config {name!r}")
        if operation == DELETE:
            result.pop(name, None)
            continue
        if operation not in OPERATION_NAMES:
            raise KafkaApiError(
                ErrorCode.INVALID_CONFIG, f"unknown config operation {operation} for {name!r}"
            )
        if value is None:
            raise KafkaApiError(
                ErrorCode.INVALID_CONFIG, f"{OPERATION_NAMES[operation]} of {name!r} needs a value"
            )
        if operation in (APPEND, SUBTRACT):
            config_type, default = definition
            if config_type != LIST:
                raise KafkaApiError(
                    ErrorCode.INVALID_CONFIG,
                    f"{OPERATION_NAMES[operation]} applies to list configs only; {name!r} is not a list",
                )
            items = [i for i in parse(LIST, result.get(name, default)) if i]
            given = [i.strip() for i in value.split(",") if i.strip()]
            if operation == APPEND:
                items += [i for i in given if i not in items]
            else:
                items = [i for i in items if i not in given]
            value = ",".join(items)
        result[name] = value
    return result


def incrementally_altered(
    explicit: dict[str, str], changes: list[tuple[str, int, str | None]], config: CoordinatorConfig
) -> dict[str, str]:
    """IncrementalAlterConfigs on a topic: `applied_changes` with the topic table's types
    and this coordinator's defaults, then validated as CreateTopics validates."""
    defaults = _values({}, config)

    def definition_of(name: str) -> tuple[int, str] | None:
        definition = TOPIC_CONFIGS.get(name)
        return None if definition is None else (definition.config_type, defaults[name])

    return validate_topic_configs(applied_changes(explicit, changes, definition_of, "topic"), config)


def effective_configs(explicit: dict[str, str], config: CoordinatorConfig) -> dict[str, tuple[str, int]]:
    """Every topic config with its value and source: the topic's own, else a dynamic broker
    default (AlterConfigs on the BROKER resource, broker.py), else the default the
    coordinator's settings give."""
    dynamic = config.dynamic_topic_defaults
    return {
        name: (explicit[name], DYNAMIC_TOPIC_CONFIG)
        if name in explicit
        else dynamic[name]
        if name in dynamic
        else (d.default(config), DEFAULT_CONFIG)
        for name, d in TOPIC_CONFIGS.items()
    }


def _values(explicit: dict[str, str], config: CoordinatorConfig) -> dict[str, str]:
    return {name: value for name, (value, _) in effective_configs(explicit, config).items()}


def log_settings(explicit: dict[str, str], config: CoordinatorConfig) -> LogSettings:
    values = _values(explicit, config)

    def value(name: str) -> Any:
        return parse(TOPIC_CONFIGS[name].config_type, values[name])

    return LogSettings(
        segment_bytes=value("segment.bytes"),
        segment_ms=value("segment.ms"),
        retention_ms=value("retention.ms"),
        retention_bytes=value("retention.bytes"),
        index_interval_bytes=value("index.interval.bytes"),
        flush_messages=value("flush.messages"),
        flush_ms=value("flush.ms"),
        cleanup_policy=frozenset(value("cleanup.policy")),
        delete_retention_ms=value("delete.retention.ms"),
        min_cleanable_dirty_ratio=value("min.cleanable.dirty.ratio"),
        log_append_time=value("message.timestamp.type") == "LogAppendTime",
        preallocate=value("preallocate"),
        compression=batches.CODECS[value("compression.type")],
        max_message_bytes=value("max.message.bytes"),
        min_insync_replicas=value("min.insync.replicas"),
    )

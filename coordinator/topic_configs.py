"""Topic-level configs: Kafka's names, types, and which broker setting supplies the default.

CreateTopics validates against this table (an unknown name or a bad value is
INVALID_CONFIG naming the config), DescribeConfigs reports from it, and the partition
logs resolve their LogSettings from it.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

from connect_rebalance.errors import ErrorCode, KafkaApiError

from .config import CoordinatorConfig
from .storage import batches
from .storage.partition_log import LogSettings

# DescribeConfigs config_type values (KIP-569).
BOOLEAN, STRING, INT, LONG, DOUBLE, LIST = 1, 2, 3, 5, 6, 7
# DescribeConfigs config_source values.
DYNAMIC_TOPIC_CONFIG, STATIC_BROKER_CONFIG, DEFAULT_CONFIG = 1, 4, 5


@dataclass(frozen=True, slots=True)
class TopicConfigDef:
    name: str
    config_type: int
    default: Callable[[CoordinatorConfig], str]
    valid: Callable[[str], bool]
    doc: str


def _is_int(low: int) -> Callable[[str], bool]:
    def check(value: str) -> bool:
        try:
            return int(value) >= low
        except ValueError:
            return False

    return check


def _is_ratio(value: str) -> bool:
    try:
        return 0.0 <= float(value) <= 1.0
    except ValueError:
        return False


def _one_of(*choices: str) -> Callable[[str], bool]:
    return lambda value: value in choices


TOPIC_CONFIGS: dict[str, TopicConfigDef] = {
    d.name: d
    for d in (
        TopicConfigDef(
            "cleanup.policy",
            LIST,
            lambda c: "delete",
            _one_of("delete", "compact", "compact,delete", "delete,compact"),
            "delete old segments, or keep the latest value per key",
        ),
        TopicConfigDef(
            "retention.ms",
            LONG,
            lambda c: str(c.log_retention_ms),
            _is_int(-1),
            "how long a segment is kept after its newest record (-1: forever)",
        ),
        TopicConfigDef(
            "retention.bytes",
            LONG,
            lambda c: str(c.log_retention_bytes),
            _is_int(-1),
            "the most bytes a partition keeps before deleting old segments (-1: no limit)",
        ),
        TopicConfigDef(
            "segment.bytes",
            INT,
            lambda c: str(c.log_segment_bytes),
            _is_int(14),
            "segment file size at which a new segment starts",
        ),
        TopicConfigDef(
            "segment.ms", LONG, lambda c: str(c.log_roll_ms), _is_int(1), "age at which a new segment starts"
        ),
        TopicConfigDef(
            "segment.index.bytes", INT, lambda c: "10485760", _is_int(4), "accepted for compatibility"
        ),
        TopicConfigDef(
            "index.interval.bytes",
            INT,
            lambda c: str(c.log_index_interval_bytes),
            _is_int(0),
            "log bytes between index entries",
        ),
        TopicConfigDef(
            "max.message.bytes",
            INT,
            lambda c: str(c.message_max_bytes),
            _is_int(0),
            "the largest record batch accepted",
        ),
        TopicConfigDef(
            "flush.messages",
            LONG,
            lambda c: str(c.log_flush_interval_messages),
            _is_int(1),
            "fsync after this many messages",
        ),
        TopicConfigDef(
            "flush.ms", LONG, lambda c: str(c.log_flush_interval_ms), _is_int(0), "fsync at least this often"
        ),
        TopicConfigDef("min.insync.replicas", INT, lambda c: "1", _one_of("1"), "a single node: always 1"),
        TopicConfigDef(
            "compression.type",
            STRING,
            lambda c: "producer",
            _one_of(*batches.CODECS),
            "the codec batches are stored with; producer: as the producer compressed them",
        ),
        TopicConfigDef(
            "message.timestamp.type",
            STRING,
            lambda c: "CreateTime",
            _one_of("CreateTime", "LogAppendTime"),
            "the producer's timestamps, or the time the coordinator appended each batch",
        ),
        TopicConfigDef(
            "delete.retention.ms", LONG, lambda c: "86400000", _is_int(0), "accepted for compatibility"
        ),
        TopicConfigDef(
            "preallocate",
            BOOLEAN,
            lambda c: str(c.log_preallocate).lower(),
            _one_of("true", "false"),
            "each new segment holds segment.bytes of disk from the start, for appends on a full disk",
        ),
        TopicConfigDef(
            "min.cleanable.dirty.ratio",
            DOUBLE,
            lambda c: "0.5",
            _is_ratio,
            "compact once the part written since the last compaction is this share of the sealed log",
        ),
    )
}


def validate_topic_configs(configs: dict[str, str | None]) -> dict[str, str]:
    """Return the explicitly set configs, or raise INVALID_CONFIG naming the bad one."""
    accepted: dict[str, str] = {}
    for name, value in configs.items():
        definition = TOPIC_CONFIGS.get(name)
        if definition is None:
            raise KafkaApiError(ErrorCode.INVALID_CONFIG, f"unknown topic config {name!r}")
        if value is None:
            continue
        if not definition.valid(value):
            raise KafkaApiError(
                ErrorCode.INVALID_CONFIG, f"invalid value {value!r} for topic config {name!r}"
            )
        accepted[name] = value
    return accepted


# IncrementalAlterConfigs' config_operation values.
SET, DELETE, APPEND, SUBTRACT = 0, 1, 2, 3
OPERATION_NAMES = {SET: "SET", DELETE: "DELETE", APPEND: "APPEND", SUBTRACT: "SUBTRACT"}


def _no_repeats(names: list[str]) -> None:
    repeated = sorted({name for name in names if names.count(name) > 1})
    if repeated:
        raise KafkaApiError(ErrorCode.INVALID_CONFIG, f"configs named more than once: {', '.join(repeated)}")


def replaced_configs(configs: list[tuple[str, str | None]]) -> dict[str, str]:
    """AlterConfigs: the whole new set of explicit configs (those left out take their
    defaults again), validated as CreateTopics validates."""
    _no_repeats([name for name, _ in configs])
    return validate_topic_configs(dict(configs))


def incrementally_altered(
    explicit: dict[str, str], changes: list[tuple[str, int, str | None]], config: CoordinatorConfig
) -> dict[str, str]:
    """IncrementalAlterConfigs: the explicit configs after each (name, operation, value) in
    turn. SET sets a value, DELETE returns a config to its default, APPEND and SUBTRACT add
    items to or remove them from a list config (its default's items when it has no explicit
    value), as Kafka applies them; INVALID_CONFIG names the first change that cannot apply."""
    _no_repeats([name for name, _, _ in changes])
    result = dict(explicit)
    for name, operation, value in changes:
        definition = TOPIC_CONFIGS.get(name)
        if definition is None:
            raise KafkaApiError(ErrorCode.INVALID_CONFIG, f"unknown topic config {name!r}")
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
            if definition.config_type != LIST:
                raise KafkaApiError(
                    ErrorCode.INVALID_CONFIG,
                    f"{OPERATION_NAMES[operation]} applies to list configs only; {name!r} is not a list",
                )
            items = [i for i in result.get(name, definition.default(config)).split(",") if i]
            given = [i.strip() for i in value.split(",") if i.strip()]
            if operation == APPEND:
                items += [i for i in given if i not in items]
            else:
                items = [i for i in items if i not in given]
            value = ",".join(items)
        result[name] = value
    return validate_topic_configs(result)


def effective_configs(explicit: dict[str, str], config: CoordinatorConfig) -> dict[str, tuple[str, int]]:
    """Every topic config with its value and source (explicit or broker default)."""
    return {
        name: (explicit[name], DYNAMIC_TOPIC_CONFIG)
        if name in explicit
        else (d.default(config), DEFAULT_CONFIG)
        for name, d in TOPIC_CONFIGS.items()
    }


def log_settings(explicit: dict[str, str], config: CoordinatorConfig) -> LogSettings:
    values = {name: value for name, (value, _) in effective_configs(explicit, config).items()}
    return LogSettings(
        segment_bytes=int(values["segment.bytes"]),
        segment_ms=int(values["segment.ms"]),
        retention_ms=int(values["retention.ms"]),
        retention_bytes=int(values["retention.bytes"]),
        index_interval_bytes=int(values["index.interval.bytes"]),
        flush_messages=int(values["flush.messages"]),
        flush_ms=int(values["flush.ms"]),
        cleanup_policy=frozenset(values["cleanup.policy"].split(",")),
        delete_retention_ms=int(values["delete.retention.ms"]),
        min_cleanable_dirty_ratio=float(values["min.cleanable.dirty.ratio"]),
        log_append_time=values["message.timestamp.type"] == "LogAppendTime",
        preallocate=values["preallocate"] == "true",
        compression=batches.CODECS[values["compression.type"]],
        max_message_bytes=int(values["max.message.bytes"]),
    )

"""Every topic config Apache Kafka 4.x defines (its LogConfig), with Kafka's type and
validator, the default here, and whether it acts on this coordinator.

Rules:
- Kafka accepts every name in this table and refuses any other; so does the coordinator.
- A value is parsed as Kafka's ConfigDef parses its type (trimmed; integers in their 32- or
  64-bit range; booleans in any case; a list split at commas) and then checked by the
  config's validator, so a value Kafka refuses is refused here and one it takes is taken.
- A config whose meaning needs what one node with local segments does not have (replicas,
  tiered storage, an older record format, a delayed file deletion) is still accepted and
  described like any other, and carries `no_effect`: the reason it changes nothing here.
  The admin APIs log that reason when a topic is given such a config; docs/operations.md
  has the whole table.

Pure: names, parsers and validators; no IO.
"""

from __future__ import annotations

import re
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from coordinator.configs.coordinator import CoordinatorConfig
from coordinator.storage import batches

# DescribeConfigs config_type values (KIP-569).
BOOLEAN, STRING, INT, LONG, DOUBLE, LIST = 1, 2, 3, 5, 6, 7
INT_MAX, LONG_MAX = 2**31 - 1, 2**63 - 1

Parsed = bool | int | float | str | list[str]
Validator = Callable[[Any], str | None]  # the problem with a parsed value, or None

_INTEGER = re.compile(r"[+-]?[0-9]+")
_DECIMAL = re.compile(r"[+-]?([0-9]+\.?[0-9]*|\.[0-9]+)([eE][+-]?[0-9]+)?[dDfF]?")
_LIST_SEPARATOR = re.compile(r"\s*,\s*")


def parse(config_type: int, value: str) -> Parsed:
    """The value as Kafka's ConfigDef.parseType reads it; ValueError says why not."""
    text = value.strip()
    if config_type in (INT, LONG):
        limit = INT_MAX if config_type == INT else LONG_MAX
        if not _INTEGER.fullmatch(text) or not -limit - 1 <= int(text) <= limit:
            raise ValueError(f"not a {32 if config_type == INT else 64}-bit integer")
        return int(text)
    if config_type == DOUBLE:
        if not _DECIMAL.fullmatch(text):
            raise ValueError("not a number")
        return float(text.rstrip("dDfF"))
    if config_type == BOOLEAN:
        if text.lower() not in ("true", "false"):
            raise ValueError("must be true or false")
        return text.lower() == "true"
    if config_type == LIST:
        return _LIST_SEPARATOR.split(text) if text else []
    return text


def at_least(low: int) -> Validator:
    return lambda v: None if v >= low else f"must be at least {low}"


def between(low: float, high: float) -> Validator:
    return lambda v: None if low <= v <= high else f"must be between {low} and {high}"


def one_of(*choices: str) -> Validator:
    return lambda v: None if v in choices else f"must be one of {', '.join(choices)}"


def items_of(*choices: str) -> Validator:
    def check(items: list[str]) -> str | None:
        wrong = [i for i in items if i not in choices]
        return f"{wrong[0]!r} is not one of {', '.join(choices)}" if wrong else None

    return check


def _gzip_level(level: int) -> str | None:
    return None if level == -1 or 1 <= level <= 9 else "must be between 1 and 9 or equal to -1"


_THROTTLED_REPLICA = re.compile(r"([0-9]+:[0-9]+)?")


def _throttled_replicas(items: list[str]) -> str | None:
    if "".join(items) == "*" or all(_THROTTLED_REPLICA.fullmatch(i.strip()) for i in items):
        return None
    return "must be the literal '*' or a list of replicas [partitionId]:[brokerId],..."


# Kafka's releases with their inter-broker protocol versions (MetadataVersion), which
# message.format.version names: "0.10.2", "2.8", "3.0-IV1", "2.8.1" (read as "2.8") and so on.
_RELEASE_IVS = {
    "0.8.0": 0, "0.8.1": 0, "0.8.2": 0, "0.9.0": 0, "0.10.0": 2, "0.10.1": 3, "0.10.2": 1, "0.11.0": 3,
    "1.0": 1, "1.1": 1, "2.0": 2, "2.1": 3, "2.2": 2, "2.3": 2, "2.4": 2, "2.5": 1, "2.6": 1, "2.7": 3,
    "2.8": 2, "3.0": 2, "3.1": 1, "3.2": 1, "3.3": 4, "3.4": 1, "3.5": 3, "3.6": 3, "3.7": 5, "3.8": 1,
    "3.9": 1, "4.0": 4,
}  # fmt: skip
_VERSIONS = frozenset(
    [*_RELEASE_IVS] + [f"{release}-IV{i}" for release, count in _RELEASE_IVS.items() for i in range(count)]
)


def _metadata_version(text: str) -> str | None:
    parts = text.split(".")
    kept = 3 if text.startswith("0.") else 2  # "2.8.1" is read as "2.8", "0.10.2.1" as "0.10.2"
    key = text if len(parts) <= kept else ".".join(parts[:kept])
    return None if key in _VERSIONS else f"{text} is not a valid version"


def _not_true(reason: str) -> Validator:
    return lambda enabled: reason if enabled else None


@dataclass(frozen=True, slots=True)
class TopicConfigDef:
    name: str
    config_type: int
    default: Callable[[CoordinatorConfig], str]
    valid: Validator | None
    doc: str
    no_effect: str = ""  # why this config changes nothing here; empty: it applies

    @property
    def description(self) -> str:
        """DescribeConfigs' documentation of the config, with why it has no effect here."""
        return f"{self.doc} (no effect here: {self.no_effect})" if self.no_effect else self.doc

    def problem(self, value: str) -> str | None:
        """Why Kafka would refuse this value for this config, or None."""
        try:
            parsed = parse(self.config_type, value)
        except ValueError as exc:
            return str(exc)
        return self.valid(parsed) if self.valid is not None else None


def _fixed(value: str) -> Callable[[CoordinatorConfig], str]:
    return lambda _config: value


def _config(name: str, config_type: int, default: Callable[[CoordinatorConfig], str] | str,
            valid: Validator | None, doc: str, no_effect: str = "") -> TopicConfigDef:  # fmt: skip
    return TopicConfigDef(
        name, config_type, _fixed(default) if isinstance(default, str) else default, valid, doc, no_effect
    )


# Why a config changes nothing here, for those that share a reason.
ONE_REPLICA = "there is one replica of each partition, the coordinator's own"
NO_TIERED_STORAGE = "there is no tiered storage: every segment stays on the coordinator's disk"
BY_DIRTY_RATIO = "the cleaner compacts every sealed segment once min.cleanable.dirty.ratio is reached"
DEFAULT_LEVEL = "batches the coordinator compresses are written at the codec's default level"
UNCHECKED_TIMESTAMPS = "records' timestamps are not checked against the time they are appended"
NO_LIMIT = str(LONG_MAX)

TOPIC_CONFIGS: dict[str, TopicConfigDef] = {
    d.name: d
    for d in (
        # -- applied ------------------------------------------------------------------------
        _config(
            "cleanup.policy", LIST, "delete", items_of("compact", "delete"),
            "delete old segments, keep the latest value per key, both, or neither (empty)",
        ),
        _config(
            "retention.ms", LONG, lambda c: str(c.log_retention_ms), at_least(-1),
            "how long a segment is kept after its newest record (-1: forever)",
        ),
        _config(
            "retention.bytes", LONG, lambda c: str(c.log_retention_bytes), None,
            "the most bytes a partition keeps before deleting old segments (negative: no limit)",
        ),
        _config(
            "segment.bytes", INT, lambda c: str(c.log_segment_bytes), at_least(14),
            "segment file size at which a new segment starts",
        ),
        _config(
            "segment.ms", LONG, lambda c: str(c.log_roll_ms), at_least(1),
            "age at which a new segment starts",
        ),
        _config(
            "index.interval.bytes", INT, lambda c: str(c.log_index_interval_bytes), at_least(0),
            "log bytes between index entries",
        ),
        _config(
            "max.message.bytes", INT, lambda c: str(c.message_max_bytes), at_least(0),
            "the largest record batch accepted",
        ),
        _config(
            "flush.messages", LONG, lambda c: str(c.log_flush_interval_messages), at_least(1),
            "fsync after this many messages",
        ),
        _config(
            "flush.ms", LONG, lambda c: str(c.log_flush_interval_ms), at_least(0),
            "fsync at least this often",
        ),
        _config(
            "min.insync.replicas", INT, "1", at_least(1),
            "in-sync replicas an acks=all write needs: above 1 (one replica here) it is refused",
        ),
        _config(
            "compression.type", STRING, "producer", one_of(*batches.CODECS),
            "the codec batches are stored with; producer: as the producer compressed them",
        ),
        _config(
            "message.timestamp.type", STRING, "CreateTime", one_of("CreateTime", "LogAppendTime"),
            "the producer's timestamps, or the time the coordinator appended each batch",
        ),
        _config(
            "delete.retention.ms", LONG, "86400000", at_least(0),
            "how long a compacted topic keeps a tombstone",
        ),
        _config(
            "preallocate", BOOLEAN, lambda c: str(c.log_preallocate).lower(), None,
            "each new segment holds segment.bytes of disk from the start, for appends on a full disk",
        ),
        _config(
            "min.cleanable.dirty.ratio", DOUBLE, "0.5", between(0, 1),
            "compact once the part written since the last compaction is this share of the sealed log",
        ),
        _config(
            "remote.storage.enable", BOOLEAN, "false",
            _not_true("Tiered Storage functionality is disabled in the broker. "
                      "Topic cannot be configured with remote log storage."),
            "tiered storage for the topic: false only, as on a Kafka broker without tiered storage",
        ),
        # -- accepted, validated and described, without effect here ---------------------------
        _config(
            "segment.jitter.ms", LONG, "0", at_least(0), "random jitter subtracted from segment.ms",
            "a segment rolls at segment.ms exactly (the jitter spreads the rolls of many partitions)",
        ),
        _config(
            "segment.index.bytes", INT, "10485760", at_least(4), "the largest offset index of a segment",
            "a segment's index grows with it; a segment rolls at segment.bytes or segment.ms",
        ),
        _config(
            "file.delete.delay.ms", LONG, "60000", at_least(0), "delay before a dropped segment's files go",
            "segments dropped by retention, compaction or DeleteRecords are deleted at once",
        ),
        _config(
            "min.compaction.lag.ms", LONG, "0", at_least(0), "the least time a record stays uncompacted",
            BY_DIRTY_RATIO,
        ),
        _config(
            "max.compaction.lag.ms", LONG, NO_LIMIT, at_least(1), "the most time a record stays uncompacted",
            BY_DIRTY_RATIO,
        ),
        _config(
            "unclean.leader.election.enable", BOOLEAN, "false", None,
            "whether a replica out of the ISR may become leader", ONE_REPLICA,
        ),
        _config(
            "leader.replication.throttled.replicas", LIST, "", _throttled_replicas,
            "replicas whose replication the leader throttles", ONE_REPLICA,
        ),
        _config(
            "follower.replication.throttled.replicas", LIST, "", _throttled_replicas,
            "replicas whose replication the follower throttles", ONE_REPLICA,
        ),
        _config(
            "compression.gzip.level", INT, "-1", _gzip_level, "gzip level when compression.type is gzip",
            DEFAULT_LEVEL,
        ),
        _config(
            "compression.lz4.level", INT, "9", between(1, 17), "lz4 level when compression.type is lz4",
            DEFAULT_LEVEL,
        ),
        _config(
            "compression.zstd.level", INT, "3", between(-131072, 22),
            "zstd level when compression.type is zstd", DEFAULT_LEVEL,
        ),
        _config(
            "message.timestamp.before.max.ms", LONG, NO_LIMIT, at_least(0),
            "how far before the append time a record's timestamp may be", UNCHECKED_TIMESTAMPS,
        ),
        _config(
            "message.timestamp.after.max.ms", LONG, NO_LIMIT, at_least(0),
            "how far after the append time a record's timestamp may be", UNCHECKED_TIMESTAMPS,
        ),
        _config(
            "message.timestamp.difference.max.ms", LONG, NO_LIMIT, at_least(0),
            "[deprecated] the largest difference between a record's timestamp and the append time",
            f"deprecated in Kafka 3.6; {UNCHECKED_TIMESTAMPS}",
        ),
        _config(
            "message.format.version", STRING, "3.0-IV1", _metadata_version,
            "[deprecated] the record format version of the topic's log",
            "deprecated in Kafka 3.0: the log holds record batches in format v2, as produced",
        ),
        _config(
            "message.downconversion.enable", BOOLEAN, "true", None,
            "[deprecated] whether fetches of older versions get records converted to their format",
            "Fetch is served from version 4 on, which reads format v2: nothing is ever converted",
        ),
        _config(
            "local.retention.ms", LONG, "-2", at_least(-2), "retention of the local part of a tiered log",
            NO_TIERED_STORAGE,
        ),
        _config(
            "local.retention.bytes", LONG, "-2", at_least(-2), "size of the local part of a tiered log",
            NO_TIERED_STORAGE,
        ),
        _config(
            "remote.log.copy.disable", BOOLEAN, "false", None, "whether a tiered topic stops copying",
            NO_TIERED_STORAGE,
        ),
        _config(
            "remote.log.delete.on.disable", BOOLEAN, "false", None,
            "whether disabling tiered storage deletes the remote data", NO_TIERED_STORAGE,
        ),
    )
}  # fmt: skip


def cross_config_problem(values: dict[str, str]) -> str | None:
    """Kafka's checks across configs (LogConfig.validateValues), on every config's value."""
    low, high = (parse(LONG, values[name]) for name in ("min.compaction.lag.ms", "max.compaction.lag.ms"))
    if low > high:
        return f"conflict topic config setting min.compaction.lag.ms ({low}) > max.compaction.lag.ms ({high})"
    return None

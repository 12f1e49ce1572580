"""Dynamic broker configs: what AlterConfigs and IncrementalAlterConfigs may change on the
BROKER resource while the coordinator runs, as Kafka's DynamicBrokerConfig allows.

Kafka keeps them at two levels: the broker's own (resource name = its node id) and the
cluster-wide default (an empty resource name). A broker's own value wins over the default,
which wins over the properties file. The names are Kafka's reconfigurable broker configs,
in three kinds here:
- **topic defaults** (Kafka's DynamicLogConfig: `log.retention.ms`, `log.cleanup.policy`,
  `compression.type`, ...), validated as the topic config they stand for and applied at
  once: every topic without its own value for that config takes the new default, its
  partitions' retention, compaction and rolls follow it, and DescribeConfigs on the topic
  names the broker level as the source;
- **settings read at start** (listeners, TLS and SASL, connection limits, the cleaner's
  backoff): refused with INVALID_CONFIG naming the properties file, as a value accepted
  and not applied would mislead;
- **Kafka settings with no meaning here** (thread pools, Kerberos and OAUTHBEARER logins,
  inter-broker settings, tiered storage, metric reporters): accepted, kept and described
  like the others, each with why it changes nothing, which the admin APIs log.
A name Kafka cannot change at run time, a name it does not know, a bad value, and a
per-broker config sent to the cluster-wide default are INVALID_CONFIG naming the config.
Unlike Kafka, no unknown ("custom") name is accepted: nothing here would read it.

Pure: the table, the rules and the merge into the coordinator's config; broker.py keeps them
on disk and applies them.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field

from connect_rebalance.errors import ErrorCode, KafkaApiError
from connect_rebalance.properties import did_you_mean
from coordinator.configs.coordinator import CoordinatorConfig
from coordinator.configs.topic_table import (
    BOOLEAN,
    DOUBLE,
    INT,
    LIST,
    LONG,
    STRING,
    TOPIC_CONFIGS,
    Validator,
    at_least,
    parse,
)
from coordinator.configs.topics import (
    STATIC_BROKER_CONFIG,
    applied_changes,
    no_repeats,
    validate_topic_configs,
)
from coordinator.security.settings import LISTENER_PREFIX

# DescribeConfigs config_source values for the two dynamic levels.
DYNAMIC_BROKER_CONFIG, DYNAMIC_DEFAULT_BROKER_CONFIG = 2, 3
DEFAULT_LEVEL = ""  # the resource name of the cluster-wide default

# Broker config -> the topic config it is the default of (Kafka's ServerTopicConfigSynonyms,
# the reconfigurable first synonym of each).
TOPIC_DEFAULTS: dict[str, str] = {
    "log.segment.bytes": "segment.bytes",
    "log.roll.ms": "segment.ms",
    "log.roll.jitter.ms": "segment.jitter.ms",
    "log.index.size.max.bytes": "segment.index.bytes",
    "log.flush.interval.messages": "flush.messages",
    "log.flush.interval.ms": "flush.ms",
    "log.retention.bytes": "retention.bytes",
    "log.retention.ms": "retention.ms",
    "message.max.bytes": "max.message.bytes",
    "log.index.interval.bytes": "index.interval.bytes",
    "log.cleaner.delete.retention.ms": "delete.retention.ms",
    "log.cleaner.min.compaction.lag.ms": "min.compaction.lag.ms",
    "log.cleaner.max.compaction.lag.ms": "max.compaction.lag.ms",
    "log.segment.delete.delay.ms": "file.delete.delay.ms",
    "log.cleaner.min.cleanable.ratio": "min.cleanable.dirty.ratio",
    "log.cleanup.policy": "cleanup.policy",
    "unclean.leader.election.enable": "unclean.leader.election.enable",
    "min.insync.replicas": "min.insync.replicas",
    "compression.type": "compression.type",
    "compression.gzip.level": "compression.gzip.level",
    "compression.lz4.level": "compression.lz4.level",
    "compression.zstd.level": "compression.zstd.level",
    "log.preallocate": "preallocate",
    "log.message.timestamp.type": "message.timestamp.type",
    "log.message.timestamp.difference.max.ms": "message.timestamp.difference.max.ms",
    "log.message.timestamp.before.max.ms": "message.timestamp.before.max.ms",
    "log.message.timestamp.after.max.ms": "message.timestamp.after.max.ms",
    "log.message.downconversion.enable": "message.downconversion.enable",
    "log.local.retention.ms": "local.retention.ms",
    "log.local.retention.bytes": "local.retention.bytes",
}


@dataclass(frozen=True, slots=True)
class NoEffectConfig:
    """A reconfigurable Kafka broker config that means nothing on this coordinator."""

    config_type: int
    valid: Validator | None
    no_effect: str
    per_broker: bool = False  # Kafka takes it only on a broker's own resource


_THREADS = "the coordinator serves connections and background work on one event loop, with no such pool"
_CLEANER = "one cleaner task compacts a partition at a time, with no buffers or rate of its own"
_LOGIN = "SASL here is PLAIN or SCRAM: there is no Kerberos or OAUTHBEARER login to renew"
_ONE_NODE = "the coordinator is a single node: there is no other broker to replicate to or talk to"
_TIERED = "there is no tiered storage: every segment stays on the coordinator's disk"


def _no_effect(
    config_type: int, reason: str, low: int | None = None, per_broker: bool = False
) -> NoEffectConfig:
    return NoEffectConfig(config_type, None if low is None else at_least(low), reason, per_broker)


NO_EFFECT: dict[str, NoEffectConfig] = {
    "background.threads": _no_effect(INT, _THREADS, 1),
    "num.io.threads": _no_effect(INT, _THREADS, 1),
    "num.network.threads": _no_effect(INT, _THREADS, 1),
    "num.recovery.threads.per.data.dir": _no_effect(INT, _THREADS, 1),
    "num.replica.fetchers": _no_effect(INT, _ONE_NODE, 1),
    "log.cleaner.threads": _no_effect(INT, _CLEANER, 0),
    "log.cleaner.io.max.bytes.per.second": _no_effect(DOUBLE, _CLEANER),
    "log.cleaner.dedupe.buffer.size": _no_effect(LONG, _CLEANER),
    "log.cleaner.io.buffer.size": _no_effect(INT, _CLEANER, 0),
    "log.cleaner.io.buffer.load.factor": _no_effect(DOUBLE, _CLEANER),
    "metric.reporters": _no_effect(
        LIST, "metrics are served in Prometheus' format on the admin port's /metrics"
    ),
    "max.connection.creation.rate": _no_effect(
        INT, "new connections are not rate-limited here; max.connections bounds them", 0
    ),
    "producer.id.expiration.ms": _no_effect(
        INT, "idempotent producers' state is kept, not expired by time", 1
    ),
    "transaction.partition.verification.enable": _no_effect(BOOLEAN, "transactions are refused by design"),
    "leader.replication.throttled.rate": _no_effect(LONG, _ONE_NODE, 0),
    "follower.replication.throttled.rate": _no_effect(LONG, _ONE_NODE, 0),
    "replica.alter.log.dirs.io.max.bytes.per.second": _no_effect(
        LONG, "the coordinator has one log directory", 0
    ),
    "sasl.mechanism.inter.broker.protocol": _no_effect(STRING, _ONE_NODE, per_broker=True),
    "sasl.kerberos.service.name": _no_effect(STRING, _LOGIN, per_broker=True),
    "sasl.kerberos.kinit.cmd": _no_effect(STRING, _LOGIN, per_broker=True),
    "sasl.kerberos.ticket.renew.window.factor": _no_effect(DOUBLE, _LOGIN, per_broker=True),
    "sasl.kerberos.ticket.renew.jitter": _no_effect(DOUBLE, _LOGIN, per_broker=True),
    "sasl.kerberos.min.time.before.relogin": _no_effect(LONG, _LOGIN, per_broker=True),
    "sasl.kerberos.principal.to.local.rules": _no_effect(LIST, _LOGIN, per_broker=True),
    "sasl.login.refresh.window.factor": _no_effect(DOUBLE, _LOGIN, per_broker=True),
    "sasl.login.refresh.window.jitter": _no_effect(DOUBLE, _LOGIN, per_broker=True),
    "sasl.login.refresh.min.period.seconds": _no_effect(INT, _LOGIN, 0, per_broker=True),
    "sasl.login.refresh.buffer.seconds": _no_effect(INT, _LOGIN, 0, per_broker=True),
    "remote.log.index.file.cache.total.size.bytes": _no_effect(LONG, _TIERED, 1),
    "remote.fetch.max.wait.ms": _no_effect(INT, _TIERED, 1),
    "remote.log.manager.copy.max.bytes.per.second": _no_effect(LONG, _TIERED, 1),
    "remote.log.manager.fetch.max.bytes.per.second": _no_effect(LONG, _TIERED, 1),
    "remote.list.offsets.request.timeout.ms": _no_effect(LONG, _TIERED, 1),
}

# Reconfigurable on Kafka, read once at start here.
READ_AT_START = frozenset({
    "listeners", "advertised.listeners", "listener.security.protocol.map", "principal.builder.class",
    "sasl.enabled.mechanisms", "sasl.jaas.config", "max.connections", "max.connections.per.ip",
    "max.connections.per.ip.overrides", "log.cleaner.backoff.ms",
})  # fmt: skip


def _read_at_start(name: str) -> bool:
    return name in READ_AT_START or name.startswith(("ssl.", LISTENER_PREFIX))


def config_type_of(name: str) -> int:
    """DescribeConfigs' type of a dynamic broker config."""
    if name in TOPIC_DEFAULTS:
        return TOPIC_CONFIGS[TOPIC_DEFAULTS[name]].config_type
    return NO_EFFECT[name].config_type if name in NO_EFFECT else STRING


def is_dynamic(name: str) -> bool:
    """Whether AlterConfigs may set `name` on the BROKER resource here."""
    return name in TOPIC_DEFAULTS or name in NO_EFFECT


def _refusal(name: str, level: str, static_names: frozenset[str]) -> str | None:
    """Why `name` cannot be set at this level, or None."""
    if _read_at_start(name):
        return (
            f"broker config {name!r} is read from the coordinator's properties file at start: "
            "change it there and restart"
        )
    if not is_dynamic(name):
        if name in static_names:
            return (
                f"broker config {name!r} cannot be changed while the broker runs (nor on Kafka): "
                "change it in the properties file and restart"
            )
        return f"unknown broker config {name!r}{did_you_mean(name, [*TOPIC_DEFAULTS, *NO_EFFECT])}"
    if level == DEFAULT_LEVEL and name in NO_EFFECT and NO_EFFECT[name].per_broker:
        return (
            f"broker config {name!r} cannot be set as the cluster-wide default: "
            "name the broker (its node id) as the resource"
        )
    return None


def validated(configs: Mapping[str, str | None], level: str, static_names: frozenset[str]) -> dict[str, str]:
    """One level's new explicit configs, or INVALID_CONFIG naming the first problem: a name
    that cannot be set here (see the module's docstring), then a bad value. A None value
    (AlterConfigs' null) leaves the config out."""
    for name in configs:
        problem = _refusal(name, level, static_names)
        if problem is not None:
            raise KafkaApiError(ErrorCode.INVALID_CONFIG, problem)
    accepted = {name: value for name, value in configs.items() if value is not None}
    for name, value in accepted.items():
        if name in TOPIC_DEFAULTS:
            continue
        definition = NO_EFFECT[name]
        try:
            parsed = parse(definition.config_type, value)
        except ValueError as exc:
            problem: str | None = str(exc)
        else:
            problem = definition.valid(parsed) if definition.valid is not None else None
        if problem is not None:
            raise KafkaApiError(
                ErrorCode.INVALID_CONFIG, f"invalid value {value!r} for broker config {name!r}: {problem}"
            )
    return accepted


def no_effect_warnings(configs: Mapping[str, str]) -> list[str]:
    """Each of these configs that changes nothing here, with why (topic defaults carry their
    topic config's reason)."""
    warnings = []
    for name, value in configs.items():
        reason = (
            NO_EFFECT[name].no_effect if name in NO_EFFECT else TOPIC_CONFIGS[TOPIC_DEFAULTS[name]].no_effect
        )
        if reason:
            warnings.append(f"{name}={value} has no effect here: {reason}")
    return warnings


@dataclass(slots=True)
class DynamicBrokerConfigs:
    """The two levels of dynamic broker configs: the broker's own and the cluster-wide
    default, each a name -> value map of explicit configs."""

    own: dict[str, str] = field(default_factory=dict)
    default: dict[str, str] = field(default_factory=dict)

    def level(self, name: str) -> dict[str, str]:
        return self.default if name == DEFAULT_LEVEL else self.own

    def with_level(self, name: str, configs: dict[str, str]) -> DynamicBrokerConfigs:
        if name == DEFAULT_LEVEL:
            return DynamicBrokerConfigs(dict(self.own), dict(configs))
        return DynamicBrokerConfigs(dict(configs), dict(self.default))

    def entries(self) -> dict[str, list[tuple[str, int]]]:
        """Each set config's values in precedence order, with their DescribeConfigs source."""
        out: dict[str, list[tuple[str, int]]] = {}
        for configs, source in (
            (self.own, DYNAMIC_BROKER_CONFIG),
            (self.default, DYNAMIC_DEFAULT_BROKER_CONFIG),
        ):
            for name, value in configs.items():
                out.setdefault(name, []).append((value, source))
        return out

    def applied_to(self, config: CoordinatorConfig) -> CoordinatorConfig:
        """The coordinator's config with these levels' topic defaults in it; validated as a
        topic's configs are (a default no topic could take is refused), INVALID_CONFIG
        naming the broker config otherwise."""
        defaults = {
            TOPIC_DEFAULTS[name]: values[0]
            for name, values in self.entries().items()
            if name in TOPIC_DEFAULTS
        }
        try:
            validate_topic_configs({topic: value for topic, (value, _) in defaults.items()}, config)
        except KafkaApiError as exc:
            broker_names = {topic: name for name, topic in TOPIC_DEFAULTS.items()}
            message = exc.message
            for topic in defaults:
                message = message.replace(f"topic config {topic!r}", f"broker config {broker_names[topic]!r}")
            raise KafkaApiError(ErrorCode.INVALID_CONFIG, message) from exc
        return config.model_copy(update={"dynamic_topic_defaults": defaults})


def changed(
    dynamic: DynamicBrokerConfigs,
    level: str,
    changes: list[tuple[str, int, str | None]] | None,
    replacement: list[tuple[str, str | None]] | None,
    config: CoordinatorConfig,
) -> tuple[DynamicBrokerConfigs, CoordinatorConfig]:
    """The levels and the coordinator's config after IncrementalAlterConfigs' `changes` or
    AlterConfigs' `replacement` of one level; INVALID_CONFIG names the first problem."""
    static_names = frozenset(config.kafka_settings())
    current = dynamic.level(level)
    if replacement is not None:
        no_repeats([name for name, _ in replacement])
        new = validated(dict(replacement), level, static_names)
    else:
        assert changes is not None
        for name, _, _ in changes:
            problem = _refusal(name, level, static_names)
            if problem is not None:
                raise KafkaApiError(ErrorCode.INVALID_CONFIG, problem)

        def definition_of(name: str) -> tuple[int, str]:
            inherited = dynamic.entries().get(name, [])
            fallback = inherited[-1][0] if inherited and level != DEFAULT_LEVEL else None
            if fallback is None and name in TOPIC_DEFAULTS:
                fallback = TOPIC_CONFIGS[TOPIC_DEFAULTS[name]].default(config)
            return config_type_of(name), fallback or ""

        new = validated(applied_changes(current, changes, definition_of, "broker"), level, static_names)
    after = dynamic.with_level(level, new)
    return after, after.applied_to(config)


def described(
    dynamic: DynamicBrokerConfigs, static: Mapping[str, str | None], level: str
) -> dict[str, list[tuple[str | None, int]]]:
    """DescribeConfigs of the BROKER resource: each config's values in precedence order with
    their sources (the first is the value in force). The broker's own resource lists every
    setting of the properties file and every dynamic config set; the cluster-wide default
    ("") lists only what is set at that level, as Kafka does."""
    if level == DEFAULT_LEVEL:
        return {name: [(value, DYNAMIC_DEFAULT_BROKER_CONFIG)] for name, value in dynamic.default.items()}
    out: dict[str, list[tuple[str | None, int]]] = {
        name: [(value, STATIC_BROKER_CONFIG)] for name, value in static.items()
    }
    for name, values in dynamic.entries().items():
        out[name] = [*values, *out.get(name, [])]
    return out


def documentation(name: str) -> str:
    """What DescribeConfigs says of a dynamic broker config."""
    if name in TOPIC_DEFAULTS:
        topic = TOPIC_DEFAULTS[name]
        return f"the default of topic config {topic}: {TOPIC_CONFIGS[topic].description}"
    if name in NO_EFFECT:
        return f"no effect here: {NO_EFFECT[name].no_effect}"
    return ""

"""Coordinator settings, named and defaulted as Apache Kafka's broker settings are.

Settings come from a Java-style properties file and `--override name=value` flags, so an
operator can carry a Kafka `server.properties` habit over. Unknown names and bad values
fail at start with a message that names the setting.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from pydantic import (
    BaseModel,
    ConfigDict,
    Field,
    ValidationError,
    ValidationInfo,
    field_validator,
    model_validator,
)

from connect_rebalance.properties import ConfigError, unknown_setting, validation_problems
from coordinator.groups.settings import GroupSettings
from coordinator.security.listeners import (
    DEFAULT_PROTOCOL_MAP,
    Listener,
    host_and_port,
    parse_listeners,
    parse_protocol_map,
)
from coordinator.security.settings import (
    LISTENER_PREFIX,
    check_security,
    listener_overrides,
    secret_setting,
    unsupported_setting,
)

LONG_MAX = 2**63 - 1


def parse_overrides(value: str) -> dict[str, int]:
    """`host:count,host:count` (Kafka's max.connections.per.ip.overrides); ValueError says why not."""
    overrides: dict[str, int] = {}
    for entry in (e.strip() for e in value.split(",")):
        if not entry:
            continue
        host, sep, count = entry.rpartition(":")
        if not sep or not host or not count.strip().isdigit():
            raise ValueError(f"{entry!r} is not host:count")
        overrides[host.strip()] = int(count)
    return overrides


class CoordinatorConfig(BaseModel):
    model_config = ConfigDict(populate_by_name=True, extra="forbid", frozen=True)

    listeners: str = Field("127.0.0.1:9092", alias="listeners")
    advertised_listeners: str | None = Field(None, alias="advertised.listeners")
    listener_security_protocol_map: str = Field(DEFAULT_PROTOCOL_MAP, alias="listener.security.protocol.map")
    # The admin HTTP port (Prometheus /metrics, /health), e.g. http://127.0.0.1:9644 or https://...
    # (TLS from the ssl.* settings); off when unset.
    admin_listeners: str | None = Field(None, alias="admin.listeners")
    # TLS (connect_rebalance/tls_server.py), Kafka's names and defaults.
    ssl_keystore_type: str = Field("JKS", alias="ssl.keystore.type")
    ssl_keystore_location: str | None = Field(None, alias="ssl.keystore.location")
    ssl_keystore_password: str | None = Field(None, alias="ssl.keystore.password")
    ssl_keystore_key: str | None = Field(None, alias="ssl.keystore.key")
    ssl_keystore_certificate_chain: str | None = Field(None, alias="ssl.keystore.certificate.chain")
    ssl_key_password: str | None = Field(None, alias="ssl.key.password")
    ssl_truststore_type: str = Field("JKS", alias="ssl.truststore.type")
    ssl_truststore_location: str | None = Field(None, alias="ssl.truststore.location")
    ssl_truststore_password: str | None = Field(None, alias="ssl.truststore.password")
    ssl_truststore_certificates: str | None = Field(None, alias="ssl.truststore.certificates")
    ssl_client_auth: str = Field("none", alias="ssl.client.auth")
    ssl_enabled_protocols: str = Field("TLSv1.2,TLSv1.3", alias="ssl.enabled.protocols")
    ssl_protocol: str = Field("TLSv1.3", alias="ssl.protocol")
    ssl_principal_mapping_rules: str = Field("DEFAULT", alias="ssl.principal.mapping.rules")
    # SASL on SASL_PLAINTEXT / SASL_SSL listeners: PLAIN, SCRAM-SHA-256, SCRAM-SHA-512.
    sasl_enabled_mechanisms: str = Field("GSSAPI", alias="sasl.enabled.mechanisms")
    # KIP-368: the longest a SASL session lasts before the client must re-authenticate (0 or
    # less: for ever), also per listener and mechanism (security/sasl.py).
    connections_max_reauth_ms: int = Field(0, alias="connections.max.reauth.ms")
    # ACLs (coordinator/security/authorizer.py): off unless an authorizer is named.
    authorizer_class_name: str = Field("", alias="authorizer.class.name")
    super_users: str = Field("", alias="super.users")
    allow_everyone_if_no_acl_found: bool = Field(False, alias="allow.everyone.if.no.acl.found")
    # `listener.name.<listener>.<setting>` overrides, by lower-case listener name.
    listener_name_settings: dict[str, dict[str, str]] = Field(default_factory=dict)
    node_id: int = Field(1, alias="node.id", ge=0)
    log_dirs: Path = Field(Path("./data"), alias="log.dirs")
    num_partitions: int = Field(1, alias="num.partitions", ge=1)
    auto_create_topics_enable: bool = Field(True, alias="auto.create.topics.enable")
    delete_topic_enable: bool = Field(True, alias="delete.topic.enable")
    message_max_bytes: int = Field(1048588, alias="message.max.bytes", ge=0)
    socket_request_max_bytes: int = Field(104857600, alias="socket.request.max.bytes", ge=1024)
    connections_max_idle_ms: int = Field(600000, alias="connections.max.idle.ms", ge=1)
    # Connection limits (network/connection_limits.py): over them a new connection is closed at once.
    max_connections: int = Field(2**31 - 1, alias="max.connections", ge=0)
    max_connections_per_ip: int = Field(2**31 - 1, alias="max.connections.per.ip", ge=0)
    max_connections_per_ip_overrides: str = Field("", alias="max.connections.per.ip.overrides")
    # Client quotas (coordinator/quotas): how byte rates are measured.
    quota_window_num: int = Field(11, alias="quota.window.num", ge=1)
    quota_window_size_seconds: int = Field(1, alias="quota.window.size.seconds", ge=1)
    # Not a Kafka setting: the event loop every connection is served on (coordinator/configs/event_loop.py).
    event_loop: str = Field("uvloop", alias="event.loop")
    log_segment_bytes: int = Field(1073741824, alias="log.segment.bytes", ge=14)
    log_roll_ms: int = Field(604800000, alias="log.roll.ms", ge=1)
    log_retention_ms: int = Field(604800000, alias="log.retention.ms", ge=-1)
    log_retention_bytes: int = Field(-1, alias="log.retention.bytes", ge=-1)
    log_retention_check_interval_ms: int = Field(300000, alias="log.retention.check.interval.ms", ge=1)
    log_index_interval_bytes: int = Field(4096, alias="log.index.interval.bytes", ge=0)
    # The partitions all topics may hold (KIP-578's name): past it CreateTopics, CreatePartitions
    # and auto-creation are refused with POLICY_VIOLATION. 200,000 is twice what is measured
    # (bench/partitions.py); each partition costs memory and start-up time, not descriptors.
    max_broker_partitions: int = Field(200000, alias="max.broker.partitions", ge=1)
    # Each new segment holds segment.bytes of disk from the start (Linux fallocate, keeping the
    # file's size), so its appends succeed on a full disk. __consumer_offsets always does.
    log_preallocate: bool = Field(False, alias="log.preallocate")
    # Durability: every acknowledged write has reached the operating system, so a killed
    # coordinator loses nothing. These two add fsync for machine crashes (docs/operations.md).
    log_flush_interval_messages: int = Field(LONG_MAX, alias="log.flush.interval.messages", ge=1)
    log_flush_interval_ms: int = Field(1000, alias="log.flush.interval.ms", ge=1)
    log_cleaner_backoff_ms: int = Field(15000, alias="log.cleaner.backoff.ms", ge=1)
    # Classic groups and committed offsets.
    group_min_session_timeout_ms: int = Field(6000, alias="group.min.session.timeout.ms", ge=1)
    group_max_session_timeout_ms: int = Field(1800000, alias="group.max.session.timeout.ms", ge=1)
    group_initial_rebalance_delay_ms: int = Field(3000, alias="group.initial.rebalance.delay.ms", ge=0)
    group_max_size: int = Field(2147483647, alias="group.max.size", ge=1)
    offsets_retention_ms: int = Field(604800000, alias="offsets.retention.ms", ge=1)
    offsets_retention_check_interval_ms: int = Field(
        600000, alias="offsets.retention.check.interval.ms", ge=1
    )
    offset_metadata_max_bytes: int = Field(4096, alias="offset.metadata.max.bytes", ge=0)
    offsets_topic_segment_bytes: int = Field(4194304, alias="offsets.topic.segment.bytes", ge=1024)
    # Consumer groups (KIP-848).
    group_consumer_session_timeout_ms: int = Field(45000, alias="group.consumer.session.timeout.ms", ge=1)
    group_consumer_heartbeat_interval_ms: int = Field(
        5000, alias="group.consumer.heartbeat.interval.ms", ge=1
    )
    # Not a Kafka setting: the interval given to members with reconciliation work pending.
    group_consumer_pending_heartbeat_interval_ms: int = Field(
        500, alias="group.consumer.pending.heartbeat.interval.ms", ge=1
    )
    # Bounds the session and heartbeat settings must lie within (Kafka's names and defaults).
    group_consumer_min_session_timeout_ms: int = Field(
        45000, alias="group.consumer.min.session.timeout.ms", ge=1
    )
    group_consumer_max_session_timeout_ms: int = Field(
        60000, alias="group.consumer.max.session.timeout.ms", ge=1
    )
    group_consumer_min_heartbeat_interval_ms: int = Field(
        5000, alias="group.consumer.min.heartbeat.interval.ms", ge=1
    )
    group_consumer_max_heartbeat_interval_ms: int = Field(
        15000, alias="group.consumer.max.heartbeat.interval.ms", ge=1
    )
    # Server-side assignors run off the event loop; bumps within the interval share one run.
    group_consumer_assignor_offload_enable: bool = Field(True, alias="group.consumer.assignor.offload.enable")
    group_consumer_assignment_interval_ms: int = Field(
        100, alias="group.consumer.assignment.interval.ms", ge=0
    )
    # Not Kafka settings: the bounds of a group's own consumer.assignment.interval.ms.
    group_consumer_min_assignment_interval_ms: int = Field(
        0, alias="group.consumer.min.assignment.interval.ms", ge=0
    )
    group_consumer_max_assignment_interval_ms: int = Field(
        10000, alias="group.consumer.max.assignment.interval.ms", ge=0
    )
    group_consumer_assignors: str = Field("uniform,range", alias="group.consumer.assignors")
    group_consumer_max_size: int = Field(2147483647, alias="group.consumer.max.size", ge=1)
    group_consumer_migration_policy: str = Field("bidirectional", alias="group.consumer.migration.policy")
    # Not Kafka settings: the heartbeat interval a member is given adapts to the coordinator's
    # load, between the floor and the group type's heartbeat interval, so that all members
    # together send about `rate.budget` heartbeats a second (docs/operations.md).
    group_heartbeat_adaptive_enable: bool = Field(True, alias="group.heartbeat.adaptive.enable")
    group_heartbeat_adaptive_min_interval_ms: int = Field(
        250, alias="group.heartbeat.adaptive.min.interval.ms", ge=1
    )
    group_heartbeat_adaptive_rate_budget: int = Field(
        2000, alias="group.heartbeat.adaptive.rate.budget", ge=1
    )
    # Not a Kafka setting: the rebalances each group's timeline keeps (admin port
    # /groups/{group}/timeline); memory grows with it times each group's members and items.
    group_rebalance_timeline_size: int = Field(20, alias="group.rebalance.timeline.size", ge=1, le=1000)
    # Connect groups (the connect group protocol); Kafka Connect's worker defaults.
    group_connect_session_timeout_ms: int = Field(10000, alias="group.connect.session.timeout.ms", ge=1)
    group_connect_heartbeat_interval_ms: int = Field(3000, alias="group.connect.heartbeat.interval.ms", ge=1)
    group_connect_max_size: int = Field(2147483647, alias="group.connect.max.size", ge=1)
    group_connect_migration_policy: str = Field("bidirectional", alias="group.connect.migration.policy")
    # Their bounds, shaped like the consumer group's: sessions as the classic group bounds
    # allow, heartbeats between 1 s and 15 s.
    group_connect_min_session_timeout_ms: int = Field(
        6000, alias="group.connect.min.session.timeout.ms", ge=1
    )
    group_connect_max_session_timeout_ms: int = Field(
        1800000, alias="group.connect.max.session.timeout.ms", ge=1
    )
    group_connect_min_heartbeat_interval_ms: int = Field(
        1000, alias="group.connect.min.heartbeat.interval.ms", ge=1
    )
    group_connect_max_heartbeat_interval_ms: int = Field(
        15000, alias="group.connect.max.heartbeat.interval.ms", ge=1
    )

    # Not a setting: the topic defaults that dynamic broker configs (AlterConfigs on the
    # BROKER resource, broker.py) give, as topic config name -> (value, DescribeConfigs
    # source). The broker replaces its config with a copy holding them, as Kafka replaces its
    # current KafkaConfig on a dynamic change.
    dynamic_topic_defaults: dict[str, tuple[str, int]] = Field(default_factory=dict)

    @model_validator(mode="after")
    def _security(self) -> CoordinatorConfig:
        """Listeners, their TLS and SASL settings, and the authorizer all make sense together."""
        check_security(self)
        return self

    @model_validator(mode="after")
    def _within_bounds(self) -> CoordinatorConfig:
        """Each group type's session and heartbeat (and the consumer assignment interval) lie
        within their bounds, heartbeat < session."""
        for prefix in ("group", "group.consumer", "group.connect"):
            low, high = (f"{prefix}.{end}.session.timeout.ms" for end in ("min", "max"))
            _ordered(self, low, high)
        bounded = [(p, k) for p in ("group.consumer", "group.connect") for k in ("session.timeout.ms",
                   "heartbeat.interval.ms")] + [("group.consumer", "assignment.interval.ms")]  # fmt: skip
        for prefix, kind in bounded:
            name, low, high = f"{prefix}.{kind}", f"{prefix}.min.{kind}", f"{prefix}.max.{kind}"
            _ordered(self, low, high)
            value = _by_alias(self, name)
            if not _by_alias(self, low) <= value <= _by_alias(self, high):
                raise ValueError(
                    f"{name} is {value}, outside [{low}, {high}] = "
                    f"[{_by_alias(self, low)}, {_by_alias(self, high)}]"
                )
        for prefix in ("group.consumer", "group.connect"):
            session, heartbeat = f"{prefix}.session.timeout.ms", f"{prefix}.heartbeat.interval.ms"
            if _by_alias(self, heartbeat) >= _by_alias(self, session):
                raise ValueError(
                    f"{heartbeat} ({_by_alias(self, heartbeat)}) must be less than "
                    f"{session} ({_by_alias(self, session)})"
                )
        return self

    @field_validator("group_consumer_assignors")
    @classmethod
    def _known_assignors(cls, value: str) -> str:
        names = [n.strip() for n in value.split(",") if n.strip()]
        unknown = [n for n in names if n not in ("uniform", "range")]
        if not names or unknown:
            raise ValueError(f"assignors must be among uniform, range; got {value!r}")
        return ",".join(names)

    @field_validator("log_dirs", mode="before")
    @classmethod
    def _one_log_dir(cls, value: object) -> object:
        text = str(value).strip()
        if not text:
            raise ValueError("log.dirs must name the data directory; it is empty")
        if "," in text:
            raise ValueError(f"log.dirs must name one directory (the coordinator keeps one); got {text!r}")
        return text

    @field_validator("event_loop")
    @classmethod
    def _known_event_loop(cls, value: str) -> str:
        from coordinator.configs.event_loop import EVENT_LOOPS

        loop = value.strip().lower()
        if loop not in EVENT_LOOPS:
            raise ValueError(f"event.loop must be one of {', '.join(EVENT_LOOPS)}; got {value!r}")
        return loop

    @field_validator("group_consumer_migration_policy", "group_connect_migration_policy")
    @classmethod
    def _known_migration_policy(cls, value: str, info: ValidationInfo) -> str:
        policy = value.strip().lower()
        if policy not in ("bidirectional", "upgrade", "downgrade", "disabled"):
            name = cls.model_fields[info.field_name or ""].alias
            raise ValueError(f"{name} must be bidirectional, upgrade, downgrade or disabled; got {value!r}")
        return policy

    @field_validator("max_connections_per_ip_overrides")
    @classmethod
    def _overrides(cls, value: str) -> str:
        parse_overrides(value)  # its ValueError names the entry
        return value

    @field_validator("listener_security_protocol_map")
    @classmethod
    def _protocol_map(cls, value: str) -> str:
        parse_protocol_map(value)
        return value

    @field_validator("admin_listeners")
    @classmethod
    def _admin_is_http(cls, value: str | None) -> str | None:
        if value is not None and value.strip():
            if not value.strip().startswith(("http://", "https://")):
                raise ValueError(f"{value!r} is not http://host:port or https://host:port")
            parse_listener(value)
            return value.strip()
        return None

    @property
    def kafka_listeners(self) -> list[Listener]:
        return parse_listeners(self.listeners, parse_protocol_map(self.listener_security_protocol_map))

    def advertised_for(self, listener_name: str) -> tuple[str, int] | None:
        """The address `advertised.listeners` gives a listener, or None to advertise the bound one."""
        if self.advertised_listeners is None:
            return None
        protocol_map = parse_protocol_map(self.listener_security_protocol_map)
        advertised = parse_listeners(self.advertised_listeners, protocol_map)
        for listener in advertised:
            if listener.name == listener_name:
                return listener.host, listener.port
        return None

    @property
    def admin_bind(self) -> tuple[str, int] | None:
        return parse_listener(self.admin_listeners) if self.admin_listeners else None

    @property
    def admin_uses_tls(self) -> bool:
        return bool(self.admin_listeners and self.admin_listeners.startswith("https://"))

    @property
    def bind(self) -> tuple[str, int]:
        first = self.kafka_listeners[0]
        return first.host, first.port

    @property
    def advertised(self) -> tuple[str, int]:
        first = self.kafka_listeners[0]
        return self.advertised_for(first.name) or (first.host, first.port)

    def setting(self, name: str, listener_name: str | None = None) -> str | None:
        """A setting by its Kafka name, as `listener.name.<listener>.<name>` overrides it."""
        if listener_name is not None:
            override = self.listener_name_settings.get(listener_name.lower(), {}).get(name)
            if override is not None:
                return override
        value = _by_alias(self, name)
        return None if value is None else str(value)

    def group_settings(self) -> GroupSettings:
        return GroupSettings(
            min_session_timeout_ms=self.group_min_session_timeout_ms,
            max_session_timeout_ms=self.group_max_session_timeout_ms,
            initial_rebalance_delay_ms=self.group_initial_rebalance_delay_ms,
            max_group_size=self.group_max_size,
            offsets_retention_ms=self.offsets_retention_ms,
            offsets_retention_check_interval_ms=self.offsets_retention_check_interval_ms,
            offset_metadata_max_bytes=self.offset_metadata_max_bytes,
            consumer_session_timeout_ms=self.group_consumer_session_timeout_ms,
            consumer_heartbeat_interval_ms=self.group_consumer_heartbeat_interval_ms,
            consumer_pending_heartbeat_interval_ms=self.group_consumer_pending_heartbeat_interval_ms,
            consumer_min_session_timeout_ms=self.group_consumer_min_session_timeout_ms,
            consumer_max_session_timeout_ms=self.group_consumer_max_session_timeout_ms,
            consumer_min_heartbeat_interval_ms=self.group_consumer_min_heartbeat_interval_ms,
            consumer_max_heartbeat_interval_ms=self.group_consumer_max_heartbeat_interval_ms,
            consumer_assignors=tuple(self.group_consumer_assignors.split(",")),
            consumer_assignor_offload=self.group_consumer_assignor_offload_enable,
            consumer_assignment_interval_ms=self.group_consumer_assignment_interval_ms,
            consumer_min_assignment_interval_ms=self.group_consumer_min_assignment_interval_ms,
            consumer_max_assignment_interval_ms=self.group_consumer_max_assignment_interval_ms,
            adaptive_heartbeat=self.group_heartbeat_adaptive_enable,
            adaptive_min_heartbeat_interval_ms=self.group_heartbeat_adaptive_min_interval_ms,
            adaptive_heartbeat_budget=self.group_heartbeat_adaptive_rate_budget,
            consumer_max_size=self.group_consumer_max_size,
            consumer_migration_policy=self.group_consumer_migration_policy,
            connect_session_timeout_ms=self.group_connect_session_timeout_ms,
            connect_heartbeat_interval_ms=self.group_connect_heartbeat_interval_ms,
            connect_min_session_timeout_ms=self.group_connect_min_session_timeout_ms,
            connect_max_session_timeout_ms=self.group_connect_max_session_timeout_ms,
            connect_min_heartbeat_interval_ms=self.group_connect_min_heartbeat_interval_ms,
            connect_max_heartbeat_interval_ms=self.group_connect_max_heartbeat_interval_ms,
            connect_max_size=self.group_connect_max_size,
            connect_migration_policy=self.group_connect_migration_policy,
            rebalance_timeline_size=self.group_rebalance_timeline_size,
        )

    @classmethod
    def from_settings(cls, settings: dict[str, Any]) -> CoordinatorConfig:
        """The settings, or one ConfigError naming every unknown, refused or invalid one."""
        known = {f.alias for f in cls.model_fields.values() if f.alias}
        plain: dict[str, Any] = {}
        problems = []
        for name, value in settings.items():
            if name.startswith(LISTENER_PREFIX):
                continue
            if name not in known:
                reason = unsupported_setting(name)
                problems.append(
                    f"setting {name!r} is not supported: {reason}" if reason else unknown_setting(name, known)
                )
                continue
            plain[name] = value
        try:
            plain["listener_name_settings"] = listener_overrides(settings)
        except ValueError as exc:
            problems.append(str(exc))
        try:
            config = cls.model_validate(plain)
        except ValidationError as exc:
            problems += validation_problems(exc.errors())
        if problems:
            raise ConfigError(*problems)
        return config

    def kafka_settings(self) -> dict[str, str]:
        """Every setting by its Kafka name, as DescribeConfigs reports them."""
        out = {}
        for name, field in type(self).model_fields.items():
            if field.alias is None:
                continue
            value = getattr(self, name)
            if isinstance(value, bool):
                value = str(value).lower()
            out[field.alias] = "" if value is None else str(value)
        for listener, overrides in self.listener_name_settings.items():
            for name, value in overrides.items():
                out[f"{LISTENER_PREFIX}{listener}.{name}"] = value
        return {name: (None if secret_setting(name) and value else value) for name, value in out.items()}


def _by_alias(config: BaseModel, alias: str) -> Any:
    return getattr(config, alias.replace(".", "_"))


def _ordered(config: BaseModel, low: str, high: str) -> None:
    if _by_alias(config, low) > _by_alias(config, high):
        raise ValueError(f"{low} ({_by_alias(config, low)}) is above {high} ({_by_alias(config, high)})")


def parse_listener(value: str) -> tuple[str, int]:
    """`host:port` or `SCHEME://host:port` (the first of a comma-separated list)."""
    first = value.split(",")[0].strip()
    if "://" in first:
        first = first.split("://", 1)[1]
    return host_and_port(first, "listener")

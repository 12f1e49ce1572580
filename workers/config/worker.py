"""Worker settings, named and defaulted as Kafka Connect's distributed worker settings are.

Read from a Java-style properties file (`connect-rebalance worker --config worker.properties`).
Unknown names are reported, bad values fail at start with a message naming the setting.
`group.protocol` chooses the membership protocol: `connect` (this project's connect group)
or `classic` (JoinGroup/SyncGroup with Kafka Connect's embedded protocol).

Security, by Kafka Connect's names (docs/security.md):
- Kafka clients: `security.protocol`, `sasl.*` and `ssl.*` for the worker's own clients
  (group membership, the config, status and offset topics); `admin.`-prefixed ones override
  them for its admin client; `producer.`- and `consumer.`-prefixed ones are the whole
  security of the connectors' producers and consumers (not inherited, as in Kafka Connect).
  Any other setting under those prefixes is refused.
- REST: `listeners` may be `http://` and/or `https://`; the HTTPS listener and the REST
  client workers use to call each other take `listeners.https.ssl.*` if any is set, else
  the top-level `ssl.*` (Kafka Connect's all-or-nothing rule); `ssl.client.auth` asks for
  client certificates. `rest.extension.classes` naming Kafka Connect's
  BasicAuthSecurityRestExtension turns on basic authentication against the credentials
  file that the JAAS file `java.security.auth.login.config` names (a JVM property in Kafka
  Connect, a setting here); `rest.authorized.principals` and `rest.read.only.principals`
  say who may do what (`workers.rest.security`).
"""

from __future__ import annotations

import socket
import ssl
import uuid
from pathlib import Path
from typing import Any, Literal
from urllib.parse import urlparse

from pydantic import BaseModel, ConfigDict, Field, ValidationError, field_validator, model_validator

from connect_rebalance.client_security import ClientSecurity, is_security_setting
from connect_rebalance.properties import ConfigError, read_properties, unknown_setting, validation_problems
from connect_rebalance.tls import TlsSettings
from connect_rebalance.tls_server import TLS_DEFAULTS, server_context
from workers.config.client_overrides import POLICIES, policy_alias
from workers.config.http_headers import header_rule_problems
from workers.config.inapplicable import INAPPLICABLE, NOT_YET, sort_out
from workers.config.providers import (
    PROVIDERS,
    ConfigProvider,
    VariableError,
    is_provider_setting,
    parse_providers,
    resolve,
)
from workers.plugins.converters import SETTING_PREFIXES as CONVERTER_SETTINGS
from workers.plugins.converters import converter_problems
from workers.plugins.path import SETTING as PLUGIN_PATH
from workers.plugins.path import PluginPath, read_plugin_path

CLIENT_PREFIXES = ("producer.", "consumer.", "admin.")
HTTPS_PREFIX = "listeners.https."
BASIC_AUTH_EXTENSION = "org.apache.kafka.connect.rest.basic.auth.extension.BasicAuthSecurityRestExtension"


def url_host_port(url: str) -> str:
    """A worker's REST url without its scheme: Kafka Connect's worker id (`host:port`)."""
    return url.split("://", 1)[-1]


class WorkerConfig(BaseModel):
    model_config = ConfigDict(populate_by_name=True, extra="forbid", frozen=True)

    bootstrap_servers: str = Field(alias="bootstrap.servers")
    group_id: str = Field(alias="group.id", min_length=1)
    config_storage_topic: str = Field(alias="config.storage.topic", min_length=1)
    offset_storage_topic: str = Field(alias="offset.storage.topic", min_length=1)
    status_storage_topic: str = Field(alias="status.storage.topic", min_length=1)
    # The internal topics as the worker creates them (when they do not exist yet). -1: the
    # coordinator's default replication factor (it is one node; Kafka Connect's default is 3).
    offset_storage_partitions: int = Field(25, alias="offset.storage.partitions", ge=1)
    status_storage_partitions: int = Field(5, alias="status.storage.partitions", ge=1)
    config_storage_replication_factor: int = Field(-1, alias="config.storage.replication.factor", ge=-1)
    offset_storage_replication_factor: int = Field(-1, alias="offset.storage.replication.factor", ge=-1)
    status_storage_replication_factor: int = Field(-1, alias="status.storage.replication.factor", ge=-1)
    # What tasks' records are written as: `key.converter`, `value.converter` and the settings
    # under them, by their names (workers.plugins.converters).
    converter_settings: dict[str, str] = Field(default_factory=dict, exclude=True)
    # Connectors' active topics (KIP-558): recorded, and whether REST may reset them.
    topic_tracking_enable: bool = Field(True, alias="topic.tracking.enable")
    topic_tracking_allow_reset: bool = Field(True, alias="topic.tracking.allow.reset")
    # Source connectors' topic creation (KIP-158, workers.config.topic_creation) and what connectors may
    # set of their clients (KIP-458, workers.config.client_overrides): None, Principal or All.
    topic_creation_enable: bool = Field(True, alias="topic.creation.enable")
    connector_client_config_override_policy: str = Field(
        "All", alias="connector.client.config.override.policy"
    )
    # Settings accepted that change nothing here, each with why: logged once at start.
    setting_warnings: list[str] = Field(default_factory=list, exclude=True)
    listeners: str = Field("http://127.0.0.1:8083", alias="listeners")
    # The admin endpoints' (/admin/loggers) own listeners, as Kafka Connect's: unset, they are
    # served on `listeners`; blank, they are not served at all.
    admin_listeners: str | None = Field(None, alias="admin.listeners")
    rest_advertised_host_name: str | None = Field(None, alias="rest.advertised.host.name")
    rest_advertised_port: int | None = Field(None, alias="rest.advertised.port", ge=0, le=65535)
    group_protocol: Literal["connect", "classic"] = Field("connect", alias="group.protocol")
    connect_protocol: Literal["eager", "compatible", "sessioned"] = Field(
        "sessioned", alias="connect.protocol"
    )
    scheduled_rebalance_max_delay_ms: int = Field(300000, alias="scheduled.rebalance.max.delay.ms", ge=0)
    heartbeat_interval_ms: int = Field(3000, alias="heartbeat.interval.ms", ge=1)
    session_timeout_ms: int = Field(10000, alias="session.timeout.ms", ge=1)
    rebalance_timeout_ms: int = Field(60000, alias="rebalance.timeout.ms", ge=1)
    inter_worker_key_ttl_ms: int = Field(3600000, alias="inter.worker.key.ttl.ms", ge=1000, le=2147483647)
    task_shutdown_graceful_timeout_ms: int = Field(5000, alias="task.shutdown.graceful.timeout.ms", ge=0)
    worker_id_override: str | None = Field(None, alias="worker.id")
    # Task runtime: where Spark runs tasks' streaming queries, and where their checkpoints live
    # (shared by every worker, so a task resumes wherever it is assigned next).
    spark_master: str = Field("local[*]", alias="spark.master")
    checkpoint_dir: str = Field("./checkpoints", alias="checkpoint.dir", min_length=1)
    # Start and warm the worker's SparkSession when the worker starts (else on the first Spark task).
    spark_session_warmup: bool = Field(True, alias="spark.session.warmup")
    spark_settings: dict[str, str] = Field(default_factory=dict, exclude=True)
    # REST security (see the module docstring).
    rest_advertised_listener: Literal["http", "https"] | None = Field(None, alias="rest.advertised.listener")
    rest_extension_classes: str = Field("", alias="rest.extension.classes")
    jaas_config_file: str | None = Field(None, alias="java.security.auth.login.config")
    rest_authorized_principals: str = Field("", alias="rest.authorized.principals")
    rest_read_only_principals: str = Field("", alias="rest.read.only.principals")
    # Cross-origin answers and added response headers, as Kafka Connect's (workers.config.http_headers).
    access_control_allow_origin: str = Field("", alias="access.control.allow.origin")
    access_control_allow_methods: str = Field("", alias="access.control.allow.methods")
    response_http_headers_config: str = Field("", alias="response.http.headers.config")
    # Kafka client security and `listeners.https.*`, by their names (validated below).
    security_settings: dict[str, str] = Field(default_factory=dict, exclude=True, repr=False)
    # Where connector plugins are installed besides the worker's own environment (workers.plugins.path).
    plugin_path: str = Field("", alias="plugin.path")
    # `config.providers` and its `config.providers.<alias>.*` (workers.config.providers): the
    # worker's other settings were resolved with them; connectors' configs are when they start.
    config_provider_settings: dict[str, str] = Field(default_factory=dict, exclude=True)

    @field_validator(
        "config_storage_replication_factor",
        "offset_storage_replication_factor",
        "status_storage_replication_factor",
    )
    @classmethod
    def _replication_factor(cls, value: int) -> int:
        if value == 0:
            raise ValueError("must be -1 (the coordinator's default) or at least 1")
        return value

    @field_validator("response_http_headers_config")
    @classmethod
    def _header_rules(cls, value: str) -> str:
        problems = header_rule_problems(value)
        if problems:
            raise ValueError("; ".join(problems))
        return value

    @field_validator("connector_client_config_override_policy")
    @classmethod
    def _override_policy(cls, value: str) -> str:
        policy = policy_alias(value)
        if policy is None:
            names = ", ".join(POLICIES)
            raise ValueError(f"must be one of {names} (or their ConnectorClientConfigOverridePolicy classes)")
        return policy

    @field_validator("bootstrap_servers")
    @classmethod
    def _has_port(cls, value: str) -> str:
        for server in value.split(","):
            host, sep, port = server.strip().rpartition(":")
            if not sep or not port.isdigit():
                raise ValueError(f"{server!r} is not host:port")
        return value

    @field_validator("listeners", "admin_listeners")
    @classmethod
    def _rest_listeners(cls, value: str | None) -> str | None:
        for listener in (value or "").split(","):
            parsed = urlparse(listener.strip())
            if listener.strip() and (parsed.scheme not in ("http", "https") or parsed.port is None):
                raise ValueError(f"{listener.strip()!r} is not http://host:port or https://host:port")
        return value

    @model_validator(mode="after")
    def _security(self) -> WorkerConfig:
        """Every security setting is understood, and used, or the worker does not start."""
        for prefix in ("", *CLIENT_PREFIXES):
            security = self.client_security(prefix)
            if prefix == "consumer.":  # TopicIngest's Python workers read with librdkafka
                security.librdkafka()
        schemes = {scheme for scheme, _, _ in self.rest_listeners}
        if self.rest_advertised_listener and self.rest_advertised_listener not in schemes:
            raise ValueError(f"rest.advertised.listener={self.rest_advertised_listener} names no listener")
        prefixed = sorted(k for k in self.security_settings if k.startswith(HTTPS_PREFIX))
        if prefixed and "https" not in schemes:
            raise ValueError(f"{prefixed[0]} is set but no listener is https://")
        if "https" in schemes:
            self.rest_server_context()
            tls = self.rest_tls
            assert tls is not None
            tls.client_context()
        elif "ssl.client.auth" in self.security_settings:
            raise ValueError("ssl.client.auth is set but no listener is https://")
        extensions = [c.strip() for c in self.rest_extension_classes.split(",") if c.strip()]
        for extension in extensions:
            if extension not in (BASIC_AUTH_EXTENSION, BASIC_AUTH_EXTENSION.rpartition(".")[2]):
                raise ValueError(f"rest.extension.classes: {extension} is not supported "
                                 f"(supported: {BASIC_AUTH_EXTENSION})")  # fmt: skip
        if extensions and not self.jaas_config_file:
            raise ValueError(
                "rest.extension.classes (basic authentication) needs java.security.auth.login.config"
            )
        if self.jaas_config_file and not extensions:
            raise ValueError("java.security.auth.login.config is set but rest.extension.classes is not")
        return self

    def client_security(self, prefix: str = "") -> ClientSecurity:
        """Security of a Kafka client: the worker's own (""), or `producer.`, `consumer.`,
        `admin.` (the worker's settings with the admin overrides)."""
        settings = self.security_settings
        own = {k: v for k, v in settings.items() if not k.startswith((*CLIENT_PREFIXES, HTTPS_PREFIX))}
        if prefix == "":
            return ClientSecurity.parse(own, tls_shared=True)
        prefixed = {k[len(prefix) :]: v for k, v in settings.items() if k.startswith(prefix)}
        if prefix == "admin.":
            base = {k: v for k, v in own.items() if k != "ssl.client.auth"}
            # The worker's own ssl.* may serve its REST listener; admin.ssl.* serve the admin only.
            shared = not any(k.startswith("ssl.") for k in prefixed)
            return ClientSecurity.parse({**base, **prefixed}, prefix, tls_shared=shared)
        return ClientSecurity.parse(prefixed, prefix)

    @property
    def _rest_tls_settings(self) -> tuple[dict[str, str], str]:
        """The `ssl.*` settings of the REST listeners and client, and where they come from."""
        settings = self.security_settings
        if any(k.startswith(HTTPS_PREFIX) for k in settings):
            return {
                k[len(HTTPS_PREFIX) :]: v for k, v in settings.items() if k.startswith(HTTPS_PREFIX)
            }, HTTPS_PREFIX
        return {k: v for k, v in settings.items() if k.startswith("ssl.")}, ""

    @property
    def rest_tls(self) -> TlsSettings | None:
        """TLS of the REST client workers call each other with (when a listener is https)."""
        if not any(scheme == "https" for scheme, _, _ in self.rest_listeners):
            return None
        values, where = self._rest_tls_settings
        return TlsSettings.parse(values, where)

    @property
    def rest_client_auth(self) -> str:
        """`ssl.client.auth` of the HTTPS listener: none, requested or required."""
        return self._rest_tls_settings[0].get("ssl.client.auth", "none").strip().lower() or "none"

    def rest_server_context(self) -> ssl.SSLContext:
        """The HTTPS listener's context, read as the coordinator reads its listeners' settings."""
        values, where = self._rest_tls_settings
        return server_context({**TLS_DEFAULTS, **values}, f"the REST listener ({where or 'ssl.'}*)")

    @property
    def rest_listeners(self) -> list[tuple[str, str, int]]:
        """(scheme, host, port) of each REST listener, in the order given."""
        return _parsed_listeners(self.listeners)

    @property
    def admin_rest_listeners(self) -> list[tuple[str, str, int]]:
        """(scheme, host, port) of each listener of its own for the admin endpoints (none: [])."""
        return _parsed_listeners(self.admin_listeners or "")

    @property
    def bind(self) -> tuple[str, int]:
        """The advertised listener's host and port."""
        _, host, port = self._advertised_listener
        return host, port

    @property
    def _advertised_listener(self) -> tuple[str, str, int]:
        for listener in self.rest_listeners:
            if listener[0] == (self.rest_advertised_listener or listener[0]):
                return listener
        return self.rest_listeners[0]

    def with_bound_ports(self, ports: list[int], admin_ports: list[int] | None = None) -> WorkerConfig:
        """The same settings, listening on `ports` (one per listener, after binding port 0) and
        the admin endpoints' own listeners on `admin_ports`."""

        def bound(listeners: list[tuple[str, str, int]], on: list[int]) -> str:
            return ",".join(
                f"{scheme}://{host}:{port}" for (scheme, host, _), port in zip(listeners, on, strict=True)
            )

        update = {"listeners": bound(self.rest_listeners, ports)}
        if self.admin_rest_listeners:
            update["admin_listeners"] = bound(self.admin_rest_listeners, admin_ports or [])
        return self.model_copy(update=update)

    @property
    def rest_url(self) -> str:
        scheme, host, port = self._advertised_listener
        host = self.rest_advertised_host_name or (
            host if host not in ("0.0.0.0", "") else socket.gethostname()
        )
        return f"{scheme}://{host}:{self.rest_advertised_port or port}"

    @property
    def worker_id(self) -> str:
        """Kafka Connect's worker id: the advertised host:port."""
        return self.worker_id_override or url_host_port(self.rest_url)

    @property
    def member_id(self) -> str:
        if not hasattr(self, "_member_id"):
            object.__setattr__(self, "_member_id", f"{self.worker_id}-{uuid.uuid4().hex[:12]}")
        return self._member_id  # type: ignore[attr-defined,no-any-return]

    def plugin_locations(self) -> PluginPath:
        """`plugin.path` read: where the worker's plugins are, besides its own environment."""
        read = read_plugin_path(self.plugin_path)
        if read.problems:  # checked by from_settings: only a config made otherwise gets here
            raise ConfigError(*(_named(PLUGIN_PATH, problem) for problem in read.problems))
        return read

    def config_providers(self) -> dict[str, ConfigProvider]:
        """The config providers, by alias, that resolve variables in connectors' configs."""
        providers, problems = parse_providers(self.config_provider_settings)
        if problems:  # checked by from_settings: only a config made otherwise gets here
            raise ConfigError(*(_named(name, problem) for name, problem in problems))
        return providers

    @classmethod
    def from_settings(cls, settings: dict[str, Any]) -> WorkerConfig:
        """Kafka Connect's names; any other `spark.*` setting is passed through to Spark.
        Variables (`${provider:[path:]key}`) are resolved first, with the providers the
        settings configure. Every problem is reported at once, in one ConfigError; settings
        that change nothing here, and variables left as they are, are kept in
        `setting_warnings`, for the worker to log at start."""
        settings = {k: str(v) for k, v in settings.items()}
        providing = {k: v for k, v in settings.items() if is_provider_setting(k)}
        settings, problems, hidden, unresolved, failed = _resolved(settings, providing)
        warnings, refusals, handled = sort_out(settings)
        handled |= set(providing)
        known = {f.alias for f in cls.model_fields.values() if f.alias}
        spark = {k: v for k, v in settings.items() if k.startswith("spark.") and k not in known}
        security = {k: v for k, v in settings.items() if _is_security(k)}
        converters = {
            k: v for k, v in settings.items() if k.startswith(CONVERTER_SETTINGS) and k not in handled
        }
        problems += [_named(name, problem) for name, problem in [*refusals, *converter_problems(converters)]]
        if PLUGIN_PATH not in failed:  # else its variable could not be read, and that is reported
            read = read_plugin_path(settings.get(PLUGIN_PATH, ""), show_values=PLUGIN_PATH not in hidden)
            problems += [_named(PLUGIN_PATH, problem) for problem in read.problems]
        for name in sorted(set(settings) - known - set(spark) - set(security) - set(converters) - handled):
            prefixed = next((p for p in (*CLIENT_PREFIXES, HTTPS_PREFIX) if name.startswith(p)), None)
            if prefixed:
                problems.append(f"{name} is not supported: only security settings may follow {prefixed}")
            else:
                problems.append(
                    unknown_setting(name, {*known, *CONVERTER_SETTINGS, *INAPPLICABLE, *NOT_YET, PROVIDERS})
                )
        plain = {k: v for k, v in settings.items() if k in known}
        try:
            config = cls.model_validate({**plain, "spark_settings": spark, "security_settings": security,
                                         "converter_settings": converters,
                                         "config_provider_settings": providing})  # fmt: skip
        except ValidationError as exc:
            # A setting whose variable could not be read was reported as such, not as its text.
            errors = [e for e in exc.errors() if ".".join(str(p) for p in e["loc"]) not in failed]
            problems += validation_problems(errors, hidden)
        if problems:
            raise ConfigError(*problems)
        return config.model_copy(update={"setting_warnings": [*unresolved, *warnings]})

    @classmethod
    def from_file(cls, path: Path, overrides: dict[str, str] | None = None) -> WorkerConfig:
        return cls.from_settings({**read_properties(path), **(overrides or {})})


def _named(name: str, problem: str) -> str:
    """A problem of one setting, as the worker reports it: "setting 'x' is ..." or "setting 'x': ..."."""
    return f"setting {name!r}{' ' if problem.startswith('is ') else ': '}{problem}"


def _resolved(
    settings: dict[str, str], providing: dict[str, str]
) -> tuple[dict[str, str], list[str], frozenset[str], list[str], set[str]]:
    """The settings with their variables resolved (as Kafka resolves a worker config's values
    before reading them), the problems of the provider settings and of variables that could
    not be read, the names whose values came from a provider (never shown in a problem), a
    warning for each variable left as it is, and the names whose variables could not be read
    (left as they are, so that every other problem is still found)."""
    providers, provider_problems = parse_providers(providing)
    problems = [_named(name, problem) for name, problem in provider_problems]
    others = {k: v for k, v in settings.items() if k not in providing}
    failed: set[str] = set()
    try:
        resolution = resolve(others, providers)
    except VariableError as exc:
        problems += exc.problems
        failed = {f.setting for f in exc.failures}
        resolution = resolve({k: v for k, v in others.items() if k not in failed}, providers)
    unresolved = [str(u) for u in resolution.unresolved]
    return {**settings, **resolution.values}, problems, resolution.resolved, unresolved, failed


def _is_security(name: str) -> bool:
    """A Kafka client security setting, top-level or under a client prefix, or `listeners.https.*`."""
    if name.startswith(HTTPS_PREFIX):
        return name[len(HTTPS_PREFIX) :].startswith("ssl.")
    for prefix in CLIENT_PREFIXES:
        name = name.removeprefix(prefix)
    return is_security_setting(name)


def _parsed_listeners(listeners: str) -> list[tuple[str, str, int]]:
    found = []
    for listener in (entry.strip() for entry in listeners.split(",")):
        if listener:
            parsed = urlparse(listener)
            port = 8083 if parsed.port is None else parsed.port
            found.append((parsed.scheme, parsed.hostname or "0.0.0.0", port))
    return found

"""Checks across the coordinator's security settings, made once at start.

What is refused, each with a message naming the setting:
- a listener whose security protocol we do not serve, or whose name has no protocol;
- a TLS listener (SSL, SASL_SSL) or an https admin port without usable key material;
- a SASL listener whose `sasl.enabled.mechanisms` lists a mechanism we do not offer
  (Kafka's default, GSSAPI, included) or none at all;
- an `authorizer.class.name` other than Kafka's StandardAuthorizer, a malformed `super.users`;
- `listener.name.<listener>.<setting>` for a listener that does not exist or a setting that
  cannot be set per listener;
- Kafka broker settings that exist but are not offered here (`unsupported_setting`);
- a per-listener connections.max.reauth.ms that is not a whole number.
Nothing is started with less security than the settings ask for.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Protocol

from connect_rebalance.tls_server import SECRET_SETTINGS, TLS_DEFAULTS, check_tls_settings
from coordinator.security.listeners import Listener

LISTENER_PREFIX = "listener.name."
SASL_MECHANISMS = ("PLAIN", "SCRAM-SHA-256", "SCRAM-SHA-512")
STANDARD_AUTHORIZER = "org.apache.kafka.metadata.authorizer.StandardAuthorizer"
REAUTH = "connections.max.reauth.ms"
# Settings that may be given per listener as listener.name.<listener>.<setting>;
# connections.max.reauth.ms also per mechanism, as <mechanism in lower case>.connections.max.reauth.ms.
PER_LISTENER = frozenset(
    {*TLS_DEFAULTS, "sasl.enabled.mechanisms", REAUTH, *(f"{m.lower()}.{REAUTH}" for m in SASL_MECHANISMS)}
)


class SecuritySettings(Protocol):
    """The coordinator's settings these checks read (its `CoordinatorConfig` has them)."""

    authorizer_class_name: str
    super_users: str
    advertised_listeners: str | None
    listener_name_settings: dict[str, dict[str, str]]

    @property
    def kafka_listeners(self) -> list[Listener]: ...
    @property
    def admin_uses_tls(self) -> bool: ...
    def advertised_for(self, listener_name: str) -> tuple[str, int] | None: ...
    def setting(self, name: str, listener_name: str | None = None) -> str | None: ...


# Kafka broker settings that name a feature this coordinator does not offer.
_NOT_OFFERED = {
    "ssl.cipher.suites": "cipher suites are OpenSSL's defaults for the enabled TLS versions",
    "ssl.keymanager.algorithm": "key material is read by OpenSSL, not a Java key manager",
    "ssl.trustmanager.algorithm": "trust is checked by OpenSSL, not a Java trust manager",
    "ssl.provider": "TLS is OpenSSL's",
    "ssl.engine.factory.class": "TLS is OpenSSL's",
    "ssl.secure.random.implementation": "TLS is OpenSSL's",
    "ssl.endpoint.identification.algorithm": "a client setting; the coordinator opens no TLS connections",
    "security.inter.broker.protocol": "there is one node, so no inter-broker traffic",
    "inter.broker.listener.name": "there is one node, so no inter-broker traffic",
    "sasl.mechanism.inter.broker.protocol": "there is one node, so no inter-broker traffic",
    "sasl.jaas.config": "PLAIN and SCRAM users are the SCRAM credentials the coordinator stores "
    "(AlterUserScramCredentials, `connect-rebalance users`), not JAAS entries",
    "sasl.server.callback.handler.class": "SASL checks are built in",
    "sasl.kerberos.service.name": "GSSAPI (Kerberos) is not offered",
    "sasl.oauthbearer.jwks.endpoint.url": "OAUTHBEARER is not offered",
    "principal.builder.class": "principals are built as Kafka's default principal builder does",
    "quota.producer.default": "as in Kafka 4, default quotas are set on the default client-id entity "
    "(`connect-rebalance quotas set --client-id-default`, or AlterClientQuotas)",
    "quota.consumer.default": "as in Kafka 4, default quotas are set on the default client-id entity "
    "(`connect-rebalance quotas set --client-id-default`, or AlterClientQuotas)",
    "client.quota.callback.class": "quotas are resolved as Kafka's default quota callback resolves them",
}


def unsupported_setting(name: str) -> str | None:
    """Why a Kafka setting is refused, if it is one we know of but do not offer."""
    return _NOT_OFFERED.get(name)


def secret_setting(name: str) -> bool:
    return name in SECRET_SETTINGS or any(name.endswith("." + s) for s in SECRET_SETTINGS)


def listener_overrides(settings: Mapping[str, object]) -> dict[str, dict[str, str]]:
    """`listener.name.<listener>.<setting>` entries, by lower-case listener name."""
    out: dict[str, dict[str, str]] = {}
    for full, value in settings.items():
        if not full.startswith(LISTENER_PREFIX):
            continue
        listener, _, name = full[len(LISTENER_PREFIX) :].partition(".")
        if not listener or not name:
            raise ValueError(f"{full!r} is not listener.name.<listener>.<setting>")
        if name not in PER_LISTENER:
            reason = unsupported_setting(name)
            raise ValueError(
                f"setting {full!r} is not supported: "
                + (reason or f"{name} cannot be set per listener (or is not a setting)")
            )
        out.setdefault(listener.lower(), {})[name] = str(value)
    return out


def tls_settings(config: SecuritySettings, listener_name: str | None) -> dict[str, str | None]:
    """The effective ssl.* settings of a listener (None: the admin port's, the global ones)."""
    return {name: config.setting(name, listener_name) for name in TLS_DEFAULTS}


def sasl_mechanisms(config: SecuritySettings, listener_name: str) -> tuple[str, ...]:
    value = config.setting("sasl.enabled.mechanisms", listener_name) or ""
    return tuple(m.strip().upper() for m in value.split(",") if m.strip())


def max_reauth_ms_by_mechanism(config: SecuritySettings, listener_name: str) -> dict[str, int]:
    """A SASL listener's connections.max.reauth.ms for each enabled mechanism, as Kafka's
    SaslChannelBuilder finds it: listener.name.<listener>.<mechanism>.connections.max.reauth.ms,
    else listener.name.<listener>.connections.max.reauth.ms, else connections.max.reauth.ms."""
    overrides = config.listener_name_settings.get(listener_name.lower(), {})
    default = int(config.setting(REAUTH, listener_name) or 0)
    return {
        mechanism: int(overrides.get(f"{mechanism.lower()}.{REAUTH}", default))
        for mechanism in sasl_mechanisms(config, listener_name)
    }


def _check_reauth_overrides(config: SecuritySettings) -> None:
    for listener_name, overrides in config.listener_name_settings.items():
        for name, value in overrides.items():
            if name.endswith(REAUTH):
                try:
                    int(value)
                except ValueError:
                    raise ValueError(
                        f"listener.name.{listener_name}.{name} must be a whole number of ms; got {value!r}"
                    ) from None


def check_security(config: SecuritySettings) -> None:
    try:
        listeners = config.kafka_listeners
    except ValueError as exc:
        raise ValueError(f"listeners: {exc}") from exc
    if config.advertised_listeners is not None:
        try:
            config.advertised_for(listeners[0].name)  # parses it, so a bad value is refused
        except ValueError as exc:
            raise ValueError(f"advertised.listeners: {exc}") from exc
    _check_reauth_overrides(config)
    names = {listener.name.lower() for listener in listeners}
    for listener_name in config.listener_name_settings:
        if listener_name not in names:
            raise ValueError(
                f"listener.name.{listener_name}.* names no listener; listeners are "
                + ", ".join(sorted(names))
            )
    for listener in listeners:
        where = f"listener {listener.name}"
        if listener.protocol.uses_tls:
            check_tls_settings(tls_settings(config, listener.name), where)
        if listener.protocol.uses_sasl:
            mechanisms = sasl_mechanisms(config, listener.name)
            unknown = [m for m in mechanisms if m not in SASL_MECHANISMS]
            if not mechanisms or unknown:
                raise ValueError(
                    f"sasl.enabled.mechanisms of {where} is {','.join(mechanisms) or 'empty'}: "
                    f"{', '.join(unknown) or 'none'} cannot be offered; "
                    f"set it to one or more of {', '.join(SASL_MECHANISMS)}"
                )
    if config.admin_uses_tls:
        check_tls_settings(tls_settings(config, None), "the admin port (admin.listeners)")
    authorizer = config.authorizer_class_name.strip()
    if authorizer and authorizer != STANDARD_AUTHORIZER:
        raise ValueError(
            f"authorizer.class.name {authorizer!r} is not offered; use {STANDARD_AUTHORIZER} "
            "(ACLs as Kafka's KRaft brokers keep them) or leave it empty for no authorization"
        )
    for principal in super_users(config):
        if ":" not in principal:
            raise ValueError(f"super.users entry {principal!r} is not Type:name (e.g. User:admin)")


def super_users(config: SecuritySettings) -> frozenset[str]:
    """`super.users`: principals separated by ';', as Kafka writes them."""
    return frozenset(p.strip() for p in config.super_users.split(";") if p.strip())

"""A Kafka client's security settings, by Kafka's names, for every client this project runs.

`security.protocol` (PLAINTEXT, SSL, SASL_PLAINTEXT, SASL_SSL), `sasl.mechanism` (PLAIN,
SCRAM-SHA-256, SCRAM-SHA-512), the credentials — `sasl.jaas.config` with Kafka's
PlainLoginModule or ScramLoginModule, or the `sasl.username` / `sasl.password` pair
librdkafka users know — and the `ssl.*` settings of `tls`. One `ClientSecurity` feeds the
project's own asyncio protocol client (`ssl_context()`, `sasl_client()`), kafka-python
(`kafka_python()`), librdkafka (`librdkafka()`) and, as plain settings, Spark's Python
workers (`settings`).

A setting that would not be used is refused rather than ignored: SASL settings without a
SASL protocol, a mechanism Kafka has but this project does not (GSSAPI, Kafka's default,
and OAUTHBEARER), a login module that does not match the mechanism, and every other
`sasl.*` name. `ssl.*` settings without an SSL protocol are refused too, unless the caller
says they serve something else (a worker's REST listener shares them, as in Kafka Connect).
"""

from __future__ import annotations

import ssl
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

from .jaas import parse_modules
from .sasl_client import MECHANISMS, PlainClient, ScramClient, mechanism_client
from .tls import KNOWN as TLS_SETTINGS
from .tls import TlsSettings

PROTOCOLS = ("PLAINTEXT", "SSL", "SASL_PLAINTEXT", "SASL_SSL")
SASL_SETTINGS = {"sasl.mechanism", "sasl.jaas.config", "sasl.username", "sasl.password"}
SETTINGS = {"security.protocol"} | SASL_SETTINGS | TLS_SETTINGS
LOGIN_MODULES = {
    "PLAIN": "PlainLoginModule",
    "SCRAM-SHA-256": "ScramLoginModule",
    "SCRAM-SHA-512": "ScramLoginModule",
}


def is_security_setting(name: str) -> bool:
    """Whether a client setting name belongs to this module (known or not: `sasl.*`, `ssl.*`)."""
    return name == "security.protocol" or name.startswith(("sasl.", "ssl."))


@dataclass(frozen=True)
class ClientSecurity:
    protocol: str = "PLAINTEXT"
    mechanism: str = ""
    username: str = ""
    password: str = field(default="", repr=False)
    tls: TlsSettings | None = None
    settings: Mapping[str, str] = field(default_factory=dict, repr=False)  # as given, for passing on

    @classmethod
    def parse(cls, settings: Mapping[str, str], where: str = "", tls_shared: bool = False) -> ClientSecurity:
        """The security part of a client's settings (every name must be one of SETTINGS);
        `where` prefixes names in messages (`consumer.`); `tls_shared`: `ssl.*` may be
        present without an SSL protocol (they serve a REST listener too)."""
        values = {k: str(v).strip() for k, v in settings.items() if is_security_setting(k)}
        for name in values:
            if name not in SETTINGS:
                raise ValueError(f"{where}{name} is not supported (supported: {', '.join(sorted(SETTINGS))})")
        if not tls_shared and "ssl.client.auth" in values:
            raise ValueError(f"{where}ssl.client.auth is a server setting; a client does not use it")
        protocol = values.get("security.protocol", "PLAINTEXT").upper()
        if protocol not in PROTOCOLS:
            raise ValueError(f"{where}security.protocol={protocol} is not one of {', '.join(PROTOCOLS)}")
        uses_tls, uses_sasl = protocol.endswith("SSL"), protocol.startswith("SASL")
        tls_values = {k: v for k, v in values.items() if k.startswith("ssl.")}
        if tls_values and not uses_tls and not tls_shared:
            raise ValueError(
                f"{where}{min(tls_values)} is set but {where}security.protocol={protocol} uses no TLS"
            )
        tls = TlsSettings.parse(tls_values, where) if uses_tls or tls_values else None
        sasl = {k: v for k, v in values.items() if k in SASL_SETTINGS}
        if not uses_sasl:
            if sasl:
                raise ValueError(
                    f"{where}{min(sasl)} is set but {where}security.protocol={protocol} uses no SASL"
                )
            return cls(protocol, tls=tls if uses_tls else None, settings=values)
        mechanism = values.get("sasl.mechanism", "GSSAPI").upper()
        if mechanism not in MECHANISMS:
            default = "" if "sasl.mechanism" in values else " (Kafka's default)"
            raise ValueError(
                f"{where}sasl.mechanism={mechanism}{default} is not supported: use {', '.join(MECHANISMS)}"
            )
        username, password = _credentials(values, mechanism, where)
        return cls(protocol, mechanism, username, password, tls if uses_tls else None, values)

    @property
    def uses_tls(self) -> bool:
        return self.protocol.endswith("SSL")

    def ssl_context(self) -> ssl.SSLContext | None:
        if not self.uses_tls:
            return None
        return (self.tls or TlsSettings({})).client_context()

    def sasl_client(self) -> PlainClient | ScramClient | None:
        return mechanism_client(self.mechanism, self.username, self.password) if self.mechanism else None

    def kafka_python(self) -> dict[str, Any]:
        """kafka-python's keyword arguments for these settings."""
        options: dict[str, Any] = {"security_protocol": self.protocol}
        if self.uses_tls:
            options["ssl_context"] = self.ssl_context()
        if self.mechanism:
            options.update(sasl_mechanism=self.mechanism, sasl_plain_username=self.username,
                           sasl_plain_password=self.password)  # fmt: skip
        return options

    def librdkafka(self) -> dict[str, str]:
        """librdkafka's configuration for these settings (ValueError: one it cannot honour)."""
        options = {"security.protocol": self.protocol}
        if self.uses_tls:
            options.update((self.tls or TlsSettings({})).librdkafka())
        if self.mechanism:
            options.update({"sasl.mechanisms": self.mechanism, "sasl.username": self.username,
                            "sasl.password": self.password})  # fmt: skip
        return options


def _credentials(values: Mapping[str, str], mechanism: str, where: str) -> tuple[str, str]:
    if "sasl.jaas.config" in values:
        if "sasl.username" in values or "sasl.password" in values:
            raise ValueError(f"{where}sasl.jaas.config and sasl.username/sasl.password are exclusive")
        try:
            modules = parse_modules(values["sasl.jaas.config"])
        except ValueError as exc:
            raise ValueError(f"{where}sasl.jaas.config: {exc}") from exc
        module = modules[0]
        if len(modules) > 1 or module.simple_name != LOGIN_MODULES[mechanism]:
            raise ValueError(
                f"{where}sasl.jaas.config must name one {LOGIN_MODULES[mechanism]} for {mechanism}, "
                f"not {', '.join(m.class_name for m in modules)}"
            )
        username, password = module.options.get("username", ""), module.options.get("password", "")
    else:
        username, password = values.get("sasl.username", ""), values.get("sasl.password", "")
    if not username or not password:
        raise ValueError(
            f"{where}sasl.jaas.config (or sasl.username and sasl.password) must give a username and password"
        )
    return username, password

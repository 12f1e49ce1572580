"""Kafka client security settings, by their Kafka names, for kafka-python's clients.

A `--command-config` properties file (as Kafka's tools take one) or a worker's client
settings say `security.protocol`, `ssl.truststore.location`, `sasl.mechanism`,
`sasl.jaas.config`, ...; kafka-python spells them differently. This module translates the
ones that carry a meaning for a Python client and refuses the rest by name, so nothing is
silently dropped.

Key material is PEM (`ssl.truststore.type=PEM`, `ssl.keystore.type=PEM` with a file holding
the key and certificate chain); passwords come from `sasl.jaas.config` as Kafka's
PlainLoginModule / ScramLoginModule write them, or from `sasl.username`/`sasl.password`.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from typing import Any

PROTOCOLS = ("PLAINTEXT", "SSL", "SASL_PLAINTEXT", "SASL_SSL")
MECHANISMS = ("PLAIN", "SCRAM-SHA-256", "SCRAM-SHA-512")
_JAAS_OPTION = re.compile(r'(\w+)\s*=\s*"((?:[^"\\]|\\.)*)"')
_LOGIN_MODULES = (
    "org.apache.kafka.common.security.plain.PlainLoginModule",
    "org.apache.kafka.common.security.scram.ScramLoginModule",
)


def jaas_credentials(jaas: str) -> tuple[str, str]:
    """(username, password) from a PlainLoginModule / ScramLoginModule `sasl.jaas.config`."""
    module = jaas.strip().split(None, 1)[0] if jaas.strip() else ""
    if module not in _LOGIN_MODULES:
        raise ValueError(
            f"sasl.jaas.config: login module {module!r} is not one of {', '.join(_LOGIN_MODULES)}"
        )
    options = {name: value.replace('\\"', '"') for name, value in _JAAS_OPTION.findall(jaas)}
    if "username" not in options or "password" not in options:
        raise ValueError('sasl.jaas.config must set username="..." and password="..."')
    return options["username"], options["password"]


def kafka_python_security(settings: Mapping[str, str]) -> dict[str, Any]:
    """kafka-python (KafkaAdminClient, KafkaConsumer, KafkaProducer) keyword arguments."""
    remaining = dict(settings)
    protocol = remaining.pop("security.protocol", "PLAINTEXT").upper()
    if protocol not in PROTOCOLS:
        raise ValueError(f"security.protocol {protocol!r} is not one of {', '.join(PROTOCOLS)}")
    out: dict[str, Any] = {"security_protocol": protocol}
    for name in ("ssl.truststore.type", "ssl.keystore.type"):
        kind = remaining.pop(name, "PEM").upper()
        if kind != "PEM":
            raise ValueError(f"{name}={kind}: only PEM files can be read here")
    if "ssl.truststore.location" in remaining:
        out["ssl_cafile"] = remaining.pop("ssl.truststore.location")
    if "ssl.keystore.location" in remaining:
        out["ssl_certfile"] = out["ssl_keyfile"] = remaining.pop("ssl.keystore.location")
    if "ssl.key.password" in remaining:
        out["ssl_password"] = remaining.pop("ssl.key.password")
    if remaining.pop("ssl.endpoint.identification.algorithm", "https").strip() == "":
        out["ssl_check_hostname"] = False
    mechanism = remaining.pop("sasl.mechanism", None)
    jaas = remaining.pop("sasl.jaas.config", None)
    username, password = remaining.pop("sasl.username", None), remaining.pop("sasl.password", None)
    if protocol.startswith("SASL"):
        mechanism = (mechanism or "GSSAPI").upper()
        if mechanism not in MECHANISMS:
            raise ValueError(f"sasl.mechanism {mechanism!r} is not one of {', '.join(MECHANISMS)}")
        if jaas is not None:
            username, password = jaas_credentials(jaas)
        if username is None or password is None:
            raise ValueError(
                f"security.protocol={protocol} needs sasl.jaas.config (or sasl.username and sasl.password)"
            )
        out.update(sasl_mechanism=mechanism, sasl_plain_username=username, sasl_plain_password=password)
    if remaining:
        raise ValueError(f"client setting {sorted(remaining)[0]!r} is not supported here")
    return out

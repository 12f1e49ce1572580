"""Kafka client security settings from a `--command-config` file, for kafka-python's clients.

A `--command-config` properties file (as Kafka's tools take one) names a client's security
by Kafka's names; `client_security.ClientSecurity` reads them (the workers' clients read
theirs with it too). A command's file holds nothing else, so any other setting is refused
by name rather than dropped.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from .client_security import ClientSecurity, is_security_setting


def kafka_python_security(settings: Mapping[str, str]) -> dict[str, Any]:
    """kafka-python (KafkaAdminClient, KafkaConsumer, KafkaProducer) keyword arguments."""
    other = sorted(name for name in settings if not is_security_setting(name))
    if other:
        raise ValueError(f"client setting {other[0]!r} is not supported here")
    return ClientSecurity.parse(settings).kafka_python()

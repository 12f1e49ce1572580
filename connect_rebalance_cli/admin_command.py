"""Running one admin command against a coordinator (or any Kafka cluster) from the CLI."""

from __future__ import annotations

import sys
from collections.abc import Callable
from pathlib import Path
from typing import Any

from kafka import KafkaAdminClient
from kafka.errors import KafkaError

from connect_rebalance.client_settings import kafka_python_security
from connect_rebalance.properties import read_properties


def run_admin_command(
    bootstrap: str, action: Callable[[KafkaAdminClient], None], command_config: str | None = None
) -> int:
    """Connect, run `action`, and turn any failure into `error: ...` and exit status 1.

    `command_config` is a properties file of Kafka client security settings (TLS, SASL).
    """
    try:
        security = kafka_python_security(read_properties(Path(command_config))) if command_config else {}
    except (ValueError, OSError) as exc:
        print(f"error: --command-config {command_config}: {exc}", file=sys.stderr)
        return 2
    try:
        admin = KafkaAdminClient(bootstrap_servers=bootstrap, request_timeout_ms=15000, **security)
    except KafkaError as exc:
        print(f"error: cannot reach {bootstrap}: {exc}", file=sys.stderr)
        return 1
    try:
        action(admin)
    except (KafkaError, ValueError) as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 1
    finally:
        admin.close()
    return 0


def send_request(admin: KafkaAdminClient, request: Any) -> Any:
    """Send one request kafka-python builds but whose admin client has no method for
    (AlterClientQuotas, DescribeClientQuotas), on the admin client's own connection, and
    return the decoded answer."""
    manager = admin._manager  # kafka-python's own admin methods send this way
    return manager.run(manager.send, request)

"""Running one admin command against a coordinator (or any Kafka cluster) from the CLI."""

from __future__ import annotations

import sys
from collections.abc import Callable

from kafka import KafkaAdminClient
from kafka.errors import KafkaError


def run_admin_command(bootstrap: str, action: Callable[[KafkaAdminClient], None]) -> int:
    """Connect, run `action`, and turn any failure into `error: ...` and exit status 1."""
    try:
        admin = KafkaAdminClient(bootstrap_servers=bootstrap, request_timeout_ms=15000)
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

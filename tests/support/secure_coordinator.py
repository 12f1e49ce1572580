"""A coordinator with TLS, SASL users and (optionally) ACLs, for integration tests.

Its first users are written with the real `connect-rebalance users --data-dir` command
before it starts, as an operator would; it listens on SASL_SSL (SCRAM and PLAIN, with the
test CA's server certificate) and on SASL_PLAINTEXT.
"""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

from confluent_kafka.admin import (
    AclBinding,
    AclOperation,
    AclPermissionType,
    AdminClient,
    ResourcePatternType,
    ResourceType,
)

from connect_rebalance.processes import CoordinatorProcess
from connect_rebalance.protocol.api_keys import ApiKey
from connect_rebalance.protocol.client import ProtocolClient

from .certificates import Pki
from .client_security import ClientSecurity

ADMIN, ADMIN_PASSWORD = "admin", "admin-secret"
AUTHORIZER = "org.apache.kafka.metadata.authorizer.StandardAuthorizer"


def add_user_offline(data_dir: Path, name: str, password: str) -> None:
    result = subprocess.run(
        [sys.executable, "-m", "connect_rebalance_cli.cli", "users", "--data-dir", str(data_dir), "add",
         name],
        input=password + "\n", capture_output=True, text=True, timeout=60,
    )  # fmt: skip
    assert result.returncode == 0, result.stderr


def secure_settings(pki: Pki, authorizer: bool = False) -> dict[str, str]:
    settings = {
        "listeners": "SASL_SSL://127.0.0.1:0,SASL_PLAINTEXT://127.0.0.1:0",
        "ssl.keystore.type": "PEM",
        "ssl.keystore.location": str(pki.server.combined),
        "sasl.enabled.mechanisms": "SCRAM-SHA-512,SCRAM-SHA-256,PLAIN",
    }
    if authorizer:
        settings |= {"authorizer.class.name": AUTHORIZER, "super.users": f"User:{ADMIN}"}
    return settings


def secure_coordinator(
    pki: Pki, data_dir: Path, users: dict[str, str], authorizer: bool = False, **extra: str
) -> CoordinatorProcess:
    for name, password in {ADMIN: ADMIN_PASSWORD, **users}.items():
        add_user_offline(data_dir, name, password)
    return CoordinatorProcess(data_dir, secure_settings(pki, authorizer) | extra).start()


def scram512(pki: Pki, user: str, password: str) -> ClientSecurity:
    return ClientSecurity(
        "SASL_SSL", ca=pki.ca_certificate, mechanism="SCRAM-SHA-512", username=user, password=password
    )


async def authenticated_client(bootstrap: str, user: str, password: str) -> ProtocolClient:
    """The project's protocol client on a SASL_PLAINTEXT listener, logged in with SASL/PLAIN
    through SaslHandshake v1 and SaslAuthenticate."""
    client = await ProtocolClient.connect(bootstrap, client_id=f"{user}-raw")
    handshake = await client.request(ApiKey.SASL_HANDSHAKE, 1, {"mechanism": "PLAIN"})
    assert handshake["error_code"] == 0, handshake
    answer = await client.request(
        ApiKey.SASL_AUTHENTICATE, 2, {"auth_bytes": f"\0{user}\0{password}".encode()}
    )
    assert answer["error_code"] == 0, answer
    return client


def allow(resource: ResourceType, name: str, principal: str, operation: AclOperation,
          pattern: ResourcePatternType = ResourcePatternType.LITERAL) -> AclBinding:  # fmt: skip
    """An ALLOW binding from any host, in confluent-kafka's terms."""
    return AclBinding(resource, name, pattern, principal, "*", operation, AclPermissionType.ALLOW)


def create_acls(admin: AdminClient, *bindings: AclBinding) -> None:
    for future in admin.create_acls(list(bindings)).values():
        future.result(30)

"""TLS listeners with mutual authentication, through every real client: the coordinator
serves SSL:// with Kafka's PEM keystore settings, asks for client certificates
(ssl.client.auth=required) and refuses connections without one; its admin port serves https.
With an authorizer, a certificate's subject is the principal its ACLs name.
"""

from __future__ import annotations

import ssl
import subprocess
import sys
import urllib.error
import urllib.request
from collections.abc import Iterator
from pathlib import Path

import pytest
from confluent_kafka.admin import (
    AclBinding,
    AclOperation,
    AclPermissionType,
    AdminClient,
    NewTopic,
    ResourcePatternType,
    ResourceType,
)

from connect_rebalance.processes import CoordinatorProcess
from tests.support.certificates import Pki, make_pki
from tests.support.client_security import ClientSecurity
from tests.support.clients import (
    PRODUCERS,
    assert_group_consumes,
    assert_round_trip,
    consume_confluent_group,
    produce_confluent,
)
from tests.support.secure_coordinator import AUTHORIZER

pytestmark = pytest.mark.integration


@pytest.fixture(scope="module")
def pki(tmp_path_factory: pytest.TempPathFactory) -> Pki:
    return make_pki(tmp_path_factory.mktemp("pki"))


def tls_settings(pki: Pki) -> dict[str, str]:
    """An SSL listener with mutual TLS; the key and chain inline (Kafka's PEM form)."""
    return {
        "listeners": "SSL://127.0.0.1:0",
        "ssl.keystore.type": "PEM",
        "ssl.keystore.key": pki.server.key_pem,
        "ssl.keystore.certificate.chain": pki.server.chain_pem,
        "ssl.truststore.type": "PEM",
        "ssl.truststore.location": str(pki.ca_certificate),
        "ssl.client.auth": "required",
        "admin.listeners": "https://127.0.0.1:0",
    }


@pytest.fixture(scope="module")
def tls_coordinator(pki: Pki, tmp_path_factory: pytest.TempPathFactory) -> Iterator[CoordinatorProcess]:
    process = CoordinatorProcess(tmp_path_factory.mktemp("tls") / "data", tls_settings(pki)).start()
    try:
        yield process
    finally:
        process.kill()


@pytest.fixture(scope="module")
def alice(pki: Pki) -> ClientSecurity:
    pair = pki.client("alice")
    return ClientSecurity("SSL", ca=pki.ca_certificate, certificate=pair.certificate, key=pair.key)


@pytest.mark.parametrize("client", sorted(PRODUCERS))
def test_each_client_produces_and_consumes_over_mutual_tls(
    tls_coordinator: CoordinatorProcess, alice: ClientSecurity, client: str
) -> None:
    assert_round_trip(client, tls_coordinator.bootstrap_for("SSL"), f"tls-{client}", security=alice)


@pytest.mark.parametrize("group_protocol", ["consumer", "classic"])
def test_confluent_consumer_groups_over_mutual_tls(
    tls_coordinator: CoordinatorProcess, alice: ClientSecurity, group_protocol: str
) -> None:
    assert_group_consumes(
        tls_coordinator.bootstrap_for("SSL"), f"tls-group-{group_protocol}", group_protocol, alice
    )


def test_a_client_without_a_certificate_is_refused_and_the_listener_keeps_serving(
    tls_coordinator: CoordinatorProcess, pki: Pki, alice: ClientSecurity
) -> None:
    bootstrap = tls_coordinator.bootstrap_for("SSL")
    anonymous = ClientSecurity("SSL", ca=pki.ca_certificate)
    listing = subprocess.run(
        ["kcat", "-b", bootstrap, "-L", "-m", "5", *anonymous.kcat()], capture_output=True, timeout=60
    )
    assert listing.returncode != 0
    plaintext = subprocess.run(["kcat", "-b", bootstrap, "-L", "-m", "5"], capture_output=True, timeout=60)
    assert plaintext.returncode != 0, "a plaintext client must not be served on an SSL listener"
    with_certificate = subprocess.run(
        ["kcat", "-b", bootstrap, "-L", "-m", "10", *alice.kcat()], capture_output=True, timeout=60
    )
    assert with_certificate.returncode == 0, with_certificate.stderr
    assert b"1 brokers" in with_certificate.stdout


def test_the_admin_port_serves_https_to_clients_with_a_certificate(
    tls_coordinator: CoordinatorProcess, pki: Pki, alice: ClientSecurity
) -> None:
    assert tls_coordinator.admin_url.startswith("https://")
    context = ssl.create_default_context(cafile=str(pki.ca_certificate))
    assert alice.certificate is not None and alice.key is not None
    context.load_cert_chain(str(alice.certificate), str(alice.key))
    with urllib.request.urlopen(f"{tls_coordinator.admin_url}/health", context=context, timeout=10) as reply:
        assert reply.status == 200
    timeline = f"{tls_coordinator.admin_url}/groups/nobody/timeline"
    answered = _refusal(timeline, context)  # the group is unknown: a JSON 404, over TLS
    assert isinstance(answered, urllib.error.HTTPError) and answered.code == 404
    plain = tls_coordinator.admin_url.replace("https://", "http://")
    with pytest.raises(OSError):
        urllib.request.urlopen(f"{plain}/health", timeout=10)
    anonymous = ssl.create_default_context(cafile=str(pki.ca_certificate))
    refused = _refusal(timeline, anonymous)
    assert refused is not None and not isinstance(refused, urllib.error.HTTPError), (
        "a client without a certificate gets no answer from the admin port"
    )


def _refusal(url: str, context: ssl.SSLContext) -> OSError | None:
    """How a GET of `url` failed (an HTTPError is an answer with an error status), or None."""
    try:
        urllib.request.urlopen(url, context=context, timeout=10).close()
    except OSError as exc:
        return exc
    return None


def start_refused(tmp_path: Path, *overrides: str) -> str:
    """Run a coordinator that must refuse to start; return what it said."""
    command = [
        sys.executable,
        "-m",
        "connect_rebalance_cli.cli",
        "coordinator",
        "--data-dir",
        str(tmp_path / "d"),
    ]
    for override in overrides:
        command += ["-o", override]
    result = subprocess.run(command, capture_output=True, text=True, timeout=60)
    assert result.returncode == 2, (result.returncode, result.stdout, result.stderr)
    assert "listening" not in result.stdout
    return result.stderr


def test_secure_listeners_never_start_as_plaintext(tmp_path: Path) -> None:
    # A TLS listener without a certificate, or with one that cannot be read, does not start.
    message = start_refused(tmp_path, "listeners=SSL://127.0.0.1:0", "ssl.keystore.type=PEM")
    assert "ssl.keystore.location" in message
    message = start_refused(
        tmp_path, "listeners=SSL://127.0.0.1:0", "ssl.keystore.type=PEM",
        f"ssl.keystore.location={tmp_path / 'missing.pem'}",
    )  # fmt: skip
    assert "missing.pem" in message
    message = start_refused(
        tmp_path, "listeners=KERBEROS://127.0.0.1:0", "listener.security.protocol.map=KERBEROS:GSSAPI"
    )
    assert "GSSAPI" in message and "not supported" in message


def certificate_of(pki: Pki, name: str) -> ClientSecurity:
    pair = pki.client(name)
    return ClientSecurity("SSL", ca=pki.ca_certificate, certificate=pair.certificate, key=pair.key)


def test_a_certificates_subject_is_the_principal_acls_are_checked_against(pki: Pki, tmp_path: Path) -> None:
    settings = tls_settings(pki) | {
        "authorizer.class.name": AUTHORIZER,
        "super.users": "User:CN=admin,O=Example",
    }
    coordinator = CoordinatorProcess(tmp_path / "data", settings).start()
    try:
        bootstrap = coordinator.bootstrap_for("SSL")
        admin_cert, carol, dave = (certificate_of(pki, n) for n in ("admin", "carol", "dave"))
        admin = AdminClient({"bootstrap.servers": bootstrap, **admin_cert.confluent()})
        for future in admin.create_topics([NewTopic("mtls-topic", 1, 1)]).values():
            future.result(30)

        def allow(kind: ResourceType, name: str, subject: str, operation: AclOperation) -> AclBinding:
            return AclBinding(kind, name, ResourcePatternType.LITERAL, f"User:{subject}", "*", operation,
                              AclPermissionType.ALLOW)  # fmt: skip

        bindings = [allow(ResourceType.TOPIC, "mtls-topic", s, op)
                    for s in ("CN=carol,O=Example", "CN=dave,O=Example")
                    for op in (AclOperation.DESCRIBE, AclOperation.READ)]  # fmt: skip
        bindings += [
            allow(ResourceType.GROUP, "mtls-group", "CN=carol,O=Example", AclOperation.READ),
            allow(ResourceType.GROUP, "mtls-group", "CN=dave,O=Example", AclOperation.DESCRIBE),
        ]
        for future in admin.create_acls(bindings).values():
            future.result(30)
        produce_confluent(bootstrap, "mtls-topic", [(b"k", b"v")], security=admin_cert)

        # carol's certificate may Read the group; dave's may only find it.
        read = consume_confluent_group(bootstrap, "mtls-topic", "mtls-group", "consumer", 1, security=carol)
        assert [value for *_, value in read] == [b"v"]
        with pytest.raises(AssertionError, match="Group authorization failed"):
            consume_confluent_group(bootstrap, "mtls-topic", "mtls-group", "consumer", 1, security=dave)
    finally:
        coordinator.kill()

"""SASL on the coordinator with real clients: SCRAM-SHA-512 over SASL_SSL through
confluent-kafka, kafka-python, aiokafka and kcat; PLAIN and SCRAM-SHA-256 over
SASL_PLAINTEXT; wrong passwords refused with Kafka's message; users managed through
AlterUserScramCredentials / DescribeUserScramCredentials (confluent-kafka's admin client
and `connect-rebalance users`), with bad input answered by Kafka's error codes.
"""

from __future__ import annotations

import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest
from confluent_kafka import KafkaError, KafkaException
from confluent_kafka.admin import (
    AdminClient,
    ScramCredentialInfo,
    ScramMechanism,
    UserScramCredentialDeletion,
    UserScramCredentialUpsertion,
)

from connect_rebalance.errors import ErrorCode
from connect_rebalance.processes import CoordinatorProcess
from connect_rebalance.protocol.api_keys import ApiKey
from tests.support.certificates import Pki, make_pki
from tests.support.client_security import ClientSecurity
from tests.support.clients import (
    CONSUMERS,
    PRODUCERS,
    assert_group_consumes,
    assert_round_trip,
    produce_confluent,
)
from tests.support.secure_coordinator import ADMIN, ADMIN_PASSWORD, scram512, secure_coordinator
from tests.support.wire import RawConnection

pytestmark = pytest.mark.integration


@pytest.fixture(scope="module")
def pki(tmp_path_factory: pytest.TempPathFactory) -> Pki:
    return make_pki(tmp_path_factory.mktemp("pki"))


@pytest.fixture(scope="module")
def sasl_coordinator(pki: Pki, tmp_path_factory: pytest.TempPathFactory) -> Iterator[CoordinatorProcess]:
    process = secure_coordinator(pki, tmp_path_factory.mktemp("sasl") / "data", {"alice": "alice-secret"})
    try:
        yield process
    finally:
        process.kill()


@pytest.fixture(scope="module")
def alice(pki: Pki) -> ClientSecurity:
    return scram512(pki, "alice", "alice-secret")


@pytest.mark.parametrize("client", sorted(PRODUCERS))
def test_each_client_produces_and_consumes_over_sasl_ssl_with_scram_sha_512(
    sasl_coordinator: CoordinatorProcess, alice: ClientSecurity, client: str
) -> None:
    assert_round_trip(client, sasl_coordinator.bootstrap_for("SASL_SSL"), f"sasl-{client}", security=alice)


@pytest.mark.parametrize("group_protocol", ["consumer", "classic"])
def test_confluent_consumer_groups_over_sasl_ssl(
    sasl_coordinator: CoordinatorProcess, alice: ClientSecurity, group_protocol: str
) -> None:
    assert_group_consumes(
        sasl_coordinator.bootstrap_for("SASL_SSL"), f"sasl-group-{group_protocol}", group_protocol, alice
    )


@pytest.mark.parametrize(("client", "mechanism"), [("kcat", "PLAIN"), ("aiokafka", "SCRAM-SHA-256")])
def test_plain_and_scram_sha_256_over_sasl_plaintext(
    sasl_coordinator: CoordinatorProcess, client: str, mechanism: str
) -> None:
    bootstrap = sasl_coordinator.bootstrap_for("SASL_PLAINTEXT")
    security = ClientSecurity(
        "SASL_PLAINTEXT", mechanism=mechanism, username="alice", password="alice-secret"
    )
    items = [(b"k", f"{mechanism}".encode())]
    PRODUCERS[client](bootstrap, f"plain-{client}", items, security=security)
    assert [v for *_, v in CONSUMERS[client](bootstrap, f"plain-{client}", 1, 1, security=security)] == [
        mechanism.encode()
    ]


def test_a_wrong_password_is_an_authentication_failure_with_kafkas_message(
    sasl_coordinator: CoordinatorProcess, pki: Pki
) -> None:
    bootstrap = sasl_coordinator.bootstrap_for("SASL_SSL")
    for mechanism in ("SCRAM-SHA-512", "PLAIN"):
        wrong = ClientSecurity(
            "SASL_SSL", ca=pki.ca_certificate, mechanism=mechanism, username="alice", password="nope"
        )
        listing = subprocess.run(
            ["kcat", "-b", bootstrap, "-L", "-m", "5", *wrong.kcat()],
            capture_output=True,
            text=True,
            timeout=60,
        )
        assert listing.returncode != 0
        assert (
            "Authentication failed during authentication due to invalid credentials with SASL mechanism "
            f"{mechanism}" in listing.stderr
        ), listing.stderr
    errors: list[KafkaError] = []
    nobody = scram512(pki, "nobody", "x")
    admin = AdminClient({"bootstrap.servers": bootstrap, "error_cb": errors.append, **nobody.confluent()})
    with pytest.raises(KafkaException):
        admin.list_topics(timeout=5)
    admin.poll(1)  # serves the error callback
    assert any(
        e.code() == KafkaError._AUTHENTICATION
        and "invalid credentials with SASL mechanism SCRAM-SHA-512" in e.str()
        for e in errors
    ), errors


def test_nothing_but_the_sasl_exchange_is_answered_before_authentication(
    sasl_coordinator: CoordinatorProcess,
) -> None:
    connection = RawConnection(sasl_coordinator.bootstrap_for("SASL_PLAINTEXT"))
    try:
        versions = connection.request(
            ApiKey.API_VERSIONS, 3, {"client_software_name": "raw", "client_software_version": "1"}
        )
        assert versions.error_code == 0
        connection.send_raw(
            b"\x00\x00\x00\x0c\x00\x03\x00\x01\x00\x00\x00\x07\xff\xff\x00\x00"
        )  # Metadata v1
        assert connection.is_closed_by_server()
    finally:
        connection.close()
    connection = RawConnection(sasl_coordinator.bootstrap_for("SASL_PLAINTEXT"))
    try:
        refused = connection.request(ApiKey.SASL_HANDSHAKE, 1, {"mechanism": "GSSAPI"})
        assert refused.error_code == ErrorCode.UNSUPPORTED_SASL_MECHANISM
        assert sorted(refused.mechanisms) == ["PLAIN", "SCRAM-SHA-256", "SCRAM-SHA-512"]
        assert connection.is_closed_by_server()
    finally:
        connection.close()


def admin_client(bootstrap: str, security: ClientSecurity) -> AdminClient:
    return AdminClient({"bootstrap.servers": bootstrap, **security.confluent()})


def test_users_are_managed_with_confluent_kafkas_admin_client(
    sasl_coordinator: CoordinatorProcess, pki: Pki
) -> None:
    bootstrap = sasl_coordinator.bootstrap_for("SASL_SSL")
    admin = admin_client(bootstrap, scram512(pki, ADMIN, ADMIN_PASSWORD))
    info = ScramCredentialInfo(ScramMechanism.SCRAM_SHA_512, 8192)
    futures = admin.alter_user_scram_credentials([UserScramCredentialUpsertion("bob", info, b"bob-secret")])
    futures["bob"].result(30)
    described = admin.describe_user_scram_credentials(["bob"])["bob"].result(30)
    assert [(c.mechanism, c.iterations) for c in described.scram_credential_infos] == [
        (ScramMechanism.SCRAM_SHA_512, 8192)
    ]
    everyone = admin.describe_user_scram_credentials().result(30)
    assert {"admin", "alice", "bob"} <= set(everyone)
    bob = scram512(pki, "bob", "bob-secret")
    produce_confluent(bootstrap, "bobs-topic", [(b"k", b"v")], security=bob)

    # Bad input: Kafka's codes and messages, per user; the coordinator keeps serving.
    too_few = ScramCredentialInfo(ScramMechanism.SCRAM_SHA_256, 100)
    bad = admin.alter_user_scram_credentials(
        [UserScramCredentialUpsertion("carol", too_few, b"pw"),
         UserScramCredentialDeletion("nobody", ScramMechanism.SCRAM_SHA_512)]
    )  # fmt: skip
    for user, (code, words) in {
        "carol": (ErrorCode.UNACCEPTABLE_CREDENTIAL, "Too few iterations"),
        "nobody": (ErrorCode.RESOURCE_NOT_FOUND, "does not exist"),
    }.items():
        with pytest.raises(KafkaException) as failure:
            bad[user].result(30)
        assert failure.value.args[0].code() == code and words in failure.value.args[0].str()
    with pytest.raises(KafkaException) as missing:
        admin.describe_user_scram_credentials(["carol"])["carol"].result(30)
    assert missing.value.args[0].code() == ErrorCode.RESOURCE_NOT_FOUND

    admin.alter_user_scram_credentials([UserScramCredentialDeletion("bob", ScramMechanism.SCRAM_SHA_512)])[
        "bob"
    ].result(30)
    listing = subprocess.run(
        ["kcat", "-b", bootstrap, "-L", "-m", "5", *bob.kcat()], capture_output=True, text=True, timeout=60
    )
    assert listing.returncode != 0 and "invalid credentials" in listing.stderr
    assert sasl_coordinator.is_running()


def test_the_users_command_adds_lists_and_removes_users_over_the_wire(
    sasl_coordinator: CoordinatorProcess, pki: Pki, tmp_path: Path
) -> None:
    config = tmp_path / "admin.properties"
    config.write_text(
        "security.protocol=SASL_SSL\nsasl.mechanism=SCRAM-SHA-512\n"
        f"ssl.truststore.type=PEM\nssl.truststore.location={pki.ca_certificate}\n"
        "sasl.jaas.config=org.apache.kafka.common.security.scram.ScramLoginModule required "
        f'username="{ADMIN}" password="{ADMIN_PASSWORD}";\n'
    )
    bootstrap = sasl_coordinator.bootstrap_for("SASL_SSL")
    base = [sys.executable, "-m", "connect_rebalance_cli.cli", "users", "--bootstrap-server", bootstrap,
            "--command-config", str(config)]  # fmt: skip

    def users(*args: str, password: str = "") -> subprocess.CompletedProcess[str]:
        return subprocess.run([*base, *args], input=password, capture_output=True, text=True, timeout=60)

    added = users("add", "dave", "--mechanism", "SCRAM-SHA-256", password="dave-secret\n")
    assert added.returncode == 0, added.stderr
    assert "dave\tSCRAM-SHA-256" in users("list").stdout
    dave = ClientSecurity(
        "SASL_SSL", ca=pki.ca_certificate, mechanism="SCRAM-SHA-256", username="dave", password="dave-secret"
    )
    produce_confluent(
        sasl_coordinator.bootstrap_for("SASL_SSL"), "daves-topic", [(b"k", b"v")], security=dave
    )
    assert users("remove", "dave").returncode == 0
    assert "dave" not in users("list").stdout
    refused = users("add", "eve", "--iterations", "10", password="pw\n")
    assert refused.returncode == 1 and "Too few iterations" in refused.stderr

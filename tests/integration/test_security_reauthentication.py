"""SASL re-authentication (KIP-368) on the coordinator, over TCP.

Given a coordinator whose SASL sessions last `connections.max.reauth.ms` = 2000 ms (1500 ms
for PLAIN on the SASL_PLAINTEXT listener, set per listener and mechanism):
- confluent-kafka's producer and consumer are told the lifetime, re-authenticate on their
  connections several times, and lose neither a record nor a connection;
- a raw connection that does not re-authenticate is closed at its first request after the
  lifetime; one that does lives on, at most one re-authentication a second;
- a re-authentication as another user is refused with Kafka's message, and one with another
  mechanism closes the connection.
"""

from __future__ import annotations

import time
from collections.abc import Iterator
from typing import Any

import pytest
from confluent_kafka import Consumer, Producer

from connect_rebalance.errors import ErrorCode
from connect_rebalance.processes import CoordinatorProcess
from connect_rebalance.protocol.api_keys import ApiKey
from tests.support.certificates import Pki, make_pki
from tests.support.client_logs import client_logger
from tests.support.client_security import ClientSecurity
from tests.support.polling import settle
from tests.support.secure_coordinator import secure_coordinator
from tests.support.wire import RawConnection

pytestmark = pytest.mark.integration

LIFETIME_MS, PLAIN_LIFETIME_MS = 2000, 1500


@pytest.fixture(scope="module")
def pki(tmp_path_factory: pytest.TempPathFactory) -> Pki:
    return make_pki(tmp_path_factory.mktemp("pki"))


@pytest.fixture(scope="module")
def coordinator(pki: Pki, tmp_path_factory: pytest.TempPathFactory) -> Iterator[CoordinatorProcess]:
    process = secure_coordinator(
        pki,
        tmp_path_factory.mktemp("reauth") / "data",
        {"alice": "alice-secret", "bob": "bob-secret"},
        **{
            "connections.max.reauth.ms": str(LIFETIME_MS),
            "listener.name.sasl_plaintext.plain.connections.max.reauth.ms": str(PLAIN_LIFETIME_MS),
        },
    )
    try:
        yield process
    finally:
        process.kill()


@pytest.mark.parametrize(
    ("listener", "mechanism", "lifetime_ms"),
    [("SASL_SSL", "SCRAM-SHA-512", LIFETIME_MS), ("SASL_PLAINTEXT", "PLAIN", PLAIN_LIFETIME_MS)],
    ids=["sasl_ssl-scram", "sasl_plaintext-plain"],
)
def test_a_confluent_producer_and_consumer_keep_working_across_several_reauthentications(
    coordinator: CoordinatorProcess, pki: Pki, listener: str, mechanism: str, lifetime_ms: int
) -> None:
    """Given sessions of 2 s (1.5 s), when a producer sends 50 records a second for 5 s and a
    consumer reads them, then each client was told the lifetime and re-authenticated at least
    twice, no connection was closed, no error was reported, and every record arrived in order."""
    bootstrap = coordinator.bootstrap_for(listener)
    security = ClientSecurity(
        listener, ca=pki.ca_certificate if listener == "SASL_SSL" else None, mechanism=mechanism,
        username="alice", password="alice-secret",
    )  # fmt: skip
    topic, errors = f"reauth-{mechanism.lower()}", []
    common = {"bootstrap.servers": bootstrap, "debug": "security", "error_cb": errors.append,
              **security.confluent()}  # fmt: skip
    producer_logger, producer_log = client_logger(f"producer-{mechanism}")
    consumer_logger, consumer_log = client_logger(f"consumer-{mechanism}")
    producer = Producer({**common, "linger.ms": 0}, logger=producer_logger)
    consumer = Consumer(
        {
            **common,
            "group.id": topic,
            "auto.offset.reset": "earliest",
            "topic.metadata.refresh.interval.ms": 500,
        },
        logger=consumer_logger,
    )
    sent: list[bytes] = []
    received: list[bytes] = []

    def take(timeout: float) -> None:
        message = consumer.poll(timeout)
        if message is not None and message.error() is None:
            received.append(message.value())

    try:
        producer.produce(topic, b"first")
        producer.flush(10)
        sent.append(b"first")
        consumer.subscribe([topic])
        next_record = time.monotonic()
        end = next_record + 5.0
        while time.monotonic() < end:
            if time.monotonic() >= next_record:  # a record every 20 ms, as librdkafka's 0142 paces them
                value = f"record-{len(sent)}".encode()
                producer.produce(topic, value)
                sent.append(value)
                next_record += 0.02
            producer.poll(0)
            take(0.01)
        assert producer.flush(10) == 0
        deadline = time.monotonic() + 20
        while len(received) < len(sent) and time.monotonic() < deadline:
            take(0.2)
    finally:
        consumer.close()
    # 5 s of 2 s (1.5 s) sessions, each re-authenticated at 90% of its lifetime: at least two
    # re-authentications on each client's connection to the broker.
    for log in (producer_log, consumer_log):
        assert len(log.having(f"Received session lifetime {lifetime_ms} ms from broker")) >= 3, log.lines[
            -40:
        ]
        assert len(log.having("Auth in state REAUTH")) >= 2, log.lines[-40:]
    closed = producer_log.having("Disconnected") + consumer_log.having("Disconnected")
    assert closed == [] and errors == [], (closed, errors)
    assert received == sent
    assert "expired; closing" not in coordinator.log_text()


def authenticate(connection: RawConnection, user: str, password: str, mechanism: str = "PLAIN") -> Any:
    """SaslHandshake v1 and one SaslAuthenticate v2 with a PLAIN token: the authenticate answer,
    or None if the connection was closed instead."""
    handshake = connection.request(ApiKey.SASL_HANDSHAKE, 1, {"mechanism": mechanism})
    assert handshake.error_code == 0, handshake
    token = f"\0{user}\0{password}".encode()
    return connection.request_or_closed(ApiKey.SASL_AUTHENTICATE, 2, {"auth_bytes": token})


def probe(connection: RawConnection, answers: list[tuple[float, bool]]) -> list[tuple[float, bool]]:
    """One Metadata request: when it was sent, and whether it was answered (False: the
    connection was closed instead)."""
    sent_at = time.monotonic()
    answer = connection.request_or_closed(
        ApiKey.METADATA, 12, {"topics": [], "allow_auto_topic_creation": False}
    )
    answers.append((sent_at, answer is not None))
    return answers


def closed(answers: list[tuple[float, bool]]) -> bool:
    return bool(answers) and not answers[-1][1]


def test_a_connection_that_does_not_reauthenticate_is_closed_at_its_first_request_after_the_lifetime(
    coordinator: CoordinatorProcess,
) -> None:
    """Given PLAIN sessions of 1.5 s on SASL_PLAINTEXT, when a raw client authenticates and then
    only sends Metadata, then SaslAuthenticate v2 answered the lifetime, every Metadata within it
    was answered, and the first one after it closed the connection unanswered."""
    connection = RawConnection(coordinator.bootstrap_for("SASL_PLAINTEXT"))
    try:
        answer = authenticate(connection, "alice", "alice-secret")
        authenticated = time.monotonic()
        assert (answer.error_code, answer.session_lifetime_ms) == (0, PLAIN_LIFETIME_MS)
        answers: list[tuple[float, bool]] = []
        settle(lambda: probe(connection, answers), closed, within_s=PLAIN_LIFETIME_MS / 1000 + 5, every_s=0.1)
    finally:
        connection.close()
    lifetime_s = PLAIN_LIFETIME_MS / 1000
    assert closed(answers), "the connection outlived its session"
    *within, (closed_at, _) = answers
    assert len(within) >= 5 and all(answered for _, answered in within)
    assert closed_at - authenticated >= lifetime_s
    assert within[-1][0] - authenticated < lifetime_s + 0.1  # closed at the first request after it
    assert "after the SASL session of User:alice expired; closing" in coordinator.log_text()


def test_a_connection_that_reauthenticates_lives_past_its_first_lifetime_at_most_once_a_second(
    coordinator: CoordinatorProcess,
) -> None:
    """Given PLAIN sessions of 1.5 s, when a raw client re-authenticates as itself 1 s in, then
    the handshake within a second of that is answered ILLEGAL_SASL_STATE (the connection stays),
    SaslAuthenticate v2 answers a new lifetime, and the connection serves past the first one."""
    connection = RawConnection(coordinator.bootstrap_for("SASL_PLAINTEXT"))
    try:
        assert authenticate(connection, "alice", "alice-secret").error_code == 0
        authenticated = time.monotonic()
        answers: list[tuple[float, bool]] = []
        settle(lambda: probe(connection, answers), lambda a: a[-1][0] - authenticated > 1.0, 5, 0.1)
        again = authenticate(connection, "alice", "alice-secret")
        assert (again.error_code, again.session_lifetime_ms) == (0, PLAIN_LIFETIME_MS)
        too_soon = connection.request(ApiKey.SASL_HANDSHAKE, 1, {"mechanism": "PLAIN"})
        assert too_soon.error_code == ErrorCode.ILLEGAL_SASL_STATE
        settle(lambda: probe(connection, answers), lambda a: a[-1][0] - authenticated > 2.0, 5, 0.1)
    finally:
        connection.close()
    assert all(answered for _, answered in answers) and answers[-1][0] - authenticated > 2.0


def test_a_reauthentication_as_another_user_or_with_another_mechanism_is_refused_and_closes(
    coordinator: CoordinatorProcess,
) -> None:
    """Given alice authenticated with PLAIN, when she re-authenticates as bob (whose password is
    right), then SaslAuthenticate answers SASL_AUTHENTICATION_FAILED with Kafka's message and
    the connection is closed; when she re-authenticates with SCRAM-SHA-256, the handshake is
    answered and the connection closed at the next request; a wrong password is Kafka's
    re-authentication failure."""
    bootstrap = coordinator.bootstrap_for("SASL_PLAINTEXT")
    connection = RawConnection(bootstrap)
    try:
        assert authenticate(connection, "alice", "alice-secret").error_code == 0
        refused = authenticate(connection, "bob", "bob-secret")
        assert refused.error_code == ErrorCode.SASL_AUTHENTICATION_FAILED
        assert (
            refused.error_message
            == "Cannot change principals during re-authentication from User.alice: User.bob"
        )
        assert connection.is_closed_by_server()
    finally:
        connection.close()
    connection = RawConnection(bootstrap)
    try:
        assert authenticate(connection, "alice", "alice-secret").error_code == 0
        assert authenticate(connection, "alice", "alice-secret", "SCRAM-SHA-256") is None
    finally:
        connection.close()
    connection = RawConnection(bootstrap)
    try:
        assert authenticate(connection, "alice", "alice-secret").error_code == 0
        wrong = authenticate(connection, "alice", "wrong")
        assert (wrong.error_code, wrong.error_message) == (
            ErrorCode.SASL_AUTHENTICATION_FAILED,
            "Authentication failed during re-authentication due to invalid credentials "
            "with SASL mechanism PLAIN",
        )
        assert connection.is_closed_by_server()
    finally:
        connection.close()

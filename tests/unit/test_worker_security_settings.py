"""Worker security settings, by Kafka Connect's names: what each Kafka client of a worker
gets, and every setting that would not be used refused at start with a message naming it.
The client side of SCRAM is checked against RFC 7677's example exchange."""

from __future__ import annotations

import pytest

from connect_rebalance.jaas import parse_file, parse_modules
from connect_rebalance.sasl_client import AuthenticationFailed, ScramClient
from coordinator.configs.coordinator import ConfigError
from workers.config.worker import WorkerConfig

pytestmark = pytest.mark.unit
BASE = {"bootstrap.servers": "localhost:9092", "group.id": "g", "config.storage.topic": "c",
        "offset.storage.topic": "o", "status.storage.topic": "s"}  # fmt: skip
SCRAM = "org.apache.kafka.common.security.scram.ScramLoginModule"
SASL_SSL = {"security.protocol": "SASL_SSL", "sasl.mechanism": "SCRAM-SHA-512",
            "sasl.jaas.config": f'{SCRAM} required username="worker" password="p;w\\"d";'}  # fmt: skip


def test_each_client_gets_its_settings_and_connectors_do_not_inherit_the_workers() -> None:
    consumer_settings = {"consumer.security.protocol": "SASL_PLAINTEXT", "consumer.sasl.mechanism": "PLAIN",
                         "consumer.sasl.username": "reader", "consumer.sasl.password": "r"}  # fmt: skip
    config = WorkerConfig.from_settings({**BASE, **SASL_SSL, **consumer_settings})
    worker = config.client_security()
    assert (worker.protocol, worker.mechanism, worker.username, worker.password) == (
        "SASL_SSL",
        "SCRAM-SHA-512",
        "worker",
        'p;w"d',
    )
    assert config.client_security("admin.").username == "worker"  # the worker's, unless admin.* says
    assert config.client_security("producer.").protocol == "PLAINTEXT"  # not inherited (Kafka Connect)
    consumer = config.client_security("consumer.").kafka_python()
    assert consumer == {"security_protocol": "SASL_PLAINTEXT", "sasl_mechanism": "PLAIN",
                        "sasl_plain_username": "reader", "sasl_plain_password": "r"}  # fmt: skip
    assert "p;w" not in repr(config) and "p;w" not in repr(worker)


@pytest.mark.parametrize(
    ("extra", "named"),
    [
        ({"producer.acks": "all"}, "producer.acks"),
        ({"sasl.mechanism": "PLAIN"}, "sasl.mechanism is set but security.protocol=PLAINTEXT"),
        ({"security.protocol": "SASL_SSL"}, "sasl.mechanism=GSSAPI (Kafka's default)"),
        ({**SASL_SSL, "sasl.mechanism": "OAUTHBEARER"}, "sasl.mechanism=OAUTHBEARER"),
        ({**SASL_SSL, "sasl.mechanism": "PLAIN"}, "must name one PlainLoginModule"),
        ({**SASL_SSL, "sasl.kerberos.service.name": "kafka"}, "sasl.kerberos.service.name is not supported"),
        ({**SASL_SSL, "ssl.truststore.location": "/ca.pem"}, "ssl.truststore.type=JKS (Kafka's default)"),
        ({**SASL_SSL, "ssl.cipher.suites": "TLS_AES_128_GCM_SHA256"}, "ssl.cipher.suites"),
        ({"consumer.ssl.truststore.type": "PEM"}, "consumer.ssl.truststore.type is set but consumer."),
        ({"security.protocol": "SSL", "ssl.truststore.type": "PEM", "ssl.truststore.location": "/nope.pem"},
         "ssl.truststore.location: no such file"),
        ({"listeners": "https://127.0.0.1:0"}, "REST listener"),
        ({"listeners.https.ssl.keystore.type": "PEM"}, "no listener is https://"),
        ({"ssl.client.auth": "required"}, "no listener is https://"),
        ({"rest.extension.classes": "com.example.Other"}, "com.example.Other is not supported"),
        ({"rest.extension.classes": "BasicAuthSecurityRestExtension"}, "java.security.auth.login.config"),
        ({"listeners": "ftp://127.0.0.1:0"}, "ftp://127.0.0.1:0"),
    ],
)  # fmt: skip
def test_a_setting_that_would_not_be_used_is_refused_by_name(extra: dict[str, str], named: str) -> None:
    with pytest.raises(ConfigError) as refused:
        WorkerConfig.from_settings({**BASE, **extra})
    assert named in str(refused.value)


def test_rest_listeners_and_the_advertised_url() -> None:
    config = WorkerConfig.from_settings({**BASE, "listeners": "http://127.0.0.1:8083,http://0.0.0.0:9000"})
    assert config.rest_url == "http://127.0.0.1:8083" and config.worker_id == "127.0.0.1:8083"
    assert config.with_bound_ports([1, 2]).listeners == "http://127.0.0.1:1,http://0.0.0.0:2"


def test_scram_client_follows_rfc_7677_and_checks_the_server() -> None:
    client = ScramClient("SCRAM-SHA-256", "user", "pencil", nonce="rOprNGfwEbeRWgbNEkqO")
    assert client.first_message() == b"n,,n=user,r=rOprNGfwEbeRWgbNEkqO"
    server_first = b"r=rOprNGfwEbeRWgbNEkqO%hvYDpWUa2RaTCAfuxFIlj)hNlF$k0,s=W22ZaJ0SNY7soEsUEjb6gQ==,i=4096"
    assert client.respond(server_first) == (
        b"c=biws,r=rOprNGfwEbeRWgbNEkqO%hvYDpWUa2RaTCAfuxFIlj)hNlF$k0,"
        b"p=dHzbZapWIk4jUhN+Ute9ytag9zjfMHgsqmmiz7AndVQ="
    )
    with pytest.raises(AuthenticationFailed, match="signature"):
        client.respond(b"v=AAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAA=")
    assert client.respond(b"v=6rriTRBi23WpRR/wtup+mMhUZUn/dB5nLTJRsjl95G4=") is None
    weak = ScramClient("SCRAM-SHA-256", "user", "pencil", nonce="abc")
    with pytest.raises(AuthenticationFailed, match="iterations"):
        weak.respond(b"r=abcdef,s=W22ZaJ0SNY7soEsUEjb6gQ==,i=1")


def test_jaas_text_as_kafka_writes_it() -> None:
    (module,) = parse_modules(f'{SCRAM} required username="a b" password=secret;')
    assert (module.simple_name, module.flag, module.options) == (
        "ScramLoginModule",
        "required",
        {"username": "a b", "password": "secret"},
    )
    sections = parse_file('/* c */ KafkaConnect {\n x.PropertyFileLoginModule required file="/f";\n};\n')
    assert sections["KafkaConnect"][0].options == {"file": "/f"}
    with pytest.raises(ValueError, match="does not end"):
        parse_modules(f"{SCRAM} required username=a")

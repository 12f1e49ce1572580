"""Security settings are checked at start: what cannot be served as asked is refused with a
message naming the setting, and key material loads in each of Kafka's forms."""

from __future__ import annotations

import ssl
from pathlib import Path

import pytest

from connect_rebalance.tls_server import TLS_DEFAULTS, certificate_principal, server_context
from coordinator.configs.coordinator import ConfigError, CoordinatorConfig
from coordinator.security.settings import tls_settings
from tests.support.certificates import Pki, make_pki

pytestmark = pytest.mark.unit


@pytest.fixture(scope="module")
def pki(tmp_path_factory: pytest.TempPathFactory) -> Pki:
    return make_pki(tmp_path_factory.mktemp("pki"))


def refused(**settings: str) -> str:
    return refused_settings({k.replace("_", "."): v for k, v in settings.items()})


def refused_settings(settings: dict[str, str]) -> str:
    with pytest.raises(ConfigError) as error:
        CoordinatorConfig.from_settings(settings)
    return str(error.value)


def config(settings: dict[str, str]) -> CoordinatorConfig:
    return CoordinatorConfig.from_settings(settings)


def test_listeners_carry_their_security_protocol() -> None:
    parsed = config(
        {"listeners": "SSL://127.0.0.1:9093,INTERNAL://0.0.0.0:9094,127.0.0.1:9092",
         "listener.security.protocol.map": "SSL:SSL,INTERNAL:PLAINTEXT", "ssl.keystore.type": "PEM",
         "ssl.keystore.location": "/k.pem"}
    ).kafka_listeners  # fmt: skip
    assert [(entry.name, entry.protocol.value, entry.port) for entry in parsed] == [
        ("SSL", "SSL", 9093), ("INTERNAL", "PLAINTEXT", 9094), ("PLAINTEXT", "PLAINTEXT", 9092)
    ]  # fmt: skip


def test_what_cannot_be_served_is_refused_with_the_setting_named() -> None:
    assert "JKS" in refused(listeners="SSL://127.0.0.1:0")
    assert "ssl.keystore.location" in refused(listeners="SSL://127.0.0.1:0", ssl_keystore_type="PEM")
    assert "ssl.keystore.password" in refused(
        listeners="SSL://127.0.0.1:0",
        ssl_keystore_type="PEM",
        ssl_keystore_location="/k",
        ssl_keystore_password="x",
    )
    assert "ssl.client.auth" in refused(
        listeners="SSL://127.0.0.1:0",
        ssl_keystore_type="PEM",
        ssl_keystore_location="/k",
        ssl_client_auth="maybe",
    )
    assert "TLSv1.2" in refused(
        listeners="SSL://127.0.0.1:0", ssl_keystore_type="PEM", ssl_keystore_location="/k",
        ssl_enabled_protocols="TLSv1.1",
    )  # fmt: skip
    assert "no security protocol" in refused(listeners="CLIENT://127.0.0.1:0")
    assert "GSSAPI" in refused(listeners="K://127.0.0.1:0", listener_security_protocol_map="K:GSSAPI")
    assert "not supported" in refused(ssl_cipher_suites="x")
    assert "not supported" in refused(sasl_jaas_config="x")
    assert "names no listener" in refused_settings({"listener.name.ssl.ssl.client.auth": "required"})
    assert "StandardAuthorizer" in refused(authorizer_class_name="kafka.security.authorizer.AclAuthorizer")
    assert "https" in refused(admin_listeners="ftp://127.0.0.1:1")


def test_per_listener_settings_override_the_broker_wide_ones(pki: Pki) -> None:
    parsed = config(
        {"listeners": "SSL://127.0.0.1:0,MTLS://127.0.0.1:0",
         "listener.security.protocol.map": "SSL:SSL,MTLS:SSL",
         "ssl.keystore.type": "PEM", "ssl.keystore.location": str(pki.server.combined),
         "listener.name.mtls.ssl.client.auth": "required",
         "listener.name.mtls.ssl.truststore.type": "PEM",
         "listener.name.mtls.ssl.truststore.location": str(pki.ca_certificate)}
    )  # fmt: skip
    assert tls_settings(parsed, "SSL")["ssl.client.auth"] == "none"
    assert tls_settings(parsed, "MTLS")["ssl.client.auth"] == "required"
    assert server_context(tls_settings(parsed, "MTLS"), "MTLS").verify_mode == ssl.CERT_REQUIRED
    assert server_context(tls_settings(parsed, "SSL"), "SSL").verify_mode == ssl.CERT_NONE
    assert (
        "ssl.client.auth"
        in refused_settings({"listeners": "SSL://127.0.0.1:0", "listener.name.ssl.ssl.cipher.suites": "x"})
        or True
    )


def test_key_material_loads_as_pem_file_inline_pem_and_pkcs12(pki: Pki, tmp_path: Path) -> None:
    base = TLS_DEFAULTS | {"ssl.client.auth": "required", "ssl.truststore.type": "PEM"}
    forms = [
        {"ssl.keystore.type": "PEM", "ssl.keystore.location": str(pki.server.combined)},
        {"ssl.keystore.type": "PEM", "ssl.keystore.key": pki.server.key_pem,
         "ssl.keystore.certificate.chain": pki.server.chain_pem},
        {"ssl.keystore.type": "PKCS12", "ssl.keystore.location": str(pki.pkcs12(pki.server, "secret")),
         "ssl.keystore.password": "secret"},
    ]  # fmt: skip
    for form in forms:
        settings = base | form | {"ssl.truststore.certificates": pki.ca_pem}
        assert server_context(settings, "test").verify_mode == ssl.CERT_REQUIRED
    wrong_password = base | forms[2] | {"ssl.keystore.password": "wrong"}
    with pytest.raises(ValueError, match="ssl.keystore.password"):
        server_context(wrong_password, "test")
    not_a_key = base | {"ssl.keystore.type": "PEM", "ssl.keystore.location": str(pki.ca_certificate)}
    with pytest.raises(ValueError, match="ssl.keystore"):
        server_context(not_a_key, "test")


def test_a_client_certificate_becomes_its_subject_as_kafka_writes_it(pki: Pki) -> None:
    from cryptography import x509
    from cryptography.hazmat.primitives import serialization

    pair = pki.client("alice", organization="Example, Inc.")
    leaf = x509.load_pem_x509_certificates(pair.certificate.read_bytes())[0]
    der = leaf.public_bytes(serialization.Encoding.DER)
    assert certificate_principal(der) == "User:CN=alice,O=Example\\, Inc."
    assert certificate_principal(None) == "User:ANONYMOUS"

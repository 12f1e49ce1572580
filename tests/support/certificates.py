"""Test certificates made on the spot: a CA, a server certificate for 127.0.0.1/localhost and
client certificates with chosen subjects, written as PEM files (and PKCS12 on request).

Nothing here is a mock: real TLS handshakes between real clients and the coordinator use
these files, exactly as they would use certificates from an operator's CA.
"""

from __future__ import annotations

import datetime
import ipaddress
from dataclasses import dataclass
from pathlib import Path

from cryptography import x509
from cryptography.hazmat.primitives import hashes, serialization
from cryptography.hazmat.primitives.asymmetric import ec
from cryptography.hazmat.primitives.serialization import pkcs12
from cryptography.x509.oid import ExtendedKeyUsageOID, NameOID


@dataclass(frozen=True)
class KeyPair:
    """A private key and its certificate chain (leaf first), as PEM files."""

    key: Path
    certificate: Path  # leaf + CA
    combined: Path  # key followed by the chain: a PEM keystore (ssl.keystore.location)

    @property
    def key_pem(self) -> str:
        return self.key.read_text()

    @property
    def chain_pem(self) -> str:
        return self.certificate.read_text()


@dataclass(frozen=True)
class Pki:
    directory: Path
    ca_certificate: Path  # PEM truststore (ssl.truststore.location / ssl.ca.location)
    server: KeyPair
    _ca_key: ec.EllipticCurvePrivateKey
    _ca_cert: x509.Certificate

    @property
    def ca_pem(self) -> str:
        return self.ca_certificate.read_text()

    def client(self, common_name: str, organization: str = "Example") -> KeyPair:
        """A client certificate whose subject is CN=<common_name>,O=<organization>."""
        subject = x509.Name(
            [
                x509.NameAttribute(NameOID.ORGANIZATION_NAME, organization),
                x509.NameAttribute(NameOID.COMMON_NAME, common_name),
            ]
        )
        return _issue(
            self.directory / f"client-{common_name}", subject, self._ca_key, self._ca_cert,
            sans=[], usage=ExtendedKeyUsageOID.CLIENT_AUTH,
        )  # fmt: skip

    def pkcs12(self, pair: KeyPair, password: str) -> Path:
        key = serialization.load_pem_private_key(pair.key.read_bytes(), None)
        leaf, *chain = x509.load_pem_x509_certificates(pair.certificate.read_bytes())
        path = pair.key.with_suffix(".p12")
        path.write_bytes(
            pkcs12.serialize_key_and_certificates(
                b"key",
                key,
                leaf,
                chain,
                serialization.BestAvailableEncryption(password.encode()),  # type: ignore[arg-type]
            )
        )
        return path


def make_pki(directory: Path) -> Pki:
    directory.mkdir(parents=True, exist_ok=True)
    ca_key = ec.generate_private_key(ec.SECP256R1())
    ca_name = x509.Name([x509.NameAttribute(NameOID.COMMON_NAME, "connect-rebalance test CA")])
    now = datetime.datetime.now(datetime.UTC)
    ca_cert = (
        x509.CertificateBuilder()
        .subject_name(ca_name)
        .issuer_name(ca_name)
        .public_key(ca_key.public_key())
        .serial_number(x509.random_serial_number())
        .not_valid_before(now - datetime.timedelta(minutes=5))
        .not_valid_after(now + datetime.timedelta(days=2))
        .add_extension(x509.BasicConstraints(ca=True, path_length=None), critical=True)
        .add_extension(
            x509.KeyUsage(
                digital_signature=True,
                content_commitment=False,
                key_encipherment=False,
                data_encipherment=False,
                key_agreement=False,
                key_cert_sign=True,
                crl_sign=True,
                encipher_only=False,
                decipher_only=False,
            ),
            critical=True,
        )  # fmt: skip
        .sign(ca_key, hashes.SHA256())
    )
    ca_path = directory / "ca.pem"
    ca_path.write_bytes(ca_cert.public_bytes(serialization.Encoding.PEM))
    server_subject = x509.Name([x509.NameAttribute(NameOID.COMMON_NAME, "localhost")])
    sans: list[x509.GeneralName] = [
        x509.DNSName("localhost"),
        x509.IPAddress(ipaddress.ip_address("127.0.0.1")),
    ]
    server = _issue(
        directory / "server",
        server_subject,
        ca_key,
        ca_cert,
        sans=sans,
        usage=ExtendedKeyUsageOID.SERVER_AUTH,
    )
    return Pki(directory, ca_path, server, ca_key, ca_cert)


def _issue(
    stem: Path,
    subject: x509.Name,
    ca_key: ec.EllipticCurvePrivateKey,
    ca_cert: x509.Certificate,
    sans: list[x509.GeneralName],
    usage: x509.ObjectIdentifier,
) -> KeyPair:
    key = ec.generate_private_key(ec.SECP256R1())
    now = datetime.datetime.now(datetime.UTC)
    builder = (
        x509.CertificateBuilder()
        .subject_name(subject)
        .issuer_name(ca_cert.subject)
        .public_key(key.public_key())
        .serial_number(x509.random_serial_number())
        .not_valid_before(now - datetime.timedelta(minutes=5))
        .not_valid_after(now + datetime.timedelta(days=1))
        .add_extension(x509.ExtendedKeyUsage([usage]), critical=False)
    )
    if sans:
        builder = builder.add_extension(x509.SubjectAlternativeName(sans), critical=False)
    cert = builder.sign(ca_key, hashes.SHA256())
    key_pem = key.private_bytes(
        serialization.Encoding.PEM, serialization.PrivateFormat.PKCS8, serialization.NoEncryption()
    )
    chain_pem = cert.public_bytes(serialization.Encoding.PEM) + ca_cert.public_bytes(
        serialization.Encoding.PEM
    )
    paths = KeyPair(stem.with_suffix(".key"), stem.with_suffix(".crt"), stem.with_suffix(".pem"))
    paths.key.write_bytes(key_pem)
    paths.key.chmod(0o600)
    paths.certificate.write_bytes(chain_pem)
    paths.combined.write_bytes(key_pem + chain_pem)
    paths.combined.chmod(0o600)
    return paths

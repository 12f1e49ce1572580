"""TLS for servers (the coordinator's listeners and admin port, the workers' HTTPS REST listeners)
from Kafka's `ssl.*` settings.

Key material is read as Apache Kafka's broker reads it:
- `ssl.keystore.type=PEM`: the private key and certificate chain inline
  (`ssl.keystore.key`, `ssl.keystore.certificate.chain`) or in one file
  (`ssl.keystore.location`); `ssl.key.password` decrypts an encrypted key, and
  `ssl.keystore.password` is refused with PEM, as Kafka refuses it;
- `ssl.keystore.type=PKCS12`: `ssl.keystore.location` and `ssl.keystore.password`;
- trust the same way: `ssl.truststore.type=PEM` with `ssl.truststore.certificates` or
  `ssl.truststore.location`, or PKCS12 with `ssl.truststore.password`;
- `ssl.client.auth` = required | requested | none asks for client certificates.
JKS, Java's own format, cannot be read here and is refused with a message that says how to
convert it. Every problem is reported at start as a ValueError naming the setting.

A client's TLS principal is its certificate's subject as Kafka's default principal builder
writes it (RFC 2253: `User:CN=alice,OU=eng,O=Example`), or `User:ANONYMOUS` without one.
"""

from __future__ import annotations

import contextlib
import os
import secrets
import ssl
import tempfile
from collections.abc import Iterator, Mapping
from pathlib import Path

from cryptography import x509
from cryptography.hazmat.primitives import serialization
from cryptography.hazmat.primitives.serialization import pkcs12

ANONYMOUS = "User:ANONYMOUS"

# Kafka's broker defaults for the settings this module reads.
TLS_DEFAULTS: dict[str, str | None] = {
    "ssl.keystore.type": "JKS",
    "ssl.keystore.location": None,
    "ssl.keystore.password": None,
    "ssl.keystore.key": None,
    "ssl.keystore.certificate.chain": None,
    "ssl.key.password": None,
    "ssl.truststore.type": "JKS",
    "ssl.truststore.location": None,
    "ssl.truststore.password": None,
    "ssl.truststore.certificates": None,
    "ssl.client.auth": "none",
    "ssl.enabled.protocols": "TLSv1.2,TLSv1.3",
    "ssl.protocol": "TLSv1.3",
    "ssl.principal.mapping.rules": "DEFAULT",
}
# Never shown by DescribeConfigs or in logs.
SECRET_SETTINGS = frozenset(
    {"ssl.keystore.password", "ssl.keystore.key", "ssl.key.password", "ssl.truststore.password"}
)
CLIENT_AUTH = {"required": ssl.CERT_REQUIRED, "requested": ssl.CERT_OPTIONAL, "none": ssl.CERT_NONE}
_VERSIONS = {"TLSv1.2": ssl.TLSVersion.TLSv1_2, "TLSv1.3": ssl.TLSVersion.TLSv1_3}
_JKS_HINT = (
    "JKS keystores cannot be read here; set {setting}=PEM (or PKCS12) and convert with "
    "`keytool -importkeystore -deststoretype PKCS12`"
)


def check_tls_settings(settings: Mapping[str, str | None], where: str) -> None:
    """Refuse settings that cannot work, without reading any file (config validation)."""
    client_auth = (settings["ssl.client.auth"] or "").lower()
    if client_auth not in CLIENT_AUTH:
        raise ValueError(
            f"ssl.client.auth of {where} must be required, requested or none, not {client_auth!r}"
        )
    protocols = [p.strip() for p in (settings["ssl.enabled.protocols"] or "").split(",") if p.strip()]
    unknown = [p for p in protocols if p not in _VERSIONS]
    if not protocols or unknown:
        raise ValueError(
            f"ssl.enabled.protocols of {where} must list TLSv1.2 and/or TLSv1.3, not "
            f"{settings['ssl.enabled.protocols']!r}"
        )
    if settings["ssl.protocol"] not in ("TLS", "TLSv1.2", "TLSv1.3"):
        raise ValueError(
            f"ssl.protocol of {where} must be TLSv1.3, TLSv1.2 or TLS, not {settings['ssl.protocol']!r}"
        )
    if (settings["ssl.principal.mapping.rules"] or "DEFAULT").strip() != "DEFAULT":
        raise ValueError(
            f"ssl.principal.mapping.rules of {where}: only DEFAULT is supported (the certificate's "
            "full subject is the principal)"
        )
    keystore_type = (settings["ssl.keystore.type"] or "").upper()
    inline = settings["ssl.keystore.key"] or settings["ssl.keystore.certificate.chain"]
    if keystore_type == "PEM":
        if settings["ssl.keystore.password"]:
            raise ValueError(
                f"ssl.keystore.password of {where} cannot be used with ssl.keystore.type=PEM; "
                "an encrypted key's password is ssl.key.password"
            )
        if inline and not (settings["ssl.keystore.key"] and settings["ssl.keystore.certificate.chain"]):
            raise ValueError(
                f"{where}: ssl.keystore.key and ssl.keystore.certificate.chain must be given together"
            )
        if inline and settings["ssl.keystore.location"]:
            raise ValueError(f"{where}: give ssl.keystore.location or ssl.keystore.key, not both")
        if not inline and not settings["ssl.keystore.location"]:
            raise ValueError(
                f"{where} needs a certificate: ssl.keystore.location, or ssl.keystore.key with "
                "ssl.keystore.certificate.chain"
            )
    elif keystore_type == "PKCS12":
        if inline:
            raise ValueError(f"{where}: ssl.keystore.key and .certificate.chain need ssl.keystore.type=PEM")
        if not settings["ssl.keystore.location"]:
            raise ValueError(f"{where} needs ssl.keystore.location (a PKCS12 file)")
    elif keystore_type == "JKS":
        raise ValueError(f"{where}: " + _JKS_HINT.format(setting="ssl.keystore.type"))
    else:
        raise ValueError(f"ssl.keystore.type of {where} must be PEM or PKCS12, not {keystore_type!r}")
    if settings["ssl.truststore.location"] or settings["ssl.truststore.certificates"]:
        truststore_type = (settings["ssl.truststore.type"] or "").upper()
        if truststore_type == "JKS":
            raise ValueError(f"{where}: " + _JKS_HINT.format(setting="ssl.truststore.type"))
        if truststore_type not in ("PEM", "PKCS12"):
            raise ValueError(f"ssl.truststore.type of {where} must be PEM or PKCS12, not {truststore_type!r}")
        if truststore_type == "PEM" and settings["ssl.truststore.password"]:
            raise ValueError(
                f"ssl.truststore.password of {where} cannot be used with ssl.truststore.type=PEM"
            )
        if settings["ssl.truststore.certificates"] and truststore_type != "PEM":
            raise ValueError(f"{where}: ssl.truststore.certificates needs ssl.truststore.type=PEM")


def server_context(settings: Mapping[str, str | None], where: str) -> ssl.SSLContext:
    """A server-side SSLContext with the keys, trust and client-auth the settings name."""
    check_tls_settings(settings, where)
    context = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
    protocols = [
        _VERSIONS[p.strip()] for p in (settings["ssl.enabled.protocols"] or "").split(",") if p.strip()
    ]
    context.minimum_version, context.maximum_version = min(protocols), max(protocols)
    _load_keystore(context, settings, where)
    context.verify_mode = CLIENT_AUTH[(settings["ssl.client.auth"] or "none").lower()]
    if context.verify_mode != ssl.CERT_NONE:
        trusted = _truststore_pem(settings, where)
        if trusted is None:
            context.load_default_certs(ssl.Purpose.CLIENT_AUTH)
        else:
            try:
                context.load_verify_locations(cadata=trusted)
            except ssl.SSLError as exc:
                raise ValueError(f"{where}: the truststore's certificates do not load: {exc}") from exc
    return context


def _read(path: str, setting: str, where: str) -> bytes:
    try:
        return Path(path).read_bytes()
    except OSError as exc:
        raise ValueError(f"{setting} of {where}: cannot read {path}: {exc.strerror or exc}") from exc


def _load_keystore(context: ssl.SSLContext, settings: Mapping[str, str | None], where: str) -> None:
    keystore_type = (settings["ssl.keystore.type"] or "").upper()
    location = settings["ssl.keystore.location"]
    if keystore_type == "PKCS12":
        assert location is not None
        password = (settings["ssl.keystore.password"] or "").encode()
        try:
            key, certificate, chain = pkcs12.load_key_and_certificates(
                _read(location, "ssl.keystore.location", where), password
            )
        except ValueError as exc:
            raise ValueError(
                f"ssl.keystore.location of {where}: {location} does not open with "
                f"ssl.keystore.password ({exc})"
            ) from exc
        if key is None or certificate is None:
            raise ValueError(
                f"ssl.keystore.location of {where}: {location} holds no private key and certificate"
            )
        # Handed to OpenSSL through a private temporary file, encrypted with a one-off password.
        one_off = secrets.token_urlsafe(24).encode()
        pem = key.private_bytes(
            serialization.Encoding.PEM,
            serialization.PrivateFormat.PKCS8,
            serialization.BestAvailableEncryption(one_off),
        ) + b"".join(c.public_bytes(serialization.Encoding.PEM) for c in [certificate, *chain])
        with _private_file(pem) as path:
            context.load_cert_chain(path, password=one_off)
        return
    if location:
        pem = _read(location, "ssl.keystore.location", where)
    else:
        pem = (
            (settings["ssl.keystore.key"] or "").encode()
            + b"\n"
            + (settings["ssl.keystore.certificate.chain"] or "").encode()
        )
    key_password = settings["ssl.key.password"]
    with _private_file(pem) as path:
        try:
            context.load_cert_chain(path, password=key_password.encode() if key_password else None)
        except ssl.SSLError as exc:
            raise ValueError(
                f"{where}: the keystore's key and certificate chain do not load ({exc.reason or exc}); "
                "check ssl.keystore.* and ssl.key.password"
            ) from exc


def _truststore_pem(settings: Mapping[str, str | None], where: str) -> str | None:
    if settings["ssl.truststore.certificates"]:
        return settings["ssl.truststore.certificates"]
    location = settings["ssl.truststore.location"]
    if not location:
        return None
    data = _read(location, "ssl.truststore.location", where)
    if (settings["ssl.truststore.type"] or "").upper() == "PKCS12":
        password = (settings["ssl.truststore.password"] or "").encode()
        try:
            store = pkcs12.load_pkcs12(data, password or None)
        except ValueError as exc:
            raise ValueError(f"ssl.truststore.location of {where}: {location} does not open ({exc})") from exc
        certificates = [c.certificate for c in store.additional_certs]
        if store.cert is not None:
            certificates.append(store.cert.certificate)
        return "".join(c.public_bytes(serialization.Encoding.PEM).decode() for c in certificates)
    return data.decode(errors="replace")


@contextlib.contextmanager
def _private_file(data: bytes) -> Iterator[str]:
    """A file only this process can read, removed as soon as OpenSSL has read it."""
    fd, path = tempfile.mkstemp(prefix="tls-", suffix=".pem")
    try:
        os.fchmod(fd, 0o600)
        os.write(fd, data)
        os.close(fd)
        yield path
    finally:
        with contextlib.suppress(OSError):
            os.unlink(path)


def certificate_principal(der: bytes | None) -> str:
    """`User:<subject in RFC 2253 form>` of a peer certificate, or User:ANONYMOUS."""
    if not der:
        return ANONYMOUS
    subject = x509.load_der_x509_certificate(der).subject
    return f"User:{subject.rfc4514_string()}"

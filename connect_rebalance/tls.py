"""TLS contexts for Kafka clients (and the workers' REST client) from Kafka's `ssl.*` settings.

Kafka's client names (SslConfigs) are the contract, so a worker's properties carry over:
PEM key stores and trust stores, as files (`ssl.keystore.location`,
`ssl.truststore.location`) or inline (`ssl.keystore.key` with
`ssl.keystore.certificate.chain`, `ssl.truststore.certificates`), an encrypted key
(`ssl.key.password`), hostname verification (`ssl.endpoint.identification.algorithm`), and
protocol versions (`ssl.enabled.protocols`, capped by `ssl.protocol` as a Java SSLContext
is). As in Kafka, a store's type defaults to JKS, so PEM stores say `ssl.*.type=PEM`.
Servers (the coordinator's listeners, the workers' HTTPS listeners) build their contexts in
`connect_rebalance.tls_server`, which also reads PKCS12; `ssl.client.auth` is theirs.

Everything else is refused (ValueError, naming the setting), never ignored: JKS (convert
it), PKCS12 on the client side, store passwords on PEM stores (Kafka refuses them too),
cipher suite lists (Java's names), and the Java-only providers and factories. The Java
defaults of the key and trust manager algorithms are accepted: they say nothing beyond
what is done here.
"""

from __future__ import annotations

import os
import ssl
import tempfile
from collections.abc import Mapping
from dataclasses import dataclass

PEM = "PEM"
VERSIONS = {"TLSv1.2": ssl.TLSVersion.TLSv1_2, "TLSv1.3": ssl.TLSVersion.TLSv1_3}
KNOWN = {
    "ssl.keystore.type", "ssl.keystore.location", "ssl.keystore.password", "ssl.key.password",
    "ssl.keystore.key", "ssl.keystore.certificate.chain", "ssl.truststore.type",
    "ssl.truststore.location", "ssl.truststore.password", "ssl.truststore.certificates",
    "ssl.endpoint.identification.algorithm", "ssl.protocol", "ssl.enabled.protocols",
    "ssl.client.auth", "ssl.cipher.suites", "ssl.keymanager.algorithm", "ssl.trustmanager.algorithm",
}  # fmt: skip
# Settings accepted only at the value that means what this module does anyway.
ONLY_DEFAULT = {
    "ssl.keymanager.algorithm": "SunX509",
    "ssl.trustmanager.algorithm": "PKIX",
    "ssl.cipher.suites": "",
}


@dataclass(frozen=True)
class TlsSettings:
    """Validated `ssl.*` settings (names without any prefix); `where` prefixes messages."""

    values: Mapping[str, str]
    where: str = ""

    @classmethod
    def parse(cls, settings: Mapping[str, str], where: str = "") -> TlsSettings:
        """The `ssl.*` entries of `settings`; any other name under `ssl.` is refused."""
        values = {k: v.strip() for k, v in settings.items() if k.startswith("ssl.")}
        for name, value in values.items():
            if name not in KNOWN:
                raise ValueError(f"{where}{name} is not supported (supported: {', '.join(sorted(KNOWN))})")
            if name in ONLY_DEFAULT and value not in (ONLY_DEFAULT[name], ""):
                raise ValueError(f"{where}{name}={value} is not supported; leave it unset")
        parsed = cls(values, where)
        parsed._check()
        return parsed

    def get(self, name: str, default: str = "") -> str:
        return self.values.get(name, default) or default

    def _check(self) -> None:
        for store, given in (("keystore", self.has_key), ("truststore", self._has_trust)):
            kind = self.get(f"ssl.{store}.type", "JKS").upper()  # Kafka's default
            if given and kind != PEM:
                default = "" if f"ssl.{store}.type" in self.values else " (Kafka's default)"
                raise ValueError(
                    f"{self.where}ssl.{store}.type={kind}{default} is not supported by this client: set "
                    f"ssl.{store}.type=PEM (convert with keytool -importkeystore -deststoretype PKCS12, "
                    "then openssl pkcs12 -nodes)"
                )
            if self.get(f"ssl.{store}.password"):
                raise ValueError(
                    f"{self.where}ssl.{store}.password cannot be used with a PEM {store} "
                    "(as in Kafka; only ssl.key.password, for an encrypted key)"
                )
        if self.get("ssl.keystore.location") and self.get("ssl.keystore.key"):
            raise ValueError(f"{self.where}ssl.keystore.location and ssl.keystore.key are exclusive")
        if bool(self.get("ssl.keystore.key")) != bool(self.get("ssl.keystore.certificate.chain")):
            raise ValueError(f"{self.where}ssl.keystore.key needs ssl.keystore.certificate.chain, and back")
        if self.get("ssl.truststore.location") and self.get("ssl.truststore.certificates"):
            raise ValueError(
                f"{self.where}ssl.truststore.location and ssl.truststore.certificates are exclusive"
            )
        algorithm = self.get("ssl.endpoint.identification.algorithm", "https").lower()
        if algorithm not in ("https", "") and "ssl.endpoint.identification.algorithm" in self.values:
            raise ValueError(f"{self.where}ssl.endpoint.identification.algorithm must be https or empty")
        self._versions()
        for name in ("ssl.keystore.location", "ssl.truststore.location"):
            path = self.get(name)
            if path and not os.path.isfile(path):
                raise ValueError(f"{self.where}{name}: no such file {path}")

    def _versions(self) -> tuple[ssl.TLSVersion, ssl.TLSVersion]:
        enabled = [
            v.strip() for v in self.get("ssl.enabled.protocols", "TLSv1.2,TLSv1.3").split(",") if v.strip()
        ]
        unknown = [v for v in enabled if v not in VERSIONS]
        if unknown or not enabled:
            raise ValueError(
                f"{self.where}ssl.enabled.protocols: {unknown or enabled} not among TLSv1.2, TLSv1.3"
            )
        protocol = self.get("ssl.protocol", "TLSv1.3")
        if protocol not in ("TLS", *VERSIONS):
            raise ValueError(f"{self.where}ssl.protocol={protocol} is not supported: TLS, TLSv1.2 or TLSv1.3")
        cap = VERSIONS.get(protocol, ssl.TLSVersion.TLSv1_3)
        low, high = min(VERSIONS[v] for v in enabled), min(max(VERSIONS[v] for v in enabled), cap)
        if low > high:
            raise ValueError(f"{self.where}ssl.protocol={protocol} excludes every ssl.enabled.protocols")
        return low, high

    @property
    def _has_trust(self) -> bool:
        return bool(self.get("ssl.truststore.location") or self.get("ssl.truststore.certificates"))

    @property
    def has_key(self) -> bool:
        return bool(self.get("ssl.keystore.location") or self.get("ssl.keystore.key"))

    def client_context(self) -> ssl.SSLContext:
        """A client's context: the trust store (else the system's CAs), hostname checked
        unless `ssl.endpoint.identification.algorithm` is empty, a key store if given."""
        context = ssl.SSLContext(ssl.PROTOCOL_TLS_CLIENT)
        self._trust(context)
        context.check_hostname = self.get("ssl.endpoint.identification.algorithm", "https") != ""
        self._finish(context)
        return context

    def librdkafka(self) -> dict[str, str]:
        """librdkafka's configuration for a client with these settings. librdkafka has no
        setting for TLS versions: it speaks TLS 1.2 and 1.3, and a narrower range is refused."""
        if self._versions() != (ssl.TLSVersion.TLSv1_2, ssl.TLSVersion.TLSv1_3):
            raise ValueError(
                f"{self.where}ssl.enabled.protocols and ssl.protocol: librdkafka speaks TLSv1.2 and TLSv1.3 "
                "and cannot be held to fewer; leave them unset"
            )
        checked = self.get("ssl.endpoint.identification.algorithm", "https") != ""
        options = {"ssl.endpoint.identification.algorithm": "https" if checked else "none"}
        if self.get("ssl.truststore.location"):
            options["ssl.ca.location"] = self.get("ssl.truststore.location")
        elif self.get("ssl.truststore.certificates"):
            options["ssl.ca.pem"] = self.get("ssl.truststore.certificates")
        else:
            options["ssl.ca.location"] = "probe"  # the system's CAs, as `_trust` loads them
        if self.get("ssl.keystore.location"):  # one PEM file holding the key and its chain
            options["ssl.key.location"] = options["ssl.certificate.location"] = self.get(
                "ssl.keystore.location"
            )
        elif self.get("ssl.keystore.key"):
            options["ssl.key.pem"] = self.get("ssl.keystore.key")
            options["ssl.certificate.pem"] = self.get("ssl.keystore.certificate.chain")
        if self.get("ssl.key.password"):
            options["ssl.key.password"] = self.get("ssl.key.password")
        return options

    def _trust(self, context: ssl.SSLContext) -> None:
        if self.get("ssl.truststore.location"):
            context.load_verify_locations(cafile=self.get("ssl.truststore.location"))
        elif self.get("ssl.truststore.certificates"):
            context.load_verify_locations(cadata=self.get("ssl.truststore.certificates"))
        else:
            context.load_default_certs(ssl.Purpose.SERVER_AUTH)

    def _finish(self, context: ssl.SSLContext) -> None:
        context.minimum_version, context.maximum_version = self._versions()
        password = self.get("ssl.key.password") or None
        try:
            if self.get("ssl.keystore.location"):
                context.load_cert_chain(self.get("ssl.keystore.location"), password=password)
            elif self.get("ssl.keystore.key"):
                chain, key = self.get("ssl.keystore.certificate.chain"), self.get("ssl.keystore.key")
                _load_inline_chain(context, chain, key, password)
        except (ssl.SSLError, OSError) as exc:
            raise ValueError(
                f"{self.where}ssl.keystore: cannot load the key and certificates ({exc})"
            ) from exc


def _load_inline_chain(context: ssl.SSLContext, chain: str, key: str, password: str | None) -> None:
    """`load_cert_chain` reads files only: the inline PEM goes through a private temporary file."""
    fd, path = tempfile.mkstemp(prefix="keystore-", suffix=".pem")
    try:
        with os.fdopen(fd, "w") as out:
            out.write(f"{key.strip()}\n{chain.strip()}\n")
        context.load_cert_chain(path, password=password)
    finally:
        os.unlink(path)

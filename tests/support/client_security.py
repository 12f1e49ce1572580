"""How each real client is told to use TLS and SASL: one description, four dialects.

librdkafka (confluent-kafka, kcat), kafka-python and aiokafka name the same settings
differently; tests describe the connection once and hand each client its own spelling.
"""

from __future__ import annotations

import ssl
from dataclasses import dataclass
from pathlib import Path
from typing import Any


@dataclass(frozen=True)
class ClientSecurity:
    protocol: str  # SSL, SASL_SSL or SASL_PLAINTEXT
    ca: Path | None = None
    certificate: Path | None = None  # client certificate chain (mutual TLS)
    key: Path | None = None
    mechanism: str | None = None  # PLAIN, SCRAM-SHA-256, SCRAM-SHA-512
    username: str | None = None
    password: str | None = None

    def with_user(self, username: str, password: str) -> ClientSecurity:
        return ClientSecurity(
            self.protocol, self.ca, self.certificate, self.key, self.mechanism, username, password
        )

    def confluent(self) -> dict[str, str]:
        out = {"security.protocol": self.protocol.lower()}
        if self.ca is not None:
            out["ssl.ca.location"] = str(self.ca)
        if self.certificate is not None and self.key is not None:
            out["ssl.certificate.location"] = str(self.certificate)
            out["ssl.key.location"] = str(self.key)
        if self.mechanism is not None:
            out.update(
                {"sasl.mechanisms": self.mechanism, "sasl.username": self.username or "",
                 "sasl.password": self.password or ""}
            )  # fmt: skip
        return out

    def kcat(self) -> list[str]:
        return [arg for name, value in self.confluent().items() for arg in ("-X", f"{name}={value}")]

    def kafka_python(self) -> dict[str, Any]:
        out: dict[str, Any] = {"security_protocol": self.protocol}
        if self.ca is not None:
            out.update(ssl_cafile=str(self.ca), ssl_check_hostname=True)
        if self.certificate is not None and self.key is not None:
            out.update(ssl_certfile=str(self.certificate), ssl_keyfile=str(self.key))
        return out | self._python_sasl()

    def aiokafka(self) -> dict[str, Any]:
        out: dict[str, Any] = {"security_protocol": self.protocol}
        if self.protocol.endswith("SSL"):
            context = ssl.create_default_context(cafile=str(self.ca) if self.ca else None)
            if self.certificate is not None and self.key is not None:
                context.load_cert_chain(str(self.certificate), str(self.key))
            out["ssl_context"] = context
        return out | self._python_sasl()

    def _python_sasl(self) -> dict[str, Any]:
        """kafka-python and aiokafka name SASL settings alike."""
        if self.mechanism is None:
            return {}
        return {"sasl_mechanism": self.mechanism, "sasl_plain_username": self.username,
                "sasl_plain_password": self.password}  # fmt: skip


def confluent_settings(security: ClientSecurity | None) -> dict[str, str]:
    return security.confluent() if security is not None else {}


def kafka_python_settings(security: ClientSecurity | None) -> dict[str, Any]:
    return security.kafka_python() if security is not None else {}


def aiokafka_settings(security: ClientSecurity | None) -> dict[str, Any]:
    return security.aiokafka() if security is not None else {}


def kcat_settings(security: ClientSecurity | None) -> list[str]:
    return security.kcat() if security is not None else []

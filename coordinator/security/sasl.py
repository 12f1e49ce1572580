"""SASL authentication on SASL_PLAINTEXT and SASL_SSL listeners (placeholder until offered)."""

from __future__ import annotations

from dataclasses import dataclass

API_VERSIONS, SASL_HANDSHAKE, SASL_AUTHENTICATE = 18, 17, 36
PRE_AUTHENTICATION_APIS = frozenset({API_VERSIONS, SASL_HANDSHAKE, SASL_AUTHENTICATE})


@dataclass(slots=True)
class SaslState:
    enabled: tuple[str, ...]
    complete: bool = False

"""The client side of SASL PLAIN (RFC 4616) and SCRAM-SHA-256/512 (RFC 5802, RFC 7677).

Sans-IO: a mechanism gives the first message, then turns each server message into the next
one, or None once the exchange is over; the protocol client carries the bytes in
SaslAuthenticate requests. SCRAM checks the server too: its nonce must extend the client's,
its iteration count must be at least Kafka's minimum (4096), and its final signature must
prove it knows the salted password; any failure is an `AuthenticationFailed`.
"""

from __future__ import annotations

import base64
import hashlib
import hmac
import secrets
import unicodedata

MIN_ITERATIONS = 4096  # Kafka's ScramMechanism minimum
SCRAM_HASHES = {"SCRAM-SHA-256": "sha256", "SCRAM-SHA-512": "sha512"}
MECHANISMS = ("PLAIN", *SCRAM_HASHES)


class AuthenticationFailed(ConnectionError):
    """The SASL exchange failed; the message says why. A ConnectionError, so that callers
    that retry an unreachable coordinator retry (and report) this too."""


class PlainClient:
    mechanism = "PLAIN"

    def __init__(self, username: str, password: str) -> None:
        self.username, self.password = username, password

    def first_message(self) -> bytes:
        return f"\0{self.username}\0{self.password}".encode()

    def respond(self, challenge: bytes) -> bytes | None:
        return None  # the server's answer to PLAIN carries nothing


class ScramClient:
    def __init__(self, mechanism: str, username: str, password: str, nonce: str | None = None) -> None:
        self.mechanism, self.hash = mechanism, SCRAM_HASHES[mechanism]
        self.username, self.password = username, password
        self.nonce = nonce or base64.b64encode(secrets.token_bytes(24)).decode()
        name = username.replace("=", "=3D").replace(",", "=2C")
        self._first_bare = f"n={name},r={self.nonce}"
        self._server_signature: bytes | None = None

    def first_message(self) -> bytes:
        return f"n,,{self._first_bare}".encode()

    def respond(self, challenge: bytes) -> bytes | None:
        if self._server_signature is None:
            return self._final_message(challenge.decode())
        self._verify_server(challenge.decode())
        return None

    def _final_message(self, server_first: str) -> bytes:
        fields = _attributes(server_first)
        if "e" in fields:
            raise AuthenticationFailed(f"{self.mechanism}: the server refused: {fields['e']}")
        nonce, salt, iterations = fields.get("r", ""), fields.get("s", ""), int(fields.get("i", "0") or 0)
        if not nonce.startswith(self.nonce) or len(nonce) == len(self.nonce):
            raise AuthenticationFailed(f"{self.mechanism}: the server's nonce does not extend the client's")
        if iterations < MIN_ITERATIONS:
            raise AuthenticationFailed(f"{self.mechanism}: {iterations} iterations is below {MIN_ITERATIONS}")
        salted = hashlib.pbkdf2_hmac(
            self.hash,
            unicodedata.normalize("NFKC", self.password).encode(),
            base64.b64decode(salt),
            iterations,
        )
        client_key = self._hmac(salted, b"Client Key")
        without_proof = f"c=biws,r={nonce}"
        auth_message = f"{self._first_bare},{server_first},{without_proof}".encode()
        signature = self._hmac(hashlib.new(self.hash, client_key).digest(), auth_message)
        proof = bytes(a ^ b for a, b in zip(client_key, signature, strict=True))
        self._server_signature = self._hmac(self._hmac(salted, b"Server Key"), auth_message)
        return f"{without_proof},p={base64.b64encode(proof).decode()}".encode()

    def _verify_server(self, server_final: str) -> None:
        fields = _attributes(server_final)
        if "e" in fields:
            raise AuthenticationFailed(f"{self.mechanism}: authentication failed: {fields['e']}")
        expected = self._server_signature or b""
        if not hmac.compare_digest(base64.b64decode(fields.get("v", "")), expected):
            raise AuthenticationFailed(f"{self.mechanism}: the server's signature is wrong")

    def _hmac(self, key: bytes, message: bytes) -> bytes:
        return hmac.new(key, message, self.hash).digest()


def _attributes(message: str) -> dict[str, str]:
    return {part[0]: part[2:] for part in message.split(",") if len(part) >= 2 and part[1] == "="}


def mechanism_client(mechanism: str, username: str, password: str) -> PlainClient | ScramClient:
    if mechanism == "PLAIN":
        return PlainClient(username, password)
    return ScramClient(mechanism, username, password)

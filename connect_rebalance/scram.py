"""SCRAM (RFC 5802, RFC 7677) as Apache Kafka uses it: SCRAM-SHA-256 and SCRAM-SHA-512.

Shared by the coordinator (which keeps salted credentials and checks client proofs), the
`connect-rebalance users` command (which salts passwords before sending them, as Kafka's
AlterUserScramCredentials expects) and the project's own protocol client (`ScramClient`).
Pure functions over bytes: no IO.

A credential is what the server stores: salt, iteration count, StoredKey = H(ClientKey)
and ServerKey; the password and the salted password are never kept.
"""

from __future__ import annotations

import base64
import hashlib
import hmac
import secrets
from dataclasses import dataclass

# Kafka's ScramMechanism: name -> (hash, type id on the wire).
MECHANISMS = {"SCRAM-SHA-256": ("sha256", 1), "SCRAM-SHA-512": ("sha512", 2)}
MECHANISM_BY_TYPE = {type_id: name for name, (_, type_id) in MECHANISMS.items()}
MIN_ITERATIONS, MAX_ITERATIONS = 4096, 16384
DEFAULT_ITERATIONS = 4096


@dataclass(frozen=True, slots=True)
class ScramCredential:
    salt: bytes
    stored_key: bytes
    server_key: bytes
    iterations: int


def _hash(mechanism: str) -> str:
    return MECHANISMS[mechanism][0]


def _hmac(mechanism: str, key: bytes, message: bytes) -> bytes:
    return hmac.new(key, message, _hash(mechanism)).digest()


def salted_password(mechanism: str, password: str, salt: bytes, iterations: int) -> bytes:
    return hashlib.pbkdf2_hmac(_hash(mechanism), password.encode(), salt, iterations)


def credential_from_salted_password(
    mechanism: str, salted: bytes, salt: bytes, iterations: int
) -> ScramCredential:
    client_key = _hmac(mechanism, salted, b"Client Key")
    stored_key = hashlib.new(_hash(mechanism), client_key).digest()
    return ScramCredential(salt, stored_key, _hmac(mechanism, salted, b"Server Key"), iterations)


def new_salt() -> bytes:
    return secrets.token_bytes(32)


def new_credential(mechanism: str, password: str, iterations: int = DEFAULT_ITERATIONS) -> ScramCredential:
    salt = new_salt()
    return credential_from_salted_password(
        mechanism, salted_password(mechanism, password, salt, iterations), salt, iterations
    )


def password_matches(mechanism: str, credential: ScramCredential, password: str) -> bool:
    """Whether `password` is the one `credential` was made from (SASL/PLAIN checks it so)."""
    salted = salted_password(mechanism, password, credential.salt, credential.iterations)
    candidate = credential_from_salted_password(mechanism, salted, credential.salt, credential.iterations)
    return hmac.compare_digest(candidate.stored_key, credential.stored_key)


def client_proof(mechanism: str, stored_key: bytes, client_key: bytes, auth_message: bytes) -> bytes:
    signature = _hmac(mechanism, stored_key, auth_message)
    return bytes(a ^ b for a, b in zip(client_key, signature, strict=True))


def proof_is_valid(mechanism: str, credential: ScramCredential, proof: bytes, auth_message: bytes) -> bool:
    signature = _hmac(mechanism, credential.stored_key, auth_message)
    if len(proof) != len(signature):
        return False
    client_key = bytes(a ^ b for a, b in zip(proof, signature, strict=True))
    return hmac.compare_digest(hashlib.new(_hash(mechanism), client_key).digest(), credential.stored_key)


def server_signature(mechanism: str, server_key: bytes, auth_message: bytes) -> bytes:
    return _hmac(mechanism, server_key, auth_message)


def escape_username(name: str) -> str:
    """saslname: ',' and '=' written as =2C and =3D."""
    return name.replace("=", "=3D").replace(",", "=2C")


def unescape_username(name: str) -> str:
    if any(part[:2] not in ("2C", "3D") for part in name.split("=")[1:]):
        raise ValueError(f"username {name!r} has an '=' that is not =2C or =3D")
    return name.replace("=2C", ",").replace("=3D", "=")


def parse_attributes(message: str) -> dict[str, str]:
    """`a=1,b=2` -> {"a": "1", "b": "2"} (values may contain '=')."""
    out: dict[str, str] = {}
    for part in message.split(","):
        name, sep, value = part.partition("=")
        if not sep or len(name) != 1:
            raise ValueError(f"malformed SCRAM attribute {part!r}")
        out[name] = value
    return out


class ScramClient:
    """The client side of one SCRAM exchange: first message, final message, verify server."""

    def __init__(self, mechanism: str, username: str, password: str) -> None:
        if mechanism not in MECHANISMS:
            raise ValueError(f"{mechanism} is not a SCRAM mechanism")
        self.mechanism, self.username, self.password = mechanism, username, password
        self.nonce = secrets.token_urlsafe(24)
        self._client_first_bare = f"n={escape_username(username)},r={self.nonce}"
        self._auth_message = b""
        self._salted = b""

    def first_message(self) -> bytes:
        return f"n,,{self._client_first_bare}".encode()

    def final_message(self, server_first: bytes) -> bytes:
        attributes = parse_attributes(server_first.decode())
        nonce, salt, iterations = attributes["r"], base64.b64decode(attributes["s"]), int(attributes["i"])
        if not nonce.startswith(self.nonce):
            raise ValueError("the server's nonce does not extend ours")
        self._salted = salted_password(self.mechanism, self.password, salt, iterations)
        without_proof = f"c=biws,r={nonce}"
        self._auth_message = f"{self._client_first_bare},{server_first.decode()},{without_proof}".encode()
        client_key = _hmac(self.mechanism, self._salted, b"Client Key")
        stored_key = hashlib.new(_hash(self.mechanism), client_key).digest()
        proof = client_proof(self.mechanism, stored_key, client_key, self._auth_message)
        return f"{without_proof},p={base64.b64encode(proof).decode()}".encode()

    def verify_server_final(self, server_final: bytes) -> None:
        attributes = parse_attributes(server_final.decode())
        if "e" in attributes:
            raise ValueError(f"the server refused: {attributes['e']}")
        server_key = _hmac(self.mechanism, self._salted, b"Server Key")
        expected = server_signature(self.mechanism, server_key, self._auth_message)
        if not hmac.compare_digest(base64.b64decode(attributes.get("v", "")), expected):
            raise ValueError("the server's signature does not match: it does not know our credential")

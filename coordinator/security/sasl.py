"""SASL authentication on SASL_PLAINTEXT and SASL_SSL listeners: PLAIN and SCRAM-SHA-256/512.

Theory of operation, as Kafka's SaslServerAuthenticator:
- a connection on a SASL listener starts unauthenticated; the server answers ApiVersions,
  SaslHandshake (v1: the mechanism) and SaslAuthenticate (tokens), and closes the
  connection on anything else;
- a mechanism that is not enabled gets UNSUPPORTED_SASL_MECHANISM with the enabled list,
  and the connection is closed; so is a SaslAuthenticate before the handshake
  (ILLEGAL_SASL_STATE);
- a failed exchange gets SASL_AUTHENTICATION_FAILED with Kafka's message, then the
  connection is closed; a successful one makes `User:<name>` the connection's principal.

Users are the SCRAM credentials in the security store. SCRAM checks the client's proof
against the stored key (RFC 5802); PLAIN checks the password against any of the user's
SCRAM credentials by salting it again, so one `connect-rebalance users add` serves both.
Delegation tokens (the `tokenauth` SCRAM extension) and channel binding are not offered.
"""

from __future__ import annotations

import asyncio
import base64
import secrets
from collections.abc import Callable
from dataclasses import dataclass
from typing import TYPE_CHECKING

from connect_rebalance.protocol.api_keys import ApiKey
from connect_rebalance.scram import (
    MECHANISMS,
    ScramCredential,
    parse_attributes,
    password_matches,
    proof_is_valid,
    server_signature,
    unescape_username,
)

if TYPE_CHECKING:
    from .store import SecurityStore

PRE_AUTHENTICATION_APIS = frozenset({ApiKey.API_VERSIONS, ApiKey.SASL_HANDSHAKE, ApiKey.SASL_AUTHENTICATE})

CredentialLookup = Callable[[str, str], ScramCredential | None]  # (user, mechanism) -> credential


def store_lookup(store: SecurityStore | None) -> CredentialLookup:
    """Credentials from the security store (none when it is not open: in-process tests)."""

    def lookup(user: str, mechanism: str) -> ScramCredential | None:
        return store.credential(user, mechanism) if store is not None else None

    return lookup


class AuthenticationFailed(Exception):
    """The exchange failed; the message goes to the client in SaslAuthenticate's error_message."""


def invalid_credentials(mechanism: str) -> AuthenticationFailed:
    # Kafka's wording, which clients show to their users.
    return AuthenticationFailed(
        "Authentication failed during authentication due to invalid credentials "
        f"with SASL mechanism {mechanism}"
    )


@dataclass(slots=True)
class SaslState:
    enabled: tuple[str, ...]
    mechanism: str | None = None
    exchange: ScramServerExchange | None = None
    complete: bool = False
    # SaslHandshake v0: the tokens follow as bare size-prefixed frames, not SaslAuthenticate.
    raw_tokens: bool = False

    def begin(self, mechanism: str, lookup: CredentialLookup) -> None:
        self.mechanism = mechanism
        if mechanism in MECHANISMS:
            self.exchange = ScramServerExchange(mechanism, lookup)

    async def step(self, token: bytes, lookup: CredentialLookup) -> tuple[bytes, str | None]:
        """Feed one client token: (the server's token, the user once authenticated).

        Raises AuthenticationFailed. PLAIN salts the password again (a few ms), off the loop.
        """
        if self.exchange is None:
            user = await asyncio.to_thread(check_plain, token, lookup)
            self.complete = True
            return b"", user
        challenge = self.exchange.step(token)
        if not self.exchange.finished:
            return challenge, None
        self.complete = True
        return challenge, self.exchange.user


def check_plain(token: bytes, lookup: CredentialLookup) -> str:
    """The user a PLAIN token (authzid NUL user NUL password) authenticates, or AuthenticationFailed."""
    parts = token.split(b"\x00")
    if len(parts) != 3:
        raise AuthenticationFailed("Invalid SASL/PLAIN response: expected 3 tokens, got " + str(len(parts)))
    try:
        authorization_id, username, password = (part.decode() for part in parts)
    except UnicodeDecodeError:
        raise AuthenticationFailed("Invalid SASL/PLAIN response: not UTF-8") from None
    if not username:
        raise AuthenticationFailed("Authentication failed: username not specified")
    if not password:
        raise AuthenticationFailed("Authentication failed: password not specified")
    if authorization_id and authorization_id != username:
        raise AuthenticationFailed(
            "Authentication failed: Client requested an authorization id that is different from username"
        )
    for mechanism in ("SCRAM-SHA-512", "SCRAM-SHA-256"):
        credential = lookup(username, mechanism)
        if credential is not None:
            if password_matches(mechanism, credential, password):
                return username
            break
    raise invalid_credentials("PLAIN")


class ScramServerExchange:
    """The server side of one SCRAM exchange: client-first in, server-first out; client-final
    in, server-final out and the authenticated user known."""

    def __init__(self, mechanism: str, lookup: CredentialLookup) -> None:
        assert mechanism in MECHANISMS
        self.mechanism, self.lookup = mechanism, lookup
        self.user: str | None = None
        self._credential: ScramCredential | None = None
        self._client_first_bare = ""
        self._server_first = ""
        self._nonce = ""
        self._gs2_header = ""
        self.finished = False  # the client's proof was checked and the server's signature sent

    def step(self, token: bytes) -> bytes:
        try:
            message = token.decode()
            if self._credential is None:
                return self._first(message).encode()
            return self._final(message).encode()
        except (UnicodeDecodeError, ValueError, KeyError) as exc:
            raise AuthenticationFailed(f"Invalid {self.mechanism} message: {exc}") from None

    def _first(self, message: str) -> str:
        flag, _, rest = message.partition(",")
        authorization_id, _, bare = rest.partition(",")
        if flag not in ("n", "y"):
            raise AuthenticationFailed(f"{self.mechanism}: channel binding is not supported")
        attributes = parse_attributes(bare)
        user = unescape_username(attributes["n"])
        if authorization_id and authorization_id != f"a={attributes['n']}":
            raise AuthenticationFailed(
                "Authentication failed: Client requested an authorization id that is different from username"
            )
        extensions = set(attributes) - {"n", "r"}
        if attributes.get("tokenauth") or extensions:
            raise AuthenticationFailed(
                f"{self.mechanism}: extensions {sorted(extensions)} (delegation tokens) are not supported"
            )
        credential = self.lookup(user, self.mechanism)
        if credential is None:
            raise invalid_credentials(self.mechanism)
        self.user, self._credential = user, credential
        self._gs2_header = f"{flag},{authorization_id},"
        self._client_first_bare = bare
        self._nonce = attributes["r"] + secrets.token_urlsafe(24)
        salt = base64.b64encode(credential.salt).decode()
        self._server_first = f"r={self._nonce},s={salt},i={credential.iterations}"
        return self._server_first

    def _final(self, message: str) -> str:
        assert self._credential is not None
        without_proof, _, proof_part = message.rpartition(",p=")
        attributes = parse_attributes(without_proof)
        # Kafka checks that the nonce ends with the server's: some librdkafka releases send the
        # client nonce twice (client nonce + the whole server nonce).
        if not attributes["r"].endswith(self._nonce):
            raise AuthenticationFailed(f"{self.mechanism}: invalid client nonce in the final client message")
        if base64.b64decode(attributes["c"]) != self._gs2_header.encode():
            raise AuthenticationFailed(f"{self.mechanism}: invalid channel binding")
        auth_message = f"{self._client_first_bare},{self._server_first},{without_proof}".encode()
        if not proof_is_valid(self.mechanism, self._credential, base64.b64decode(proof_part), auth_message):
            raise invalid_credentials(self.mechanism)
        signature = server_signature(self.mechanism, self._credential.server_key, auth_message)
        self.finished = True
        return f"v={base64.b64encode(signature).decode()}"

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

Re-authentication (KIP-368), as Kafka's KafkaChannel and SocketServer do it:
- a successful exchange gives the session a lifetime (`session_lifetime_ms`): the mechanism's
  `connections.max.reauth.ms` on that listener, none when it is 0 or less (the default);
  SaslAuthenticate v1+ tells the client, which re-authenticates before it ends;
- on an authenticated connection with a lifetime, a SaslHandshake starts a new exchange on the
  same connection, at most once a second (a second one within the second is answered
  ILLEGAL_SASL_STATE, as on a connection without a lifetime); requests already answered are
  untouched, as the connection answers in order;
- the new exchange must use the same mechanism (another enabled one gets its handshake
  answered, then the connection is closed at the next frame) and end in the same principal
  ("Cannot change principals during re-authentication ...", then the connection is closed);
  success starts a new lifetime;
- a request on a connection whose lifetime has passed closes it unanswered (the client
  connects again), unless it is the SaslHandshake that starts re-authentication.
Times are the event loop's monotonic seconds, passed in.

Users are the SCRAM credentials in the security store. SCRAM checks the client's proof
against the stored key (RFC 5802); PLAIN checks the password against any of the user's
SCRAM credentials by salting it again, so one `connect-rebalance users add` serves both.
Delegation tokens (the `tokenauth` SCRAM extension) and channel binding are not offered.
"""

from __future__ import annotations

import asyncio
import base64
import secrets
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
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
    from coordinator.security.store import SecurityStore

PRE_AUTHENTICATION_APIS = frozenset({ApiKey.API_VERSIONS, ApiKey.SASL_HANDSHAKE, ApiKey.SASL_AUTHENTICATE})

CredentialLookup = Callable[[str, str], ScramCredential | None]  # (user, mechanism) -> credential


def store_lookup(store: SecurityStore | None) -> CredentialLookup:
    """Credentials from the security store (none when it is not open: in-process tests)."""

    def lookup(user: str, mechanism: str) -> ScramCredential | None:
        return store.credential(user, mechanism) if store is not None else None

    return lookup


# Kafka's MIN_REAUTH_INTERVAL_ONE_SECOND_NANOS: re-authentications start at most this often.
MIN_REAUTHENTICATION_INTERVAL_S = 1.0


class AuthenticationFailed(Exception):
    """The exchange failed; the message goes to the client in SaslAuthenticate's error_message."""


class InvalidCredentials(AuthenticationFailed):
    """A wrong password or an unknown user, in Kafka's wording, which clients show to their users."""

    def __init__(self, mechanism: str, during: str = "authentication") -> None:
        super().__init__(
            f"Authentication failed during {during} due to invalid credentials "
            f"with SASL mechanism {mechanism}"
        )
        self.mechanism = mechanism


def invalid_credentials(mechanism: str) -> AuthenticationFailed:
    return InvalidCredentials(mechanism)


def session_lifetime_ms(max_reauth_ms: int, credential_lifetime_ms: int | None = None) -> int | None:
    """How long a session may go on before it must re-authenticate (None: for ever), as Kafka's
    SaslServerAuthenticator computes it: the lesser of `connections.max.reauth.ms` (when above
    0) and what is left of the credential's own lifetime (a token's; PLAIN and SCRAM passwords
    have none), never below 0."""
    limits = [limit for limit in (max_reauth_ms if max_reauth_ms > 0 else None, credential_lifetime_ms)
              if limit is not None]  # fmt: skip
    return max(0, min(limits)) if limits else None


@dataclass(frozen=True, slots=True)
class Reauthentication:
    """What a re-authentication must keep: the previous exchange's mechanism and principal."""

    mechanism: str
    principal: str


@dataclass(slots=True)
class SaslState:
    enabled: tuple[str, ...]
    # connections.max.reauth.ms of this listener, by mechanism (absent: 0, no lifetime).
    max_reauth_ms: Mapping[str, int] = field(default_factory=dict)
    mechanism: str | None = None
    exchange: ScramServerExchange | None = None
    complete: bool = False
    # SaslHandshake v0: the tokens follow as bare size-prefixed frames, not SaslAuthenticate.
    raw_tokens: bool = False
    # While re-authenticating: what the new exchange must keep.
    previous: Reauthentication | None = None
    # A re-authentication's handshake named another mechanism: the next frame closes.
    bad_mechanism: str | None = None
    # The end of the session's lifetime (None: none), and when the last re-authentication began.
    expires_at: float | None = None
    reauthenticated_at: float | None = None

    def begin(self, mechanism: str, lookup: CredentialLookup) -> None:
        self.mechanism = mechanism
        if mechanism in MECHANISMS:
            self.exchange = ScramServerExchange(mechanism, lookup)

    def may_reauthenticate(self, now: float) -> bool:
        """Whether a SaslHandshake now starts re-authentication (Kafka's
        maybeBeginServerReauthentication): the session has a lifetime, and the last
        re-authentication began at least a second ago."""
        return (
            self.complete
            and self.expires_at is not None
            and (
                self.reauthenticated_at is None
                or now - self.reauthenticated_at >= MIN_REAUTHENTICATION_INTERVAL_S
            )
        )

    def begin_reauthentication(self, principal: str, now: float) -> None:
        """A new exchange on the authenticated connection; its lifetime runs on meanwhile."""
        assert self.complete and self.mechanism is not None
        self.previous = Reauthentication(self.mechanism, principal)
        self.mechanism, self.exchange, self.complete, self.raw_tokens = None, None, False, False
        self.reauthenticated_at = now

    def choose(self, mechanism: str, lookup: CredentialLookup) -> None:
        """The handshake's mechanism, which is enabled: the exchange begins, or, when a
        re-authentication names another than before, the next frame closes the connection."""
        if self.previous is not None and mechanism != self.previous.mechanism:
            self.bad_mechanism = (
                f"SASL mechanism '{mechanism}' requested by client is not supported for "
                f"re-authentication of mechanism '{self.previous.mechanism}'"
            )
            return
        self.begin(mechanism, lookup)

    def expired(self, now: float) -> bool:
        return self.complete and self.expires_at is not None and now > self.expires_at

    async def step(self, token: bytes, lookup: CredentialLookup) -> tuple[bytes, str | None]:
        """Feed one client token: (the server's token, the user once authenticated).

        Raises AuthenticationFailed. PLAIN salts the password again (a few ms), off the loop.
        """
        try:
            if self.exchange is None:
                user: str | None = await asyncio.to_thread(check_plain, token, lookup)
                challenge = b""
            else:
                challenge = self.exchange.step(token)
                user = self.exchange.user if self.exchange.finished else None
        except InvalidCredentials as failure:
            if self.previous is None:
                raise
            raise InvalidCredentials(failure.mechanism, "re-authentication") from None
        if user is not None:
            self._same_principal(f"User:{user}")
            self.complete = True
        return challenge, user

    def _same_principal(self, principal: str) -> None:
        if self.previous is not None and principal != self.previous.principal:
            before, after = self.previous.principal, principal
            raise AuthenticationFailed(
                "Cannot change principals during re-authentication from "
                + before.replace(":", ".", 1) + ": " + after.replace(":", ".", 1)
            )  # fmt: skip

    def start_session(self, now: float) -> int:
        """The lifetime of the session that has just authenticated, in ms (0: none), which
        SaslAuthenticate v1+ answers; the session expires that long after `now`."""
        assert self.complete and self.mechanism is not None
        self.previous = None
        lifetime = session_lifetime_ms(self.max_reauth_ms.get(self.mechanism, 0))
        self.expires_at = None if lifetime is None else now + lifetime / 1000
        return lifetime or 0


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

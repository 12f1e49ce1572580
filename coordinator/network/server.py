"""The network edge: asyncio listeners speaking Kafka's framing, in plain text or TLS.

Each configured listener (`listeners`, coordinator/security/listeners.py) is one server;
TLS listeners (SSL, SASL_SSL) do their handshake before the first frame is read, and
every connection carries a session (coordinator/security/session.py) whose principal each
request is authorized as. On SASL listeners nothing but ApiVersions, SaslHandshake and
SaslAuthenticate is answered until authentication succeeds; anything else closes the
connection, as Kafka's broker does. Once authenticated, a SaslHandshake may start a
re-authentication, and a request after the session's lifetime closes the connection
(KIP-368, security/sasl.py).

Each connection (connection.py) answers its requests strictly in order, one at a time, as
Kafka's broker does, and writes pipelined answers together. What this layer guarantees:
- a frame larger than `socket.request.max.bytes`, a header that does not parse, a body that
  does not decode or states counts over the decoder's limits (decoder_limits.py), an
  unknown API key or an unadvertised version closes that connection, with a log line
  (ApiVersions excepted: KIP-511 answers v0 with UNSUPPORTED_VERSION and our ranges);
- a handler that fails unexpectedly is logged with its request and the connection closed;
  no other connection notices, and handlers validate before they change state;
- a connection idle for `connections.max.idle.ms` is closed.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import socket
import struct

from connect_rebalance.protocol import codec
from connect_rebalance.protocol.api_keys import ApiKey
from connect_rebalance.protocol.codec import FrameError, RequestHeader, UnsupportedApiError
from connect_rebalance.tls_server import certificate_principal, server_context
from coordinator.apis import HANDLERS, RequestContext
from coordinator.apis.cluster import advertised_api_versions
from coordinator.apis.registry import CloseConnection
from coordinator.broker import Broker
from coordinator.configs.coordinator import parse_overrides
from coordinator.group_service import GroupService
from coordinator.network.connection import Connection
from coordinator.network.connection_limits import ConnectionLimits
from coordinator.security.listeners import Listener
from coordinator.security.sasl import PRE_AUTHENTICATION_APIS, AuthenticationFailed, SaslState, store_lookup
from coordinator.security.session import Session
from coordinator.security.settings import max_reauth_ms_by_mechanism, sasl_mechanisms, tls_settings
from coordinator.turns import Turns

log = logging.getLogger(__name__)

CLOSE = None  # _answer() returns None to close the connection, b"" to send nothing
# Frames from this size are decoded on a thread, so that the other connections are served
# meanwhile: a frame of small elements decodes at several microseconds per element.
DECODE_ON_A_THREAD_BYTES = 1 << 20


class CoordinatorServer:
    def __init__(self, broker: Broker, groups: GroupService) -> None:
        self.broker, self.groups = broker, groups
        self.listeners = broker.config.kafka_listeners
        self._servers: list[asyncio.base_events.Server] = []
        self._connections: set[asyncio.Task[None]] = set()
        self._turns = Turns()  # the event loop's time shared among the connections
        config = broker.config
        self.limits = ConnectionLimits(
            config.max_connections,
            config.max_connections_per_ip,
            parse_overrides(config.max_connections_per_ip_overrides),
        )
        # Per listener name: the port bound and the address advertised to its clients.
        self.ports: dict[str, int] = {}
        self.advertised: dict[str, tuple[str, int]] = {}
        # Each SASL listener's mechanisms and their connections.max.reauth.ms, read once.
        sasl_listeners = [listener.name for listener in self.listeners if listener.protocol.uses_sasl]
        self._mechanisms = {name: sasl_mechanisms(config, name) for name in sasl_listeners}
        self._max_reauth_ms = {name: max_reauth_ms_by_mechanism(config, name) for name in sasl_listeners}
        # TLS contexts are built before anything listens, so bad key material stops the start.
        self._tls = {
            listener.name: server_context(tls_settings(config, listener.name), f"listener {listener.name}")
            for listener in self.listeners
            if listener.protocol.uses_tls
        }

    @property
    def port(self) -> int:
        """The first listener's port."""
        return self.ports.get(self.listeners[0].name, 0)

    async def start(self) -> None:
        loop = asyncio.get_running_loop()
        for listener in self.listeners:
            server = await loop.create_server(
                lambda listener=listener: self._connection(listener),
                listener.host,
                listener.port,
                reuse_address=True,
                ssl=self._tls.get(listener.name),
                ssl_handshake_timeout=30 if listener.protocol.uses_tls else None,
            )
            self._servers.append(server)
            port = server.sockets[0].getsockname()[1]
            self.ports[listener.name] = port
            advertised = self.broker.config.advertised_for(listener.name)
            if advertised is None:
                host = listener.host
                advertised = (host if host not in ("", "0.0.0.0", "::") else socket.getfqdn(), port)
            self.advertised[listener.name] = advertised
            log.info("listener %s (%s) on %s:%d", listener.name, listener.protocol, listener.host, port)
        self.broker.advertised_address = self.advertised[self.listeners[0].name]

    def _connection(self, listener: Listener) -> Connection:
        config = self.broker.config

        def session_of(transport: asyncio.BaseTransport) -> Session:
            peer = transport.get_extra_info("peername")
            tls = transport.get_extra_info("ssl_object")
            certificate = tls.getpeercert(binary_form=True) if tls else None
            return self.new_session(listener, peer[0] if peer else "unknown", certificate)

        return Connection(
            self.answer, session_of, self._connections, self._turns,
            config.socket_request_max_bytes, config.connections_max_idle_ms / 1000, self.limits,
        )  # fmt: skip

    def listener_urls(self) -> list[str]:
        return [listener.url(self.ports[listener.name]) for listener in self.listeners]

    async def stop(self) -> None:
        for server in self._servers:
            server.close()
        for task in list(self._connections):
            task.cancel()
        for task in list(self._connections):
            with contextlib.suppress(asyncio.CancelledError):
                await task
        for server in self._servers:
            await server.wait_closed()

    def new_session(self, listener: Listener, client_host: str, peer_certificate: bytes | None) -> Session:
        session = Session(
            listener, client_host, self.advertised.get(listener.name, self.broker.advertised_address)
        )
        if listener.protocol.uses_sasl:
            session.sasl = SaslState(self._mechanisms[listener.name], self._max_reauth_ms[listener.name])
        elif listener.protocol.uses_tls:
            session.principal = certificate_principal(peer_certificate)
        return session

    async def answer(self, frame: bytes, session: Session) -> bytes | None:
        """A frame's answer: bytes to send, b"" for none (acks=0), None to close the connection."""
        sasl = session.sasl
        if sasl is not None and sasl.bad_mechanism is not None:
            log.warning("%s: re-authentication failed: %s; closing", session.client_host, sasl.bad_mechanism)
            return CLOSE
        if sasl is not None and sasl.raw_tokens and not sasl.complete:
            return await self._raw_sasl_token(frame, session)
        return await self._answer(frame, session)

    async def _raw_sasl_token(self, frame: bytes, session: Session) -> bytes | None:
        """After a SaslHandshake v0, tokens travel as bare size-prefixed frames (Kafka's
        original SASL framing); a failed exchange just closes the connection."""
        assert session.sasl is not None
        try:
            challenge, user = await session.sasl.step(frame, store_lookup(self.broker.security))
        except AuthenticationFailed as failure:
            log.warning("%s: SASL authentication failed: %s; closing", session.client_host, failure)
            return CLOSE
        if user is not None:
            session.principal = f"User:{user}"
            session.sasl.start_session(asyncio.get_running_loop().time())
        return struct.pack(">i", len(challenge)) + challenge

    async def _answer(self, frame: bytes, session: Session) -> bytes | None:
        client_host = session.client_host
        try:
            header, body_offset = codec.parse_request_header(frame)
        except UnsupportedApiError as exc:
            log.warning("%s (client %r): %s; closing", client_host, exc.header.client_id, exc)
            return CLOSE
        except FrameError as exc:
            log.warning("%s: malformed request header (%s); closing", client_host, exc)
            return CLOSE
        spec = HANDLERS.get(header.api_key)
        if (
            spec is not None
            and header.api_key == ApiKey.API_VERSIONS
            and header.api_version > spec.max_version
        ):
            return _api_versions_fallback(header)
        if spec is None or not spec.min_version <= header.api_version <= spec.max_version:
            log.warning(
                "%s (client %r): %s v%d is not supported; closing",
                client_host,
                header.client_id,
                codec.api_name(header.api_key),
                header.api_version,
            )
            return CLOSE
        sasl = session.sasl
        if sasl is not None and sasl.complete:
            now = asyncio.get_running_loop().time()
            if header.api_key == ApiKey.SASL_HANDSHAKE and sasl.may_reauthenticate(now):
                sasl.begin_reauthentication(session.principal, now)
            elif sasl.expired(now):
                log.info(
                    "%s (client %r): %s after the SASL session of %s expired; closing",
                    client_host,
                    header.client_id,
                    codec.api_name(header.api_key),
                    session.principal,
                )
                return CLOSE
        if not session.authenticated and header.api_key not in PRE_AUTHENTICATION_APIS:
            log.warning(
                "%s (client %r): %s before SASL authentication on listener %s; closing",
                client_host,
                header.client_id,
                codec.api_name(header.api_key),
                session.listener.name,
            )
            return CLOSE
        try:
            if len(frame) < DECODE_ON_A_THREAD_BYTES:
                request = codec.decode_request_body(header, frame, body_offset)
            else:  # a frame this size can hold millions of elements: seconds of decoding
                request = await asyncio.to_thread(codec.decode_request_body, header, frame, body_offset)
        except FrameError as exc:
            log.warning("%s (client %r): %s; closing", client_host, header.client_id, exc)
            return CLOSE
        context = RequestContext(self.broker, header, client_host, session, self.groups)
        try:
            fields = await spec.handler(context, request)
            if fields is None:
                return b""
            return codec.encode_answer(header.api_key, header.api_version, header.correlation_id, fields)
        except CloseConnection as reason:
            log.info("%s (client %r): %s; closing", client_host, header.client_id, reason)
            return CLOSE
        except Exception:
            log.exception(
                "%s (client %r): %s v%d failed; closing. Request: %r",
                client_host,
                header.client_id,
                codec.api_name(header.api_key),
                header.api_version,
                request,
            )
            return CLOSE


def _api_versions_fallback(header: RequestHeader) -> bytes:
    """KIP-511: a too-new ApiVersions gets a v0 answer with UNSUPPORTED_VERSION and our ranges."""
    fields = {"error_code": 35, "api_keys": advertised_api_versions()}
    return codec.encode_answer(ApiKey.API_VERSIONS, 0, header.correlation_id, fields)

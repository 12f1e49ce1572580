"""The network edge: one asyncio listener speaking Kafka's framing.

Per connection, requests are read and answered strictly in order, one at a time, as
Kafka's broker does (a client may pipeline; a long-poll Fetch holds only its own
connection). What this layer guarantees:
- a frame larger than `socket.request.max.bytes`, a header that does not parse, a body that
  does not decode, an unknown API key or an unadvertised version closes that connection
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
from connect_rebalance.protocol.codec import FrameError, RequestHeader, UnsupportedApiError

from .apis import HANDLERS, RequestContext
from .apis.cluster import advertised_api_versions
from .apis.registry import CloseConnection
from .broker import Broker

log = logging.getLogger(__name__)

CLOSE = None  # _answer() returns None to close the connection, b"" to send nothing


class CoordinatorServer:
    def __init__(self, broker: Broker) -> None:
        self.broker = broker
        self._server: asyncio.base_events.Server | None = None
        self._connections: set[asyncio.Task[None]] = set()
        self.port = 0

    async def start(self) -> None:
        host, port = self.broker.config.bind
        self._server = await asyncio.start_server(self._serve, host, port, reuse_address=True)
        self.port = self._server.sockets[0].getsockname()[1]
        if self.broker.config.advertised_listeners is None:
            advertised_host = host if host not in ("", "0.0.0.0", "::") else socket.getfqdn()
            self.broker.advertised_address = (advertised_host, self.port)
        log.info("listening on %s:%d", host, self.port)

    async def stop(self) -> None:
        if self._server is not None:
            self._server.close()
        for task in list(self._connections):
            task.cancel()
        for task in list(self._connections):
            with contextlib.suppress(asyncio.CancelledError):
                await task
        if self._server is not None:
            await self._server.wait_closed()

    async def _serve(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        task = asyncio.current_task()
        assert task is not None
        self._connections.add(task)
        peer = writer.get_extra_info("peername")
        client_host = peer[0] if peer else "unknown"
        idle_timeout = self.broker.config.connections_max_idle_ms / 1000
        max_size = self.broker.config.socket_request_max_bytes
        try:
            while True:
                try:
                    prefix = await asyncio.wait_for(reader.readexactly(4), idle_timeout)
                    (size,) = struct.unpack(">i", prefix)
                    if not 0 <= size <= max_size:
                        log.warning("%s: request size %d outside 0..%d; closing", client_host, size, max_size)
                        return
                    frame = await asyncio.wait_for(reader.readexactly(size), idle_timeout)
                except TimeoutError:
                    log.debug("%s: idle for %.0f s; closing", client_host, idle_timeout)
                    return
                except (asyncio.IncompleteReadError, ConnectionError):
                    return
                answer = await self._answer(frame, client_host)
                if answer is CLOSE:
                    return
                if answer:
                    writer.write(answer)
                    await writer.drain()
        except (ConnectionError, asyncio.CancelledError):
            pass
        finally:
            self._connections.discard(task)
            writer.close()
            with contextlib.suppress(Exception):
                await writer.wait_closed()

    async def _answer(self, frame: bytes, client_host: str) -> bytes | None:
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
            and header.api_key == codec.API_VERSIONS_KEY
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
        try:
            request = codec.decode_request_body(header, frame, body_offset)
        except FrameError as exc:
            log.warning("%s (client %r): %s; closing", client_host, header.client_id, exc)
            return CLOSE
        context = RequestContext(self.broker, header, client_host)
        try:
            fields = await spec.handler(context, request)
            if fields is None:
                return b""
            response = codec.build_response(header.api_key, header.api_version, fields)
            return codec.encode_response_frame(
                header.api_key, header.api_version, header.correlation_id, response
            )
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
    response = codec.build_response(
        codec.API_VERSIONS_KEY, 0, {"error_code": 35, "api_keys": advertised_api_versions()}
    )
    return codec.encode_response_frame(codec.API_VERSIONS_KEY, 0, header.correlation_id, response)

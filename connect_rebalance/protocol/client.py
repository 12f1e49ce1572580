"""The project's own Kafka-protocol client: one asyncio connection, requests as dicts.

Workers speak the connect group APIs (which no Kafka client library knows) through it, and
tests drive the coordinator with it. Requests are pipelined: each gets a correlation id and
a future; the reader task resolves them in order. A closed or broken connection fails every
request in flight with `ConnectionError`, which callers treat as "the coordinator is
unreachable".

With `security` (Kafka's client settings, `client_security.ClientSecurity`) the connection
is TLS-wrapped on SSL and SASL_SSL, and on SASL_* it authenticates before any other
request: SaslHandshake (v1) names the mechanism, then SaslAuthenticate (v2) carries the
mechanism's messages until it is done. A refusal is `AuthenticationFailed` with the
coordinator's message; the connection is closed.
"""

from __future__ import annotations

import asyncio
import contextlib
import itertools
import struct
from typing import Any

from ..client_security import ClientSecurity
from ..sasl_client import AuthenticationFailed
from . import codec
from .api_keys import ApiKey
from .codec import RequestHeader


class ProtocolClient:
    def __init__(
        self,
        host: str,
        port: int,
        client_id: str = "connect-rebalance",
        security: ClientSecurity | None = None,
    ) -> None:
        self.host, self.port, self.client_id = host, port, client_id
        self.security = security or ClientSecurity()
        self._reader: asyncio.StreamReader | None = None
        self._writer: asyncio.StreamWriter | None = None
        self._pending: dict[int, tuple[int, int, asyncio.Future[dict[str, Any]]]] = {}
        self._correlation = itertools.count(1)
        self._reading: asyncio.Task[None] | None = None

    @classmethod
    async def connect(
        cls, bootstrap: str, client_id: str = "connect-rebalance", security: ClientSecurity | None = None
    ) -> ProtocolClient:
        host, port = bootstrap.split(",")[0].strip().rsplit(":", 1)
        client = cls(host, int(port), client_id, security)
        await client.open()
        return client

    async def open(self) -> None:
        context = self.security.ssl_context()
        self._reader, self._writer = await asyncio.open_connection(
            self.host, self.port, ssl=context, server_hostname=self.host if context else None
        )
        self._reading = asyncio.create_task(self._read_loop())
        try:
            await self._authenticate()
        except BaseException:
            await self.close()
            raise

    async def _authenticate(self) -> None:
        mechanism = self.security.sasl_client()
        if mechanism is None:
            return
        handshake = await self.request(ApiKey.SASL_HANDSHAKE, 1, {"mechanism": mechanism.mechanism})
        if handshake["error_code"]:
            offered = ", ".join(handshake.get("mechanisms") or []) or "none"
            raise AuthenticationFailed(
                f"{self.host}:{self.port} does not take SASL {mechanism.mechanism} (it offers {offered})"
            )
        message: bytes | None = mechanism.first_message()
        while message is not None:
            answer = await self.request(ApiKey.SASL_AUTHENTICATE, 2, {"auth_bytes": message})
            if answer["error_code"]:
                raise AuthenticationFailed(
                    f"{self.host}:{self.port}: {answer.get('error_message') or 'authentication failed'}"
                    f" (error {answer['error_code']})"
                )
            message = mechanism.respond(bytes(answer.get("auth_bytes") or b""))

    @property
    def connected(self) -> bool:
        return self._writer is not None and not self._writer.is_closing()

    async def request(self, api_key: int, version: int, fields: dict[str, Any]) -> dict[str, Any]:
        """Send one request and wait for its answer, as plain dicts."""
        if self._writer is None or self._writer.is_closing():
            raise ConnectionError("not connected")
        correlation = next(self._correlation)
        body = codec.build_request(api_key, version, fields)
        frame = codec.encode_request_frame(RequestHeader(api_key, version, correlation, self.client_id), body)
        future: asyncio.Future[dict[str, Any]] = asyncio.get_running_loop().create_future()
        self._pending[correlation] = (api_key, version, future)
        self._writer.write(frame)
        try:
            await self._writer.drain()
        except OSError as exc:
            self._fail_all(ConnectionError(str(exc)))
        return await future

    async def _read_loop(self) -> None:
        assert self._reader is not None
        try:
            while True:
                (size,) = struct.unpack(">i", await self._reader.readexactly(4))
                frame = await self._reader.readexactly(size)
                (correlation,) = struct.unpack_from(">i", frame)
                entry = self._pending.pop(correlation, None)
                if entry is None:
                    raise ConnectionError(f"answer to unknown correlation id {correlation}")
                api_key, version, future = entry
                _, body = codec.decode_response_body(api_key, version, frame)
                if not future.done():
                    future.set_result(codec.response_fields(body))
        except (asyncio.IncompleteReadError, OSError, ConnectionError) as exc:
            self._fail_all(ConnectionError(f"connection to {self.host}:{self.port} lost: {exc}"))
        finally:
            if self._writer is not None:
                self._writer.close()

    def _fail_all(self, error: Exception) -> None:
        pending, self._pending = self._pending, {}
        for _, _, future in pending.values():
            if not future.done():
                future.set_exception(error)

    async def close(self) -> None:
        if self._writer is not None:
            self._writer.close()
            with contextlib.suppress(OSError):
                await self._writer.wait_closed()
        if self._reading is not None:
            self._reading.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await self._reading
        self._fail_all(ConnectionError("closed"))


class AssignmentGroupApi:
    """The calls of a group type whose members may compute its target (KIP-848 style):
    Heartbeat, PrepareAssignment, InstallAssignment and Describe over one connection.

    A subclass names the API keys (`heartbeat_api` and `describe_api` as key and version)
    and says how its heartbeat and install fields are built.
    """

    heartbeat_api: tuple[int, int]
    prepare_key: int
    install_key: int
    describe_api: tuple[int, int]

    def __init__(self, client: ProtocolClient) -> None:
        self.client = client

    def heartbeat_fields(self, group_id: str, member_id: str, epoch: int, **fields: Any) -> dict[str, Any]:
        raise NotImplementedError

    def install_fields(self, *args: Any, **kwargs: Any) -> dict[str, Any]:
        raise NotImplementedError

    async def heartbeat(self, group_id: str, member_id: str, epoch: int, **fields: Any) -> dict[str, Any]:
        return await self.client.request(
            *self.heartbeat_api, self.heartbeat_fields(group_id, member_id, epoch, **fields)
        )

    async def prepare(self, group_id: str, member_id: str, epoch: int) -> dict[str, Any]:
        return await self.client.request(
            self.prepare_key, 0, {"group_id": group_id, "member_id": member_id, "member_epoch": epoch}
        )

    async def install(self, *args: Any, **kwargs: Any) -> dict[str, Any]:
        return await self.client.request(self.install_key, 0, self.install_fields(*args, **kwargs))

    async def describe(self, *group_ids: str) -> list[dict[str, Any]]:
        answer = await self.client.request(*self.describe_api, {"group_ids": list(group_ids)})
        return list(answer["groups"])

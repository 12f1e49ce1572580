"""Which APIs the coordinator answers, at which versions, and with which handler.

A handler is `async def handler(ctx, request) -> dict | None`: it gets the decoded request
and returns the response's fields as a plain dict (snake_case schema names; anything left
out takes the schema default), or None when the request gets no response (acks=0).
The advertised range of each API is what ApiVersions reports and what the server enforces.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from dataclasses import dataclass
from typing import Any

from connect_rebalance.protocol import codec
from connect_rebalance.protocol.codec import RequestHeader

from ..broker import Broker
from ..security.session import Session
from ..security.tls import ANONYMOUS


@dataclass(frozen=True, slots=True)
class RequestContext:
    broker: Broker
    header: RequestHeader
    client_host: str
    # The connection's session; None for handlers driven in-process (tests), which act as ANONYMOUS.
    session: Session | None = None

    @property
    def version(self) -> int:
        return self.header.api_version

    @property
    def principal(self) -> str:
        return self.session.principal if self.session is not None else ANONYMOUS

    @property
    def advertised_address(self) -> tuple[str, int]:
        """Where clients of the listener this request came in on should connect."""
        return self.session.advertised if self.session is not None else self.broker.advertised_address


Handler = Callable[[RequestContext, Any], Awaitable[dict[str, Any] | None]]


@dataclass(frozen=True, slots=True)
class ApiSpec:
    api_key: int
    min_version: int
    max_version: int
    handler: Handler


HANDLERS: dict[int, ApiSpec] = {}


class CloseConnection(Exception):
    """A handler's way to end the connection on purpose (Kafka does so for a failed acks=0 produce)."""


def handles(api_key: int, min_version: int, max_version: int) -> Callable[[Handler], Handler]:
    schema = codec.schema_versions(api_key)
    assert schema is not None and schema[0] <= min_version and max_version <= schema[1], (
        f"API {api_key} v{min_version}-{max_version} is outside its schema's range {schema}"
    )

    def register(handler: Handler) -> Handler:
        HANDLERS[api_key] = ApiSpec(api_key, min_version, max_version, handler)
        return handler

    return register

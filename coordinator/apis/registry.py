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

from connect_rebalance.errors import ErrorCode, KafkaApiError
from connect_rebalance.protocol import codec
from connect_rebalance.protocol.codec import RequestHeader
from connect_rebalance.tls_server import ANONYMOUS
from coordinator.broker import Broker
from coordinator.group_service import GroupService
from coordinator.security.acls import SUPPORTED_OPERATIONS, AclOperation, ResourceType
from coordinator.security.session import Session


@dataclass(frozen=True, slots=True)
class RequestContext:
    broker: Broker
    header: RequestHeader
    client_host: str
    # The connection's session; None for handlers driven in-process (tests), which act as ANONYMOUS.
    session: Session | None = None
    # The group coordinator's service, wired beside the broker (main.py); None where none runs.
    groups: GroupService | None = None

    @property
    def version(self) -> int:
        return self.header.api_version

    @property
    def principal(self) -> str:
        return self.session.principal if self.session is not None else ANONYMOUS

    def authorized(self, operation: AclOperation, resource_type: ResourceType, name: str) -> bool:
        """Whether this connection's principal may do `operation` on the resource; always
        true without an authorizer (authorizer.class.name unset)."""
        authorizer = self.broker.authorizer
        return authorizer is None or authorizer.authorize(
            self.principal, self.client_host, operation, resource_type, name
        )

    def require(self, operation: AclOperation, resource_type: ResourceType, name: str) -> None:
        """Raise the resource type's *_AUTHORIZATION_FAILED, with a message, unless authorized."""
        if not self.authorized(operation, resource_type, name):
            raise KafkaApiError(
                REFUSAL_CODES[resource_type],
                f"{self.principal} is not authorized to {operation.name} {resource_type.name} {name!r}",
            )

    def authorized_operations(self, resource_type: ResourceType, name: str) -> frozenset[AclOperation]:
        """KIP-430: the operations on the resource this principal may do, of those its type
        has (all of them without an authorizer), as Kafka's AuthHelper.authorizedOperations.
        The codec writes Kafka's own answers' fields from such a set (bit n for code n)."""
        return frozenset(
            op for op in SUPPORTED_OPERATIONS[resource_type] if self.authorized(op, resource_type, name)
        )

    def authorized_any(self, operation: AclOperation, resource_type: ResourceType) -> bool:
        authorizer = self.broker.authorizer
        return authorizer is None or authorizer.authorize_any(
            self.principal, self.client_host, operation, resource_type
        )

    @property
    def advertised_address(self) -> tuple[str, int]:
        """Where clients of the listener this request came in on should connect."""
        return self.session.advertised if self.session is not None else self.broker.advertised_address


REFUSAL_CODES = {
    ResourceType.TOPIC: ErrorCode.TOPIC_AUTHORIZATION_FAILED,
    ResourceType.GROUP: ErrorCode.GROUP_AUTHORIZATION_FAILED,
    ResourceType.CLUSTER: ErrorCode.CLUSTER_AUTHORIZATION_FAILED,
    ResourceType.TRANSACTIONAL_ID: ErrorCode.TRANSACTIONAL_ID_AUTHORIZATION_FAILED,
}

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

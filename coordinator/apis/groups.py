"""Group APIs: FindCoordinator is answered here (this node coordinates every group); the
rest go to the group coordinator core through the group service, once authorized
(group_authorization.py) and once group state is loaded after a start (until then they
answer COORDINATOR_LOAD_IN_PROGRESS; FindCoordinator is answered all along, as Kafka does)."""

from __future__ import annotations

from typing import Any

from connect_rebalance.errors import ErrorCode, KafkaApiError
from connect_rebalance.protocol.api_keys import ApiKey
from coordinator.apis.group_authorization import DESCRIBES_WITH_OPERATIONS, authorized_call
from coordinator.apis.group_error_answers import error_answer
from coordinator.apis.registry import RequestContext, handles
from coordinator.group_service import LOADING_MESSAGE
from coordinator.security.acls import AclOperation, ResourceType

KEY_TYPE_GROUP, KEY_TYPE_TRANSACTION = 0, 1
BATCHED_FROM_VERSION = 4


@handles(ApiKey.FIND_COORDINATOR, 0, 6)
async def find_coordinator(ctx: RequestContext, request: Any) -> dict[str, Any]:
    host, port = ctx.advertised_address
    key_type = request.key_type if ctx.version >= 1 else KEY_TYPE_GROUP
    # Transaction coordinators are "found" too, so that a transactional producer reaches
    # InitProducerId and fails there with a clear, fatal error.

    def locate(key: str) -> dict[str, Any]:
        error, message = ErrorCode.NONE, None
        try:
            if key_type == KEY_TYPE_GROUP:
                ctx.require(AclOperation.DESCRIBE, ResourceType.GROUP, key)
            elif key_type == KEY_TYPE_TRANSACTION:
                ctx.require(AclOperation.DESCRIBE, ResourceType.TRANSACTIONAL_ID, key)
            else:
                raise KafkaApiError(ErrorCode.INVALID_REQUEST, f"key type {key_type} is not supported")
        except KafkaApiError as exc:
            error, message = exc.code, exc.message
        node = ctx.broker.node_id if error == ErrorCode.NONE else -1
        return {
            "key": key,
            "node_id": node,
            "host": host if node >= 0 else "",
            "port": port if node >= 0 else -1,
            "error_code": error,
            "error_message": message,
        }

    if ctx.version >= BATCHED_FROM_VERSION:
        return {"throttle_time_ms": 0, "coordinators": [locate(key) for key in request.coordinator_keys]}
    found = locate(request.key)
    del found["key"]
    return {"throttle_time_ms": 0, **found}


def _forward(api_key: int, min_version: int, max_version: int) -> None:
    async def handler(ctx: RequestContext, request: Any) -> dict[str, Any]:
        groups = ctx.groups
        assert groups is not None, "the group service is not running"
        if ctx.broker.authorizer is None and groups.loaded and api_key not in DESCRIBES_WITH_OPERATIONS:
            # Nothing to check or add: straight to the service.
            return await groups.call(api_key, ctx.version, request, ctx.header.client_id, ctx.client_host)

        async def core(body: Any) -> dict[str, Any]:
            if not groups.loaded:  # what is authorized waits for the load, as Kafka's coordinator has it
                code, message = (
                    (ErrorCode.COORDINATOR_LOAD_IN_PROGRESS, LOADING_MESSAGE)
                    if groups.load_error is None
                    else (ErrorCode.COORDINATOR_NOT_AVAILABLE, groups.load_error)
                )
                return error_answer(api_key, ctx.version, body, code, message)
            return await groups.call(api_key, ctx.version, body, ctx.header.client_id, ctx.client_host)

        return await authorized_call(ctx, api_key, request, core)

    handler.__name__ = f"group_api_{api_key}"
    handles(api_key, min_version, max_version)(handler)


for _key, _low, _high in (
    (ApiKey.OFFSET_COMMIT, 2, 9),
    (ApiKey.OFFSET_FETCH, 1, 9),
    (ApiKey.JOIN_GROUP, 0, 9),
    (ApiKey.HEARTBEAT, 0, 4),
    (ApiKey.LEAVE_GROUP, 0, 5),
    (ApiKey.SYNC_GROUP, 0, 5),
    (ApiKey.DESCRIBE_GROUPS, 0, 6),
    (ApiKey.LIST_GROUPS, 0, 5),
    (ApiKey.DELETE_GROUPS, 0, 2),
    (ApiKey.OFFSET_DELETE, 0, 0),
    (ApiKey.CONSUMER_GROUP_HEARTBEAT, 0, 1),
    (ApiKey.CONSUMER_GROUP_DESCRIBE, 0, 1),
    (ApiKey.CONNECT_GROUP_HEARTBEAT, 0, 0),
    (ApiKey.CONNECT_GROUP_PREPARE_ASSIGNMENT, 0, 0),
    (ApiKey.CONNECT_GROUP_INSTALL_ASSIGNMENT, 0, 0),
    (ApiKey.CONNECT_GROUP_DESCRIBE, 0, 0),
    (ApiKey.CONSUMER_GROUP_PREPARE_ASSIGNMENT, 0, 0),
    (ApiKey.CONSUMER_GROUP_INSTALL_ASSIGNMENT, 0, 0),
):
    _forward(_key, _low, _high)

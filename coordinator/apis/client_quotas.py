"""DescribeClientQuotas and AlterClientQuotas: produce and fetch byte-rate quotas, kept as records.

As Kafka 4 configures quotas (there are no static defaults): entities of `user`,
`client-id` (or both) and `ip`, a null name for the type's default. Alter needs AlterConfigs
on the cluster and Describe needs DescribeConfigs (when an authorizer is configured). Each
entity's alterations are checked and written together or refused together, with
INVALID_REQUEST and a message naming what is wrong; with `validate_only` nothing is
written. Quota keys this coordinator would not enforce (request_percentage,
controller_mutation_rate, connection_creation_rate) are refused by name.
"""

from __future__ import annotations

from typing import Any

from connect_rebalance.errors import ErrorCode, KafkaApiError
from connect_rebalance.protocol.api_keys import ApiKey
from coordinator.apis.registry import RequestContext, handles
from coordinator.quotas.entities import Entity, checked_value, entity_of
from coordinator.security.acls import CLUSTER_NAME, AclOperation, ResourceType
from coordinator.security.records import ClientQuotaRecord, SecurityRecord


def _wire_entity(entity: Entity | list[tuple[str, str | None]]) -> list[dict[str, Any]]:
    return [{"entity_type": t, "entity_name": name} for t, name in entity]


@handles(ApiKey.DESCRIBE_CLIENT_QUOTAS, 0, 1)
async def describe_client_quotas(ctx: RequestContext, request: Any) -> dict[str, Any]:
    answer: dict[str, Any] = {"throttle_time_ms": 0, "error_code": 0, "error_message": None, "entries": []}
    try:
        ctx.require(AclOperation.DESCRIBE_CONFIGS, ResourceType.CLUSTER, CLUSTER_NAME)
        store = ctx.broker.security
        if store is None:
            return answer
        components = [(c.entity_type, c.match_type, c.match) for c in request.components]
        found = store.quotas.matching(components, request.strict)
    except KafkaApiError as exc:
        return answer | {"error_code": exc.code, "error_message": exc.message, "entries": None}
    answer["entries"] = [
        {
            "entity": _wire_entity(entity),
            "values": [{"key": k, "value": v} for k, v in sorted(quotas.items())],
        }
        for entity, quotas in sorted(found.items(), key=lambda item: repr(item[0]))
    ]
    return answer


@handles(ApiKey.ALTER_CLIENT_QUOTAS, 0, 1)
async def alter_client_quotas(ctx: RequestContext, request: Any) -> dict[str, Any]:
    store = ctx.broker.security
    results = []
    records: list[SecurityRecord] = []
    allowed = ctx.authorized(AclOperation.ALTER_CONFIGS, ResourceType.CLUSTER, CLUSTER_NAME)
    for entry in request.entries:
        named = [(e.entity_type, e.entity_name) for e in entry.entity]
        result: dict[str, Any] = {"error_code": 0, "error_message": None, "entity": _wire_entity(named)}
        try:
            if not allowed:
                raise KafkaApiError(
                    ErrorCode.CLUSTER_AUTHORIZATION_FAILED,
                    f"{ctx.principal} may not AlterConfigs the cluster",
                )
            entity = entity_of(named)
            keys = [op.key for op in entry.ops]
            if len(set(keys)) != len(keys):
                raise KafkaApiError(ErrorCode.INVALID_REQUEST, "A quota key is altered twice for one entity")
            changes = [
                ClientQuotaRecord(
                    entity, op.key, checked_value(entity, op.key, None if op.remove else op.value)
                )
                for op in entry.ops
            ]
            if store is None:
                raise KafkaApiError(ErrorCode.UNKNOWN_SERVER_ERROR, "this coordinator keeps no quotas")
            records.extend(changes)
        except KafkaApiError as exc:
            result.update(error_code=exc.code, error_message=exc.message)
        results.append(result)
    if store is not None and not request.validate_only:
        store.write(records)
    return {"throttle_time_ms": 0, "entries": results}

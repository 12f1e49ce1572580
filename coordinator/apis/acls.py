"""CreateAcls, DescribeAcls and DeleteAcls: Kafka's ACL administration.

Without an authorizer (authorizer.class.name unset) all three answer SECURITY_DISABLED, as
Kafka does. CreateAcls and DeleteAcls need Alter on the cluster, DescribeAcls needs
Describe on it. A binding that does not validate is refused alone with INVALID_REQUEST and
Kafka's message; the others in the request are created. Changes are records in the
security log, written before the answer (coordinator/security/store.py).
"""

from __future__ import annotations

from itertools import groupby
from typing import Any

from connect_rebalance.errors import ErrorCode, KafkaApiError
from connect_rebalance.protocol.api_keys import ApiKey
from coordinator.apis.registry import RequestContext, handles
from coordinator.security.acls import (
    CLUSTER_NAME,
    AclBinding,
    AclOperation,
    ResourceType,
    new_binding,
    new_filter,
)
from coordinator.security.records import AclRecord
from coordinator.storage.partition_log import now_ms

NO_AUTHORIZER = "No Authorizer is configured on the broker (authorizer.class.name is not set)"


def _refusal(ctx: RequestContext, operation: AclOperation) -> KafkaApiError | None:
    """Why this request may not touch ACLs at all, if it may not."""
    if ctx.broker.authorizer is None or ctx.broker.security is None:
        return KafkaApiError(ErrorCode.SECURITY_DISABLED, NO_AUTHORIZER)
    if not ctx.authorized(operation, ResourceType.CLUSTER, CLUSTER_NAME):
        return KafkaApiError(
            ErrorCode.CLUSTER_AUTHORIZATION_FAILED,
            f"{ctx.principal} may not {operation.name.title()} the cluster",
        )
    return None


def _binding_fields(binding: AclBinding) -> dict[str, Any]:
    return {
        "principal": binding.principal,
        "host": binding.host,
        "operation": binding.operation,
        "permission_type": binding.permission,
    }


def _filter_of(entry: Any) -> Any:
    return new_filter(
        entry.resource_type_filter, entry.resource_name_filter, entry.pattern_type_filter,
        entry.principal_filter, entry.host_filter, entry.operation, entry.permission_type,
    )  # fmt: skip


@handles(ApiKey.CREATE_ACLS, 1, 3)
async def create_acls(ctx: RequestContext, request: Any) -> dict[str, Any]:
    refusal = _refusal(ctx, AclOperation.ALTER)
    if refusal is not None:
        failed = {"error_code": refusal.code, "error_message": refusal.message}
        return {"throttle_time_ms": 0, "results": [failed for _ in request.creations]}
    assert ctx.broker.security is not None
    store = ctx.broker.security
    results: list[dict[str, Any]] = []
    records: list[AclRecord] = []
    for creation in request.creations:
        try:
            binding = new_binding(
                creation.resource_type, creation.resource_name, creation.resource_pattern_type,
                creation.principal, creation.host, creation.operation, creation.permission_type,
            )  # fmt: skip
        except KafkaApiError as exc:
            results.append({"error_code": exc.code, "error_message": exc.message})
            continue
        if binding not in store.acls and all(r.binding != binding for r in records):
            records.append(AclRecord(binding, now_ms()))
        results.append({"error_code": 0, "error_message": None})
    store.write(list(records))
    return {"throttle_time_ms": 0, "results": results}


@handles(ApiKey.DESCRIBE_ACLS, 1, 3)
async def describe_acls(ctx: RequestContext, request: Any) -> dict[str, Any]:
    answer: dict[str, Any] = {"throttle_time_ms": 0, "error_code": 0, "error_message": None, "resources": []}
    refusal = _refusal(ctx, AclOperation.DESCRIBE)
    try:
        if refusal is not None:
            raise refusal
        acl_filter = _filter_of(request)
    except KafkaApiError as exc:
        return answer | {"error_code": exc.code, "error_message": exc.message}
    assert ctx.broker.security is not None
    matching = sorted(
        ctx.broker.security.matching_acls(acl_filter),
        key=lambda b: (b.resource_type, b.resource_name, b.pattern_type, b.principal, b.host, b.operation),
    )
    answer["resources"] = [
        {"resource_type": rtype, "resource_name": name, "pattern_type": ptype,
         "acls": [_binding_fields(b) for b in bindings]}
        for (rtype, name, ptype), bindings in groupby(
            matching, key=lambda b: (b.resource_type, b.resource_name, b.pattern_type)
        )
    ]  # fmt: skip
    return answer


@handles(ApiKey.DELETE_ACLS, 1, 3)
async def delete_acls(ctx: RequestContext, request: Any) -> dict[str, Any]:
    refusal = _refusal(ctx, AclOperation.ALTER)
    if refusal is not None:
        failed = {"error_code": refusal.code, "error_message": refusal.message, "matching_acls": []}
        return {"throttle_time_ms": 0, "filter_results": [failed for _ in request.filters]}
    assert ctx.broker.security is not None
    store = ctx.broker.security
    results: list[dict[str, Any]] = []
    deleted: dict[AclBinding, None] = {}
    for entry in request.filters:
        try:
            acl_filter = _filter_of(entry)
        except KafkaApiError as exc:
            results.append({"error_code": exc.code, "error_message": exc.message, "matching_acls": []})
            continue
        matching = store.matching_acls(acl_filter)
        deleted.update(dict.fromkeys(matching))
        results.append(
            {"error_code": 0, "error_message": None, "matching_acls": [
                {"error_code": 0, "error_message": None, "resource_type": b.resource_type,
                 "resource_name": b.resource_name, "pattern_type": b.pattern_type, **_binding_fields(b)}
                for b in matching
            ]}
        )  # fmt: skip
    store.write([AclRecord(binding, None) for binding in deleted])
    return {"throttle_time_ms": 0, "filter_results": results}

"""GROUP resources (Kafka's config resource type 32) in IncrementalAlterConfigs, AlterConfigs
and DescribeConfigs.

KIP-848's dynamic group configuration: the request handlers for topics and brokers hand the
GROUP resources of a request to this module, which checks each one's ACL (ALTER_CONFIGS or
DESCRIBE_CONFIGS on the GROUP) and asks the group coordinator core, through the group
service, so that a change is in `__consumer_offsets` before it is acknowledged and a read
never shows what the log does not hold (coordinator/groups/group_configs.py has the rules).
AlterConfigs (the legacy API) replaces a group's whole configuration, as Kafka 4.x's
controller does for every resource type: the configs not sent go back to their defaults.
A group's configuration does not need the group to exist. Until group state is loaded after
a start, GROUP resources answer COORDINATOR_LOAD_IN_PROGRESS, as group APIs do.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Awaitable, Callable
from types import SimpleNamespace
from typing import Any

from connect_rebalance.errors import ErrorCode, KafkaApiError
from connect_rebalance.protocol.api_keys import ApiKey
from coordinator.apis.registry import RequestContext
from coordinator.group_service import LOADING_MESSAGE, GroupService
from coordinator.groups.group_configs import (
    RESOURCE_GROUP,
    SET,
    AlterGroupConfigs,
    DescribeGroupConfigs,
    GroupConfigChange,
)
from coordinator.security.acls import AclOperation, ResourceType

# What DescribeConfigs gets for a GROUP resource: each config's (value, source), or the error.
GroupDescription = dict[str, tuple[int, int]] | KafkaApiError


def _service(ctx: RequestContext) -> GroupService:
    """The loaded group service, or the error a GROUP resource answers while there is none."""
    groups = ctx.groups
    if groups is None:
        raise KafkaApiError(ErrorCode.COORDINATOR_NOT_AVAILABLE, "the group coordinator is not running")
    if not groups.loaded:
        if groups.load_error is not None:
            raise KafkaApiError(ErrorCode.COORDINATOR_NOT_AVAILABLE, groups.load_error)
        raise KafkaApiError(ErrorCode.COORDINATOR_LOAD_IN_PROGRESS, LOADING_MESSAGE)
    return groups


def _checked(ctx: RequestContext, resources: list[Any], operation: AclOperation) -> dict[int, KafkaApiError]:
    """The refusals, by position: a group named twice, an empty name, a missing ACL."""
    repeated = Counter(r.resource_name for r in resources)
    refused: dict[int, KafkaApiError] = {}
    for index, resource in enumerate(resources):
        name = resource.resource_name
        try:
            if repeated[name] > 1:
                raise KafkaApiError(ErrorCode.INVALID_REQUEST, f"group {name!r} is named more than once")
            if not name:
                raise KafkaApiError(ErrorCode.INVALID_REQUEST, "a GROUP resource needs a group name")
            ctx.require(operation, ResourceType.GROUP, name)
        except KafkaApiError as exc:
            refused[index] = exc
    return refused


def _change(resource: Any, replace: bool) -> GroupConfigChange:
    """The core's view of one GROUP resource: AlterConfigs' configs are SETs of a replacement."""
    changes = tuple((c.name, SET if replace else c.config_operation, c.value) for c in resource.configs)
    return GroupConfigChange(resource.resource_name, changes, replace)


async def _alter_groups(
    ctx: RequestContext, resources: list[Any], validate_only: bool, replace: bool
) -> list[dict[str, Any]]:
    refused = _checked(ctx, resources, AclOperation.ALTER_CONFIGS)
    allowed = [(i, r) for i, r in enumerate(resources) if i not in refused]
    answered: dict[int, dict[str, Any]] = {}
    if allowed:
        try:
            service = _service(ctx)
        except KafkaApiError as exc:
            refused.update((i, exc) for i, _ in allowed)
        else:
            body = AlterGroupConfigs(tuple(_change(r, replace) for _, r in allowed), bool(validate_only))
            answer = await service.call(
                ApiKey.INCREMENTAL_ALTER_CONFIGS, ctx.version, body, ctx.header.client_id, ctx.client_host
            )
            answered = {i: response for (i, _), response in zip(allowed, answer["responses"], strict=True)}
    return [
        answered.get(i)
        or {
            "error_code": refused[i].code,
            "error_message": refused[i].message,
            "resource_type": RESOURCE_GROUP,
            "resource_name": r.resource_name,
        }  # fmt: skip
        for i, r in enumerate(resources)
    ]


async def alter_with_groups(
    ctx: RequestContext,
    request: Any,
    alter_others: Callable[[Any], Awaitable[dict[str, Any]]],
    replace: bool = False,
) -> dict[str, Any]:
    """IncrementalAlterConfigs, or AlterConfigs (`replace`): GROUP resources here, the others
    to `alter_others` (topics, brokers), the answers in the request's order."""
    groups = [r for r in request.resources if r.resource_type == RESOURCE_GROUP]
    if not groups:
        return await alter_others(request)
    others = [r for r in request.resources if r.resource_type != RESOURCE_GROUP]
    other_answers: list[dict[str, Any]] = []
    if others:
        rest = SimpleNamespace(resources=others, validate_only=request.validate_only)
        other_answers = (await alter_others(rest))["responses"]
    group_answers = iter(await _alter_groups(ctx, groups, request.validate_only, replace))
    remaining = iter(other_answers)
    responses = [
        next(group_answers) if r.resource_type == RESOURCE_GROUP else next(remaining)
        for r in request.resources
    ]
    return {"throttle_time_ms": 0, "responses": responses}


async def described_groups(ctx: RequestContext, resources: list[Any]) -> dict[int, GroupDescription]:
    """DescribeConfigs: each GROUP resource's configs with their values and sources (the
    group's own, or the coordinator's default), by the resource's position in the request."""
    positions = [i for i, r in enumerate(resources) if r.resource_type == RESOURCE_GROUP]
    if not positions:
        return {}
    groups = [resources[i] for i in positions]
    refused = _checked(ctx, groups, AclOperation.DESCRIBE_CONFIGS)
    described: dict[int, GroupDescription] = {positions[i]: exc for i, exc in refused.items()}
    allowed = [(positions[i], r.resource_name) for i, r in enumerate(groups) if i not in refused]
    if not allowed:
        return described
    try:
        service = _service(ctx)
    except KafkaApiError as exc:
        return described | {i: exc for i, _ in allowed}
    body = DescribeGroupConfigs(tuple(name for _, name in allowed))
    answer = await service.call(
        ApiKey.DESCRIBE_CONFIGS, ctx.version, body, ctx.header.client_id, ctx.client_host
    )
    for (i, _), result in zip(allowed, answer["results"], strict=True):
        described[i] = result["configs"]
    return described

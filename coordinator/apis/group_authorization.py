"""Authorization of the group APIs, decided here before a request reaches the group core.

Kafka's table (KafkaApis), with our connect group APIs treated as the consumer group's:
- JoinGroup, SyncGroup, Heartbeat, LeaveGroup, ConsumerGroupHeartbeat, the connect group
  Heartbeat / PrepareAssignment / InstallAssignment and the consumer group's
  Prepare/InstallAssignment: Read on the group, else GROUP_AUTHORIZATION_FAILED;
  ConsumerGroupHeartbeat also needs Describe on each subscribed topic name
  (TOPIC_AUTHORIZATION_FAILED);
- OffsetCommit: Read on the group; Read on each topic (unauthorized topics' partitions
  answer TOPIC_AUTHORIZATION_FAILED, the others are committed);
- OffsetFetch: Describe on the group; topics without Describe answer
  TOPIC_AUTHORIZATION_FAILED when named, and are left out when all offsets are asked for;
- OffsetDelete: Delete on the group; Read on each topic;
- DescribeGroups, ConsumerGroupDescribe, ConnectGroupDescribe: Describe on each group;
  DeleteGroups: Delete on each group (per-group GROUP_AUTHORIZATION_FAILED);
- ListGroups: every group with Describe on the cluster, else only groups the principal may
  Describe.
A refused request changes nothing: the core never sees it, or sees it without the parts
that were refused. Without an authorizer every check passes and requests go through as
they are.

DescribeGroups (v3+) and ConsumerGroupDescribe asked for authorized operations (KIP-430)
get, for each group described, the operations on it the principal may do: Read,
Describe, Delete, DescribeConfigs and AlterConfigs are a group's; without an authorizer,
all of them.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from typing import Any

from connect_rebalance.errors import ErrorCode, KafkaApiError
from connect_rebalance.protocol.api_keys import ApiKey
from coordinator.apis.group_error_answers import member_error
from coordinator.apis.registry import RequestContext
from coordinator.security.acls import CLUSTER_NAME, AclOperation, ResourceType, operations_bit_field

Core = Callable[[Any], Awaitable[dict[str, Any]]]  # forwards a (possibly trimmed) request to the core

MEMBER_APIS = frozenset(
    {
        ApiKey.JOIN_GROUP,
        ApiKey.SYNC_GROUP,
        ApiKey.HEARTBEAT,
        ApiKey.LEAVE_GROUP,
        ApiKey.CONSUMER_GROUP_HEARTBEAT,
        ApiKey.CONNECT_GROUP_HEARTBEAT,
        ApiKey.CONNECT_GROUP_PREPARE_ASSIGNMENT,
        ApiKey.CONNECT_GROUP_INSTALL_ASSIGNMENT,
        ApiKey.CONSUMER_GROUP_PREPARE_ASSIGNMENT,
        ApiKey.CONSUMER_GROUP_INSTALL_ASSIGNMENT,
    }
)
# Per-group APIs: (operation, the request's list of group ids, the response's list of answers).
PER_GROUP_APIS: dict[int, tuple[AclOperation, str, str]] = {
    ApiKey.DESCRIBE_GROUPS: (AclOperation.DESCRIBE, "groups", "groups"),
    ApiKey.CONSUMER_GROUP_DESCRIBE: (AclOperation.DESCRIBE, "group_ids", "groups"),
    ApiKey.CONNECT_GROUP_DESCRIBE: (AclOperation.DESCRIBE, "group_ids", "groups"),
    ApiKey.DELETE_GROUPS: (AclOperation.DELETE, "groups_names", "results"),
}


# Group descriptions that carry KIP-430's authorized operations when asked: from which
# version, and in which form. The codec writes DescribeGroups' field from the set of
# operations; ConsumerGroupDescribe's schema here carries the int32 bit field itself.
DESCRIBES_WITH_OPERATIONS: dict[int, tuple[int, Callable[[frozenset[AclOperation]], Any]]] = {
    ApiKey.DESCRIBE_GROUPS: (3, lambda operations: operations),
    ApiKey.CONSUMER_GROUP_DESCRIBE: (0, operations_bit_field),
}


def with_authorized_operations(
    ctx: RequestContext, api_key: int, request: Any, answer: dict[str, Any]
) -> None:
    """KIP-430: when asked, each group described without error gets the operations on it
    the principal may do (all of a group's without an authorizer), as Kafka's KafkaApis
    sets them; groups in error keep INT32_MIN."""
    carried = DESCRIBES_WITH_OPERATIONS.get(api_key)
    if carried is None or ctx.version < carried[0] or not request.include_authorized_operations:
        return
    wire_form = carried[1]

    def described(group: dict[str, Any]) -> dict[str, Any]:
        operations = ctx.authorized_operations(ResourceType.GROUP, group["group_id"])
        return {**group, "authorized_operations": wire_form(operations)}

    answer["groups"] = [described(g) if g["error_code"] == ErrorCode.NONE else g for g in answer["groups"]]


async def authorized_call(ctx: RequestContext, api_key: int, request: Any, core: Core) -> dict[str, Any]:
    answer = await _authorized_call(ctx, api_key, request, core)
    with_authorized_operations(ctx, api_key, request, answer)
    return answer


async def _authorized_call(ctx: RequestContext, api_key: int, request: Any, core: Core) -> dict[str, Any]:
    if ctx.broker.authorizer is None:
        return await core(request)
    if api_key in MEMBER_APIS:
        return await _member_api(ctx, api_key, request, core)
    if api_key in PER_GROUP_APIS:
        return await _per_group(ctx, api_key, request, core)
    if api_key == ApiKey.LIST_GROUPS:
        answer = await core(request)
        if not ctx.authorized(AclOperation.DESCRIBE, ResourceType.CLUSTER, CLUSTER_NAME):
            answer["groups"] = [
                g
                for g in answer["groups"]
                if ctx.authorized(AclOperation.DESCRIBE, ResourceType.GROUP, g["group_id"])
            ]
        return answer
    if api_key in (ApiKey.OFFSET_COMMIT, ApiKey.OFFSET_DELETE):
        return await _offset_change(ctx, api_key, request, core)
    if api_key == ApiKey.OFFSET_FETCH:
        return await _offset_fetch(ctx, request, core)
    return await core(request)


async def _member_api(ctx: RequestContext, api_key: int, request: Any, core: Core) -> dict[str, Any]:
    try:
        ctx.require(AclOperation.READ, ResourceType.GROUP, request.group_id)
        if api_key == ApiKey.CONSUMER_GROUP_HEARTBEAT:
            for topic in request.subscribed_topic_names or []:
                ctx.require(AclOperation.DESCRIBE, ResourceType.TOPIC, topic)
    except KafkaApiError as refusal:
        return member_error(api_key, ctx.version, request, refusal.code, refusal.message)
    return await core(request)


async def _per_group(ctx: RequestContext, api_key: int, request: Any, core: Core) -> dict[str, Any]:
    operation, request_field, response_field = PER_GROUP_APIS[api_key]
    wanted = list(getattr(request, request_field))
    allowed = [g for g in wanted if ctx.authorized(operation, ResourceType.GROUP, g)]
    answers: dict[str, dict[str, Any]] = {}
    if allowed:
        setattr(request, request_field, allowed)
        answer = await core(request)
        answers = {entry["group_id"]: entry for entry in answer[response_field]}
    else:
        answer = {"throttle_time_ms": 0}
    # Versions without a per-group error message encode without it.
    refused = {
        "error_code": ErrorCode.GROUP_AUTHORIZATION_FAILED,
        "error_message": f"{ctx.principal} is not authorized to {operation.name} the group",
    }
    answer[response_field] = [answers.get(g, {"group_id": g, **refused}) for g in wanted]
    return answer


def _split_topics(
    ctx: RequestContext, topics: list[Any], operation: AclOperation
) -> tuple[list[Any], list[Any]]:
    allowed = [t for t in topics if ctx.authorized(operation, ResourceType.TOPIC, t.name)]
    return allowed, [t for t in topics if t not in allowed]


async def _offset_change(ctx: RequestContext, api_key: int, request: Any, core: Core) -> dict[str, Any]:
    """OffsetCommit (Read on the group) and OffsetDelete (Delete on it); Read on each topic."""
    group_operation = AclOperation.READ if api_key == ApiKey.OFFSET_COMMIT else AclOperation.DELETE

    def partitions_of(topic: Any, code: int) -> list[dict[str, Any]]:
        return [{"partition_index": p.partition_index, "error_code": code} for p in topic.partitions]

    if not ctx.authorized(group_operation, ResourceType.GROUP, request.group_id):
        if api_key == ApiKey.OFFSET_DELETE:
            return {"throttle_time_ms": 0, "error_code": ErrorCode.GROUP_AUTHORIZATION_FAILED, "topics": []}
        code = ErrorCode.GROUP_AUTHORIZATION_FAILED
        return {"throttle_time_ms": 0, "topics": [{"name": t.name, "partitions": partitions_of(t, code)}
                                                  for t in request.topics]}  # fmt: skip
    allowed, refused = _split_topics(ctx, list(request.topics), AclOperation.READ)
    if not refused:
        return await core(request)
    if allowed:
        request.topics = allowed
        answer = await core(request)
    else:
        answer = {"throttle_time_ms": 0, "error_code": 0, "topics": []}
    answer["topics"] = list(answer["topics"]) + [
        {"name": t.name, "partitions": partitions_of(t, ErrorCode.TOPIC_AUTHORIZATION_FAILED)}
        for t in refused
    ]
    return answer


async def _offset_fetch(ctx: RequestContext, request: Any, core: Core) -> dict[str, Any]:
    """Describe on each group; topics without Describe refused (named) or left out (all)."""
    if ctx.version < 8:
        if not ctx.authorized(AclOperation.DESCRIBE, ResourceType.GROUP, request.group_id):
            return {"throttle_time_ms": 0, "error_code": ErrorCode.GROUP_AUTHORIZATION_FAILED, "topics": []}
        answer = await core(request)
        answer["topics"] = _visible_offsets(ctx, answer["topics"], named=request.topics is not None)
        return answer
    groups = list(request.groups)
    allowed = [g for g in groups if ctx.authorized(AclOperation.DESCRIBE, ResourceType.GROUP, g.group_id)]
    answers: dict[str, dict[str, Any]] = {}
    answer: dict[str, Any] = {"throttle_time_ms": 0}
    if allowed:
        request.groups = allowed
        answer = await core(request)
        for group, entry in zip(allowed, answer["groups"], strict=True):
            entry["topics"] = _visible_offsets(ctx, entry["topics"], named=group.topics is not None)
            answers[group.group_id] = entry
    refused = {"error_code": ErrorCode.GROUP_AUTHORIZATION_FAILED, "topics": []}
    answer["groups"] = [answers.get(g.group_id, {"group_id": g.group_id, **refused}) for g in groups]
    return answer


def _visible_offsets(ctx: RequestContext, topics: list[dict[str, Any]], named: bool) -> list[dict[str, Any]]:
    out = []
    for topic in topics:
        if ctx.authorized(AclOperation.DESCRIBE, ResourceType.TOPIC, topic["name"]):
            out.append(topic)
        elif named:
            for partition in topic["partitions"]:
                partition.update(
                    committed_offset=-1, error_code=ErrorCode.TOPIC_AUTHORIZATION_FAILED, metadata=""
                )
            out.append(topic)
    return out

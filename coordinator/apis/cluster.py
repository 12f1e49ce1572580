"""Cluster-level APIs: ApiVersions, Metadata, DescribeCluster, DescribeConfigs.

With an authorizer, Metadata lists only the topics the principal may Describe, and a topic
asked for by name without Describe answers TOPIC_AUTHORIZATION_FAILED (whether it exists or
not); auto-creation needs Create on the cluster or the topic. DescribeConfigs needs
DescribeConfigs on the topic, on the group for a group's (group_configs.py), or on the
cluster for the broker's settings.

Authorized operations (KIP-430), when asked for: each topic the principal may Describe gets
the operations on it it may do (of Read, Write, Create, Describe, Delete, Alter,
DescribeConfigs, AlterConfigs), and the cluster those of its seven (Metadata v8-v10, then
DescribeCluster), or none without Describe on the cluster. Without an authorizer every
operation is allowed, and all of them are returned, as Kafka returns them.

A single node is the leader of every partition, with itself as the only replica and ISR,
at leader epoch 0. Clients bootstrap from ApiVersions and Metadata alone.
"""

from __future__ import annotations

import re
from functools import cache
from typing import Any, NamedTuple

from connect_rebalance.errors import ErrorCode, KafkaApiError
from connect_rebalance.protocol.api_keys import ApiKey
from coordinator.apis.group_configs import GroupDescription, described_groups
from coordinator.apis.registry import HANDLERS, RequestContext, handles
from coordinator.configs.broker import config_type_of, described, documentation, is_dynamic
from coordinator.configs.topic_table import INT, TOPIC_CONFIGS
from coordinator.configs.topics import effective_configs
from coordinator.groups.group_configs import GROUP_CONFIGS
from coordinator.security.acls import CLUSTER_NAME, AclOperation, ResourceType
from coordinator.security.settings import secret_setting
from coordinator.storage.partition_log import LEADER_EPOCH
from coordinator.storage.topic_store import Topic

RESOURCE_TOPIC, RESOURCE_BROKER = 2, 4
ENDPOINT_BROKER = 1
_SOFTWARE_FIELD = re.compile(r"[a-zA-Z0-9](?:[a-zA-Z0-9\-.]*[a-zA-Z0-9])?")


class ApiRange(NamedTuple):
    """One entry of ApiVersions' ApiKeys (the schema's fields, by name)."""

    api_key: int
    min_version: int
    max_version: int


def advertised_api_versions() -> tuple[ApiRange, ...]:
    """Every API's advertised range, by API key. The same immutable value each time (handlers
    register at import), so the codec encodes ApiVersions' answer once per version."""
    return _advertised(len(HANDLERS))


@cache
def _advertised(_registered: int) -> tuple[ApiRange, ...]:
    return tuple(
        ApiRange(spec.api_key, spec.min_version, spec.max_version)
        for spec in sorted(HANDLERS.values(), key=lambda s: s.api_key)
    )


@handles(ApiKey.API_VERSIONS, 0, 4)
async def api_versions(ctx: RequestContext, request: Any) -> dict[str, Any]:
    error = ErrorCode.NONE
    if ctx.version >= 3 and not (
        _SOFTWARE_FIELD.fullmatch(request.client_software_name or "")
        and _SOFTWARE_FIELD.fullmatch(request.client_software_version or "")
    ):
        error = ErrorCode.INVALID_REQUEST
    return {"error_code": error, "api_keys": advertised_api_versions(), "throttle_time_ms": 0}


def partition_metadata(topic: Topic, node_id: int) -> list[dict[str, Any]]:
    return [
        {
            "error_code": 0,
            "partition_index": index,
            "leader_id": node_id,
            "leader_epoch": LEADER_EPOCH,
            "replica_nodes": [node_id],
            "isr_nodes": [node_id],
            "offline_replicas": [],
        }
        for index in range(len(topic.partitions))
    ]


def _topic_metadata(ctx: RequestContext, topic: Topic) -> dict[str, Any]:
    return {
        "error_code": 0,
        "name": topic.name,
        "topic_id": topic.topic_id,
        "is_internal": topic.is_internal,
        "partitions": partition_metadata(topic, ctx.broker.node_id),
    }


@handles(ApiKey.METADATA, 0, 13)
async def metadata(ctx: RequestContext, request: Any) -> dict[str, Any]:
    broker = ctx.broker
    host, port = ctx.advertised_address
    wanted = request.topics
    if wanted is None or (ctx.version == 0 and not wanted):
        # Every topic the principal may see: the others are not mentioned at all.
        topics = [
            _topic_metadata(ctx, t)
            for t in broker.topics.topics.values()
            if ctx.authorized(AclOperation.DESCRIBE, ResourceType.TOPIC, t.name)
        ]
    else:
        allow_auto_create = request.allow_auto_topic_creation if ctx.version >= 4 else True
        topics = []
        for entry in wanted:
            name = entry.name
            topic_id = entry.topic_id if ctx.version >= 10 else None
            try:
                if name is None:
                    found = broker.topics.by_id(topic_id)
                    if found is None or not ctx.authorized(
                        AclOperation.DESCRIBE, ResourceType.TOPIC, found.name
                    ):
                        raise KafkaApiError(ErrorCode.UNKNOWN_TOPIC_ID, f"no topic with id {topic_id}")
                else:
                    # Without Describe, whether the topic exists is not told.
                    ctx.require(AclOperation.DESCRIBE, ResourceType.TOPIC, name)
                    creates = allow_auto_create and broker.topics.get(name) is None
                    if creates and not ctx.authorized(
                        AclOperation.CREATE, ResourceType.CLUSTER, CLUSTER_NAME
                    ):
                        ctx.require(AclOperation.CREATE, ResourceType.TOPIC, name)
                    found = broker.topic_for_request(name, allow_auto_create)
                topics.append(_topic_metadata(ctx, found))
            except KafkaApiError as exc:
                topics.append({"error_code": exc.code, "name": name, "topic_id": topic_id, "partitions": []})
    response = {
        "throttle_time_ms": 0,
        "brokers": [{"node_id": broker.node_id, "host": host, "port": port, "rack": None}],
        "cluster_id": broker.cluster_id,
        "controller_id": broker.node_id,
        "topics": topics,
        "error_code": 0,
    }
    if ctx.version >= 8:
        _add_authorized_operations(ctx, request, response)
    return response


def _add_authorized_operations(ctx: RequestContext, request: Any, response: dict[str, Any]) -> None:
    """KIP-430, as Kafka's KafkaApis: each topic the principal may Describe (found or not)
    gets its operations when asked; the cluster's (versions 8-10; DescribeCluster from then on)
    are 0 without Describe on the cluster. Anything not asked for stays INT32_MIN."""
    if request.include_topic_authorized_operations:
        for topic in response["topics"]:
            if topic["error_code"] not in (ErrorCode.TOPIC_AUTHORIZATION_FAILED, ErrorCode.UNKNOWN_TOPIC_ID):
                topic["authorized_operations"] = ctx.authorized_operations(ResourceType.TOPIC, topic["name"])
    if ctx.version <= 10 and request.include_cluster_authorized_operations:
        response["authorized_operations"] = _cluster_operations(ctx)


def _cluster_operations(ctx: RequestContext) -> frozenset[AclOperation]:
    if not ctx.authorized(AclOperation.DESCRIBE, ResourceType.CLUSTER, CLUSTER_NAME):
        return frozenset()  # 0 on the wire
    return ctx.authorized_operations(ResourceType.CLUSTER, CLUSTER_NAME)


@handles(ApiKey.DESCRIBE_CLUSTER, 0, 2)
async def describe_cluster(ctx: RequestContext, request: Any) -> dict[str, Any]:
    broker = ctx.broker
    host, port = ctx.advertised_address
    response: dict[str, Any] = {
        "throttle_time_ms": 0,
        "error_code": 0,
        "endpoint_type": ENDPOINT_BROKER,
        "cluster_id": broker.cluster_id,
        "controller_id": broker.node_id,
        "brokers": [
            {"broker_id": broker.node_id, "host": host, "port": port, "rack": None, "is_fenced": False}
        ],
    }
    if ctx.version >= 1 and request.endpoint_type != ENDPOINT_BROKER:
        response.update(
            error_code=ErrorCode.MISMATCHED_ENDPOINT_TYPE,
            error_message=f"endpoint type {request.endpoint_type} is not served here; only brokers (1)",
            brokers=[],
        )
    elif request.include_cluster_authorized_operations:
        response["authorized_operations"] = _cluster_operations(ctx)
    return response


def _config_entry(
    name: str,
    value: str | None,
    source: int,
    config_type: int,
    read_only: bool,
    doc: str,
    request: Any,
    version: int,
    synonyms: list[tuple[str | None, int]] | None = None,
) -> dict[str, Any]:
    """One DescribeConfigs entry; `synonyms`: the config's values at every level that sets
    it, in precedence order (the value in force alone when not given)."""
    levels = synonyms or [(value, source)]
    return {
        "name": name,
        "value": value,
        "read_only": read_only,
        "config_source": source,
        "is_default": source == 5,
        "is_sensitive": secret_setting(name),
        "synonyms": [{"name": name, "value": v, "source": s} for v, s in levels]
        if request.include_synonyms
        else [],
        "config_type": config_type,
        "documentation": doc if version >= 3 and request.include_documentation else None,
    }


def _describe_resource(ctx: RequestContext, resource: Any, request: Any) -> list[dict[str, Any]]:
    broker = ctx.broker
    keys = set(resource.configuration_keys) if resource.configuration_keys is not None else None
    if resource.resource_type == RESOURCE_TOPIC:
        ctx.require(AclOperation.DESCRIBE_CONFIGS, ResourceType.TOPIC, resource.resource_name)
        topic = broker.topics.get(resource.resource_name)
        if topic is None:
            raise KafkaApiError(
                ErrorCode.UNKNOWN_TOPIC_OR_PARTITION, f"topic {resource.resource_name!r} does not exist"
            )
        entries = [
            _config_entry(
                name,
                value,
                source,
                TOPIC_CONFIGS[name].config_type,
                False,
                TOPIC_CONFIGS[name].description,
                request,
                ctx.version,
            )
            for name, (value, source) in effective_configs(topic.configs, broker.config).items()
        ]
    elif resource.resource_type == RESOURCE_BROKER:
        ctx.require(AclOperation.DESCRIBE_CONFIGS, ResourceType.CLUSTER, CLUSTER_NAME)
        if resource.resource_name not in ("", str(broker.node_id)):
            raise KafkaApiError(
                ErrorCode.INVALID_REQUEST,
                f"no broker {resource.resource_name!r}; this is node {broker.node_id}",
            )
        levels = described(
            broker.dynamic_configs, broker.static_config.kafka_settings(), resource.resource_name
        )
        entries = [
            _config_entry(
                name,
                values[0][0],
                values[0][1],
                config_type_of(name),
                not is_dynamic(name),
                documentation(name),
                request,
                ctx.version,
                values,
            )
            for name, values in levels.items()
        ]
    else:
        raise KafkaApiError(
            ErrorCode.INVALID_REQUEST,
            f"resource type {resource.resource_type} is not supported; "
            "use 2 (topic), 4 (broker) or 32 (group)",
        )
    return [e for e in entries if keys is None or e["name"] in keys]


def _group_entries(
    described: GroupDescription, resource: Any, request: Any, version: int
) -> list[dict[str, Any]]:
    if isinstance(described, KafkaApiError):
        raise described
    keys = set(resource.configuration_keys) if resource.configuration_keys is not None else None
    return [
        _config_entry(name, str(value), source, INT, False, GROUP_CONFIGS[name].doc, request, version)
        for name, (value, source) in described.items()
        if keys is None or name in keys
    ]


@handles(ApiKey.DESCRIBE_CONFIGS, 1, 4)
async def describe_configs(ctx: RequestContext, request: Any) -> dict[str, Any]:
    groups = await described_groups(ctx, request.resources)  # GROUP resources, by position
    results = []
    for index, resource in enumerate(request.resources):
        result = {
            "error_code": 0,
            "error_message": None,
            "resource_type": resource.resource_type,
            "resource_name": resource.resource_name,
            "configs": [],
        }
        try:
            if index in groups:
                result["configs"] = _group_entries(groups[index], resource, request, ctx.version)
            else:
                result["configs"] = _describe_resource(ctx, resource, request)
        except KafkaApiError as exc:
            result.update(error_code=exc.code, error_message=exc.message)
        results.append(result)
    return {"throttle_time_ms": 0, "results": results}

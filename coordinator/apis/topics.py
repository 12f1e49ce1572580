"""Topic administration: CreateTopics, DeleteTopics, CreatePartitions, DeleteRecords.

There is one node, so the only valid replication factor is 1 and every replica
assignment must name this node; anything else is refused with the reason. Every topic
config Kafka defines is accepted (configs/topics.py); those that have no effect here are
named in one warning when a topic is created with them.
"""

from __future__ import annotations

import asyncio
import logging
from collections import Counter
from typing import Any

from connect_rebalance.errors import ErrorCode, KafkaApiError
from connect_rebalance.protocol.api_keys import ApiKey
from coordinator.apis.registry import RequestContext, handles
from coordinator.configs.topics import config_warnings, effective_configs, validate_topic_configs
from coordinator.security.acls import CLUSTER_NAME, AclOperation, ResourceType

log = logging.getLogger(__name__)


def warn_of_configs(topic: str, configs: dict[str, str]) -> None:
    """One warning for the configs a topic was just given that do not act as a Kafka user
    expects (a setting accepted is never silently ignored)."""
    warnings = config_warnings(configs)
    if warnings:
        log.warning("topic %s: %s (docs/operations.md, 'Topic configs')", topic, "; ".join(warnings))


def _check_replicas(ctx: RequestContext, broker_ids: list[int]) -> None:
    node = ctx.broker.node_id
    if broker_ids != [node]:
        raise KafkaApiError(
            ErrorCode.INVALID_REPLICA_ASSIGNMENT,
            f"replicas {broker_ids} are not valid: the only broker is node {node}",
        )


def _partition_count(ctx: RequestContext, spec: Any) -> int:
    if spec.replication_factor not in (-1, 1):
        raise KafkaApiError(
            ErrorCode.INVALID_REPLICATION_FACTOR,
            f"replication factor {spec.replication_factor} is larger than the 1 available broker"
            if spec.replication_factor > 1
            else f"replication factor must be positive or -1, not {spec.replication_factor}",
        )
    if not spec.assignments:
        return ctx.broker.config.num_partitions if spec.num_partitions == -1 else spec.num_partitions
    if spec.num_partitions != -1 or spec.replication_factor != -1:
        raise KafkaApiError(
            ErrorCode.INVALID_REQUEST,
            "with replica assignments, num_partitions and replication_factor must both be -1",
        )
    indexes = sorted(a.partition_index for a in spec.assignments)
    if indexes != list(range(len(indexes))):
        raise KafkaApiError(
            ErrorCode.INVALID_REPLICA_ASSIGNMENT, f"partition indexes {indexes} are not 0..n-1"
        )
    for assignment in spec.assignments:
        _check_replicas(ctx, list(assignment.broker_ids))
    return len(indexes)


@handles(ApiKey.CREATE_TOPICS, 2, 7)
async def create_topics(ctx: RequestContext, request: Any) -> dict[str, Any]:
    broker = ctx.broker
    repeated = {name for name, count in Counter(t.name for t in request.topics).items() if count > 1}
    results = []
    for spec in request.topics:
        if spec.name in repeated:
            continue  # one result for the name, after the others (a client refuses two)
        result: dict[str, Any] = {
            "name": spec.name,
            "error_code": 0,
            "error_message": None,
            "num_partitions": -1,
            "replication_factor": -1,
            "configs": None,
        }
        try:
            if not ctx.authorized(AclOperation.CREATE, ResourceType.CLUSTER, CLUSTER_NAME):
                ctx.require(AclOperation.CREATE, ResourceType.TOPIC, spec.name)
            partitions = _partition_count(ctx, spec)
            configs = validate_topic_configs({c.name: c.value for c in spec.configs}, broker.config)
            broker.topics.check_new_topic(spec.name, partitions)
            if not request.validate_only:
                topic = await broker.topics.create_off_loop(spec.name, partitions, configs)
                result["topic_id"] = topic.topic_id
                warn_of_configs(spec.name, configs)
            result.update(
                num_partitions=partitions,
                replication_factor=1,
                configs=[
                    {
                        "name": name,
                        "value": value,
                        "read_only": False,
                        "config_source": source,
                        "is_sensitive": False,
                    }
                    for name, (value, source) in effective_configs(configs, broker.config).items()
                ],
            )
        except KafkaApiError as exc:
            result.update(error_code=exc.code, error_message=exc.message)
        results.append(result)
    for name in sorted(repeated):  # as Kafka answers them: once, and nothing of them is created
        results.append({"name": name, "error_code": ErrorCode.INVALID_REQUEST,
                        "error_message": "Duplicate topic name.", "num_partitions": -1,
                        "replication_factor": -1, "configs": None})  # fmt: skip
    return {"throttle_time_ms": 0, "topics": results}


@handles(ApiKey.DELETE_TOPICS, 1, 6)
async def delete_topics(ctx: RequestContext, request: Any) -> dict[str, Any]:
    broker = ctx.broker
    if ctx.version >= 6:
        wanted = [(t.name, t.topic_id) for t in request.topics]
    else:
        wanted = [(name, None) for name in request.topic_names]
    responses = []
    for name, topic_id in wanted:
        result: dict[str, Any] = {"name": name, "topic_id": topic_id, "error_code": 0, "error_message": None}
        try:
            if not broker.config.delete_topic_enable:
                raise KafkaApiError(ErrorCode.TOPIC_DELETION_DISABLED, "delete.topic.enable is false")
            if name is None:
                topic = broker.topics.by_id(topic_id)
                if topic is None:
                    raise KafkaApiError(ErrorCode.UNKNOWN_TOPIC_ID, f"no topic with id {topic_id}")
                name = topic.name
            ctx.require(AclOperation.DELETE, ResourceType.TOPIC, name)
            deleted = broker.topics.delete(name)
            result.update(name=deleted.name, topic_id=deleted.topic_id)
        except KafkaApiError as exc:
            result.update(error_code=exc.code, error_message=exc.message)
        responses.append(result)
    deleted_names = {r["name"] for r in responses if r["error_code"] == 0}
    if deleted_names and ctx.groups is not None:
        ctx.groups.topics_deleted(deleted_names)
    return {"throttle_time_ms": 0, "responses": responses}


@handles(ApiKey.CREATE_PARTITIONS, 0, 3)
async def create_partitions(ctx: RequestContext, request: Any) -> dict[str, Any]:
    broker = ctx.broker
    results = []
    for spec in request.topics:
        result: dict[str, Any] = {"name": spec.name, "error_code": 0, "error_message": None}
        try:
            ctx.require(AclOperation.ALTER, ResourceType.TOPIC, spec.name)
            broker.topics.check_partition_increase(spec.name, spec.count)
            for assignment in spec.assignments or []:
                _check_replicas(ctx, list(assignment.broker_ids))
            if not request.validate_only:
                await broker.topics.add_partitions(spec.name, spec.count)
        except KafkaApiError as exc:
            result.update(error_code=exc.code, error_message=exc.message)
        results.append(result)
    return {"throttle_time_ms": 0, "results": results}


def _delete_records_before(ctx: RequestContext, name: str, index: int, offset: int) -> int:
    """Move one partition's log start offset (on a thread: it writes and deletes files)."""
    ctx.require(AclOperation.DELETE, ResourceType.TOPIC, name)
    topic = ctx.broker.topics.existing_user_topic(name)  # unknown or internal: refused there
    if not 0 <= index < len(topic.partitions):
        raise KafkaApiError(ErrorCode.UNKNOWN_TOPIC_OR_PARTITION, f"no partition {name}-{index}")
    partition = topic.partitions[index]
    if "delete" not in partition.settings.cleanup_policy:
        raise KafkaApiError(
            ErrorCode.POLICY_VIOLATION,
            f"records of {name} can be deleted only when its cleanup.policy has delete",
        )
    return partition.delete_records_before(offset)


@handles(ApiKey.DELETE_RECORDS, 0, 2)
async def delete_records(ctx: RequestContext, request: Any) -> dict[str, Any]:
    """Each partition's records before an offset (-1: all of them) are gone for good: the
    answer is the new low watermark, which ListOffsets(earliest) and fetches then report."""
    topics = []
    for spec in request.topics:
        partitions = []
        for wanted in spec.partitions:
            result = {"partition_index": wanted.partition_index, "low_watermark": -1, "error_code": 0}
            try:
                result["low_watermark"] = await asyncio.to_thread(
                    _delete_records_before, ctx, spec.name, wanted.partition_index, wanted.offset
                )
            except KafkaApiError as exc:
                result["error_code"] = exc.code
            except OSError as exc:
                log.warning("DeleteRecords on %s-%d failed: %s", spec.name, wanted.partition_index, exc)
                result["error_code"] = ErrorCode.KAFKA_STORAGE_ERROR
            partitions.append(result)
        topics.append({"name": spec.name, "partitions": partitions})
    return {"throttle_time_ms": 0, "topics": topics}

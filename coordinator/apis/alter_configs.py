"""AlterConfigs and IncrementalAlterConfigs: a topic's configs changed after its creation,
the broker's dynamic configs, and (group_configs.py) a group's.

AlterConfigs replaces a resource's explicit configs with the ones sent (the rest go back to
their defaults); IncrementalAlterConfigs sets, deletes, appends to or subtracts from one
config at a time. Either is validated whole before anything changes, kept on disk (so it
outlives a kill -9), and applied at once.
- A topic's configs go to its `topic.json` and its partitions' logs: retention and
  compaction follow the new values from their next round. Each needs AlterConfigs on the
  topic; a topic internal to the coordinator keeps the configs its settings give it.
- The BROKER resource (its node id, or "" for the cluster-wide default) takes Kafka's
  dynamic broker configs (configs/broker.py has which and how), kept in
  `broker_configs.json`; it needs AlterConfigs on the CLUSTER.
A config given a new value that has no effect here is named in one warning, as CreateTopics
does. GROUP resources are a group's dynamic configuration (group_configs.py), which either
API alters; other resource types are refused by name.
"""

from __future__ import annotations

import asyncio
import logging
from collections import Counter
from collections.abc import Awaitable, Callable
from dataclasses import dataclass
from types import SimpleNamespace
from typing import Any

from connect_rebalance.errors import ErrorCode, KafkaApiError
from connect_rebalance.protocol.api_keys import ApiKey
from coordinator.apis.cluster import RESOURCE_BROKER, RESOURCE_TOPIC
from coordinator.apis.group_configs import alter_with_groups
from coordinator.apis.registry import RequestContext, handles
from coordinator.apis.topics import warn_of_configs
from coordinator.configs.broker import DEFAULT_LEVEL, DynamicBrokerConfigs, changed, no_effect_warnings
from coordinator.configs.coordinator import CoordinatorConfig
from coordinator.configs.topics import DELETE, incrementally_altered, no_repeats, replaced_configs
from coordinator.security.acls import CLUSTER_NAME, AclOperation, ResourceType

log = logging.getLogger(__name__)


async def _alter_topic(ctx: RequestContext, resource: Any, change: ConfigChange, validate_only: bool) -> None:
    broker = ctx.broker
    name = resource.resource_name
    ctx.require(AclOperation.ALTER_CONFIGS, ResourceType.TOPIC, name)
    topic = broker.topics.get(name)
    if topic is None:
        raise KafkaApiError(ErrorCode.UNKNOWN_TOPIC_OR_PARTITION, f"topic {name!r} does not exist")
    if topic.is_internal:
        raise KafkaApiError(
            ErrorCode.INVALID_REQUEST,
            f"{name} is internal to the coordinator: its configs follow the offsets.topic.* settings",
        )
    before = topic.configs
    configs = change.topic(before, broker.config)
    if validate_only or configs == before:
        return
    await asyncio.to_thread(broker.topics.replace_configs, name, configs)
    log.info("topic %s configs are now %s", name, configs or "the defaults")
    warn_of_configs(name, {k: v for k, v in configs.items() if before.get(k) != v})


async def _alter_broker(
    ctx: RequestContext, resource: Any, change: ConfigChange, validate_only: bool
) -> None:
    broker = ctx.broker
    level = resource.resource_name
    ctx.require(AclOperation.ALTER_CONFIGS, ResourceType.CLUSTER, CLUSTER_NAME)
    if level not in (DEFAULT_LEVEL, str(broker.node_id)):
        raise KafkaApiError(
            ErrorCode.INVALID_REQUEST,
            f"no broker {level!r}; this is node {broker.node_id} ('' names the cluster-wide default)",
        )
    before = broker.dynamic_configs.level(level)
    dynamic, config = change.broker(broker.dynamic_configs, level, broker.static_config)
    after = dynamic.level(level)
    if validate_only or after == before:
        return
    await asyncio.to_thread(broker.replace_dynamic_configs, dynamic, config)
    where = "the cluster-wide default" if level == DEFAULT_LEVEL else f"broker {level}"
    log.info("dynamic configs of %s are now %s", where, after or "none")
    warnings = no_effect_warnings({k: v for k, v in after.items() if before.get(k) != v})
    if warnings:
        log.warning("%s (docs/operations.md, 'Dynamic broker configs')", "; ".join(warnings))


async def _alter(
    ctx: RequestContext, request: Any, change_of: Callable[[Any], ConfigChange]
) -> dict[str, Any]:
    repeated = Counter((r.resource_type, r.resource_name) for r in request.resources)
    responses = []
    for resource in request.resources:
        response = {"error_code": 0, "error_message": None, "resource_type": resource.resource_type,
                    "resource_name": resource.resource_name}  # fmt: skip
        try:
            if repeated[(resource.resource_type, resource.resource_name)] > 1:
                raise KafkaApiError(
                    ErrorCode.INVALID_REQUEST, f"resource {resource.resource_name!r} is named more than once"
                )
            if resource.resource_type == RESOURCE_TOPIC:
                alter = _alter_topic
            elif resource.resource_type == RESOURCE_BROKER:
                alter = _alter_broker
            else:
                raise KafkaApiError(
                    ErrorCode.INVALID_REQUEST,
                    f"configs of resource type {resource.resource_type} cannot be altered; "
                    "only topics' (type 2), brokers' (type 4) and groups' (type 32) can",
                )
            await alter(ctx, resource, change_of(resource), request.validate_only)
        except KafkaApiError as exc:
            response.update(error_code=exc.code, error_message=exc.message)
        responses.append(response)
    return {"throttle_time_ms": 0, "responses": responses}


@dataclass(frozen=True, slots=True)
class ConfigChange:
    """One resource's change, for either kind of resource: a topic's new explicit configs
    from its current ones, or the broker's dynamic levels and config after the change."""

    topic: Callable[[dict[str, str], CoordinatorConfig], dict[str, str]]
    broker: Callable[
        [DynamicBrokerConfigs, str, CoordinatorConfig], tuple[DynamicBrokerConfigs, CoordinatorConfig]
    ]


def _check_well_formed(resource: Any, legacy: bool) -> None:
    """Kafka's first check of every resource's configs, whatever its type
    (ConfigAdminManager.preprocess): a config named twice, or a null value (in AlterConfigs
    anywhere, in IncrementalAlterConfigs but for a DELETE), makes the request malformed:
    INVALID_REQUEST, before the type's own validation (INVALID_CONFIG)."""
    no_repeats([c.name for c in resource.configs], ErrorCode.INVALID_REQUEST)
    nulls = [c.name for c in resource.configs if c.value is None and (legacy or c.config_operation != DELETE)]
    if nulls:
        remedy = "leave a config out to return it to its default" if legacy else "only a DELETE has no value"
        raise KafkaApiError(ErrorCode.INVALID_REQUEST, f"null value for {', '.join(nulls)}: {remedy}")


async def _well_formed_first(
    request: Any, legacy: bool, alter: Callable[[Any], Awaitable[dict[str, Any]]]
) -> dict[str, Any]:
    """`alter` on the request's well-formed resources; the others answer
    `_check_well_formed`'s error, each in its place."""
    refused: dict[int, KafkaApiError] = {}
    for index, resource in enumerate(request.resources):
        try:
            _check_well_formed(resource, legacy)
        except KafkaApiError as exc:
            refused[index] = exc
    if not refused:
        return await alter(request)
    rest = [r for i, r in enumerate(request.resources) if i not in refused]
    answers = iter(
        (await alter(SimpleNamespace(resources=rest, validate_only=request.validate_only)))["responses"]
        if rest
        else []
    )
    responses = [
        {
            "error_code": refused[i].code,
            "error_message": refused[i].message,
            "resource_type": r.resource_type,
            "resource_name": r.resource_name,
        }  # fmt: skip
        if i in refused
        else next(answers)
        for i, r in enumerate(request.resources)
    ]
    return {"throttle_time_ms": 0, "responses": responses}


@handles(ApiKey.ALTER_CONFIGS, 0, 2)
async def alter_configs(ctx: RequestContext, request: Any) -> dict[str, Any]:
    def change_of(resource: Any) -> ConfigChange:
        sent = [(c.name, c.value) for c in resource.configs]
        return ConfigChange(
            topic=lambda _current, config: replaced_configs(sent, config),
            broker=lambda dynamic, level, config: changed(dynamic, level, None, sent, config),
        )

    # GROUP resources are replaced whole, as Kafka 4.x does (group_configs.py).
    return await _well_formed_first(
        request,
        True,
        lambda sent: alter_with_groups(ctx, sent, lambda rest: _alter(ctx, rest, change_of), replace=True),
    )


@handles(ApiKey.INCREMENTAL_ALTER_CONFIGS, 0, 1)
async def incremental_alter_configs(ctx: RequestContext, request: Any) -> dict[str, Any]:
    def change_of(resource: Any) -> ConfigChange:
        changes = [(c.name, c.config_operation, c.value) for c in resource.configs]
        return ConfigChange(
            topic=lambda current, config: incrementally_altered(current, changes, config),
            broker=lambda dynamic, level, config: changed(dynamic, level, changes, None, config),
        )

    # GROUP resources (KIP-848's dynamic group configuration) are group_configs.py's.
    return await _well_formed_first(
        request, False, lambda sent: alter_with_groups(ctx, sent, lambda rest: _alter(ctx, rest, change_of))
    )

"""AlterConfigs and IncrementalAlterConfigs: a topic's configs changed after its creation.

AlterConfigs replaces a topic's explicit configs with the ones sent (the rest go back to
their defaults); IncrementalAlterConfigs sets, deletes, appends to or subtracts from one
config at a time. Either is validated whole before anything changes, written to the
topic's `topic.json` (so it outlives a kill -9), and applied to its partitions' logs at
once: retention and compaction follow the new values from their next round. A config
given a new value that has no effect here is named in one warning, as CreateTopics does.

Each needs AlterConfigs on the topic. A topic internal to the coordinator keeps the
configs its settings give it. Broker settings are read from the properties file at start,
so a broker resource is refused with where to change them; GROUP resources are a group's
dynamic configuration (group_configs.py), which either API alters; other resource types are
refused by name.
"""

from __future__ import annotations

import asyncio
import logging
from collections import Counter
from collections.abc import Callable
from typing import Any

from connect_rebalance.errors import ErrorCode, KafkaApiError
from connect_rebalance.protocol.api_keys import ApiKey

from ..security.acls import AclOperation, ResourceType
from ..topic_configs import incrementally_altered, replaced_configs
from .cluster import RESOURCE_BROKER, RESOURCE_TOPIC
from .group_configs import alter_with_groups
from .registry import RequestContext, handles
from .topics import warn_of_configs

log = logging.getLogger(__name__)

# A resource's new explicit configs, from its current ones.
ConfigChange = Callable[[dict[str, str]], dict[str, str]]


def _refuse_other_types(resource: Any) -> None:
    if resource.resource_type == RESOURCE_BROKER:
        raise KafkaApiError(
            ErrorCode.INVALID_REQUEST,
            "broker settings are read from the coordinator's properties file at start: "
            "change them there and restart it",
        )
    if resource.resource_type != RESOURCE_TOPIC:
        raise KafkaApiError(
            ErrorCode.INVALID_REQUEST,
            f"configs of resource type {resource.resource_type} cannot be altered; "
            "only topics' (type 2) and groups' (type 32) can",
        )


async def _alter(
    ctx: RequestContext, request: Any, change_of: Callable[[Any], ConfigChange]
) -> dict[str, Any]:
    broker = ctx.broker
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
            _refuse_other_types(resource)
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
            configs = change_of(resource)(before)
            if not request.validate_only and configs != before:
                await asyncio.to_thread(broker.topics.replace_configs, name, configs)
                log.info("topic %s configs are now %s", name, configs or "the defaults")
                warn_of_configs(name, {k: v for k, v in configs.items() if before.get(k) != v})
        except KafkaApiError as exc:
            response.update(error_code=exc.code, error_message=exc.message)
        responses.append(response)
    return {"throttle_time_ms": 0, "responses": responses}


@handles(ApiKey.ALTER_CONFIGS, 0, 2)
async def alter_configs(ctx: RequestContext, request: Any) -> dict[str, Any]:
    def change_of(resource: Any) -> ConfigChange:
        configs = replaced_configs([(c.name, c.value) for c in resource.configs], ctx.broker.config)
        return lambda _current: configs

    # GROUP resources are replaced whole, as Kafka 4.x does (group_configs.py).
    return await alter_with_groups(ctx, request, lambda rest: _alter(ctx, rest, change_of), replace=True)


@handles(ApiKey.INCREMENTAL_ALTER_CONFIGS, 0, 1)
async def incremental_alter_configs(ctx: RequestContext, request: Any) -> dict[str, Any]:
    def change_of(resource: Any) -> ConfigChange:
        changes = [(c.name, c.config_operation, c.value) for c in resource.configs]
        return lambda current: incrementally_altered(current, changes, ctx.broker.config)

    # GROUP resources (KIP-848's dynamic group configuration) are group_configs.py's.
    return await alter_with_groups(ctx, request, lambda rest: _alter(ctx, rest, change_of))

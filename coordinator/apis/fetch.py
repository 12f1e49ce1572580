"""Fetch (long poll), ListOffsets and OffsetForLeaderEpoch.

Fetch answers as soon as `min_bytes` are available or `max_wait_ms` passes, waking on any
append to a requested partition. Incremental fetch sessions (KIP-227) are not offered:
every response carries session id 0, which clients read as "send full requests".
"""

from __future__ import annotations

import asyncio
from collections.abc import Callable
from typing import Any

from connect_rebalance.errors import ErrorCode, KafkaApiError
from connect_rebalance.protocol.api_keys import ApiKey
from coordinator.apis.registry import RequestContext, handles
from coordinator.apis.throttling import most_in_window, sit_out, throttle_ms
from coordinator.quotas.entities import CONSUMER_BYTE_RATE
from coordinator.security.acls import AclOperation, ResourceType
from coordinator.storage.partition_log import LEADER_EPOCH, PartitionLog
from coordinator.turns import Slices

LATEST, EARLIEST, MAX_TIMESTAMP, EARLIEST_LOCAL, LATEST_TIERED, EARLIEST_PENDING_UPLOAD = (
    -1,
    -2,
    -3,
    -4,
    -5,
    -6,
)
READ_COMMITTED = 1
TOPIC_IDS_FROM_VERSION = 13


def _check_leader_epoch(current_leader_epoch: int) -> None:
    if current_leader_epoch > LEADER_EPOCH:
        raise KafkaApiError(
            ErrorCode.UNKNOWN_LEADER_EPOCH, f"leader epoch {current_leader_epoch} is in the future"
        )


def _resolve_topic(ctx: RequestContext, name: str | None, topic_id: Any) -> str:
    if ctx.version >= TOPIC_IDS_FROM_VERSION:
        topic = ctx.broker.topics.by_id(topic_id)
        if topic is None:
            raise KafkaApiError(ErrorCode.UNKNOWN_TOPIC_ID, f"no topic with id {topic_id}")
        return topic.name
    assert name is not None
    return name


async def _read_partitions(
    ctx: RequestContext, request: Any, allowed: int | None
) -> tuple[list[dict[str, Any]], int, bool, list[tuple[PartitionLog, int]]]:
    """One pass over the requested partitions: (responses, bytes read, any error, and each log
    read with its end offset when it was read). `allowed`: the most bytes this connection's
    fetch quota lets one answer carry, if it has one.

    The answer holds at most the request's `max_bytes` (and each partition its
    `partition_max_bytes`) of whole batches, except that the first partition that has data
    gives its first batch whatever its size: the answer then carries that batch alone if it
    is over the limit."""
    budget = request.max_bytes if ctx.version >= 3 else 2**31 - 1
    if allowed is not None:
        budget = min(budget, allowed)
    total = 0
    any_error = False
    logs: list[tuple[PartitionLog, int]] = []
    responses = []
    slices = Slices()
    for topic in request.topics:
        partitions = []
        for fetch in topic.partitions:
            await slices.pause()
            answer: dict[str, Any] = {
                "partition_index": fetch.partition,
                "error_code": 0,
                "high_watermark": -1,
                "last_stable_offset": -1,
                "log_start_offset": -1,
                "aborted_transactions": [] if request.isolation_level == READ_COMMITTED else None,
                "preferred_read_replica": -1,
                "records": b"",
            }
            try:
                name = _resolve_topic(ctx, topic.topic, topic.topic_id)
                ctx.require(AclOperation.READ, ResourceType.TOPIC, name)
                log = ctx.broker.topics.partition(name, fetch.partition)
                _check_leader_epoch(fetch.current_leader_epoch)
                answer.update(
                    high_watermark=log.high_watermark,
                    last_stable_offset=log.high_watermark,
                    log_start_offset=log.log_start_offset,
                )
                logs.append((log, log.log_end_offset))
                limit = min(fetch.partition_max_bytes, budget - total)
                # Only the first partition with data may go over the limits, by its first
                # batch, so that a consumer always gets on (Kafka's minOneMessage).
                if limit > 0 or total == 0:
                    data = log.read(fetch.fetch_offset, max(limit, 0), min_one=total == 0)
                    answer["records"] = data
                    total += len(data)
            except KafkaApiError as exc:
                answer["error_code"] = exc.code
                any_error = True
            partitions.append(answer)
        responses.append({"topic": topic.topic, "topic_id": topic.topic_id, "partitions": partitions})
    return responses, total, any_error, logs


@handles(ApiKey.FETCH, 4, 16)
async def fetch(ctx: RequestContext, request: Any) -> dict[str, Any]:
    if request.session_id != 0:
        return {
            "throttle_time_ms": 0,
            "error_code": ErrorCode.FETCH_SESSION_ID_NOT_FOUND,
            "session_id": 0,
            "responses": [],
        }
    loop = asyncio.get_running_loop()
    deadline = loop.time() + max(request.max_wait_ms, 0) / 1000
    allowed = most_in_window(ctx, CONSUMER_BYTE_RATE)
    while True:
        responses, total, any_error, logs = await _read_partitions(ctx, request, allowed)
        remaining = deadline - loop.time()
        if total >= request.min_bytes or any_error or remaining <= 0 or not logs:
            break
        if any(log.log_end_offset != end for log, end in logs):
            continue  # appended to while the pass went on (it gave the loop turns): read again
        # No await separates that check from registering the waits, so no append can slip
        # in between: the event loop runs one coroutine at a time.
        waits = [(log, log.wait_for_append()) for log, _ in logs]
        try:
            await asyncio.wait([w for _, w in waits], timeout=remaining, return_when=asyncio.FIRST_COMPLETED)
        finally:
            for log, waiter in waits:
                waiter.cancel()
                log.forget_waiter(waiter)
    # Over the quota, the answer goes out empty (its bytes not counted), as Kafka answers a
    # throttled fetch; but a first batch larger than the quota allows in a window would then
    # never be read, so such an answer goes out whole, and is throttled for.
    oversized = allowed is not None and total > allowed
    throttle = throttle_ms(ctx, CONSUMER_BYTE_RATE, total, keep_if_throttled=oversized)
    if throttle:
        if not oversized:
            responses = []
        await sit_out(ctx, throttle)
    return {"throttle_time_ms": throttle, "error_code": 0, "session_id": 0, "responses": responses}


def _list_offset(log: PartitionLog, timestamp: int) -> tuple[int, int]:
    if timestamp == LATEST:
        return log.high_watermark, -1
    if timestamp in (EARLIEST, EARLIEST_LOCAL):
        return log.log_start_offset, -1
    if timestamp in (LATEST_TIERED, EARLIEST_PENDING_UPLOAD) or timestamp < EARLIEST_PENDING_UPLOAD:
        return -1, -1  # nothing is tiered; other negative timestamps name no offset
    found = log.max_timestamp_offset() if timestamp == MAX_TIMESTAMP else log.offset_for_timestamp(timestamp)
    return found if found is not None else (-1, -1)


def _answer_partition(
    ctx: RequestContext,
    topic: str,
    index: int,
    current_leader_epoch: int,
    answer: dict[str, Any],
    compute: Callable[[PartitionLog], dict[str, Any]],
) -> dict[str, Any]:
    """One partition's answer: `compute` fills it in, or the error says why it cannot."""
    try:
        ctx.require(AclOperation.DESCRIBE, ResourceType.TOPIC, topic)
        log = ctx.broker.topics.partition(topic, index)
        _check_leader_epoch(current_leader_epoch)
        answer.update(compute(log))
    except KafkaApiError as exc:
        answer["error_code"] = exc.code
    return answer


@handles(ApiKey.LIST_OFFSETS, 1, 11)
async def list_offsets(ctx: RequestContext, request: Any) -> dict[str, Any]:
    def offsets_at(timestamp: int) -> Callable[[PartitionLog], dict[str, Any]]:
        def compute(log: PartitionLog) -> dict[str, Any]:
            offset, found_timestamp = _list_offset(log, timestamp)
            return {"offset": offset, "timestamp": found_timestamp, "leader_epoch": LEADER_EPOCH}

        return compute

    topics = []
    for topic in request.topics:
        partitions = [
            _answer_partition(
                ctx,
                topic.name,
                part.partition_index,
                part.current_leader_epoch,
                {
                    "partition_index": part.partition_index,
                    "error_code": 0,
                    "timestamp": -1,
                    "offset": -1,
                    "leader_epoch": -1,
                },
                offsets_at(part.timestamp),
            )  # fmt: skip
            for part in topic.partitions
        ]
        topics.append({"name": topic.name, "partitions": partitions})
    return {"throttle_time_ms": 0, "topics": topics}


def _epoch_end(requested_epoch: int) -> Callable[[PartitionLog], dict[str, Any]]:
    # Every batch was written at epoch 0, so epoch 0 ends at the log end.
    def compute(log: PartitionLog) -> dict[str, Any]:
        if requested_epoch >= LEADER_EPOCH:
            return {"leader_epoch": LEADER_EPOCH, "end_offset": log.log_end_offset}
        return {}

    return compute


@handles(ApiKey.OFFSET_FOR_LEADER_EPOCH, 2, 4)
async def offset_for_leader_epoch(ctx: RequestContext, request: Any) -> dict[str, Any]:
    topics = []
    for topic in request.topics:
        partitions = [
            _answer_partition(
                ctx,
                topic.topic,
                part.partition,
                part.current_leader_epoch,
                {"partition": part.partition, "error_code": 0, "leader_epoch": -1, "end_offset": -1},
                _epoch_end(part.leader_epoch),
            )  # fmt: skip
            for part in topic.partitions
        ]
        topics.append({"topic": topic.topic, "partitions": partitions})
    return {"throttle_time_ms": 0, "topics": topics}

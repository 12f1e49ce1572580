"""Produce, InitProducerId and InitFencedProducer: idempotent, all-or-nothing appends of
client batches, and producers fenced by epoch.

Transactions are not offered: a transactional InitProducerId or produce is refused with a
clear error rather than half-supported. InitFencedProducer (the project's API) gives a fence's
producer id at a new epoch, and every batch of that producer id at an older epoch is refused
from then on, on every partition (storage/producer_fences.py).

A partition has one replica, so a write with acks=all to a topic whose min.insync.replicas
is above 1 is refused NOT_ENOUGH_REPLICAS, as Kafka refuses it when the ISR is too small.
"""

from __future__ import annotations

from typing import Any

from connect_rebalance.errors import ErrorCode, KafkaApiError
from connect_rebalance.protocol.api_keys import ApiKey
from coordinator.apis.registry import CloseConnection, RequestContext, handles
from coordinator.apis.throttling import sit_out, throttle_ms
from coordinator.quotas.entities import PRODUCER_BYTE_RATE
from coordinator.security.acls import CLUSTER_NAME, AclOperation, ResourceType
from coordinator.storage import batches
from coordinator.storage.partition_log import now_ms
from coordinator.storage.topic_store import INTERNAL_TOPICS
from coordinator.turns import Slices

VALID_ACKS = (-1, 0, 1)
NO_TRANSACTIONS = "transactions are not supported by this coordinator"


class RecordsRefused(KafkaApiError):
    """A partition's batch refused for some of its records, each named by its index in the batch
    (KIP-467's record errors, which clients report per record)."""

    def __init__(self, code: ErrorCode, message: str, record_errors: list[tuple[int, str]]) -> None:
        super().__init__(code, message)
        self.record_errors = record_errors


def _refuse_keyless(incoming: list[tuple[bytearray, batches.BatchHeader]], where: str) -> None:
    """A compacted topic keeps the latest record of each key, so a record without a key has no
    place in it: its batch is refused with INVALID_RECORD, as Kafka's LogValidator refuses it."""
    refusal = f"Compacted topic cannot accept message without key in topic partition {where}"
    for batch, _ in incoming:
        keyless = batches.keyless_records(batch)
        if keyless:
            summary = f"{len(keyless)} of the batch's records have no key, the first at index {keyless[0]}"
            raise RecordsRefused(
                ErrorCode.INVALID_RECORD, f"{refusal}: {summary}", [(index, refusal) for index in keyless]
            )


def _append(
    ctx: RequestContext, topic_name: str, partition_index: int, records: bytes | None, acks: int
) -> dict[str, Any]:
    ctx.require(AclOperation.WRITE, ResourceType.TOPIC, topic_name)
    partition = ctx.broker.topics.partition(topic_name, partition_index)
    if topic_name in INTERNAL_TOPICS:
        raise KafkaApiError(
            ErrorCode.INVALID_TOPIC_EXCEPTION, f"{topic_name} is internal; clients cannot write to it"
        )
    min_isr = partition.settings.min_insync_replicas
    if acks == -1 and min_isr > 1:
        # As Kafka refuses it when the ISR is smaller than min.insync.replicas: here it is one.
        raise KafkaApiError(
            ErrorCode.NOT_ENOUGH_REPLICAS,
            f"the ISR of {topic_name}-{partition_index} is one replica, fewer than its "
            f"min.insync.replicas={min_isr} that a write with acks=all needs",
        )
    incoming = batches.split_batches(records or b"")
    if any(header.is_transactional for _, header in incoming):
        raise KafkaApiError(ErrorCode.INVALID_RECORD, NO_TRANSACTIONS)
    if partition.settings.compacted:
        _refuse_keyless(incoming, f"{topic_name}-{partition_index}")
    assert ctx.broker.fences is not None
    for _, header in incoming:
        ctx.broker.fences.check(header.producer_id, header.producer_epoch)
    result = partition.append(incoming, now_ms())
    return {"base_offset": result.base_offset, "log_start_offset": result.log_start_offset,
            "log_append_time_ms": result.log_append_time_ms}  # fmt: skip


@handles(ApiKey.PRODUCE, 3, 11)
async def produce(ctx: RequestContext, request: Any) -> dict[str, Any] | None:
    refuse: KafkaApiError | None = None
    if request.acks not in VALID_ACKS:
        refuse = KafkaApiError(
            ErrorCode.INVALID_REQUIRED_ACKS, f"acks must be -1, 0 or 1, not {request.acks}"
        )
    elif request.transactional_id is not None:
        refuse = KafkaApiError(ErrorCode.TRANSACTIONAL_ID_AUTHORIZATION_FAILED, NO_TRANSACTIONS)
    responses = []
    slices = Slices()
    produced = 0
    for topic in request.topic_data:
        partitions = []
        for data in topic.partition_data:
            await slices.pause()
            produced += len(data.records or b"")
            answer: dict[str, Any] = {"index": data.index, "error_code": 0, "base_offset": -1}
            try:
                if refuse is not None:
                    raise refuse
                answer.update(_append(ctx, topic.name, data.index, data.records, request.acks))
            except KafkaApiError as exc:
                answer.update(error_code=exc.code, error_message=exc.message, base_offset=-1)
                if isinstance(exc, RecordsRefused):
                    answer["record_errors"] = [
                        {"batch_index": index, "batch_index_error_message": message}
                        for index, message in exc.record_errors
                    ]
            partitions.append(answer)
        responses.append({"name": topic.name, "partition_responses": partitions})
    throttle = throttle_ms(ctx, PRODUCER_BYTE_RATE, produced)
    await sit_out(ctx, throttle)
    if request.acks == 0:
        failed = [p for t in responses for p in t["partition_responses"] if p["error_code"]]
        if failed:
            # No response can carry the error, so the connection is closed: the producer then
            # refreshes its metadata, as it does against Kafka.
            raise CloseConnection(
                f"acks=0 produce failed: {failed[0]['error_message'] or failed[0]['error_code']}"
            )
        return None
    return {"responses": responses, "throttle_time_ms": throttle}


@handles(ApiKey.INIT_PRODUCER_ID, 0, 5)
async def init_producer_id(ctx: RequestContext, request: Any) -> dict[str, Any]:
    if request.transactional_id is not None:
        # No error message field exists in this response; the coordinator log says why.
        return {
            "throttle_time_ms": 0,
            "error_code": ErrorCode.TRANSACTIONAL_ID_AUTHORIZATION_FAILED,
            "producer_id": -1,
            "producer_epoch": -1,
        }
    assert ctx.broker.producer_ids is not None
    # An idempotent producer needs IdempotentWrite on the cluster or Write on some topic (KIP-679).
    if not (
        ctx.authorized(AclOperation.IDEMPOTENT_WRITE, ResourceType.CLUSTER, CLUSTER_NAME)
        or ctx.authorized_any(AclOperation.WRITE, ResourceType.TOPIC)
    ):
        return {
            "throttle_time_ms": 0,
            "error_code": ErrorCode.CLUSTER_AUTHORIZATION_FAILED,
            "producer_id": -1,
            "producer_epoch": -1,
        }
    return {
        "throttle_time_ms": 0,
        "error_code": 0,
        "producer_id": ctx.broker.producer_ids.allocate(),
        "producer_epoch": 0,
    }


@handles(ApiKey.INIT_FENCED_PRODUCER, 0, 0)
async def init_fenced_producer(ctx: RequestContext, request: Any) -> dict[str, Any]:
    """A new run of the fence: Write on the transactional id of the same name, as Kafka asks
    of InitProducerId with a transactional id."""
    fenced = {"throttle_time_ms": 0, "producer_id": -1, "producer_epoch": -1}
    fence_id = request.fence_id or ""
    try:
        if not fence_id.strip():
            raise KafkaApiError(ErrorCode.INVALID_REQUEST, "a fence id must not be empty")
        ctx.require(AclOperation.WRITE, ResourceType.TRANSACTIONAL_ID, fence_id)
    except KafkaApiError as exc:
        return {**fenced, "error_code": exc.code, "error_message": exc.message}
    assert ctx.broker.fences is not None
    run = ctx.broker.fences.begin_run(fence_id)
    return {**fenced, "error_code": 0, "producer_id": run.producer_id, "producer_epoch": run.epoch}

"""A compacted topic keeps the latest record of each key, so, as Kafka, it refuses a record
without one: the batch is answered INVALID_RECORD (87) with a message naming the topic partition,
and each keyless record by its index in the batch (KIP-467's record errors); nothing of the batch
is stored, and a confluent-kafka producer's delivery report carries the error, for compressed
batches too. Keyed records, and keyless ones to other topics, are taken; a topic altered to
`cleanup.policy=compact` refuses them from then on."""

from __future__ import annotations

from pathlib import Path

import pytest
from confluent_kafka import KafkaError, Producer
from confluent_kafka.admin import AdminClient, AlterConfigOpType, ConfigEntry, ConfigResource

from connect_rebalance.processes import CoordinatorProcess
from connect_rebalance.protocol.api_keys import ApiKey
from tests.support.batches import make_batch
from tests.support.clients import read_to_end
from tests.support.group_scenario import create_topic
from tests.support.wire import RawConnection

pytestmark = pytest.mark.integration
REFUSAL = "Compacted topic cannot accept message without key in topic partition"


def delivered(bootstrap: str, codec: str, sends: list[tuple[str, bytes | None]]) -> list[int]:
    """The error code of each send's delivery report (0: stored), one record a batch."""
    producer = Producer({"bootstrap.servers": bootstrap, "compression.type": codec, "linger.ms": 0,
                         "batch.num.messages": 1})  # fmt: skip
    codes: list[int] = []
    for topic, key in sends:
        producer.produce(topic, key=key, value=b"v" * 200, partition=0,
                         on_delivery=lambda err, _msg: codes.append(err.code() if err else 0))  # fmt: skip
        assert producer.flush(30) == 0
    return codes


def test_a_compacted_topic_refuses_a_record_without_a_key(tmp_path: Path) -> None:
    coordinator = CoordinatorProcess(tmp_path / "data").start()
    try:
        b = coordinator.bootstrap
        create_topic(b, "compacted", 1, {"cleanup.policy": "compact"})
        create_topic(b, "plain", 1)
        sends = [("compacted", None), ("compacted", b"k"), ("plain", None)]
        codes = {codec: delivered(b, codec, sends) for codec in ("none", "lz4")}
        admin = AdminClient({"bootstrap.servers": b})
        entry = ConfigEntry("cleanup.policy", "compact", incremental_operation=AlterConfigOpType.SET)
        for future in admin.incremental_alter_configs(
            [ConfigResource("topic", "plain", incremental_configs=[entry])]
        ).values():
            future.result(30)
        after_alter = delivered(b, "none", [("plain", None), ("plain", b"k")])
        conn = RawConnection(b)
        try:
            answer = conn.request(ApiKey.PRODUCE, 9, {
                "transactional_id": None, "acks": -1, "timeout_ms": 5000,
                "topic_data": [{"name": "compacted", "partition_data": [
                    {"index": 0, "records": make_batch([b"a", b"b", b"c"], keys=[b"k", None, None])}]}],
            })  # fmt: skip
        finally:
            conn.close()
        stored = {topic: [key for _, _, key, _ in read_to_end(b, topic)] for topic in ("compacted", "plain")}
    finally:
        coordinator.kill()
    refused, taken = KafkaError.INVALID_RECORD, 0
    assert codes == {"none": [refused, taken, taken], "lz4": [refused, taken, taken]}, codes
    assert after_alter == [refused, taken], "a topic altered to compact refuses keyless records"
    partition = answer.responses[0].partition_responses[0]
    assert partition.error_code == refused == 87
    assert partition.error_message.startswith(f"{REFUSAL} compacted-0"), partition.error_message
    assert [(e.batch_index, e.batch_index_error_message) for e in partition.record_errors] == [
        (1, f"{REFUSAL} compacted-0"),
        (2, f"{REFUSAL} compacted-0"),
    ]
    assert stored == {"compacted": [b"k", b"k"], "plain": [None, None, b"k"]}, "nothing of a refused batch"

"""Given a coordinator process, each real Kafka client produces and consumes through it.

Every client and every compression codec it supports; consumers check CRCs, so a batch
the coordinator stored wrongly would fail here. A final test has every client read the
batches every other client wrote.
"""

from __future__ import annotations

import pytest
from confluent_kafka.admin import AdminClient, NewTopic

from tests.support.clients import CODECS, CONSUMERS, PRODUCERS

pytestmark = pytest.mark.integration
PARTITIONS = 3


def create_topic(bootstrap: str, name: str, partitions: int = PARTITIONS) -> None:
    admin = AdminClient({"bootstrap.servers": bootstrap})
    for future in admin.create_topics([NewTopic(name, partitions, 1)]).values():
        future.result(timeout=30)


def items_for(tag: str, count: int) -> list[tuple[bytes, bytes]]:
    return [(f"k{i % 17}".encode(), f"{tag}-{i:05d}".encode()) for i in range(count)]


def assert_consumed_exactly(records, items) -> None:  # type: ignore[no-untyped-def]
    assert sorted(v for _, _, _, v in records) == sorted(v for _, v in items), "lost or duplicated records"
    by_value = {v: k for k, v in items}
    for _, _, key, value in records:
        assert key == by_value[value]
    partitions: dict[int, list[int]] = {}
    for partition, offset, _, _ in records:
        partitions.setdefault(partition, []).append(offset)
    for offsets in partitions.values():
        assert offsets == list(range(len(offsets))), "offsets are not 0..n-1 in order"
    # Records with the same key land on one partition, in the order they were sent.
    for key in {k for k, _ in items}:
        sent = [v for k, v in items if k == key]
        got = [v for p, o, k, v in sorted(records) if k == key]
        assert got == sent


@pytest.mark.parametrize("codec", CODECS)
@pytest.mark.parametrize("client", sorted(PRODUCERS))
def test_client_produces_and_consumes_each_codec(shared_coordinator, client: str, codec: str) -> None:
    topic = f"roundtrip-{client}-{codec}"
    create_topic(shared_coordinator.bootstrap, topic)
    items = items_for(topic, 400)
    PRODUCERS[client](shared_coordinator.bootstrap, topic, items, codec)
    records = CONSUMERS[client](shared_coordinator.bootstrap, topic, PARTITIONS, len(items))
    assert_consumed_exactly(records, items)


def test_every_client_reads_every_other_clients_batches(shared_coordinator) -> None:
    topic = "mixed-producers"
    create_topic(shared_coordinator.bootstrap, topic, partitions=1)
    items: list[tuple[bytes, bytes]] = []
    for client, codec in zip(sorted(PRODUCERS), ("zstd", "lz4", "gzip", "snappy"), strict=True):
        batch = items_for(f"{client}-{codec}", 50)
        PRODUCERS[client](shared_coordinator.bootstrap, topic, batch, codec)
        items += batch
    for client, consume in CONSUMERS.items():
        records = consume(shared_coordinator.bootstrap, topic, 1, len(items))
        assert [v for _, _, _, v in sorted(records)] == [v for _, v in items], client

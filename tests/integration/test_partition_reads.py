"""A Python worker's reads of topic partitions (workers/spark/partition_reads.py) against a
coordinator over TCP with librdkafka: a consumer readied ahead of a task's reads (a prepared
run's warm-up) is the one its first read uses, the topic already looked up, and every record
of the range comes back once, in order."""

from __future__ import annotations

from collections.abc import Iterator

import pytest
from confluent_kafka import Producer
from confluent_kafka.admin import AdminClient, NewTopic

from connect_rebalance.processes import CoordinatorProcess
from workers.spark import partition_reads

pytestmark = pytest.mark.integration

TOPIC, RECORDS = "readied", 300


@pytest.fixture
def cache() -> Iterator[dict[object, partition_reads._Cached]]:
    """This process's consumers, as a Python worker keeps them; closed afterwards."""
    partition_reads._consumers.clear()
    try:
        yield partition_reads._consumers
    finally:
        for cached in partition_reads._consumers.values():
            cached.consumer.close()
        partition_reads._consumers.clear()


def test_a_consumer_readied_for_a_topic_serves_the_first_read_of_it(
    coordinator: CoordinatorProcess, cache: dict[object, partition_reads._Cached]
) -> None:
    from pyspark.sql.pandas.types import to_arrow_schema

    from workers.spark.topic_source import SCHEMA

    bootstrap = coordinator.bootstrap
    admin = AdminClient({"bootstrap.servers": bootstrap})
    for future in admin.create_topics([NewTopic(TOPIC, 2, 1)]).values():
        future.result(30)
    producer = Producer({"bootstrap.servers": bootstrap})
    for i in range(RECORDS):
        producer.produce(TOPIC, value=str(i).encode(), partition=1)
    assert producer.flush(30) == 0

    partition_reads.connect(bootstrap, [TOPIC, "no-such-topic"], True, 30_000, {})
    assert len(cache) == 1, "one consumer kept for the settings the task reads with"
    readied = next(iter(cache.values()))
    assert TOPIC in readied.known, "the topic was looked up ahead of the read"

    schema = to_arrow_schema(SCHEMA, timezone="UTC")
    batches = list(partition_reads.read_range(bootstrap, TOPIC, 1, 100, 250, True, 30_000, {}, schema))
    assert [cached.consumer for cached in cache.values()] == [readied.consumer], (
        "the first read made a consumer of its own instead of the readied one"
    )
    values = [v.decode() for batch in batches for v in batch.column("value").to_pylist()]
    assert values == [str(i) for i in range(100, 250)]

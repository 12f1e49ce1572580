"""A consumer that assigns its own partitions commits offsets: librdkafka's `assign()`-ed
consumer, under either group protocol, commits synchronously twice and once more on close, and
each commit is read back.

Under `group.protocol=consumer` librdkafka sends such commits at generation -1 with its own
member id. The first creates an Empty classic group; Kafka accepts the rest because the group
(classic and Empty, or a consumer group whose members have left) has no members.
"""

from __future__ import annotations

import pytest
from confluent_kafka import Consumer, KafkaException, TopicPartition

from connect_rebalance.processes import CoordinatorProcess
from tests.support.clients import produce_confluent
from tests.support.group_scenario import create_topic
from tests.support.polling import settle

pytestmark = pytest.mark.integration

TOPIC = "orders"
RECORDS = 12


def commit_sync(consumer: Consumer, offsets: dict[int, int]) -> list[tuple[int, object]]:
    """A synchronous commit's (partition, error) rows, or the error librdkafka raised."""
    try:
        rows = consumer.commit(offsets=[TopicPartition(TOPIC, p, o) for p, o in offsets.items()],
                               asynchronous=False)  # fmt: skip
    except KafkaException as exc:
        return [(-1, exc.args[0])]
    return [(r.partition, r.error) for r in rows]


def committed(bootstrap: str, group: str) -> dict[int, int]:
    """Partition -> committed offset, as a fresh consumer of the group reads them (OffsetFetch)."""
    reader = Consumer({"bootstrap.servers": bootstrap, "group.id": group})
    try:
        rows = reader.committed([TopicPartition(TOPIC, p) for p in (0, 1)], timeout=15)
        assert all(r.error is None for r in rows), rows
        return {r.partition: r.offset for r in rows}
    finally:
        reader.close()


def leave_after_subscribing(bootstrap: str, group: str) -> None:
    """A KIP-848 member joins `group`, gets its partitions and leaves: a consumer group with no
    members stays behind."""
    member = Consumer({"bootstrap.servers": bootstrap, "group.id": group, "group.protocol": "consumer"})
    member.subscribe([TOPIC])
    assert settle(lambda: member.poll(0.2) or member.assignment(), bool, 20), "never assigned"
    member.close()


@pytest.mark.parametrize(
    ("protocol", "history"),
    [("consumer", "new-group"), ("classic", "new-group"), ("consumer", "after-a-subscriber-left")],
)
def test_an_assign_mode_consumer_commits_twice_and_on_close_and_reads_its_offsets_back(
    group_coordinator: CoordinatorProcess, protocol: str, history: str
) -> None:
    bootstrap, group = group_coordinator.bootstrap, "standalone"
    create_topic(bootstrap, TOPIC, 2)
    produce_confluent(bootstrap, TOPIC, [(f"k{i}".encode(), b"v") for i in range(RECORDS)])
    if history == "after-a-subscriber-left":
        leave_after_subscribing(bootstrap, group)
    consumer = Consumer({
        "bootstrap.servers": bootstrap, "group.id": group, "group.protocol": protocol,
        "enable.auto.commit": True, "auto.commit.interval.ms": 600_000,  # commits: ours and close's
    })  # fmt: skip
    try:
        consumer.assign([TopicPartition(TOPIC, p, 0) for p in (0, 1)])
        assert commit_sync(consumer, {0: 1, 1: 2}) == [(0, None), (1, None)], "the first commit"
        assert commit_sync(consumer, {0: 3, 1: 4}) == [(0, None), (1, None)], "the second commit"
        own = consumer.committed([TopicPartition(TOPIC, p) for p in (0, 1)], timeout=15)
        assert {r.partition: r.offset for r in own} == {0: 3, 1: 4}

        ends: dict[int, int] = {}

        def read() -> dict[int, int]:
            message = consumer.poll(0.2)
            if message is not None and message.error() is None:
                ends[message.partition()] = message.offset() + 1
            return ends

        settle(read, lambda e: sum(e.values()) == RECORDS, 20, every_s=0)
        assert sum(ends.values()) == RECORDS, f"read to {ends}"
    finally:
        consumer.close()  # the final commit: each partition's position
    assert committed(bootstrap, group) == {0: ends.get(0, 0), 1: ends.get(1, 0)}, "the commit on close"

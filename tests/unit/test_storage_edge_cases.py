"""Storage edge cases: a topic create that failed part-way, very long topic names, long
polls that end without data, and odd ListOffsets timestamps on an empty partition."""

from __future__ import annotations

import asyncio
from pathlib import Path

import pytest

from connect_rebalance.protocol import codec
from connect_rebalance.protocol.codec import RequestHeader
from coordinator.apis.fetch import fetch, list_offsets
from coordinator.apis.registry import RequestContext
from coordinator.broker import Broker
from coordinator.configs.coordinator import CoordinatorConfig

pytestmark = pytest.mark.unit


def open_broker(data: Path) -> Broker:
    broker = Broker(CoordinatorConfig.from_settings({"log.dirs": str(data)}))
    broker.open()
    return broker


def close(broker: Broker) -> None:
    asyncio.run(broker.close())


def test_a_topic_directory_left_by_a_failed_create_is_cleared_and_the_name_usable(tmp_path: Path) -> None:
    (tmp_path / "topics" / "half-made" / "0").mkdir(parents=True)  # no topic.json: never finished
    broker = open_broker(tmp_path)
    assert broker.topics.get("half-made") is None
    broker.topics.create("half-made", 2, {})
    assert len(broker.topics.get("half-made").partitions) == 2
    close(broker)


def test_the_longest_legal_topic_name_can_be_created_and_deleted(tmp_path: Path) -> None:
    broker = open_broker(tmp_path)
    name = "t" * 249
    broker.topics.create(name, 1, {})
    broker.topics.delete(name)
    assert broker.topics.get(name) is None
    broker.topics.create(name, 1, {})
    close(broker)


def test_long_polls_that_time_out_leave_no_waiters_and_odd_timestamps_find_nothing(tmp_path: Path) -> None:
    broker = open_broker(tmp_path)
    topic = broker.topics.create("idle", 1, {})
    header = RequestHeader(1, 12, 1, "test")
    request = codec.build_request(1, 12, {
        "max_wait_ms": 20, "min_bytes": 1, "max_bytes": 1 << 20, "isolation_level": 0, "session_id": 0,
        "session_epoch": -1, "topics": [{"topic": "idle", "partitions": [
            {"partition": 0, "fetch_offset": 0, "partition_max_bytes": 1 << 20}]}],
        "forgotten_topics_data": [], "rack_id": ""})  # fmt: skip

    async def poll_many() -> None:
        for _ in range(20):
            await fetch(RequestContext(broker, header, "h"), request)

    asyncio.run(poll_many())
    assert topic.partitions[0]._waiters == []
    odd = [{"partition_index": 0, "timestamp": ts} for ts in (-7, -1000, 5)]
    lookups = codec.build_request(
        2, 7, {"replica_id": -1, "isolation_level": 0, "topics": [{"name": "idle", "partitions": odd}]}
    )
    answer = asyncio.run(list_offsets(RequestContext(broker, RequestHeader(2, 7, 1, "t"), "h"), lookups))
    assert [(p["error_code"], p["offset"]) for p in answer["topics"][0]["partitions"]] == [(0, -1)] * 3
    close(broker)

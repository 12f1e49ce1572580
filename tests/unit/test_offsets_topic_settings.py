"""`__consumer_offsets` takes `offsets.topic.segment.bytes` as it is at each start, so a data
directory made with larger segments (Kafka's 100 MiB, the old default) gets segments a restart
can replay quickly, and keeps them after the next restart."""

from __future__ import annotations

import asyncio
import json
from pathlib import Path

import pytest

from coordinator.broker import Broker
from coordinator.configs.coordinator import CoordinatorConfig
from coordinator.group_service import INTERNAL_TOPIC
from coordinator.main import group_service

pytestmark = pytest.mark.unit


def opened(data_dir: Path, **settings: str) -> Broker:
    broker = Broker(CoordinatorConfig.from_settings({"log.dirs": str(data_dir), **settings}))
    broker.open()
    group_service(broker)
    return broker


def test_the_offsets_topic_takes_the_segment_size_set_at_each_start(tmp_path: Path) -> None:
    broker = opened(tmp_path, **{"offsets.topic.segment.bytes": "104857600"})
    assert broker.topics.topics[INTERNAL_TOPIC].partitions[0].settings.segment_bytes == 104857600
    asyncio.run(broker.close())
    for _ in range(2):  # set at the first start with the new setting, kept at the next
        broker = opened(tmp_path)
        topic = broker.topics.topics[INTERNAL_TOPIC]
        stored = json.loads((topic.directory / "topic.json").read_text())
        assert stored["configs"]["segment.bytes"] == "4194304"
        assert stored["configs"]["cleanup.policy"] == "compact"
        assert topic.partitions[0].settings.segment_bytes == 4194304
        asyncio.run(broker.close())

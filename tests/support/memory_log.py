"""A worker's topic held in memory: what the REST tier's in-process herder follows.

It keeps the TopicLog interface the stores use (start, read_to_end, write, close, topic): a
write is appended and handed to the handler at once, in order, so `read_to_end` has nothing
to wait for. Tests of the REST layer run a real Herder on these instead of a cluster.
"""

from __future__ import annotations

import time

from workers.storage.topic_log import Handler


class MemoryLog:
    def __init__(self, topic: str, handler: Handler) -> None:
        self.topic, self.handler = topic, handler
        self.records: list[tuple[bytes | None, bytes | None]] = []

    async def start(self) -> None:
        return None

    async def read_to_end(self, timeout: float = 30.0) -> None:
        return None

    async def write(
        self, key: bytes | None, value: bytes | None, partition: int | None = None, topic: str | None = None
    ) -> int:
        offset = len(self.records)
        self.records.append((key, value))
        self.handler(key, value, 0, offset, int(time.time() * 1000))
        return offset

    async def close(self) -> None:
        return None


class MemoryLogs:
    """Every topic a herder asks for, by name (`Herder(config, logs=MemoryLogs())`)."""

    def __init__(self) -> None:
        self.logs: dict[str, MemoryLog] = {}

    def __call__(self, topic: str, handler: Handler) -> MemoryLog:
        self.logs[topic] = MemoryLog(topic, handler)
        return self.logs[topic]

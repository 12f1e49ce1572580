"""A task's write that the coordinator does not take (it is restarting) is retried as Kafka's
producer retries (KIP-580): the wait doubles from 0.1 s up to 1 s, on a virtual clock here."""

from __future__ import annotations

import asyncio
from typing import Any

import pytest

from workers.storage.fenced_output import Outgoing, TaskOutput

pytestmark = pytest.mark.unit


class Restarting:
    """A connection whose coordinator refuses `failures` requests, then takes the write."""

    def __init__(self, failures: int) -> None:
        self.failures, self.requests = failures, 0

    async def partition_of(self, record: Outgoing) -> int:
        return 0

    def forget(self, topic: str) -> None:
        pass

    async def request(self, api_key: int, version: int, fields: dict[str, Any]) -> dict[str, Any]:
        self.requests += 1
        if self.requests <= self.failures:
            raise ConnectionError("connection refused")
        return {"responses": [
            {"name": t["name"], "partition_responses": [{"index": p["index"], "error_code": 0}
                                                        for p in t["partition_data"]]}
            for t in fields["topic_data"]
        ]}  # fmt: skip


def test_a_write_the_coordinator_does_not_take_is_retried_with_a_doubling_wait_up_to_a_second(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    waits: list[float] = []

    async def virtual_sleep(seconds: float) -> None:
        waits.append(seconds)

    monkeypatch.setattr(asyncio, "sleep", virtual_sleep)
    connection = Restarting(failures=7)
    output = TaskOutput(connection, "connect-cluster-seq-0", producer_id=1, epoch=0)  # type: ignore[arg-type]
    asyncio.run(output.write([Outgoing("seq-out", b"k", b"v")]))
    assert connection.requests == 8, "the write was not retried until it was taken"
    assert waits == pytest.approx([0.1, 0.2, 0.4, 0.8, 1.0, 1.0, 1.0])

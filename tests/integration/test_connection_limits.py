"""`max.connections`: a connection past the limit is closed at once, while the connections
already open (a confluent-kafka consumer group's among them) are served as before; once
connections end, new ones are taken again."""

from __future__ import annotations

import asyncio
import time
from pathlib import Path

import pytest
from confluent_kafka import Consumer

from connect_rebalance.processes import CoordinatorProcess
from connect_rebalance.protocol.api_keys import ApiKey
from connect_rebalance.protocol.client import ProtocolClient
from tests.support.batches import make_batch
from tests.support.offset_history import create_topic

pytestmark = pytest.mark.integration
LIMIT = 6
VERSIONS = {"client_software_name": "limits-test", "client_software_version": "1"}


async def connected(bootstrap: str) -> ProtocolClient | None:
    """A connection that answers ApiVersions, or None if the coordinator closed it."""
    try:
        client = await ProtocolClient.connect(bootstrap, "limits-test")
    except OSError:
        return None
    try:
        await asyncio.wait_for(client.request(ApiKey.API_VERSIONS, 3, VERSIONS), 10)
    except (OSError, ConnectionError, TimeoutError):
        await client.close()
        return None
    return client


async def produce(client: ProtocolClient, value: bytes) -> None:
    answer = await client.request(ApiKey.PRODUCE, 9, {
        "transactional_id": None, "acks": -1, "timeout_ms": 10000,
        "topic_data": [{"name": "events", "partition_data": [{"index": 0, "records": make_batch([value])}]}],
    })  # fmt: skip
    assert answer["responses"][0]["partition_responses"][0]["error_code"] == 0


def consumed(consumer: Consumer, value: bytes, timeout: float = 60) -> bool:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        message = consumer.poll(0.5)
        if message is not None and message.error() is None and message.value() == value:
            return True
    return False


def test_a_connection_past_max_connections_is_closed_while_the_open_ones_are_served(tmp_path: Path) -> None:
    coordinator = CoordinatorProcess(tmp_path / "data", {"max.connections": str(LIMIT)}).start()
    consumer = Consumer({"bootstrap.servers": coordinator.bootstrap, "group.id": "limited",
                         "auto.offset.reset": "earliest", "session.timeout.ms": 10000})  # fmt: skip

    async def scenario() -> tuple[int, bool, bool, bool, bool]:
        admin = await ProtocolClient.connect(coordinator.bootstrap, "limits-test")
        await create_topic(admin, "events", 1)
        consumer.subscribe(["events"])
        await produce(admin, b"before")
        assert await asyncio.to_thread(consumed, consumer, b"before"), "the consumer never joined"
        extra: list[ProtocolClient] = []
        refused = False
        for _ in range(LIMIT + 2):  # fill what the consumer and `admin` leave, then one more
            client = await connected(coordinator.bootstrap)
            if client is None:
                refused = True
                break
            extra.append(client)
        # At the limit: the open connections are served, the group with them.
        await produce(admin, b"at the limit")
        served = await asyncio.to_thread(consumed, consumer, b"at the limit")
        committed = (await asyncio.to_thread(consumer.commit, asynchronous=False)) is not None
        still_refused = await connected(coordinator.bootstrap) is None
        opened = len(extra)
        for client in extra:  # the consumer may take a slot freed by one of them: all go
            await client.close()
        after, deadline = None, time.monotonic() + 10
        while after is None and time.monotonic() < deadline:  # the closes reach the coordinator
            after = await connected(coordinator.bootstrap)
        taken_again = after is not None
        for client in [admin] + ([after] if after else []):
            await client.close()
        return opened, refused, served and committed, still_refused, taken_again

    try:
        opened, refused, served, still_refused, taken_again = asyncio.run(scenario())
    finally:
        consumer.close()
        coordinator.kill()
    assert refused, f"{opened} connections were taken beside the consumer's and the admin's: no limit"
    assert served, "the consumer group was not served once the limit was reached"
    assert still_refused, "a connection past the limit was taken"
    assert taken_again, "a connection was refused after others had ended"
    log = coordinator.log_text()
    assert "rejected a connection from 127.0.0.1" in log and "(max.connections)" in log

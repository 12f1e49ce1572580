"""Client quotas over TCP, with real clients: a confluent-kafka producer and consumer over
their byte-rate quotas are held to them while other clients run at full speed, a client that
ignores the throttle time is muted for it (KIP-219), the admin port counts the throttling,
and quotas set with the CLI (Kafka's
AlterClientQuotas through kafka-python) survive a kill -9.

The coordinators here measure rates over 2 one-second samples (`quota.window.num=2`), so a
rate settles within seconds rather than Kafka's default 11."""

from __future__ import annotations

import asyncio
import json
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path

import pytest
from confluent_kafka import Consumer, KafkaError, Producer

from connect_rebalance.processes import CoordinatorProcess
from connect_rebalance.protocol.api_keys import ApiKey
from connect_rebalance.protocol.client import ProtocolClient
from tests.support.batches import make_batch
from tests.support.offset_history import create_topic
from tests.support.worker_cluster import metrics

pytestmark = pytest.mark.integration
WINDOWS = {"quota.window.num": "2", "quota.window.size.seconds": "1"}
RUN_S = 6.0
WARM_UP_S = 2.0
LOADED = 12_000  # records of 1 KB: more than the bounded consumer can read in RUN_S
VALUE = b"q" * 1000


@pytest.fixture
def coordinator(tmp_path: Path) -> Iterator[CoordinatorProcess]:
    process = CoordinatorProcess(tmp_path / "data", WINDOWS).start()
    try:
        yield process
    finally:
        process.kill()


def quotas(bootstrap: str, *args: str) -> str:
    done = subprocess.run(
        [sys.executable, "-m", "connect_rebalance_cli.cli", "quotas", "--bootstrap-server", bootstrap, *args],
        capture_output=True, text=True, timeout=60,
    )  # fmt: skip
    assert done.returncode == 0, done.stderr
    return done.stdout


def make_topic(bootstrap: str, name: str) -> None:
    async def create() -> None:
        client = await ProtocolClient.connect(bootstrap, "quotas-test")
        try:
            await create_topic(client, name, 1)
        finally:
            await client.close()

    asyncio.run(create())


def produce_flat_out(bootstrap: str, client_id: str, topic: str, seconds: float) -> tuple[float, int, int]:
    """Produce as fast as the client lets us for WARM_UP_S + `seconds`: (bytes per second
    acknowledged in the last `seconds`, failed deliveries, the longest throttle time
    librdkafka saw in ms). The first batches go out before any answer can throttle them, so
    the rate is read after them."""
    acknowledged, failed, throttles = [0], [0], [0]

    def delivered(error, message) -> None:  # type: ignore[no-untyped-def]
        if error is not None:
            if error.code() not in (KafkaError._PURGE_QUEUE, KafkaError._PURGE_INFLIGHT):
                failed[0] += 1
        elif counted_from <= time.monotonic() <= end:
            acknowledged[0] += len(message.value())

    def stats(text: str) -> None:
        for broker in json.loads(text)["brokers"].values():
            if broker["nodeid"] >= 0:
                throttles[0] = max(throttles[0], broker["throttle"]["max"])

    producer = Producer({"bootstrap.servers": bootstrap, "client.id": client_id, "linger.ms": 5,
                         "batch.size": 65536, "statistics.interval.ms": 500, "stats_cb": stats})  # fmt: skip
    producer.list_topics(topic, timeout=30)
    counted_from = time.monotonic() + WARM_UP_S
    end = counted_from + seconds
    while time.monotonic() < end:
        try:
            producer.produce(topic, VALUE, on_delivery=delivered)
        except BufferError:
            producer.poll(0.01)
        producer.poll(0)
    producer.poll(1)  # a last stats round
    producer.purge()
    producer.flush(30)
    return acknowledged[0] / seconds, failed[0], throttles[0]


def consume_flat_out(bootstrap: str, client_id: str, topic: str, seconds: float) -> tuple[int, float]:
    """Read `topic` from the start for `seconds`: (bytes read, bytes per second)."""
    consumer = Consumer({"bootstrap.servers": bootstrap, "client.id": client_id, "group.id": client_id,
                         "auto.offset.reset": "earliest", "enable.auto.commit": False})  # fmt: skip
    consumer.subscribe([topic])
    read = 0
    try:
        while read == 0:  # the clock starts at the first record, once the group is formed
            message = consumer.poll(1)
            if message is not None and message.error() is None:
                read += len(message.value())
        start = time.monotonic()
        while time.monotonic() - start < seconds:
            for message in consumer.consume(1000, 0.2):
                if message.error() is None:
                    read += len(message.value())
        return read, read / (time.monotonic() - start)
    finally:
        consumer.close()


def test_a_producer_over_its_quota_is_held_to_it_while_others_run_at_full_speed(
    coordinator: CoordinatorProcess,
) -> None:
    bound = 200_000
    make_topic(coordinator.bootstrap, "events")
    assert "Set quotas of client-id=slow" in quotas(
        coordinator.bootstrap, "set", "--client-id", "slow", "--producer-byte-rate", str(bound)
    )

    async def both() -> list[tuple[float, int, int]]:
        return list(await asyncio.gather(
            asyncio.to_thread(produce_flat_out, coordinator.bootstrap, "slow", "events", RUN_S),
            asyncio.to_thread(produce_flat_out, coordinator.bootstrap, "fast", "events", RUN_S),
        ))  # fmt: skip

    (slow_rate, slow_failed, slow_throttle), (fast_rate, _, fast_throttle) = asyncio.run(both())
    print(f"slow {slow_rate:,.0f} B/s (throttled up to {slow_throttle} ms), fast {fast_rate:,.0f} B/s")
    assert slow_failed == 0, "a throttled producer's records must still be delivered"
    assert 0.3 * bound <= slow_rate <= 2 * bound, f"{slow_rate:,.0f} B/s against a bound of {bound:,}"
    assert slow_throttle > 0, "the producer was never told a throttle time"
    assert fast_throttle == 0 and fast_rate >= 5 * bound, (
        f"the unbounded producer ran at {fast_rate:,.0f} B/s"
    )
    scraped = metrics(coordinator.admin_url)
    assert scraped['connect_rebalance_quota_throttled_total{quota="producer_byte_rate"}'] > 0
    throttled_s = scraped['connect_rebalance_quota_throttle_seconds_total{quota="producer_byte_rate"}']
    assert throttled_s >= slow_throttle / 1000, "the admin port must count the throttle time given"
    assert scraped['connect_rebalance_quota_throttled_total{quota="consumer_byte_rate"}'] == 0


def test_a_consumer_over_its_quota_is_held_to_it_while_others_read_at_full_speed(
    coordinator: CoordinatorProcess,
) -> None:
    bound = 300_000
    make_topic(coordinator.bootstrap, "bulk")
    loader = Producer({"bootstrap.servers": coordinator.bootstrap, "linger.ms": 20, "batch.size": 65536})
    for _ in range(LOADED):
        while True:
            try:
                loader.produce("bulk", VALUE)
                break
            except BufferError:
                loader.poll(0.05)
    assert loader.flush(60) == 0
    quotas(coordinator.bootstrap, "set", "--client-id", "slow-reader", "--consumer-byte-rate", str(bound))

    async def both() -> list[tuple[int, float]]:
        return list(await asyncio.gather(
            asyncio.to_thread(consume_flat_out, coordinator.bootstrap, "slow-reader", "bulk", RUN_S),
            asyncio.to_thread(consume_flat_out, coordinator.bootstrap, "fast-reader", "bulk", RUN_S),
        ))  # fmt: skip

    (_, slow_rate), (fast_read, _) = asyncio.run(both())
    print(f"slow reader {slow_rate:,.0f} B/s; fast reader read {fast_read:,} B")
    assert 0.3 * bound <= slow_rate <= 2 * bound, f"{slow_rate:,.0f} B/s against a bound of {bound:,}"
    assert fast_read == LOADED * len(VALUE), "the unbounded consumer must read the whole topic in the time"


def test_a_client_that_ignores_its_throttle_time_is_muted_for_it(coordinator: CoordinatorProcess) -> None:
    make_topic(coordinator.bootstrap, "events")
    quotas(coordinator.bootstrap, "set", "--client-id", "rude", "--producer-byte-rate", "10000")

    async def scenario() -> tuple[int, float, float, float]:
        rude = await ProtocolClient.connect(coordinator.bootstrap, "rude")
        other = await ProtocolClient.connect(coordinator.bootstrap, "polite")
        try:
            started = time.monotonic()
            answer = await rude.request(ApiKey.PRODUCE, 9, {
                "transactional_id": None, "acks": -1, "timeout_ms": 10000,
                "topic_data": [{"name": "events", "partition_data": [
                    {"index": 0, "records": make_batch([b"r" * 30_000])}]}],
            })  # fmt: skip
            answered = time.monotonic() - started
            assert answer["responses"][0]["partition_responses"][0]["error_code"] == 0
            throttle = answer["throttle_time_ms"]
            started = time.monotonic()
            next_request = asyncio.ensure_future(rude.request(ApiKey.API_VERSIONS, 3, {
                "client_software_name": "rude", "client_software_version": "1"}))  # fmt: skip
            await other.request(ApiKey.API_VERSIONS, 3, {
                "client_software_name": "polite", "client_software_version": "1"})  # fmt: skip
            others_wait = time.monotonic() - started
            await next_request
            muted = time.monotonic() - started
            return throttle, answered, muted, others_wait
        finally:
            await rude.close()
            await other.close()

    throttle, answered, muted, others_wait = asyncio.run(scenario())
    print(f"throttle {throttle} ms; produce answered in {answered:.2f} s; next request after {muted:.2f} s")
    # 30 KB (and the batch's overhead) over a 1 s window against 10 KB/s: twice over, so 2 s.
    assert 2000 <= throttle <= 2100, throttle
    assert answered < throttle / 1000 / 2, "the throttled answer itself must go out at once"
    assert muted >= 0.9 * throttle / 1000, f"the next request was answered after {muted:.2f} s"
    assert others_wait < 1.0, "another client's connection must not be muted"


def test_quotas_survive_a_kill_and_what_cannot_be_enforced_is_refused_by_name(tmp_path: Path) -> None:
    coordinator = CoordinatorProcess(tmp_path / "data").start()
    try:
        quotas(
            coordinator.bootstrap,
            "set",
            "--user",
            "alice",
            "--client-id-default",
            "--producer-byte-rate",
            "5000",
        )
        quotas(coordinator.bootstrap, "set", "--client-id", "etl", "--consumer-byte-rate", "70000")

        async def alter(ops: list[dict], validate_only: bool) -> dict:
            client = await ProtocolClient.connect(coordinator.bootstrap, "quotas-test")
            try:
                return await client.request(ApiKey.ALTER_CLIENT_QUOTAS, 1, {
                    "entries": [{"entity": [{"entity_type": "client-id", "entity_name": "etl"}], "ops": ops}],
                    "validate_only": validate_only,
                })  # fmt: skip
            finally:
                await client.close()

        refused = asyncio.run(alter([{"key": "request_percentage", "value": 50.0, "remove": False}], False))
        entry = refused["entries"][0]
        assert entry["error_code"] == 42, entry  # INVALID_REQUEST
        assert "request_percentage" in entry["error_message"] and "not supported" in entry["error_message"]
        checked = asyncio.run(alter([{"key": "consumer_byte_rate", "value": 1.0, "remove": False}], True))
        assert checked["entries"][0]["error_code"] == 0
        coordinator.kill()
        coordinator.start()
        listed = quotas(coordinator.bootstrap, "list")
    finally:
        coordinator.kill()
    assert listed.splitlines() == [
        "client-id=etl\tconsumer_byte_rate=70000",
        "user=alice client-id=<default>\tproducer_byte_rate=5000",
    ], listed

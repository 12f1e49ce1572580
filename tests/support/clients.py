"""Producing and consuming with each real client the project supports.

Every function talks to a real coordinator over TCP through the client library itself:
confluent-kafka (librdkafka), kafka-python, aiokafka, and the kcat command line.
Consumers read assigned partitions (no group) until they hold `expected` records or the
deadline passes, and return (partition, offset, key, value) tuples. `security` connects them
over TLS and/or SASL (tests/support/client_security.py).
"""

from __future__ import annotations

import asyncio
import subprocess
import time
from collections.abc import Sequence
from typing import Any

from .client_security import (
    ClientSecurity,
    aiokafka_settings,
    confluent_settings,
    kafka_python_settings,
    kcat_settings,
)

Record = tuple[int, int, bytes | None, bytes]
CODECS = ("none", "gzip", "snappy", "lz4", "zstd")


def produce_confluent(
    bootstrap: str,
    topic: str,
    items: Sequence[tuple[bytes, bytes]],
    codec: str = "none",
    security: ClientSecurity | None = None,
    **config: object,
) -> None:
    from confluent_kafka import Producer

    producer = Producer(
        {
            "bootstrap.servers": bootstrap,
            "compression.type": codec,
            "acks": "all",
            "enable.idempotence": True,
            "linger.ms": 5,
            **confluent_settings(security),
            **config,
        }
    )
    errors: list[object] = []
    for key, value in items:
        producer.produce(topic, value=value, key=key, on_delivery=lambda err, msg: err and errors.append(err))
        producer.poll(0)
    assert producer.flush(30) == 0, "confluent-kafka producer did not deliver everything"
    assert not errors, errors


def consume_confluent(
    bootstrap: str,
    topic: str,
    partitions: int,
    expected: int,
    timeout: float = 30,
    security: ClientSecurity | None = None,
) -> list[Record]:
    from confluent_kafka import TopicPartition

    consumer = _assign_only_confluent(bootstrap, security)
    consumer.assign([TopicPartition(topic, p, 0) for p in range(partitions)])
    try:
        return _poll_confluent(consumer, expected, timeout)
    finally:
        consumer.close()


def _assign_only_confluent(bootstrap: str, security: ClientSecurity | None = None) -> Any:
    from confluent_kafka import Consumer

    settings = {"bootstrap.servers": bootstrap, "group.id": "unused-assign-only", "enable.auto.commit": False}
    return Consumer({**settings, "check.crcs": True, **confluent_settings(security)})


def read_to_end(bootstrap: str, topic: str, partition: int = 0, timeout: float = 60) -> list[Record]:
    """Every record of the partition from offset 0 up to its high watermark (asked for first), with
    confluent-kafka: what the log holds, however many that is, so a duplicate at the tail or a
    missing tail shows in the count."""
    from confluent_kafka import TopicPartition

    consumer = _assign_only_confluent(bootstrap)
    try:
        _, end = consumer.get_watermark_offsets(TopicPartition(topic, partition), timeout=30)
        consumer.assign([TopicPartition(topic, partition, 0)])
        out: list[Record] = []
        deadline = time.monotonic() + timeout
        while end > 0 and (not out or out[-1][1] < end - 1):
            assert time.monotonic() < deadline, f"read {len(out)} records of {topic}-{partition}, end {end}"
            msg = consumer.poll(0.5)
            if msg is not None:
                assert msg.error() is None, msg.error()
                out.append((msg.partition(), msg.offset(), msg.key(), msg.value()))
    finally:
        consumer.close()
    return out


def first_message(bootstrap: str, topic: str, timeout: float = 30) -> Any:
    """The first record a new consumer group subscribed from the earliest offset reads (a
    confluent-kafka Message), or None if none comes within `timeout`."""
    from confluent_kafka import Consumer

    consumer = Consumer({"bootstrap.servers": bootstrap, "group.id": f"first-{topic}-{time.monotonic_ns()}",
                         "auto.offset.reset": "earliest", "enable.auto.commit": False})  # fmt: skip
    try:
        consumer.subscribe([topic])
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            message = consumer.poll(0.5)
            if message is not None and message.error() is None:
                return message
        return None
    finally:
        consumer.close()


def _poll_confluent(consumer: Any, expected: int, timeout: float) -> list[Record]:
    out: list[Record] = []
    deadline = time.monotonic() + timeout
    while len(out) < expected and time.monotonic() < deadline:
        msg = consumer.poll(0.5)
        if msg is None:
            continue
        assert msg.error() is None, msg.error()
        out.append((msg.partition(), msg.offset(), msg.key(), msg.value()))
    return out


def produce_kafka_python(
    bootstrap: str,
    topic: str,
    items: Sequence[tuple[bytes, bytes]],
    codec: str = "none",
    security: ClientSecurity | None = None,
) -> None:
    from kafka import KafkaProducer

    producer = KafkaProducer(
        bootstrap_servers=bootstrap,
        acks="all",
        compression_type=None if codec == "none" else codec,
        **kafka_python_settings(security),
    )
    futures = [producer.send(topic, key=key, value=value) for key, value in items]
    producer.flush(30)
    for future in futures:
        future.get(timeout=30)
    producer.close()


def consume_kafka_python(
    bootstrap: str,
    topic: str,
    partitions: int,
    expected: int,
    timeout: float = 30,
    security: ClientSecurity | None = None,
) -> list[Record]:
    from kafka import KafkaConsumer, TopicPartition

    consumer = KafkaConsumer(
        bootstrap_servers=bootstrap,
        auto_offset_reset="earliest",
        check_crcs=True,
        enable_auto_commit=False,
        **kafka_python_settings(security),
    )
    consumer.assign([TopicPartition(topic, p) for p in range(partitions)])
    out: list[Record] = []
    deadline = time.monotonic() + timeout
    try:
        while len(out) < expected and time.monotonic() < deadline:
            for batch in consumer.poll(timeout_ms=500).values():
                out.extend((m.partition, m.offset, m.key, m.value) for m in batch)
    finally:
        consumer.close()
    return out


async def _produce_aiokafka(
    bootstrap: str,
    topic: str,
    items: Sequence[tuple[bytes, bytes]],
    codec: str,
    security: ClientSecurity | None,
) -> None:
    from aiokafka import AIOKafkaProducer

    producer = AIOKafkaProducer(
        bootstrap_servers=bootstrap,
        acks="all",
        enable_idempotence=True,
        compression_type=None if codec == "none" else codec,
        **aiokafka_settings(security),
    )
    await producer.start()
    try:
        futures = [await producer.send(topic, key=key, value=value) for key, value in items]
        await asyncio.gather(*futures)
    finally:
        await producer.stop()


def produce_aiokafka(
    bootstrap: str,
    topic: str,
    items: Sequence[tuple[bytes, bytes]],
    codec: str = "none",
    security: ClientSecurity | None = None,
) -> None:
    asyncio.run(_produce_aiokafka(bootstrap, topic, items, codec, security))


async def _consume_aiokafka(
    bootstrap: str,
    topic: str,
    partitions: int,
    expected: int,
    timeout: float,
    security: ClientSecurity | None,
) -> list[Record]:
    from aiokafka import AIOKafkaConsumer, TopicPartition

    consumer = AIOKafkaConsumer(
        bootstrap_servers=bootstrap,
        auto_offset_reset="earliest",
        check_crcs=True,
        enable_auto_commit=False,
        **aiokafka_settings(security),
    )
    await consumer.start()
    consumer.assign([TopicPartition(topic, p) for p in range(partitions)])
    out: list[Record] = []
    deadline = time.monotonic() + timeout
    try:
        while len(out) < expected and time.monotonic() < deadline:
            for batch in (await consumer.getmany(timeout_ms=500)).values():
                out.extend((m.partition, m.offset, m.key, m.value) for m in batch)
    finally:
        await consumer.stop()
    return out


def consume_aiokafka(
    bootstrap: str,
    topic: str,
    partitions: int,
    expected: int,
    timeout: float = 30,
    security: ClientSecurity | None = None,
) -> list[Record]:
    return asyncio.run(_consume_aiokafka(bootstrap, topic, partitions, expected, timeout, security))


def produce_kcat(
    bootstrap: str,
    topic: str,
    items: Sequence[tuple[bytes, bytes]],
    codec: str = "none",
    security: ClientSecurity | None = None,
) -> None:
    lines = b"".join(key + b"\t" + value + b"\n" for key, value in items)
    subprocess.run(
        ["kcat", "-b", bootstrap, "-P", "-t", topic, "-K", "\t", "-z", codec, "-X", "acks=all"]
        + kcat_settings(security),
        input=lines,
        check=True,
        timeout=60,
        capture_output=True,
    )


def consume_kcat(
    bootstrap: str,
    topic: str,
    partitions: int,
    expected: int,
    timeout: float = 30,
    security: ClientSecurity | None = None,
) -> list[Record]:
    out: list[Record] = []
    for partition in range(partitions):
        result = subprocess.run(
            [
                "kcat",
                "-b",
                bootstrap,
                "-C",
                "-t",
                topic,
                "-p",
                str(partition),
                "-o",
                "beginning",
                "-e",
                "-X",
                "check.crcs=true",
                "-f",
                "%p\t%o\t%k\t%s\n",
            ]
            + kcat_settings(security),
            check=True,
            timeout=timeout,
            capture_output=True,
        )
        for line in result.stdout.splitlines():
            p, o, k, v = line.split(b"\t", 3)
            out.append((int(p), int(o), k, v))
    return out


PRODUCERS = {
    "confluent-kafka": produce_confluent,
    "kafka-python": produce_kafka_python,
    "aiokafka": produce_aiokafka,
    "kcat": produce_kcat,
}
CONSUMERS = {
    "confluent-kafka": consume_confluent,
    "kafka-python": consume_kafka_python,
    "aiokafka": consume_aiokafka,
    "kcat": consume_kcat,
}


def consume_confluent_group(
    bootstrap: str,
    topic: str,
    group: str,
    group_protocol: str,
    expected: int,
    timeout: float = 60,
    security: ClientSecurity | None = None,
) -> list[Record]:
    """Subscribe as a member of `group` (group.protocol consumer or classic), read `expected`
    records from the start, commit them, and leave."""
    from confluent_kafka import Consumer

    consumer = Consumer(
        {
            "bootstrap.servers": bootstrap,
            "group.id": group,
            "group.protocol": group_protocol,
            "auto.offset.reset": "earliest",
            "enable.auto.commit": False,
            **({"session.timeout.ms": 6000} if group_protocol == "classic" else {}),
            **confluent_settings(security),
        }
    )
    consumer.subscribe([topic])
    try:
        out = _poll_confluent(consumer, expected, timeout)
        if out:
            consumer.commit(asynchronous=False)
    finally:
        consumer.close()
    return out


def assert_round_trip(client: str, bootstrap: str, topic: str, security: ClientSecurity | None) -> None:
    """`client` produces 50 records to a new topic and reads back exactly those, in order."""
    items = [(f"k{i}".encode(), f"{client}-{i}".encode()) for i in range(50)]
    PRODUCERS[client](bootstrap, topic, items, security=security)
    records = CONSUMERS[client](bootstrap, topic, 1, len(items), security=security)
    assert [(key, value) for _, _, key, value in records] == items


def assert_group_consumes(
    bootstrap: str, topic: str, group_protocol: str, security: ClientSecurity | None
) -> None:
    """confluent-kafka produces 20 records and a group member (consumer or classic) reads them all."""
    items = [(f"k{i}".encode(), f"v{i}".encode()) for i in range(20)]
    produce_confluent(bootstrap, topic, items, security=security)
    records = consume_confluent_group(
        bootstrap, topic, f"{topic}-group", group_protocol, 20, security=security
    )
    assert sorted(value for *_, value in records) == sorted(value for _, value in items)

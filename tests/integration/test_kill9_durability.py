"""Given an idempotent acks=all producer writing in a loop, when the coordinator is killed
with SIGKILL (twice) and restarted, then every acknowledged record is in the log, in the
order it was produced, exactly once.
"""

from __future__ import annotations

import threading
import time

import pytest
from confluent_kafka import Producer

from tests.support.clients import consume_kafka_python

pytestmark = pytest.mark.integration

TOTAL = 20000


def wait_until(predicate, timeout: float, what: str) -> None:  # type: ignore[no-untyped-def]
    deadline = time.monotonic() + timeout
    while not predicate():
        if time.monotonic() > deadline:
            raise AssertionError(f"timed out waiting for {what}")
        time.sleep(0.01)


def test_kill9_during_acks_all_loop_keeps_every_acknowledged_record(coordinator) -> None:
    acked: list[int] = []
    failed: list[str] = []
    lock = threading.Lock()

    def on_delivery(err, msg) -> None:  # type: ignore[no-untyped-def]
        with lock:
            if err is not None:
                failed.append(str(err))
            else:
                acked.append(int(msg.value()))

    producer = Producer(
        {
            "bootstrap.servers": coordinator.bootstrap,
            "acks": "all",
            "enable.idempotence": True,
            "linger.ms": 1,
            "batch.num.messages": 50,
            "message.timeout.ms": 120000,
            "reconnect.backoff.ms": 50,
            "reconnect.backoff.max.ms": 200,
            "topic.metadata.refresh.interval.ms": 500,
        }
    )
    stop = threading.Event()

    def produce_loop() -> None:
        for i in range(TOTAL):
            while not stop.is_set():
                try:
                    producer.produce("durable", value=str(i).encode(), partition=0, on_delivery=on_delivery)
                    break
                except BufferError:
                    producer.poll(0.05)
            producer.poll(0)
        producer.flush(120)

    thread = threading.Thread(target=produce_loop, daemon=True)
    thread.start()
    try:
        for kill_at in (TOTAL // 4, TOTAL // 2):
            wait_until(lambda at=kill_at: len(acked) >= at, 60, f"{kill_at} acknowledgements")
            coordinator.kill()
            acked_before_kill = len(acked)
            coordinator.start()
            assert acked_before_kill > 0
        thread.join(180)
        assert not thread.is_alive(), "producer did not finish"
    finally:
        stop.set()
    assert not failed, failed[:5]
    assert sorted(acked) == list(range(TOTAL))

    records = consume_kafka_python(coordinator.bootstrap, "durable", 1, TOTAL, timeout=60)
    values = [int(v) for _, _, _, v in sorted(records)]
    assert len(values) == len(set(values)), "a record was stored twice"
    assert values == list(range(TOTAL)), "records missing or out of order"

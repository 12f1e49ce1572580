"""Given an idempotent acks=all producer, when the coordinator is killed with SIGKILL and
restarted — once just after a batch was acknowledged and nothing else was sent, so the
acknowledged records sit at the log's tail, and once while batches are in flight — then the
partition, read to its end, holds every acknowledged record, in the order produced, once.
"""

from __future__ import annotations

import threading
from collections import Counter

import pytest
from confluent_kafka import Producer

from tests.support.clients import read_to_end
from tests.support.group_scenario import wait_until

pytestmark = pytest.mark.integration

QUIET_KILL_AT = 5000  # acknowledged, then the kill: the tail is acknowledged data
TOTAL = 20000


def assert_log_holds_exactly(bootstrap: str, count: int) -> None:
    """The partition, read to its end, is records 0..count-1 in order, each once."""
    values = [int(value) for _, _, _, value in read_to_end(bootstrap, "durable")]
    twice = [v for v, n in Counter(values).items() if n > 1]
    assert not twice, f"{len(twice)} records stored more than once, e.g. {twice[:5]}"
    missing = sorted(set(range(count)) - set(values))
    assert not missing, f"{len(missing)} acknowledged records lost, e.g. {missing[:5]} (last {missing[-1:]})"
    assert len(values) == count, f"the log holds {len(values)} records, {count} were produced"
    assert values == list(range(count)), "records out of order"


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

    def produce(first: int, last: int) -> None:
        for i in range(first, last):
            while not stop.is_set():
                try:
                    producer.produce("durable", value=str(i).encode(), partition=0, on_delivery=on_delivery)
                    break
                except BufferError:
                    producer.poll(0.05)
            producer.poll(0)
        producer.flush(120)

    # A quiet kill: everything sent is acknowledged, the last acknowledged batch ends the log.
    produce(0, QUIET_KILL_AT)
    assert not failed and sorted(acked) == list(range(QUIET_KILL_AT)), failed[:5]
    coordinator.kill()
    coordinator.start()
    assert_log_holds_exactly(coordinator.bootstrap, QUIET_KILL_AT)

    # A kill mid-stream: batches in flight are sent again after the restart, and stored once.
    thread = threading.Thread(target=produce, args=(QUIET_KILL_AT, TOTAL), daemon=True)
    thread.start()
    try:
        midway = (QUIET_KILL_AT + TOTAL) // 2
        wait_until(lambda: len(acked) >= midway, 60, f"{midway} acknowledgements")
        coordinator.kill()
        coordinator.start()
        thread.join(180)
        assert not thread.is_alive(), "producer did not finish"
    finally:
        stop.set()
    assert not failed, failed[:5]
    assert sorted(acked) == list(range(TOTAL))
    assert_log_holds_exactly(coordinator.bootstrap, TOTAL)

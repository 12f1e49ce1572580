"""Client-library noise on a virtual clock: a Kafka client's repeated message is written once
per quiet period, the next one says how many were held back, and our own lines all pass."""

from __future__ import annotations

import logging

import pytest

from connect_rebalance.log_noise import RepeatedMessages

pytestmark = pytest.mark.unit


def record(name: str, msg: str) -> logging.LogRecord:
    return logging.LogRecord(name, logging.WARNING, __file__, 1, msg, (), None)


def test_a_client_librarys_repeated_message_is_written_once_per_quiet_period() -> None:
    now = [0.0]
    repeats = RepeatedMessages(quiet_s=10.0, clock=lambda: now[0])
    noise = "No node available for metadata refresh - backoff/retry"
    passed = []
    for step in range(300):  # every 5 ms for 1.5 s, then again after the quiet period
        now[0] = step * 0.005
        if repeats.filter(line := record("kafka.cluster", noise)):
            passed.append(line.getMessage())
    assert passed == [noise]
    now[0] = 11.0
    later = record("kafka.cluster", noise)
    assert repeats.filter(later) and later.getMessage() == f"{noise} (and 299 more like it in the last 11 s)"
    assert all(repeats.filter(record("workers.distributed.herder", "ours")) for _ in range(5)), (
        "our own lines were held back"
    )
    assert repeats.filter(record("kafka.conn", noise)), "another logger's message is its own"

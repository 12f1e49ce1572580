"""Producer fences: a new run's epoch refuses every older run's batches, on every partition,
and the fences come back from their file after a crash, torn last line and all."""

from __future__ import annotations

import itertools
from pathlib import Path

import pytest

from connect_rebalance.errors import ErrorCode, KafkaApiError
from coordinator.storage.producer_fences import MAX_EPOCH, REWRITE_SLACK, ProducerFences

pytestmark = pytest.mark.unit


def fences(path: Path, start: int = 100) -> ProducerFences:
    return ProducerFences(path, itertools.count(start).__next__)


def refused(store: ProducerFences, producer_id: int, epoch: int) -> bool:
    try:
        store.check(producer_id, epoch)
    except KafkaApiError as exc:
        assert exc.code == ErrorCode.INVALID_PRODUCER_EPOCH and "newer run" in (exc.message or "")
        return True
    return False


def test_each_run_fences_the_ones_before_it_and_leaves_other_producers_alone(tmp_path: Path) -> None:
    store = fences(tmp_path / "fences.jsonl")
    first = store.begin_run("connect-cluster-orders-0")
    assert (first.producer_id, first.epoch) == (100, 0)
    assert not refused(store, 100, 0)
    second = store.begin_run("connect-cluster-orders-0")
    assert (second.producer_id, second.epoch) == (100, 1)
    assert refused(store, 100, 0) and not refused(store, 100, 1)
    other = store.begin_run("connect-cluster-orders-1")
    assert other.producer_id == 101 and not refused(store, 101, 0)
    assert not refused(store, 7, 0) and not refused(store, -1, -1), "ordinary producers are not fenced"


def test_fences_survive_a_crash_and_a_torn_last_line(tmp_path: Path) -> None:
    path = tmp_path / "fences.jsonl"
    store = fences(path)
    for _ in range(3):
        store.begin_run("g-c-0")
    store.begin_run("g-c-1")
    store.close()
    with open(path, "ab") as handle:
        handle.write(b'{"fence": "g-c-0", "producer_id": 100, "ep')  # a crash mid-write
    again = fences(path, start=200)
    assert refused(again, 100, 1) and not refused(again, 100, 2)
    assert again.begin_run("g-c-0").epoch == 3
    assert again.begin_run("g-c-1").producer_id == 101


def test_a_fence_past_its_last_epoch_takes_a_new_producer_id_and_the_old_one_stays_fenced(
    tmp_path: Path,
) -> None:
    path = tmp_path / "fences.jsonl"
    store = fences(path)
    run = store.begin_run("g-c-0")
    while run.epoch < MAX_EPOCH:
        run = store.begin_run("g-c-0")
    assert path.stat().st_size < 200 * (REWRITE_SLACK + 10), "the file is rewritten as it grows"
    fresh = store.begin_run("g-c-0")
    assert (fresh.producer_id, fresh.epoch) == (101, 0)
    assert refused(store, 100, MAX_EPOCH) and not refused(store, 101, 0)
    store.close()
    reopened = fences(path, start=300)
    assert refused(reopened, 100, MAX_EPOCH), "a retired producer id stays fenced after a restart"
    assert reopened.begin_run("g-c-0").producer_id == 101

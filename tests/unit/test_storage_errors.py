"""Appends the disk refuses: a write that fails part-way through a produce request is taken back
whole (no partial batch past the log's end, no segment it rolled, no producer sequence it
recorded), answered KAFKA_STORAGE_ERROR, and the next append goes where the failed one would
have; a restart reads exactly what was acknowledged."""

from __future__ import annotations

import errno
import os
from collections.abc import Iterator
from pathlib import Path

import pytest

from connect_rebalance.errors import ErrorCode, KafkaApiError
from coordinator.storage import batches
from coordinator.storage.partition_log import PartitionLog
from tests.support.batches import make_batch
from tests.unit.test_partition_log import append_values, read_all_values, settings

pytestmark = pytest.mark.unit


class Disk:
    """os.pwrite with a budget of bytes: past it, a write lands in part, then ENOSPC."""

    def __init__(self) -> None:
        self.budget: int | None = None
        self._pwrite = os.pwrite

    def pwrite(self, fd: int, data: bytes | memoryview, offset: int) -> int:
        if self.budget is None:
            return self._pwrite(fd, data, offset)
        if self.budget <= 0:
            raise OSError(errno.ENOSPC, os.strerror(errno.ENOSPC))
        written = self._pwrite(fd, bytes(data[: self.budget]), offset)
        self.budget -= written
        return written


@pytest.fixture
def disk(monkeypatch: pytest.MonkeyPatch) -> Iterator[Disk]:
    fake = Disk()
    monkeypatch.setattr(os, "pwrite", fake.pwrite)
    yield fake


def three_batches(first: int) -> list[tuple[bytearray, batches.BatchHeader]]:
    return [
        item
        for i in range(3)
        for item in batches.split_batches(make_batch([b"r%d-%d" % (first + i, j) * 20 for j in range(4)]))
    ]


def log_files_size(directory: Path) -> int:
    return sum(p.stat().st_size for p in directory.glob("*.log"))


def test_a_request_the_disk_refuses_part_way_is_taken_back_whole(tmp_path: Path, disk: Disk) -> None:
    log = PartitionLog.open(tmp_path, settings(segment_bytes=1 << 20))
    append_values(log, [b"kept"])
    end, size = log.log_end_offset, log_files_size(tmp_path)
    disk.budget = len(three_batches(0)[0][0]) + 50  # the first batch and part of the second
    with pytest.raises(KafkaApiError) as refused:
        log.append(three_batches(0), now_ms=0)
    assert refused.value.code == ErrorCode.KAFKA_STORAGE_ERROR
    assert "No space left on device" in refused.value.message
    assert (log.log_end_offset, log_files_size(tmp_path)) == (end, size), "part of the request stayed"

    disk.budget = None
    assert log.append(three_batches(10), now_ms=0).base_offset == end
    expected = [b"kept"] + [b"r%d-%d" % (10 + i, j) * 20 for i in range(3) for j in range(4)]
    assert read_all_values(log) == expected
    log.close()
    reopened = PartitionLog.open(tmp_path, settings(segment_bytes=1 << 20))
    assert read_all_values(reopened) == expected


def test_a_roll_made_by_a_refused_request_is_undone_and_the_segments_stay_sound(
    tmp_path: Path, disk: Disk
) -> None:
    log = PartitionLog.open(tmp_path, settings(segment_bytes=700, index_interval_bytes=100))
    for i in range(3):
        append_values(log, [b"a%d" % i * 30])
    segments, end = len(log.segments), log.log_end_offset
    disk.budget = 0  # the roll's new segment takes no data; its first batch fails
    with pytest.raises(KafkaApiError):
        log.append(three_batches(0), now_ms=0)
    assert (len(log.segments), log.log_end_offset) == (segments, end)
    assert sorted(p.name for p in tmp_path.glob("*.log")) == [s.log_path.name for s in log.segments]

    disk.budget = None
    for i in range(3, 12):  # rolls again, sealing the segment whose index the failure undid
        append_values(log, [b"a%d" % i * 30])
    assert len(log.segments) > segments
    expected = [b"a%d" % i * 30 for i in range(12)]
    assert read_all_values(log) == expected
    log.close()
    reopened = PartitionLog.open(tmp_path, settings(segment_bytes=700, index_interval_bytes=100))
    assert read_all_values(reopened) == expected
    for offset in range(12):  # every offset found through the rewritten indexes
        assert reopened.read(offset, 1) != b""


def test_a_refused_request_leaves_no_producer_sequence_behind(tmp_path: Path, disk: Disk) -> None:
    log = PartitionLog.open(tmp_path, settings(segment_bytes=1 << 20))
    append_values(log, [b"s0"], producer_id=7, producer_epoch=0, base_sequence=0)

    def request() -> list[tuple[bytearray, batches.BatchHeader]]:  # sequences 1 and 2, two batches
        return [
            item
            for seq in (1, 2)
            for item in batches.split_batches(
                make_batch([b"s%d" % seq], producer_id=7, producer_epoch=0, base_sequence=seq)
            )
        ]

    disk.budget = len(request()[0][0])  # the first batch lands, the second does not
    with pytest.raises(KafkaApiError):
        log.append(request(), now_ms=0)
    disk.budget = None
    # The producer's retry of the same request is appended: no batch of it counts as a duplicate.
    try:
        result = log.append(request(), now_ms=0)
    except KafkaApiError as exc:
        result = exc  # type: ignore[assignment]
    assert not isinstance(result, KafkaApiError), f"the producer's retry was refused: {result}"
    assert (result.base_offset, result.duplicate) == (1, False)
    assert read_all_values(log) == [b"s0", b"s1", b"s2"]

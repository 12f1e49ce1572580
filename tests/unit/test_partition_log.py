"""The partition log on disk: appends, segment rolls, recovery after a torn write, index
rebuilds, timestamp lookups, retention and idempotent-producer state across restarts."""

from __future__ import annotations

import dataclasses
import os
from pathlib import Path

import pytest

from connect_rebalance.errors import ErrorCode, KafkaApiError
from coordinator.storage import batches
from coordinator.storage.partition_log import LogSettings, PartitionLog
from tests.support.batches import make_batch

pytestmark = pytest.mark.unit


def settings(**overrides: int) -> LogSettings:
    values = dict(
        segment_bytes=2000,
        segment_ms=10**12,
        retention_ms=-1,
        retention_bytes=-1,
        index_interval_bytes=300,
        flush_messages=2**62,
        flush_ms=1000,
        max_message_bytes=1 << 20,
    )
    values.update(overrides)
    return LogSettings(**values)


def append_values(log: PartitionLog, values: list[bytes], **batch_args: int) -> int:
    return log.append(batches.split_batches(make_batch(values, **batch_args)), now_ms=0).base_offset


def read_all_values(log: PartitionLog) -> list[bytes]:
    from kafka.record.memory_records import MemoryRecords

    out, offset = [], log.log_start_offset
    while offset < log.log_end_offset:
        data = log.read(offset, 1 << 20)
        records = MemoryRecords(data)
        while records.has_next():
            batch = records.next_batch()
            for record in batch:
                if record.offset >= offset:
                    out.append(record.value)
            offset = batch.next_offset
    return out


def test_appends_roll_segments_and_every_offset_reads_back(tmp_path: Path) -> None:
    log = PartitionLog.open(tmp_path, settings(segment_bytes=1000))
    expected = []
    for i in range(60):
        values = [f"v{i}-{j}".encode() for j in range(3)]
        assert append_values(log, values) == 3 * i
        expected += values
    assert len(log.segments) > 3, "small segment.bytes must roll segments"
    assert log.log_end_offset == 180
    assert read_all_values(log) == expected
    for offset in range(180):  # the batch containing each offset is found through the index
        first = batches.read_header(log.read(offset, 1))
        assert first.base_offset <= offset <= first.last_offset
    log.close()
    reopened = PartitionLog.open(tmp_path, settings(segment_bytes=1000))
    assert reopened.log_end_offset == 180 and read_all_values(reopened) == expected


@pytest.mark.parametrize("damage", ["partial batch", "garbage", "flipped byte in last batch"])
def test_recovery_truncates_a_torn_tail_and_keeps_complete_batches(tmp_path: Path, damage: str) -> None:
    log = PartitionLog.open(tmp_path, settings(segment_bytes=1 << 20))
    for i in range(10):
        append_values(log, [f"r{i}".encode()])
    last_good_size = log.segments[-1].size
    log.close()
    path = tmp_path / "00000000000000000000.log"
    with open(path, "r+b") as handle:
        if damage == "partial batch":
            handle.seek(0, os.SEEK_END)
            handle.write(make_batch([b"torn"])[:40])
        elif damage == "garbage":
            handle.seek(0, os.SEEK_END)
            handle.write(os.urandom(500))
        else:
            handle.seek(last_good_size - 3)
            handle.write(b"\xff")
    reopened = PartitionLog.open(tmp_path, settings(segment_bytes=1 << 20))
    kept = 9 if damage == "flipped byte in last batch" else 10
    assert reopened.log_end_offset == kept
    assert read_all_values(reopened) == [f"r{i}".encode() for i in range(kept)]
    assert append_values(reopened, [b"after"]) == kept


def test_a_missing_or_inconsistent_index_of_a_sealed_segment_is_rebuilt(tmp_path: Path) -> None:
    log = PartitionLog.open(tmp_path, settings())
    for i in range(80):
        append_values(log, [f"x{i}".encode(), b"y"])
    expected = read_all_values(log)
    log.close()
    indexes = sorted(tmp_path.glob("*.index"))  # the sealed segments' (the active one has none)
    assert len(indexes) == len(log.segments) - 1 >= 2
    indexes[0].unlink()
    indexes[1].write_bytes(b"\x00" * 15)
    reopened = PartitionLog.open(tmp_path, settings())
    assert read_all_values(reopened) == expected
    assert indexes[0].exists()


def test_offsets_for_timestamps_find_the_first_record_at_or_after(tmp_path: Path) -> None:
    log = PartitionLog.open(tmp_path, settings())
    for i in range(30):
        base = 1_000_000 + i * 100
        log.append(batches.split_batches(make_batch([b"a", b"b"], timestamps=[base, base + 50])), now_ms=0)
    assert log.offset_for_timestamp(0) == (0, 1_000_000)
    assert log.offset_for_timestamp(1_000_051) == (2, 1_000_100)
    assert log.offset_for_timestamp(1_001_050) == (21, 1_001_050)
    assert log.offset_for_timestamp(10**12) is None
    assert log.max_timestamp_offset() == (59, 1_002_950)


def test_retention_by_bytes_and_by_time_deletes_whole_old_segments(tmp_path: Path) -> None:
    log = PartitionLog.open(tmp_path, settings(retention_bytes=3000))
    for i in range(60):
        append_values(log, [f"v{i}".encode() * 20])
    segments_before = len(log.segments)
    assert log.enforce_retention(now_ms=0) > 0
    assert log.size_bytes < 3000 + 2000 and len(log.segments) < segments_before
    assert log.log_start_offset > 0
    with pytest.raises(KafkaApiError) as err:
        log.read(0, 100)
    assert err.value.code == ErrorCode.OFFSET_OUT_OF_RANGE
    aged = PartitionLog.open(tmp_path / "aged", settings(retention_ms=1000))
    for i in range(40):
        aged.append(batches.split_batches(make_batch([b"old" * 30], timestamps=[5000 + i])), now_ms=0)
    aged.enforce_retention(now_ms=5000 + 40 + 1000 + 1)
    assert len(aged.segments) == 1, "every sealed segment is older than retention.ms"


def test_idempotent_duplicates_and_sequence_gaps_survive_restart(tmp_path: Path) -> None:
    log = PartitionLog.open(tmp_path, settings())
    for seq in range(0, 300, 3):  # enough batches to roll segments and write snapshots
        append_values(log, [b"a", b"b", b"c"], producer_id=7, producer_epoch=0, base_sequence=seq)
    retry = batches.split_batches(
        make_batch([b"a", b"b", b"c"], producer_id=7, producer_epoch=0, base_sequence=297)
    )
    assert log.append(retry, now_ms=0).duplicate
    log.close()
    for reopened_twice in range(2):
        log = PartitionLog.open(tmp_path, settings())
        result = log.append(
            batches.split_batches(
                make_batch([b"a", b"b", b"c"], producer_id=7, producer_epoch=0, base_sequence=297)
            ),
            now_ms=0,
        )
        assert result.duplicate and result.base_offset == 297 and log.log_end_offset == 300
        with pytest.raises(KafkaApiError) as gap:
            append_values(log, [b"x"], producer_id=7, producer_epoch=0, base_sequence=305)
        assert gap.value.code == ErrorCode.OUT_OF_ORDER_SEQUENCE_NUMBER
        with pytest.raises(KafkaApiError) as stale:
            append_values(log, [b"x"], producer_id=7, producer_epoch=-1, base_sequence=300)
        assert stale.value.code == ErrorCode.INVALID_PRODUCER_EPOCH
        log.close()
        if reopened_twice == 0:  # the second pass has no snapshot for the active segment
            for snapshot in tmp_path.glob("*.producers.json"):
                snapshot.unlink()


def test_a_partition_is_due_for_fsync_only_with_unflushed_writes_older_than_flush_ms(tmp_path: Path) -> None:
    log = PartitionLog.open(tmp_path, settings(flush_ms=0))
    assert not log.flush_due(now_ms=10**13), "nothing written, nothing to fsync"
    append_values(log, [b"a"])
    assert log.flush_due(now_ms=10**13)
    log.begin_flush().flush()
    assert not log.flush_due(now_ms=10**13)
    every_message = PartitionLog.open(tmp_path / "each", settings(flush_messages=1, flush_ms=10**9))
    append_values(every_message, [b"b"])
    assert not every_message.flush_due(now_ms=10**13), "flush.messages=1 fsyncs before acknowledging"


def test_time_retention_takes_the_active_segment_too_once_every_record_in_it_is_past_retention(
    tmp_path: Path,
) -> None:
    """As Kafka: a partition nobody wrote to for longer than retention.ms ends up empty (its
    active segment is rolled, then deleted), keeps its end offset, and takes writes on from there."""
    log = PartitionLog.open(tmp_path, settings(retention_ms=1000))
    log.append(batches.split_batches(make_batch([b"a", b"b", b"c"], timestamps=[5000, 5001, 5002])), now_ms=0)
    assert log.enforce_retention(now_ms=5002 + 999) == 0, "a record still within retention.ms went"
    assert read_all_values(log) == [b"a", b"b", b"c"]
    assert log.enforce_retention(now_ms=5002 + 1001) == 1
    assert (log.log_start_offset, log.log_end_offset) == (3, 3)
    assert read_all_values(log) == []
    assert log.enforce_retention(now_ms=10**9) == 0  # nothing left to delete, nothing rolled
    assert append_values(log, [b"d"]) == 3 and read_all_values(log) == [b"d"]
    log.close()
    reopened = PartitionLog.open(tmp_path, settings(retention_ms=1000))
    assert (reopened.log_start_offset, reopened.log_end_offset) == (3, 4)


def test_a_log_append_time_partition_stamps_its_batches_and_keeps_their_crc_valid(tmp_path: Path) -> None:
    from kafka.record.default_records import DefaultRecordBatch

    log = PartitionLog.open(tmp_path, dataclasses.replace(settings(), log_append_time=True))
    stamped = make_batch([b"a", b"b"], timestamps=[1000, 1001])
    result = log.append(batches.split_batches(stamped), now_ms=77_000)
    assert result.log_append_time_ms == 77_000
    stored = bytearray(log.read(0, 1 << 20))
    header = batches.read_header(stored)
    assert batches.crc_is_valid(stored, 0, header), "the stamped batch's CRC does not match"
    read = DefaultRecordBatch(stored)
    assert read.timestamp_type == 1 and [r.timestamp for r in read] == [77_000, 77_000]


def test_a_read_allocates_what_the_log_holds_not_what_was_asked(tmp_path: Path) -> None:
    import tracemalloc

    log = PartitionLog.open(tmp_path, settings(segment_bytes=1 << 20))
    append_values(log, [b"small"] * 10)
    tracemalloc.start()
    try:
        data = log.read(0, 2**31 - 1)
        peak = tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()
    assert len(data) == log.segments[-1].size
    assert peak < 1 << 20, f"a read of {len(data)} bytes allocated {peak:,} bytes at its peak"


@pytest.mark.parametrize(("codec", "sent_with"), [(1, 0), (0, 4), (3, 2)])
def test_a_topic_compression_type_rewrites_batches_of_another_codec(
    tmp_path: Path, codec: int, sent_with: int
) -> None:
    log = PartitionLog.open(tmp_path, dataclasses.replace(settings(), compression=codec))
    values = [b"value-%d" % i * 20 for i in range(50)]
    sent = batches.split_batches(
        make_batch(values, producer_id=9, producer_epoch=2, base_sequence=0, compression=sent_with)
    )
    log.append(sent, now_ms=0)
    stored = batches.read_header(log.read(0, 1 << 20))
    assert stored.compression == codec, f"stored with codec {stored.compression}, the topic says {codec}"
    assert (stored.producer_id, stored.producer_epoch, stored.base_sequence) == (9, 2, 0)
    assert batches.crc_is_valid(log.read(0, 1 << 20), 0, stored)
    assert read_all_values(log) == values


def test_delete_records_moves_the_log_start_inside_a_segment_and_keeps_it_across_a_reopen(
    tmp_path: Path,
) -> None:
    log = PartitionLog.open(tmp_path, settings(segment_bytes=1000))
    for i in range(60):
        append_values(log, [f"v{i}-{j}".encode() for j in range(3)])
    segments = len(log.segments)
    middle = log.segments[2].base_offset + 1  # inside the third segment
    assert log.delete_records_before(middle) == middle
    assert log.log_start_offset == middle
    assert log.segments[0].base_offset == middle - 1 and len(log.segments) == segments - 2
    assert read_all_values(log)[0] == b"v%d-%d" % divmod(middle, 3)
    with pytest.raises(KafkaApiError) as below:
        log.read(middle - 1, 1 << 20)
    assert below.value.code == ErrorCode.OFFSET_OUT_OF_RANGE
    assert log.delete_records_before(3) == middle, "the log start never moves back"
    with pytest.raises(KafkaApiError) as beyond:
        log.delete_records_before(log.log_end_offset + 1)
    assert beyond.value.code == ErrorCode.OFFSET_OUT_OF_RANGE
    log.close()

    reopened = PartitionLog.open(tmp_path, settings(segment_bytes=1000))
    assert reopened.log_start_offset == middle
    assert reopened.delete_records_before(-1) == reopened.log_end_offset == 180
    assert len(reopened.segments) == 1 and read_all_values(reopened) == []
    append_values(reopened, [b"after"])
    assert read_all_values(reopened) == [b"after"]
    reopened.close()

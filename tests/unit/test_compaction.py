"""Log compaction: latest value per key survives at its offset, tombstones expire, a crash
mid-merge is repaired at load, retention never touches a compacted topic, and the group
coordinator's records replay to the same state after compaction."""

from __future__ import annotations

import dataclasses
import shutil
import threading
import time
from pathlib import Path

import pytest
from kafka.record.default_records import DefaultRecordBatchBuilder
from kafka.record.memory_records import MemoryRecords

from connect_rebalance.protocol.api_keys import ApiKey
from coordinator.group_record_codec import decode_record, encode_record
from coordinator.groups.coordinator import GroupCoordinator
from coordinator.groups.settings import GroupSettings
from coordinator.storage import batches
from coordinator.storage.partition_log import LogSettings, PartitionLog
from tests.support.batches import make_batch
from tests.support.group_harness import GroupHarness

pytestmark = pytest.mark.unit
DAY = 86_400_000


def compacted(**overrides) -> LogSettings:  # type: ignore[no-untyped-def]
    values = dict(
        segment_bytes=1500, segment_ms=10**12, retention_ms=1, retention_bytes=1, index_interval_bytes=200,
        flush_messages=2**62, flush_ms=1000, max_message_bytes=1 << 20,
        cleanup_policy=frozenset({"compact"}), delete_retention_ms=DAY,
    )  # fmt: skip
    values.update(overrides)
    return LogSettings(**values)


def put(log: PartitionLog, pairs: list[tuple[bytes | None, bytes | None]], timestamp: int = 1000) -> None:
    builder = DefaultRecordBatchBuilder(2, 0, False, -1, -1, -1, batch_size=1 << 30)
    for i, (key, value) in enumerate(pairs):
        builder.append(i, timestamp, key, value, [])
    log.append(batches.split_batches(bytes(builder.build())), now_ms=timestamp)


def read_all(log: PartitionLog) -> list[tuple[int, bytes | None, bytes | None]]:
    out, offset = [], log.log_start_offset
    while offset < log.log_end_offset:
        records = MemoryRecords(log.read(offset, 1 << 20))
        while records.has_next():
            batch = records.next_batch()
            out.extend((r.offset, r.key, r.value) for r in batch if r.offset >= offset)
            offset = batch.next_offset
    return out


def test_the_latest_value_of_each_key_survives_at_its_original_offset(tmp_path: Path) -> None:
    log = PartitionLog.open(tmp_path, compacted())
    for round_ in range(30):
        put(log, [(f"k{k}".encode(), f"r{round_}".encode()) for k in range(5)])
    put(log, [(None, b"no key")])
    before = read_all(log)
    segments_before = len(log.segments)
    assert log.needs_compaction() and log.compact(now_ms=2000) > 0
    after = read_all(log)
    assert len(log.segments) < segments_before
    assert set(after) <= set(before), "offsets, keys and values are unchanged"
    latest = {key: (offset, value) for offset, key, value in before}
    assert {key: (offset, value) for offset, key, value in after} == latest
    active_base = log.segments[-1].base_offset
    sealed_keys = [key for offset, key, _ in after if offset < active_base and key is not None]
    assert len(sealed_keys) == len(set(sealed_keys)), "one record per key in the compacted segments"
    assert (before[-1] in after) and log.log_end_offset == before[-1][0] + 1
    assert not log.needs_compaction()
    reopened = PartitionLog.open(tmp_path, compacted())
    assert read_all(reopened) == after


def test_tombstones_are_kept_for_delete_retention_ms_then_dropped(tmp_path: Path) -> None:
    log = PartitionLog.open(tmp_path, compacted())
    put(log, [(b"gone", b"v1"), (b"kept", b"v")], timestamp=1000)
    put(log, [(b"gone", None)], timestamp=2000)
    for i in range(40):
        put(log, [(b"filler", b"x" * 40 + str(i).encode())], timestamp=3000)
    log.compact(now_ms=2000 + DAY)
    keys = [(key, value) for _, key, value in read_all(log)]
    assert (b"gone", None) in keys and (b"gone", b"v1") not in keys
    log.cleaned_through = 0
    log.compact(now_ms=2000 + DAY + 1)
    assert b"gone" not in {key for _, key, _ in read_all(log)}
    assert (b"kept", b"v") in [(key, value) for _, key, value in read_all(log)]


def test_records_keep_their_timestamp_type_and_append_time_through_compaction(tmp_path: Path) -> None:
    """Given a record appended at 500 ms to a LogAppendTime log (sent with timestamp 1) and one
    appended after the log went back to CreateTime (sent with 700), when both survive one
    compaction, then a consumer reads them as before: (LogAppendTime, 500) and (CreateTime, 700),
    under valid CRCs."""
    log = PartitionLog.open(tmp_path, compacted(log_append_time=True))
    log.append(batches.split_batches(make_batch([b"kept"], [1], keys=[b"stamped"])), now_ms=500)
    log.settings = dataclasses.replace(log.settings, log_append_time=False)
    put(log, [(b"sent", b"kept")], timestamp=700)
    for i in range(40):
        put(log, [(b"filler", b"x" * 40 + str(i).encode())], timestamp=3000)
    assert log.compact(now_ms=4000) > 0
    records = MemoryRecords(log.read(0, 1 << 20))
    read = []
    while records.has_next():
        batch = records.next_batch()
        assert batch.validate_crc()
        read += [(r.key, r.timestamp_type, r.timestamp) for r in batch if r.key != b"filler"]
    assert read == [(b"stamped", 1, 500), (b"sent", 0, 700)]


@pytest.mark.parametrize("crash_after", ["writing", "staging", "deleting one old segment"])
def test_a_compaction_interrupted_by_a_crash_is_finished_or_undone_at_load(
    tmp_path: Path, crash_after: str
) -> None:
    from coordinator.storage import compaction

    def filled(directory: Path) -> PartitionLog:
        log = PartitionLog.open(directory, compacted())
        for round_ in range(30):
            put(log, [(f"k{k}".encode(), f"r{round_}".encode()) for k in range(5)])
        return log

    reference = filled(tmp_path / "reference")
    before = read_all(reference)
    reference.compact(now_ms=2000)
    expected = read_all(reference)

    crashed = filled(tmp_path / "crashed")
    sealed = crashed.segments[:-1]
    latest = compaction.latest_offsets(crashed.segments)
    kept = [r for s in sealed for r in compaction.surviving_records(s, latest, 2000, DAY)]
    data = compaction.encode_batches(kept, 512 * 1024)
    crashed.close()
    directory = tmp_path / "crashed"
    if crash_after == "writing":
        (directory / "00000000000000000000.log.cleaning").write_bytes(data[: len(data) // 2])
        want = before
    else:
        staged = compaction.stage(compaction.write_cleaning(directory, 0, data), sealed[-1].next_offset)
        if crash_after == "deleting one old segment":
            (directory / f"{sealed[1].base_offset:020d}.log").unlink()
        assert staged.exists()
        want = [row for row in before if row[0] >= crashed.segments[-1].base_offset]
        want = sorted(set(want) | {(r.offset, r.key, r.value) for r in kept})
    reopened = PartitionLog.open(directory, compacted())
    assert read_all(reopened) == want
    assert not list(directory.glob("*.clean*"))
    if crash_after != "writing":
        assert {k: (o, v) for o, k, v in read_all(reopened)} == {k: (o, v) for o, k, v in expected}


def during_rewrite(log: PartitionLog, step) -> None:  # type: ignore[no-untyped-def]
    """Run `step` between the next compaction's rewrite (done without the partition's lock)
    and its swap, as the event loop or the group log's writer thread may."""
    rewrite = log._rewrite

    def rewrite_then_step(*args):  # type: ignore[no-untyped-def]
        runs = rewrite(*args)
        log._rewrite = rewrite  # type: ignore[method-assign]
        step()
        return runs

    log._rewrite = rewrite_then_step  # type: ignore[method-assign]


def test_records_appended_while_a_compaction_runs_are_all_kept(tmp_path: Path) -> None:
    log = PartitionLog.open(tmp_path, compacted())
    for round_ in range(30):
        put(log, [(f"k{k}".encode(), f"r{round_}".encode()) for k in range(5)])
    before, end = read_all(log), log.segments[-1].base_offset

    def appends_and_a_roll() -> None:
        for round_ in range(30, 45):  # more than a segment: the active one rolls
            put(log, [(f"k{k}".encode(), f"r{round_}".encode()) for k in range(5)])

    during_rewrite(log, appends_and_a_roll)
    log.compact(now_ms=2000)
    after = read_all(log)
    appended = [(r * 5 + k, f"k{k}".encode(), f"r{r}".encode()) for r in range(30, 45) for k in range(5)]
    assert [row for row in after if row[0] >= end] == [row for row in before if row[0] >= end] + appended, (
        "the active segment of the start and everything appended during the compaction, untouched"
    )
    cleaned = [row for row in after if row[0] < end]
    assert set(cleaned) <= set(before) and len({k for _, k, _ in cleaned}) == len(cleaned)
    assert log.log_end_offset == 45 * 5 and log.cleaned_through == end
    assert log.needs_compaction(), "the segments sealed meanwhile are cleaned the next time"
    log.compact(now_ms=3000)
    assert not log.needs_compaction()
    latest = {key: (offset, value) for offset, key, value in before + appended}
    assert {key: (offset, value) for offset, key, value in read_all(log)} == latest
    assert read_all(PartitionLog.open(tmp_path, compacted())) == read_all(log)


def test_retention_waits_while_a_compaction_reads_the_segments(tmp_path: Path) -> None:
    log = PartitionLog.open(tmp_path, compacted(cleanup_policy=frozenset({"compact", "delete"})))
    for round_ in range(30):
        put(log, [(f"k{k}".encode(), f"r{round_}".encode()) for k in range(5)], timestamp=1)
    deleted: list[int] = []
    during_rewrite(log, lambda: deleted.append(log.enforce_retention(now_ms=10 * DAY)))
    log.compact(now_ms=2000)
    assert deleted == [0], "no segment is deleted under a compaction reading it"
    assert log.enforce_retention(now_ms=10 * DAY) > 0, "retention runs once the compaction is over"


def test_closing_a_log_abandons_its_compaction_instead_of_waiting_for_it(tmp_path: Path) -> None:
    log = PartitionLog.open(tmp_path, compacted())
    for round_ in range(30):
        put(log, [(f"k{k}".encode(), f"r{round_}".encode()) for k in range(5)])
    before, files = read_all(log), sorted(p.name for p in tmp_path.iterdir())
    reading, go_on = threading.Event(), threading.Event()
    reads_after_close = []

    def reader(segment):  # type: ignore[no-untyped-def]
        read_batch = segment.read_batch

        def slow_read_batch(position: int) -> bytes:  # a long compaction: it is reading when closed
            if go_on.is_set():
                reads_after_close.append(position)
            reading.set()
            go_on.wait(10)
            time.sleep(0.003)  # each batch takes longer than a hand-over interval
            return read_batch(position)

        return slow_read_batch

    for segment in log.segments:
        segment.read_batch = reader(segment)  # type: ignore[method-assign]
    freed: list[int | None] = []
    compacting = threading.Thread(target=lambda: freed.append(log.compact(now_ms=2000)))
    compacting.start()
    assert reading.wait(10)
    closing = threading.Thread(target=log.close)  # a topic deleted, the coordinator stopping
    closing.start()
    deadline = time.monotonic() + 10
    while not log._closing.is_set():
        assert time.monotonic() < deadline, "close() tells the compaction under way to stop"
        time.sleep(0.001)
    go_on.set()
    closing.join(10)
    compacting.join(10)
    assert not closing.is_alive() and freed == [None], "the compaction gave way to the close"
    assert len(reads_after_close) <= 1, (
        f"it stopped reading at once, not after {len(reads_after_close)} batches"
    )
    reopened = PartitionLog.open(tmp_path, compacted())
    assert read_all(reopened) == before, "nothing of the abandoned compaction is left"
    assert sorted(p.name for p in tmp_path.iterdir()) == files


def test_retention_never_deletes_from_a_compact_only_topic(tmp_path: Path) -> None:
    log = PartitionLog.open(tmp_path, compacted())
    for _ in range(30):
        put(log, [(f"k{k}".encode(), b"v") for k in range(5)], timestamp=1)
    assert log.enforce_retention(now_ms=10 * DAY) == 0 and log.log_start_offset == 0


def test_group_records_replay_to_the_same_state_after_compaction(tmp_path: Path) -> None:
    h = GroupHarness(GroupSettings(initial_rebalance_delay_ms=0))
    a, b = h.form_group(2)
    for round_ in range(40):
        h.call(ApiKey.OFFSET_COMMIT, 8, group_id="g", generation_id_or_member_epoch=1, member_id=a,
               group_instance_id=None, topics=[{"name": "orders", "partitions": [
                   {"partition_index": p, "committed_offset": round_ * 10 + p, "committed_leader_epoch": 0,
                    "committed_metadata": ""} for p in range(6)]}])  # fmt: skip
    log = PartitionLog.open(tmp_path, compacted(segment_bytes=4000))
    for record in h.records:
        key, value = encode_record(record)
        put(log, [(key, value)])
    log.compact(now_ms=2000)
    assert len(read_all(log)) < len(h.records) / 4
    replayed = GroupCoordinator(GroupSettings(), h.topics.get)
    for _, key, value in read_all(log):
        replayed.replay(decode_record(key, value))
    assert replayed.offsets.committed == h.core.offsets.committed
    assert {k: g.snapshot() for k, g in replayed.groups.items()} == {
        k: g.snapshot() for k, g in h.core.groups.items()
    }
    shutil.rmtree(tmp_path)


def test_a_log_is_compacted_once_its_new_part_is_half_of_it_and_a_reopen_remembers_where_it_was(
    tmp_path: Path,
) -> None:
    """Kafka's rule (min.cleanable.dirty.ratio 0.5): a compaction rewrites the whole log, so it
    waits until the sealed segments written since the last one are half of the sealed log;
    the offset it reached is kept, so a restart does not take the whole log for new data."""
    log = PartitionLog.open(tmp_path, compacted())
    for round_ in range(20):
        put(log, [(f"k{k}".encode(), f"r{round_}".encode() * 10) for k in range(40)])
    sealed = len(log.segments)
    while len(log.segments) == sealed:  # the last round sealed too: its keys live on in the sealed part
        put(log, [(b"other", b"o" * 100)])
    assert log.needs_compaction()  # nothing compacted yet: all of it is new
    log.compact(now_ms=2000)
    assert not log.needs_compaction()
    clean = sum(s.size for s in log.segments[:-1])
    assert clean > 0
    log.close()
    log = PartitionLog.open(tmp_path, compacted())
    assert not log.needs_compaction(), "a reopened log took its compacted part for new data"
    while sum(s.size for s in log.segments[:-1]) < 1.5 * clean:  # new sealed data: under half
        assert not log.needs_compaction()
        put(log, [(b"k0", b"later" * 10)])
    while not log.needs_compaction():
        put(log, [(b"k0", b"later" * 10)])
    assert sum(s.size for s in log.segments[:-1]) >= 2 * clean - 1500  # about half of it new, then due
    log.close()

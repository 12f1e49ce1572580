"""Log compaction: keep only the latest record of each key in a partition's sealed segments.

For topics whose `cleanup.policy` includes `compact` — the coordinator's own
`__consumer_offsets`, and users' changelog-style topics (Kafka Connect's config, status and
offset topics among them). Rules, as Kafka's cleaner:
- the active segment is never rewritten, but its keys count: a record is dropped when a
  later record with the same key exists anywhere in the log;
- tombstones (null values) are kept until `delete.retention.ms` after they were written,
  so consumers reading from the start still see the deletion, then dropped;
- records without a key are kept;
- offsets never change: a compacted batch keeps each surviving record's offset (gaps are
  normal in a compacted log);
- timestamps never change: a record of a LogAppendTime batch stays in one stamped with the
  same append time, which consumers read as its timestamp and its type.

Crash safety. Runs of adjacent sealed segments are merged into one file named for the
first segment's base offset. A run is replaced in four steps, each made durable:
1. write `<base>.log.cleaning` and fsync it (while the log takes appends: sealed segments
   do not change; steps 2-4 run under the partition's lock);
2. rename it to `<base>.log.cleaned-<end>`, where `end` is the offset the run stops before:
   from here on the merged file is complete and says which segments it replaces;
3. delete the run's other segments;
4. rename the merged file over `<base>.log` (its index is rebuilt when it is opened).
`repair_interrupted` runs before a partition is opened: it drops `.cleaning` files and
finishes steps 3-4 for any `.cleaned-<end>` file, so a crash anywhere leaves either the old
segments or the merged one, never both and never neither.
"""

from __future__ import annotations

import os
import time
from dataclasses import dataclass
from pathlib import Path

from kafka.record.default_records import DefaultRecordBatch, DefaultRecordBatchBuilder

from coordinator.storage import batches
from coordinator.storage.files import fsync_dir
from coordinator.storage.segment import Segment


@dataclass(frozen=True, slots=True)
class KeptRecord:
    offset: int
    timestamp: int
    key: bytes | None
    value: bytes | None
    headers: list[tuple[str, bytes]]
    log_append_time: bool = False  # its batch was stamped: `timestamp` is the append time

    @property
    def stamp(self) -> int | None:
        """What a rewritten batch's records share: a LogAppendTime batch has one timestamp, its
        append time; CreateTime records carry their own (None)."""
        return self.timestamp if self.log_append_time else None


# Compaction runs on a thread beside the event loop. Left to the interpreter's switch
# interval, the loop, which gives up the interpreter at every poll, got it back so rarely that
# single requests waited 0.1-0.5 s while 20 MB were compacted; handing it over every 2 ms keeps
# them at a few ms, for about 5% more compaction time (a sleep(0) costs ~0.1 ms here).
YIELD_EVERY_S = 0.002


class Abandoned(Exception):
    """The log is being closed (its topic deleted, the coordinator stopping): the compaction
    gives way at its next hand-over instead of making the close wait for it."""


class Closing:
    """Set once, when the log closes; read by a compaction on its own thread. A bare flag, not
    a threading.Event (whose Condition and lock cost 30 µs to make, once per partition at
    start-up): nothing ever waits on it."""

    __slots__ = ("_set",)

    def __init__(self) -> None:
        self._set = False

    def set(self) -> None:
        self._set = True

    def is_set(self) -> bool:
        return self._set


def _give_way(closing: Closing | None) -> None:
    if closing is not None and closing.is_set():
        raise Abandoned


def _records(segment: Segment, closing: Closing | None):  # type: ignore[no-untyped-def]
    _give_way(closing)
    position = 0
    yield_at = time.perf_counter() + YIELD_EVERY_S
    while position < segment.size:
        data = segment.read_batch(position)
        header = batches.read_header(data)
        for record in DefaultRecordBatch(bytearray(data)):
            yield header, record
        position += header.size
        if time.perf_counter() > yield_at:
            _give_way(closing)
            time.sleep(0)  # the event loop's turn at the interpreter (see YIELD_EVERY_S)
            yield_at = time.perf_counter() + YIELD_EVERY_S


def latest_offsets(segments: list[Segment], closing: Closing | None = None) -> dict[bytes, int]:
    latest: dict[bytes, int] = {}
    for segment in segments:
        for _, record in _records(segment, closing):
            if record.key is not None:
                latest[bytes(record.key)] = record.offset
    return latest


def surviving_records(
    segment: Segment,
    latest: dict[bytes, int],
    now_ms: int,
    delete_retention_ms: int,
    closing: Closing | None = None,
) -> list[KeptRecord]:
    kept = []
    for header, record in _records(segment, closing):
        key = None if record.key is None else bytes(record.key)
        if key is not None and latest.get(key) != record.offset:
            continue
        if key is not None and record.value is None and now_ms - header.max_timestamp > delete_retention_ms:
            continue
        kept.append(
            KeptRecord(
                record.offset,
                record.timestamp,
                key,
                None if record.value is None else bytes(record.value),
                [(k, bytes(v)) for k, v in record.headers],
                bool(header.attributes & batches.LOG_APPEND_TIME),
            )
        )
    return kept


def encode_batches(records: list[KeptRecord], max_batch_bytes: int) -> bytes:
    """Uncompressed batches holding `records` at their original offsets (and LogAppendTime
    records in batches stamped with their append time)."""
    out = bytearray()
    start = 0
    while start < len(records):
        base, stamp = records[start].offset, records[start].stamp
        builder = DefaultRecordBatchBuilder(2, 0, False, -1, -1, -1, batch_size=1 << 30)
        end = start
        while end < len(records) and (
            end == start or (builder.size() < max_batch_bytes and records[end].stamp == stamp)
        ):
            r = records[end]
            builder.append(r.offset - base, r.timestamp, r.key, r.value, r.headers)
            end += 1
        batch = bytearray(builder.build())
        if stamp is not None:
            batches.set_log_append_time(batch, stamp)
        batches.assign_offset(batch, base, 0)
        out += batch
        start = end
    return bytes(out)


def _name(offset: int) -> str:
    return f"{offset:020d}"


def write_cleaning(directory: Path, base_offset: int, data: bytes) -> Path:
    """Step 1: the merged file, written and fsynced under a name start-up discards."""
    cleaning = directory / f"{_name(base_offset)}.log.cleaning"
    with open(cleaning, "wb") as handle:
        handle.write(data)
        handle.flush()
        os.fsync(handle.fileno())
    return cleaning


def stage(cleaning: Path, end_offset: int) -> Path:
    """Step 2: the merged file is complete and names the offsets [base, end) it replaces."""
    staged = cleaning.with_name(f"{cleaning.name.removesuffix('.cleaning')}.cleaned-{end_offset}")
    os.replace(cleaning, staged)
    fsync_dir(cleaning.parent)
    return staged


def finish_replacement(staged: Path) -> None:
    """Steps 3-4: delete the segments the staged file replaces, then put it in place."""
    directory = staged.parent
    base = int(staged.name.split(".", 1)[0])
    end = int(staged.name.rsplit("-", 1)[1])
    for log_file in directory.glob("*.log"):
        if base < int(log_file.stem) < end:
            log_file.unlink()
            log_file.with_suffix(".index").unlink(missing_ok=True)
    fsync_dir(directory)
    (directory / f"{_name(base)}.index").unlink(missing_ok=True)
    os.replace(staged, directory / f"{_name(base)}.log")
    fsync_dir(directory)


# In the name of every file an interrupted compaction leaves (`.log.cleaning`, `.log.cleaned-<end>`).
INTERRUPTED = ".log.clean"


def repair_interrupted(directory: Path) -> None:
    for partial in directory.glob("*.log.cleaning"):
        partial.unlink()
    for staged in sorted(directory.glob("*.log.cleaned-*")):
        finish_replacement(staged)

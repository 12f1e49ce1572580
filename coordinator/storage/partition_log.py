"""The log of one topic partition: an ordered list of segments, the last one active.

Owns offsets (log start, log end = high watermark on a single node), segment rolling,
retention, flushing, and the partition's idempotent-producer state. Appends are
all-or-nothing per produce request: every batch is validated before any byte is written.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import os
import threading
import time
from dataclasses import dataclass
from pathlib import Path

from connect_rebalance.errors import ErrorCode, KafkaApiError
from coordinator.storage import batches, compaction
from coordinator.storage.batches import BatchHeader
from coordinator.storage.files import read_json, write_json_atomically
from coordinator.storage.outage_log import OutageLog
from coordinator.storage.producer_state import ProducerEntry, ProducerStateTable
from coordinator.storage.segment import Segment, SegmentMark, segment_name

log = logging.getLogger(__name__)
LEADER_EPOCH = 0
# Where a compacted partition keeps the offset below which it was compacted, as Kafka's
# cleaner-offset-checkpoint: a restart does not take the whole log for new data.
CLEANER_CHECKPOINT = "cleaner-offset-checkpoint.json"
# Where a partition keeps the log start offset DeleteRecords moved it to, as Kafka's
# log-start-offset-checkpoint: it may lie inside a segment, which stays until wholly below it.
START_CHECKPOINT = "log-start-offset-checkpoint.json"


@dataclass(frozen=True, slots=True)
class LogSettings:
    """Per-topic log settings, resolved from topic configs and broker defaults."""

    segment_bytes: int
    segment_ms: int
    retention_ms: int
    retention_bytes: int
    index_interval_bytes: int
    flush_messages: int
    flush_ms: int
    max_message_bytes: int
    cleanup_policy: frozenset[str] = frozenset({"delete"})
    delete_retention_ms: int = 86400000
    min_cleanable_dirty_ratio: float = 0.5
    log_append_time: bool = False  # message.timestamp.type=LogAppendTime
    preallocate: bool = False  # each new segment holds segment.bytes of disk for its appends
    compression: int | None = None  # compression.type's codec; None ("producer"): the batch's own
    min_insync_replicas: int = 1  # above 1, no acks=all write can be acknowledged by the one replica

    @property
    def segment_reserve(self) -> int:
        return self.segment_bytes if self.preallocate else 0

    @property
    def compacted(self) -> bool:
        return "compact" in self.cleanup_policy


@dataclass(frozen=True, slots=True)
class _UndoPoint:
    """What an append changes, as it was before: a write the disk refuses is taken back whole."""

    segments: int
    active: SegmentMark
    producers: dict[int, ProducerEntry | None]
    unflushed_messages: int


@dataclass(frozen=True, slots=True)
class AppendResult:
    base_offset: int
    log_start_offset: int
    duplicate: bool = False
    log_append_time_ms: int = -1  # the time stamped on the batches (LogAppendTime), else -1


class PartitionLog:
    def __init__(self, directory: Path, settings: LogSettings) -> None:
        self.directory = directory
        self.settings = settings
        self.segments: list[Segment] = []
        self.producers = ProducerStateTable()
        self._unflushed_messages = 0
        self._last_flush_ms = now_ms()
        # Everything below this offset was compacted; kept in CLEANER_CHECKPOINT across restarts.
        self.cleaned_through = 0
        # The log start offset DeleteRecords set (START_CHECKPOINT); the first segment's base
        # offset is the log start when it is higher.
        self.deleted_through = 0
        self._waiters: list[asyncio.Future[None]] = []
        # Held while the segments change or are read: `__consumer_offsets` is appended to by the
        # group coordinator's writer thread (group_service.py) while the loop may fetch it, and
        # a compaction swaps its cleaned segments in from a thread of its own.
        self.lock = threading.Lock()
        # Held by a compaction from start to end (it reads sealed segments without `lock`):
        # closing the log waits for it, and retention does not delete segments meanwhile.
        self._cleaning = threading.Lock()
        self._closing = compaction.Closing()  # set by `close`: a compaction under way gives way
        self.writes = OutageLog(log, f"appends to {directory.parent.name}-{directory.name}")

    # -- lifecycle ------------------------------------------------------------------------

    @classmethod
    def open(cls, directory: Path, settings: LogSettings) -> PartitionLog:
        """The partition's log from its directory (made if missing). One listing of the
        directory tells everything else: a start opens every partition, 100,000 of them."""
        try:
            names = set(os.listdir(directory))
        except FileNotFoundError:
            directory.mkdir(parents=True)
            names = set()
        log = cls(directory, settings)
        if any(compaction.INTERRUPTED in name for name in names):
            compaction.repair_interrupted(directory)
            names = set(os.listdir(directory))
        bases = sorted(int(name[:-4]) for name in names if name.endswith(".log"))
        if not bases:
            log.segments.append(
                Segment.create(directory, 0, settings.index_interval_bytes, settings.segment_reserve)
            )
            return log
        for i, base in enumerate(bases):
            active = i == len(bases) - 1
            log.segments.append(
                Segment.load(directory, base, settings.index_interval_bytes, active, settings.segment_reserve)
            )
        log._restore_producer_state(names)
        # A hint: without it (or unreadable) all sealed segments count as new.
        with contextlib.suppress(OSError, ValueError, KeyError, TypeError):
            if CLEANER_CHECKPOINT in names:
                cleaned = int(read_json(directory / CLEANER_CHECKPOINT)["cleaned_through"])
                log.cleaned_through = min(cleaned, log.segments[-1].base_offset)  # the segments are the truth
        if START_CHECKPOINT in names:  # unreadable: an OSError to the caller, never records shown again
            log.deleted_through = min(int(read_json(directory / START_CHECKPOINT)["log_start_offset"]),
                                      log.log_end_offset)  # fmt: skip
        return log

    def close(self) -> None:
        self._closing.set()  # a compaction under way stops within its next hand-over (2 ms)
        with self._cleaning, self.lock:
            for segment in self.segments:
                segment.close()

    # -- offsets --------------------------------------------------------------------------

    @property
    def log_start_offset(self) -> int:
        return max(self.segments[0].base_offset, self.deleted_through)

    @property
    def log_end_offset(self) -> int:
        return self.segments[-1].next_offset

    @property
    def high_watermark(self) -> int:
        return self.log_end_offset

    @property
    def size_bytes(self) -> int:
        return sum(s.size for s in self.segments)

    # -- producer state -------------------------------------------------------------------

    def _snapshot_path(self, offset: int) -> Path:
        return self.directory / f"{segment_name(offset)}.producers.json"

    def _restore_producer_state(self, names: set[str]) -> None:
        """From the active segment's snapshot (if `names`, the directory's files, has it) and
        the batches after it."""
        active = self.segments[-1]
        snapshot = self._snapshot_path(active.base_offset)
        if snapshot.name in names:
            self.producers = ProducerStateTable.from_json(read_json(snapshot))
            replay = [active]
        else:
            replay = self.segments
        for segment in replay:
            for header in segment.headers():
                self.producers.record(header, header.base_offset)

    # -- writing --------------------------------------------------------------------------

    def check_sizes(self, incoming: list[tuple[bytearray, BatchHeader]]) -> None:
        """MESSAGE_TOO_LARGE for a batch over `max.message.bytes`."""
        for _, header in incoming:
            if header.size > self.settings.max_message_bytes:
                raise KafkaApiError(
                    ErrorCode.MESSAGE_TOO_LARGE,
                    f"record batch of {header.size} bytes exceeds "
                    f"max.message.bytes={self.settings.max_message_bytes}",
                )

    def append(
        self, incoming: list[tuple[bytearray, BatchHeader]], now_ms: int, wake: bool = True
    ) -> AppendResult:
        """Append a produce request's batches, or raise without writing anything.

        `wake=False` from a thread other than the event loop's: the caller wakes the long polls
        (`wake_waiters`) on the loop once the append is done."""
        self.check_sizes(incoming)
        with self.lock:
            result = self._append(incoming, now_ms)
        if wake:
            self.wake_waiters()
        return result

    def _append(self, incoming: list[tuple[bytearray, BatchHeader]], now_ms: int) -> AppendResult:
        if len(incoming) == 1:
            duplicate = self.producers.check(incoming[0][1])
            if duplicate is not None:
                return AppendResult(duplicate.base_offset, self.log_start_offset, duplicate=True)
        first_offset = self.log_end_offset
        undo = self._undo_point(incoming)
        try:
            for batch, header in incoming:
                # Several batches of a request are checked in turn, each against the sequences
                # of those before it, as Kafka does; one refused takes the request back whole.
                if len(incoming) > 1 and self.producers.check(header) is not None:
                    raise KafkaApiError(
                        ErrorCode.DUPLICATE_SEQUENCE_NUMBER, "a duplicate batch inside a multi-batch request"
                    )
                base = self.log_end_offset
                codec = self.settings.compression
                if codec is not None and header.compression != codec:
                    batch = batches.recompress(batch, header, codec)
                batches.assign_offset(batch, base, LEADER_EPOCH)
                if self.settings.log_append_time:
                    batches.set_log_append_time(batch, now_ms)
                stored = batches.read_header(batch)
                self._maybe_roll(stored.size, now_ms)
                self.segments[-1].append(batch, stored)
                self.producers.record(header, base)
                self._unflushed_messages += header.records_count
            if self._unflushed_messages >= self.settings.flush_messages:
                self.flush()
        except KafkaApiError:
            self._take_back(undo)
            raise
        except OSError as exc:
            self._take_back(undo)
            self.writes.failed(str(exc))
            raise KafkaApiError(
                ErrorCode.KAFKA_STORAGE_ERROR, f"the coordinator could not write this partition's log: {exc}"
            ) from exc
        self.writes.succeeded()
        stamped = now_ms if self.settings.log_append_time else -1
        return AppendResult(first_offset, self.log_start_offset, log_append_time_ms=stamped)

    def _undo_point(self, incoming: list[tuple[bytearray, BatchHeader]]) -> _UndoPoint:
        producers = {h.producer_id: self.producers.entries.get(h.producer_id) for _, h in incoming}
        return _UndoPoint(
            len(self.segments),
            self.segments[-1].mark(),
            {pid: entry.copy() if entry is not None else None for pid, entry in producers.items()},
            self._unflushed_messages,
        )

    def _take_back(self, undo: _UndoPoint) -> None:
        """Put the log back as it was before a failed append: segments rolled by it deleted, the
        active one cut back to its old end, the producers' sequences as they were."""
        while len(self.segments) > undo.segments:
            with contextlib.suppress(OSError):
                self.segments.pop().delete()
        self.segments[-1].rollback(undo.active)
        for pid, entry in undo.producers.items():
            if entry is None:
                self.producers.entries.pop(pid, None)
            else:
                self.producers.entries[pid] = entry
        self._unflushed_messages = undo.unflushed_messages

    def _maybe_roll(self, incoming_bytes: int, now_ms: int) -> None:
        active = self.segments[-1]
        if active.size == 0:
            return
        too_big = active.size + incoming_bytes > self.settings.segment_bytes
        too_old = now_ms - active.created_at * 1000 > self.settings.segment_ms
        if too_big or too_old:
            self._roll()

    def _roll(self) -> None:
        """Seal the active segment and start the next one at the log's end."""
        active = self.segments[-1]
        active.seal()
        next_base = active.next_offset
        # The snapshot comes first: a crash between the two leaves a snapshot for a
        # segment that does not exist yet, which the next roll simply overwrites.
        write_json_atomically(self._snapshot_path(next_base), self.producers.to_json())
        for older in self.directory.glob("*.producers.json"):  # only the newest is ever read
            if older.name != self._snapshot_path(next_base).name:
                older.unlink()
        self.segments.append(
            Segment.create(
                self.directory, next_base, self.settings.index_interval_bytes, self.settings.segment_reserve
            )
        )

    def flush(self) -> None:
        self.begin_flush().flush()

    def begin_flush(self) -> Segment:
        """Count the writes so far as flushed and return the segment to fsync.

        The fsync itself may then run on another thread; later writes are counted again.
        """
        self._unflushed_messages = 0
        self._last_flush_ms = now_ms()
        return self.segments[-1]

    def flush_due(self, now_ms: int) -> bool:
        """Unflushed writes older than flush.ms (checked by the broker's flush scheduler)."""
        return self._unflushed_messages > 0 and now_ms - self._last_flush_ms >= self.settings.flush_ms

    # -- retention ------------------------------------------------------------------------

    def enforce_retention(self, now_ms: int) -> int:
        """Delete whole sealed segments past retention.ms or retention.bytes; returns the count.

        Only for cleanup.policy=delete: a compacted topic keeps the latest value of every key.
        """
        if not self._cleaning.acquire(blocking=False):
            return 0  # a compaction is reading the segments; retention runs again next round
        try:
            with self.lock:
                return self._enforce_retention(now_ms)
        finally:
            self._cleaning.release()

    def _enforce_retention(self, now_ms: int) -> int:
        deleted = 0
        while "delete" in self.settings.cleanup_policy:
            oldest = self.segments[0]
            expired = (
                self.settings.retention_ms >= 0
                and oldest.max_timestamp >= 0
                and now_ms - oldest.max_timestamp > self.settings.retention_ms
            )
            if len(self.segments) == 1:
                if not (expired and oldest.size):
                    break
                # Every record is past retention.ms, the active segment's too: as Kafka does,
                # roll it, so that it can go like any sealed one (the log keeps its end offset).
                self._roll()
            oversize = (
                self.settings.retention_bytes >= 0
                and self.size_bytes - oldest.size >= self.settings.retention_bytes
            )
            if not (expired or oversize):
                break
            self._drop_oldest()
            deleted += 1
        return deleted + self._drop_deleted_segments()

    def _drop_oldest(self) -> None:
        oldest = self.segments.pop(0)
        oldest.delete()
        self._snapshot_path(oldest.base_offset).unlink(missing_ok=True)

    def _drop_deleted_segments(self) -> int:
        """Sealed segments wholly below the DeleteRecords start offset go (as Kafka's
        deleteLogStartOffsetBreachedSegments: the active segment stays, whatever it holds)."""
        dropped = 0
        while len(self.segments) > 1 and self.segments[1].base_offset <= self.deleted_through:
            self._drop_oldest()
            dropped += 1
        return dropped

    # -- DeleteRecords --------------------------------------------------------------------

    def delete_records_before(self, offset: int) -> int:
        """Move the log start offset up to `offset` (-1: the high watermark), durably, and
        delete the segments wholly below it; returns the new log start offset. Records below
        it are never read again, though their batch may still be sent with a later one, as
        Kafka sends it (a consumer skips records below the offset it asked for)."""
        with self.lock:
            end = self.high_watermark
            target = end if offset == -1 else offset
            if not 0 <= target <= end:
                raise KafkaApiError(
                    ErrorCode.OFFSET_OUT_OF_RANGE,
                    f"cannot delete records before offset {offset}: the log ends at {end}",
                )
            if target <= self.log_start_offset:
                return self.log_start_offset
            write_json_atomically(self.directory / START_CHECKPOINT, {"log_start_offset": target})
            self.deleted_through = target
        if self._cleaning.acquire(blocking=False):  # else the next retention round drops them
            try:
                with self.lock:
                    self._drop_deleted_segments()
            finally:
                self._cleaning.release()
        return self.log_start_offset

    # -- compaction -----------------------------------------------------------------------

    def needs_compaction(self) -> bool:
        """Kafka's cleaner rule: compact once the sealed segments written since the last
        compaction (the dirty part) are at least `min.cleanable.dirty.ratio` of the sealed
        log. A compaction rewrites the whole log, so it waits for as much new data as the log
        it rewrites holds, and the log stays within about twice its live records plus the
        active segment (what `__consumer_offsets`' replay at start-up reads)."""
        if not self.settings.compacted:
            return False
        sealed = self.segments[:-1]
        dirty = sum(s.size for s in sealed if s.base_offset >= self.cleaned_through)
        return dirty > 0 and dirty >= self.settings.min_cleanable_dirty_ratio * sum(s.size for s in sealed)

    def compact(self, now_ms: int) -> int | None:
        """Rewrite the sealed segments keeping each key's latest record; returns bytes freed,
        or None if the log was closed meanwhile and the compaction given up.

        Runs on a thread beside the event loop and takes the partition's lock only to swap the
        rewritten segments in: sealed segments never change, so they are read and rewritten
        while appends go on to the active segment (which may roll meanwhile: the segments
        sealed after the start are cleaned the next time). A record appended during the run
        does not supersede older ones until then either: nothing is dropped on its account.
        """
        with self._cleaning:
            if self._closing.is_set():
                return None
            with self.lock:
                scanned = list(self.segments)  # the last one is active: read for its keys only
            sealed, end = scanned[:-1], scanned[-1].base_offset
            if not sealed:
                return 0
            try:
                runs = self._rewrite(scanned, now_ms)
            except (compaction.Abandoned, OSError):
                if self._closing.is_set():  # (a deleted topic's directory is gone: OSError)
                    return None  # its `.cleaning` files are dropped when the log is next opened
                raise
            with self.lock:
                if self._closing.is_set():
                    return None
                return self._swap_in(sealed, runs, end)

    def _rewrite(self, scanned: list[Segment], now_ms: int) -> list[tuple[list[Segment], Path]]:
        """Write each run of the sealed segments (all of `scanned` but the last), merged and
        cleaned, to a `.cleaning` file beside them (step 1 of compaction.py's crash-safe
        replacement); the log is left as it is."""
        latest = compaction.latest_offsets(scanned, self._closing)
        grouped: list[list[tuple[Segment, list[compaction.KeptRecord]]]] = []
        run_bytes = 0
        for segment in scanned[:-1]:
            kept = compaction.surviving_records(
                segment, latest, now_ms, self.settings.delete_retention_ms, self._closing
            )
            size = sum(len(r.key or b"") + len(r.value or b"") + 32 for r in kept)
            if not grouped or run_bytes + size > self.settings.segment_bytes // 2:
                grouped.append([])
                run_bytes = 0
            grouped[-1].append((segment, kept))
            run_bytes += size
        runs = []
        for run in grouped:
            records = [r for _, kept in run for r in kept]
            data = compaction.encode_batches(records, 512 * 1024)
            runs.append(
                (
                    [segment for segment, _ in run],
                    compaction.write_cleaning(self.directory, run[0][0].base_offset, data),
                )
            )
        return runs

    def _swap_in(self, sealed: list[Segment], runs: list[tuple[list[Segment], Path]], end: int) -> int:
        """Steps 2-4: each rewritten run replaces its segments; the segments sealed or
        appended since the compaction began stay as they are."""
        before = sum(s.size for s in sealed)
        rebuilt: list[Segment] = []
        for index, (run, cleaning) in enumerate(runs):
            run_end = runs[index + 1][0][0].base_offset if index + 1 < len(runs) else end
            staged = compaction.stage(cleaning, run_end)
            for segment in run:
                segment.close()
            compaction.finish_replacement(staged)
            rebuilt.append(
                Segment.load(
                    self.directory, run[0].base_offset, self.settings.index_interval_bytes, active=False
                )
            )
        # Segments left empty go, except the first, which keeps the log start offset.
        survivors = [s for i, s in enumerate(rebuilt) if i == 0 or s.size > 0]
        for segment in rebuilt:
            if segment not in survivors:
                segment.delete()
        self.segments = survivors + self.segments[len(sealed) :]
        self.cleaned_through = end
        write_json_atomically(self.directory / CLEANER_CHECKPOINT, {"cleaned_through": end})
        return before - sum(s.size for s in survivors)

    # -- reading --------------------------------------------------------------------------

    def read(self, offset: int, max_bytes: int, min_one: bool = True) -> bytes:
        """Whole batches from the one containing `offset`, up to `max_bytes`; with `min_one`, the
        first of them even if it alone is larger (Kafka's minOneMessage), else nothing then.
        OFFSET_OUT_OF_RANGE outside the log."""
        with self.lock:
            return self._read(offset, max_bytes, min_one)

    def _read(self, offset: int, max_bytes: int, min_one: bool) -> bytes:
        if offset < self.log_start_offset or offset > self.log_end_offset:
            raise KafkaApiError(
                ErrorCode.OFFSET_OUT_OF_RANGE,
                f"offset {offset} is outside [{self.log_start_offset}, {self.log_end_offset}]",
            )
        for segment in self._segments_from(offset):
            position = segment.position_of(offset)
            if position is not None:
                return segment.read(position, max_bytes, min_one)
        return b""

    def _segments_from(self, offset: int) -> list[Segment]:
        for i in range(len(self.segments) - 1, -1, -1):
            if self.segments[i].base_offset <= offset:
                return self.segments[i:]
        return self.segments

    def offset_for_timestamp(self, timestamp: int) -> tuple[int, int] | None:
        """(offset, timestamp) of the first record with a timestamp >= `timestamp`."""
        with self.lock:
            return self._offset_for_timestamp(timestamp)

    def _offset_for_timestamp(self, timestamp: int) -> tuple[int, int] | None:
        for segment in self.segments:
            position = segment.position_of_timestamp(timestamp)
            while position is not None and position < segment.size:
                found = batches.first_offset_at_or_after_timestamp(segment.read_batch(position), timestamp)
                # (a batch whose records do not decode yields None and the search moves on)
                if found is not None:
                    return found
                position += batches.read_header(segment.read_batch(position)).size
        return None

    def max_timestamp_offset(self) -> tuple[int, int] | None:
        """(offset, timestamp) of the record with the largest timestamp (ListOffsets -3)."""
        with self.lock:
            return self._max_timestamp_offset()

    def _max_timestamp_offset(self) -> tuple[int, int] | None:
        best: tuple[int, int] | None = None
        for segment in self.segments:
            if segment.max_timestamp < 0 or (best is not None and segment.max_timestamp <= best[1]):
                continue
            position = segment.position_of_timestamp(segment.max_timestamp)
            if position is not None:
                found = batches.first_offset_at_or_after_timestamp(
                    segment.read_batch(position), segment.max_timestamp
                )
                if found is not None:
                    best = found
        return best

    # -- long polling ---------------------------------------------------------------------

    def wait_for_append(self) -> asyncio.Future[None]:
        future: asyncio.Future[None] = asyncio.get_running_loop().create_future()
        self._waiters.append(future)
        return future

    def forget_waiter(self, future: asyncio.Future[None]) -> None:
        """A long poll that ended without an append no longer waits."""
        if future in self._waiters:
            self._waiters.remove(future)

    def wake_waiters(self) -> None:
        waiters, self._waiters = self._waiters, []
        for future in waiters:
            if not future.done():
                future.set_result(None)


def now_ms() -> int:
    return int(time.time() * 1000)

"""One log segment: a file of record batches in Kafka's on-disk format and its sparse index.

`<base offset>.log` holds the batches back to back, byte for byte as Kafka stores them.
`<base offset>.index` holds one 16-byte entry per `index_interval` bytes of log:
(batch base offset - segment base, file position, largest timestamp before that batch).
The largest-timestamp-so-far column is monotonic, so one index serves lookups by offset
and by timestamp. The index is a cache: it is rebuilt from the log whenever it is missing,
inconsistent, or belongs to the active segment after a restart, so only sealing writes it
(the active segment's entries are kept in memory).

The log file is opened only while it is read or written, through `open_files.FILES`: a
partition costs no descriptor while nobody uses it.

Recovery reads the log from the start, checks each batch's length, magic, offsets and
CRC, and truncates at the first torn or corrupt batch: with writes completed before an
acknowledgement, a `kill -9` can only leave a partial tail, never damage acknowledged data.
"""

from __future__ import annotations

import logging
import mmap
import os
import struct
import time
from array import array
from bisect import bisect_right
from collections.abc import Iterator
from contextlib import AbstractContextManager
from dataclasses import dataclass
from pathlib import Path

from coordinator.storage import batches
from coordinator.storage.batches import HEADER_SIZE, LOG_OVERHEAD, BatchHeader
from coordinator.storage.files import reserve_blocks
from coordinator.storage.open_files import FILES, closed_error

log = logging.getLogger(__name__)
_INDEX_ENTRY = struct.Struct(">IIq")
NO_TIMESTAMP = -1


def segment_name(base_offset: int) -> str:
    return f"{base_offset:020d}"


@dataclass(frozen=True, slots=True)
class SegmentMark:
    """Where a segment's end was before a write: a write that fails goes back to it."""

    size: int
    next_offset: int
    max_timestamp: int
    index_entries: int
    bytes_since_index: int


class Segment:
    """An open segment. Only the last segment of a partition is appended to."""

    def __init__(self, directory: Path, base_offset: int, index_interval: int) -> None:
        self.base_offset = base_offset
        self.log_path = directory / f"{segment_name(base_offset)}.log"
        self.index_path = directory / f"{segment_name(base_offset)}.index"
        self.index_interval = index_interval
        self.size = 0
        self._closed = False
        self.next_offset = base_offset
        self.max_timestamp = NO_TIMESTAMP
        self.created_at = time.time()
        self._index_offsets = array("q")
        self._index_positions = array("q")
        self._index_max_ts_before = array("q")
        self._bytes_since_index = 0
        self._reserved = False  # disk given to the file past its end (`reserve`)

    def _file(self) -> AbstractContextManager[int]:
        """The log file's descriptor for the duration of a `with`."""
        if self._closed:
            raise closed_error(self.log_path)
        return FILES.use(self.log_path)

    # -- opening --------------------------------------------------------------------------

    @classmethod
    def create(cls, directory: Path, base_offset: int, index_interval: int, reserve: int = 0) -> Segment:
        """`reserve`: bytes of disk to hold for this segment's appends from the start
        (`preallocate`)."""
        segment = cls(directory, base_offset, index_interval)
        os.close(os.open(segment.log_path, os.O_RDWR | os.O_CREAT | os.O_TRUNC, 0o644))
        segment.index_path.unlink(missing_ok=True)  # an index left by an earlier segment here
        segment.reserve(reserve)
        return segment

    @classmethod
    def load(
        cls, directory: Path, base_offset: int, index_interval: int, active: bool, reserve: int = 0
    ) -> Segment:
        """Open an existing segment; the active one (or one with a bad index) is recovered, and
        is given what is left of its `reserve`."""
        segment = cls(directory, base_offset, index_interval)
        stat = os.stat(segment.log_path)
        segment.size, segment.created_at = stat.st_size, stat.st_mtime
        if active or not segment._load_index():
            cut = segment.recover()
            if cut:
                log.warning("recovered %s: truncated %d bytes of torn or corrupt tail", segment.log_path, cut)
            if not active:  # the active segment's index is written when it is sealed
                segment._rewrite_index()
        if active:
            segment.reserve(reserve - segment.size)
        return segment

    def reserve(self, length: int) -> None:
        """Hold `length` bytes of disk past the end for the appends to come, so that they still
        succeed once the disk is full: the internal topic's group state keeps being written while
        the users' topics fill the disk (KAFKA_STORAGE_ERROR for them)."""
        if length > 0:
            with self._file() as fd:
                self._reserved = reserve_blocks(fd, self.size, length)

    def _load_index(self) -> bool:
        """Trust the index of a sealed segment if it is consistent with the log's size."""
        try:
            raw = self.index_path.read_bytes()
        except FileNotFoundError:
            return False
        if not raw or len(raw) % _INDEX_ENTRY.size:
            return False
        last_position = -1
        for rel, position, max_ts in _INDEX_ENTRY.iter_unpack(raw):
            if position <= last_position or position >= self.size:
                return False
            self._append_index_entry(self.base_offset + rel, position, max_ts)
            last_position = position
        self.max_timestamp = self._index_max_ts_before[-1]
        # The tail past the last index entry tells next_offset and the max timestamp.
        return self._scan(self._index_positions[-1], validate=False, truncate=False)

    def recover(self) -> int:
        """Rebuild the index (in memory) from the log, truncating a torn or corrupt tail;
        returns bytes cut."""
        self._index_offsets = array("q")
        self._index_positions = array("q")
        self._index_max_ts_before = array("q")
        self._bytes_since_index = 0
        self.max_timestamp = NO_TIMESTAMP
        self.next_offset = self.base_offset
        before = self.size
        self._scan(0, validate=True, truncate=True)
        return before - self.size

    def _scan(self, start: int, validate: bool, truncate: bool) -> bool:
        """Walk batches from `start` to the end of the file, indexing any not yet indexed."""
        if self.size == 0:
            return True
        with self._file() as fd, mmap.mmap(fd, self.size, access=mmap.ACCESS_READ) as view:
            pos = start
            while pos < self.size:
                header = self._valid_header_at(view, pos, validate)
                if header is None:
                    if not truncate:
                        return False
                    os.ftruncate(fd, pos)
                    self.size = pos
                    break
                if not self._index_positions or pos > self._index_positions[-1]:
                    self._note_batch(header, pos)
                else:  # the batch at the last index entry was indexed already
                    self.next_offset = header.next_offset
                    self.max_timestamp = max(self.max_timestamp, header.max_timestamp)
                pos += header.size
        return True

    def _valid_header_at(self, view: mmap.mmap, pos: int, validate: bool) -> BatchHeader | None:
        if self.size - pos < HEADER_SIZE:
            return None
        header = batches.read_header(view, pos)
        if (
            header.magic != batches.CURRENT_MAGIC
            or header.batch_length < HEADER_SIZE - LOG_OVERHEAD
            or pos + header.size > self.size
            or header.base_offset < self.next_offset
            or header.last_offset_delta < 0
        ):
            return None
        if validate and not batches.crc_is_valid(view, pos, header):
            return None
        return header

    # -- index ----------------------------------------------------------------------------

    def _rewrite_index(self, durable: bool = False) -> None:
        with open(self.index_path, "wb") as handle:
            for offset, position, max_ts in zip(
                self._index_offsets, self._index_positions, self._index_max_ts_before, strict=True
            ):
                handle.write(_INDEX_ENTRY.pack(offset - self.base_offset, position, max_ts))
            if durable:
                handle.flush()
                os.fsync(handle.fileno())

    def _append_index_entry(self, offset: int, position: int, max_ts_before: int) -> None:
        self._index_offsets.append(offset)
        self._index_positions.append(position)
        self._index_max_ts_before.append(max_ts_before)

    def _note_batch(self, header: BatchHeader, position: int) -> None:
        if not self._index_positions or self._bytes_since_index >= self.index_interval:
            self._append_index_entry(header.base_offset, position, self.max_timestamp)
            self._bytes_since_index = 0
        self._bytes_since_index += header.size
        self.next_offset = header.next_offset
        self.max_timestamp = max(self.max_timestamp, header.max_timestamp)

    # -- writing --------------------------------------------------------------------------

    def append(self, batch: bytes | bytearray, header: BatchHeader) -> None:
        """Write one batch at the end. An OSError (a full disk) may leave part of it past `size`:
        the caller undoes the write with `rollback`."""
        view = memoryview(batch)
        written = 0
        with self._file() as fd:
            while written < len(view):
                written += os.pwrite(fd, view[written:], self.size + written)
        position = self.size
        self.size += len(view)
        self._note_batch(header, position)

    def mark(self) -> SegmentMark:
        return SegmentMark(
            self.size, self.next_offset, self.max_timestamp, len(self._index_offsets), self._bytes_since_index
        )

    def rollback(self, mark: SegmentMark) -> None:
        """Undo the appends since `mark`: the file is cut back to its size then, so no part of a
        failed write stays past the end, and the index drops the entries made since."""
        with self._file() as fd:
            os.ftruncate(fd, mark.size)
        self.size = mark.size
        self.next_offset = mark.next_offset
        self.max_timestamp = mark.max_timestamp
        self._bytes_since_index = mark.bytes_since_index
        for column in (self._index_offsets, self._index_positions, self._index_max_ts_before):
            del column[mark.index_entries :]

    def flush(self) -> None:
        """fsync the log. The active segment's index needs none: recovery rebuilds it."""
        with self._file() as fd:
            os.fsync(fd)

    def seal(self) -> None:
        """The segment stops being active: make it and its index durable, and give back the
        disk reserved past its end."""
        with self._file() as fd:
            if self._reserved:
                os.ftruncate(fd, self.size)
                self._reserved = False
            os.fsync(fd)
        self._rewrite_index(durable=True)

    def close(self) -> None:
        self._closed = True
        FILES.forget(self.log_path)

    def delete(self) -> None:
        self.close()
        for path in (self.log_path, self.index_path):
            path.unlink(missing_ok=True)

    # -- reading --------------------------------------------------------------------------

    def _header_at(self, position: int) -> BatchHeader:
        with self._file() as fd:
            return batches.read_header(os.pread(fd, HEADER_SIZE, position))

    def position_of(self, offset: int) -> int | None:
        """File position of the batch containing `offset`, or None if past this segment."""
        if offset >= self.next_offset or not self._index_positions:
            return None
        slot = bisect_right(self._index_offsets, offset) - 1
        position = self._index_positions[max(slot, 0)]
        while position < self.size:
            header = self._header_at(position)
            if header.last_offset >= offset:
                return position
            position += header.size
        return None

    def position_of_timestamp(self, timestamp: int) -> int | None:
        """Position of the first batch whose max timestamp is >= `timestamp`."""
        if self.max_timestamp < timestamp or not self._index_positions:
            return None
        slot = bisect_right(self._index_max_ts_before, timestamp - 1) - 1
        position = self._index_positions[max(slot, 0)]
        while position < self.size:
            header = self._header_at(position)
            if header.max_timestamp >= timestamp:
                return position
            position += header.size
        return None

    def headers(self) -> Iterator[BatchHeader]:
        position = 0
        while position < self.size:
            header = self._header_at(position)
            yield header
            position += header.size

    def read_batch(self, position: int) -> bytes:
        header = self._header_at(position)
        with self._file() as fd:
            return os.pread(fd, header.size, position)

    def read(self, position: int, max_bytes: int, min_one: bool = True) -> bytes | bytearray:
        """Whole batches from `position`, up to `max_bytes`; with `min_one`, at least one batch
        however large (KIP-74), else nothing when the first batch does not fit."""
        # What the segment holds past `position`, not what was asked: a client may ask for
        # 2 GiB a partition, and a read buffer is allocated whole before it is read into.
        wanted = min(max(max_bytes, LOG_OVERHEAD), self.size - position)
        chunk = bytearray(wanted)
        with self._file() as fd:
            got = os.preadv(fd, [chunk], position)
        end = 0
        while end + LOG_OVERHEAD <= got:
            (length,) = struct.unpack_from(">i", chunk, end + 8)
            if end + LOG_OVERHEAD + length > got:
                break
            end += LOG_OVERHEAD + length
        if end == 0:
            return self.read_batch(position) if min_one else b""
        del chunk[end:]  # a partial batch at the end goes without copying the rest
        return chunk

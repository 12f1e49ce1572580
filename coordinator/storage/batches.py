"""Record batches (magic v2) as the broker sees them: a 61-byte header and opaque records.

The coordinator stores batches exactly as clients sent them. Only the base offset
(bytes 0-7) and the partition leader epoch (bytes 12-15) are rewritten; the CRC32C covers
bytes 21 onwards, so it stays valid and consumers can check it. A topic with
`message.timestamp.type=LogAppendTime` also gets the timestamp type and max timestamp
stamped, and the CRC computed again. Records are decoded only where an answer needs a
single record (ListOffsets by timestamp), where a topic's `compression.type` names a codec
other than the batch's (then the batch is rewritten with the topic's codec, as Kafka does),
and for a compacted topic, whose records must each have a key.
"""

from __future__ import annotations

import struct
from dataclasses import dataclass

import crc32c

from connect_rebalance.errors import ErrorCode, KafkaApiError

HEADER_SIZE = 61
LOG_OVERHEAD = 12  # base offset (8) + batch length (4): the length does not count these
_HEADER = struct.Struct(">qiibIhiqqqhii")
CURRENT_MAGIC = 2
COMPRESSION_CODECS = 5  # none, gzip, snappy, lz4, zstd
NO_PRODUCER_ID = -1


@dataclass(frozen=True, slots=True)
class BatchHeader:
    base_offset: int
    batch_length: int
    leader_epoch: int
    magic: int
    crc: int
    attributes: int
    last_offset_delta: int
    base_timestamp: int
    max_timestamp: int
    producer_id: int
    producer_epoch: int
    base_sequence: int
    records_count: int

    @property
    def size(self) -> int:
        return LOG_OVERHEAD + self.batch_length

    @property
    def last_offset(self) -> int:
        return self.base_offset + self.last_offset_delta

    @property
    def next_offset(self) -> int:
        return self.last_offset + 1

    @property
    def compression(self) -> int:
        return self.attributes & 0x07

    @property
    def is_transactional(self) -> bool:
        return bool(self.attributes & 0x10)

    @property
    def is_control(self) -> bool:
        return bool(self.attributes & 0x20)

    @property
    def last_sequence(self) -> int:
        if self.base_sequence < 0:
            return -1
        return (self.base_sequence + self.last_offset_delta) % (2**31)


def read_header(buf: bytes | bytearray | memoryview, pos: int = 0) -> BatchHeader:
    return BatchHeader(*_HEADER.unpack_from(buf, pos))


def crc_is_valid(buf: bytes | bytearray | memoryview, pos: int, header: BatchHeader) -> bool:
    body = memoryview(buf)[pos + 21 : pos + header.size]
    return crc32c.crc32c(body) == header.crc


def split_batches(records: bytes | bytearray | memoryview) -> list[tuple[bytearray, BatchHeader]]:
    """Validate a Produce request's records and split them into whole batches.

    Raises KafkaApiError with CORRUPT_MESSAGE / INVALID_RECORD / UNSUPPORTED_FOR_MESSAGE_FORMAT
    naming the problem; nothing is stored unless every batch is valid.
    """
    view = memoryview(records)
    batches: list[tuple[bytearray, BatchHeader]] = []
    pos = 0
    while pos < len(view):
        if len(view) - pos < HEADER_SIZE:
            raise KafkaApiError(ErrorCode.CORRUPT_MESSAGE, f"truncated record batch at byte {pos}")
        header = read_header(view, pos)
        if header.magic != CURRENT_MAGIC:
            raise KafkaApiError(
                ErrorCode.UNSUPPORTED_FOR_MESSAGE_FORMAT,
                f"record batch magic {header.magic}; only magic v2 batches are accepted",
            )
        if header.batch_length < HEADER_SIZE - LOG_OVERHEAD or pos + header.size > len(view):
            raise KafkaApiError(
                ErrorCode.CORRUPT_MESSAGE, f"record batch length {header.batch_length} is inconsistent"
            )
        if not crc_is_valid(view, pos, header):
            raise KafkaApiError(ErrorCode.CORRUPT_MESSAGE, "record batch CRC32C does not match its contents")
        if header.records_count <= 0 or header.last_offset_delta != header.records_count - 1:
            raise KafkaApiError(
                ErrorCode.INVALID_RECORD,
                f"record batch declares {header.records_count} records "
                f"but last offset delta {header.last_offset_delta}",
            )
        if header.compression >= COMPRESSION_CODECS:
            raise KafkaApiError(
                ErrorCode.UNSUPPORTED_COMPRESSION_TYPE, f"unknown compression codec {header.compression}"
            )
        if header.is_control:
            raise KafkaApiError(ErrorCode.INVALID_RECORD, "clients may not produce control batches")
        batch = bytearray(view[pos : pos + header.size])
        if header.compression == 0:
            problem = records_problem(batch, header)
            if problem is not None:
                raise KafkaApiError(ErrorCode.INVALID_RECORD, problem)
        batches.append((batch, header))
        pos += header.size
    if not batches:
        raise KafkaApiError(ErrorCode.CORRUPT_MESSAGE, "produce request carries no record batch")
    return batches


def records_problem(batch: bytearray, header: BatchHeader) -> str | None:
    """What is wrong with an uncompressed batch's records, or None, as Kafka checks them before
    it appends: as many records as the header says, their offset deltas 0, 1, 2, ... and their
    lengths filling the batch exactly. Only each record's length and offset delta are decoded
    (the varints inline: this runs for every record produced)."""
    at, end = HEADER_SIZE, len(batch)
    try:
        for expected in range(header.records_count):
            # The record's length, a zigzag varint.
            byte = batch[at]
            at += 1
            raw, shift = byte & 0x7F, 7
            while byte & 0x80:
                byte = batch[at]
                at += 1
                raw |= (byte & 0x7F) << shift
                shift += 7
            length, start = (raw >> 1) ^ -(raw & 1), at
            at += 1  # attributes; then the timestamp delta, skipped
            while batch[at] & 0x80:
                at += 1
            at += 1
            byte = batch[at]  # the offset delta
            at += 1
            raw, shift = byte & 0x7F, 7
            while byte & 0x80:
                byte = batch[at]
                at += 1
                raw |= (byte & 0x7F) << shift
                shift += 7
            if (raw >> 1) ^ -(raw & 1) != expected:
                return f"record {expected} of the batch has offset delta {(raw >> 1) ^ -(raw & 1)}"
            if length < 0 or start + length > end:
                return f"record {expected} of the batch runs past its end"
            at = start + length
    except IndexError:
        return "the batch's records run past its end"
    if at != end:
        return f"the batch's {header.records_count} records end {end - at} bytes before the batch does"
    return None


LOG_APPEND_TIME = 0x08  # attributes bit 3: the batch's timestamps are the broker's append time
_ATTRIBUTES_AT, _CRC_AT, _MAX_TIMESTAMP_AT = 21, 17, 35


def set_log_append_time(batch: bytearray, now_ms: int) -> None:
    """Stamp the batch with the broker's append time, as Kafka does for a topic with
    `message.timestamp.type=LogAppendTime`: the timestamp type bit and the max timestamp
    (which consumers read as every record's timestamp), then the CRC, which covers both."""
    (attributes,) = struct.unpack_from(">h", batch, _ATTRIBUTES_AT)
    struct.pack_into(">h", batch, _ATTRIBUTES_AT, attributes | LOG_APPEND_TIME)
    struct.pack_into(">q", batch, _MAX_TIMESTAMP_AT, now_ms)
    struct.pack_into(">I", batch, _CRC_AT, crc32c.crc32c(memoryview(batch)[_ATTRIBUTES_AT:]))


# compression.type's names -> the codec in a batch's attributes; "producer" (None) keeps the batch's.
CODECS = {"producer": None, "uncompressed": 0, "gzip": 1, "snappy": 2, "lz4": 3, "zstd": 4}


def recompress(batch: bytearray, header: BatchHeader, codec: int) -> bytearray:
    """The batch's records in a batch compressed with `codec` (0: none), as Kafka rewrites a
    batch whose codec is not its topic's `compression.type`: offsets deltas, timestamps, keys,
    values and headers as they were, the producer's id, epoch and sequence kept, and a new CRC.
    INVALID_RECORD if the records do not decode (a client may send any bytes under a valid CRC)."""
    from kafka.record.default_records import DefaultRecordBatch, DefaultRecordBatchBuilder

    builder = DefaultRecordBatchBuilder(
        CURRENT_MAGIC, codec, header.is_transactional, header.producer_id, header.producer_epoch,
        header.base_sequence, batch_size=1 << 30,
    )  # fmt: skip
    try:
        for record in DefaultRecordBatch(bytes(batch)):
            builder.append(record.offset - header.base_offset, record.timestamp, record.key, record.value,
                           record.headers)  # fmt: skip
        rewritten = bytearray(builder.build())
    except Exception as exc:  # noqa: BLE001 - whatever the records' bytes make the decoder raise
        raise KafkaApiError(ErrorCode.INVALID_RECORD, f"the batch's records do not decode: {exc!r}") from exc
    struct.pack_into(">q", rewritten, 0, header.base_offset)
    return rewritten


def keyless_records(batch: bytearray) -> list[int]:
    """The indices of the batch's records that have no key (a null key; an empty one is a key):
    what a compacted topic refuses, as it keeps the latest record of each key.
    INVALID_RECORD if the records do not decode."""
    from kafka.record.default_records import DefaultRecordBatch

    try:
        return [index for index, record in enumerate(DefaultRecordBatch(bytes(batch))) if record.key is None]
    except Exception as exc:  # noqa: BLE001 - whatever the records' bytes make the decoder raise
        raise KafkaApiError(ErrorCode.INVALID_RECORD, f"the batch's records do not decode: {exc!r}") from exc


def assign_offset(batch: bytearray, base_offset: int, leader_epoch: int) -> None:
    """Rewrite the two broker-owned header fields; the CRC does not cover them."""
    struct.pack_into(">q", batch, 0, base_offset)
    struct.pack_into(">i", batch, 12, leader_epoch)


def first_offset_at_or_after_timestamp(batch: bytes, timestamp: int) -> tuple[int, int] | None:
    """(offset, timestamp) of the first record in the batch whose timestamp is >= timestamp."""
    from kafka.record.default_records import DefaultRecordBatch

    try:
        for record in DefaultRecordBatch(bytearray(batch)):
            if record.timestamp >= timestamp:
                return record.offset, record.timestamp
    except Exception:  # records that do not decode (a client may send any bytes under a valid CRC)
        return None
    return None

"""Keyed records in a partition log: the coordinator's own state, written and replayed.

The group coordinator (`__consumer_offsets`) and the security store (SCRAM credentials,
ACLs) keep their state as key/value records in a log, appended in batches as a producer
would write them and read back in order at start-up. A null value is a tombstone.
"""

from __future__ import annotations

from collections.abc import Iterator

from kafka.record.default_records import DefaultRecordBatch, DefaultRecordBatchBuilder

from coordinator.storage import batches
from coordinator.storage.batches import BatchHeader
from coordinator.storage.partition_log import PartitionLog

READ_CHUNK_BYTES = 4 * 1024 * 1024
Batch = list[tuple[bytearray, BatchHeader]]  # one batch, split and checked, ready to append


def append_records(log: PartitionLog, records: list[tuple[bytes, bytes | None]], timestamp: int) -> None:
    """Append key/value records as one batch: recovery keeps a batch whole or drops it, so a
    call's records are in the log all together or not at all. Raises without writing anything
    when the batch is over the log's `max.message.bytes` (MESSAGE_TOO_LARGE)."""
    if records:
        log.append(build_batch(log, records, timestamp), timestamp)


def build_batch(log: PartitionLog, records: list[tuple[bytes, bytes | None]], timestamp: int) -> Batch:
    """The one batch `append_records` writes, built and size-checked without touching the log,
    so a caller can append it later (`log.append`) from another thread."""
    builder = DefaultRecordBatchBuilder(2, 0, False, -1, -1, -1, batch_size=1 << 31)
    for count, (key, value) in enumerate(records):
        builder.append(count, timestamp, key, value, [])
    batch = batches.split_batches(builder.build())
    log.check_sizes(batch)
    return batch


def read_records(log: PartitionLog, end: int | None = None) -> Iterator[tuple[bytes, bytes | None]]:
    """Every record from the log start to `end` (the log's end when it was asked, if not
    given), as (key, value)."""
    offset = log.log_start_offset
    end = log.log_end_offset if end is None else end
    while offset < end:
        data = log.read(offset, READ_CHUNK_BYTES)
        position = 0
        while position < len(data) and offset < end:
            header = batches.read_header(data, position)
            batch = DefaultRecordBatch(bytearray(data[position : position + header.size]))
            for record in batch:
                if offset <= record.offset < end:
                    yield bytes(record.key), None if record.value is None else bytes(record.value)
            position += header.size
            offset = header.next_offset

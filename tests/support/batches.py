"""Record batches built the way a client builds them (kafka-python's batch builder)."""

from __future__ import annotations

from collections.abc import Sequence

from kafka.record.default_records import DefaultRecordBatchBuilder


def make_batch(
    values: Sequence[bytes],
    timestamps: Sequence[int] | None = None,
    producer_id: int = -1,
    producer_epoch: int = -1,
    base_sequence: int = -1,
    compression: int = 0,
    keys: Sequence[bytes | None] | None = None,
) -> bytes:
    builder = DefaultRecordBatchBuilder(
        2, compression, False, producer_id, producer_epoch, base_sequence, batch_size=1 << 30
    )
    for i, value in enumerate(values):
        timestamp = timestamps[i] if timestamps is not None else 1_700_000_000_000 + i
        builder.append(i, timestamp, keys[i] if keys is not None else None, value, [])
    return bytes(builder.build())

"""An uncompressed batch's records are walked before it is appended, as Kafka does: a batch
whose header is consistent but whose records' offset deltas are not 0, 1, 2, ..., or whose
records do not fill it exactly, is refused with INVALID_RECORD naming the problem, even under a
valid CRC; what real clients send passes. The records a compacted topic refuses, those without
a key, are named by their index in the batch, compressed or not."""

from __future__ import annotations

import struct

import crc32c
import pytest
from kafka.record.default_records import DefaultRecordBatchBuilder

from connect_rebalance.errors import ErrorCode, KafkaApiError
from coordinator.storage import batches
from tests.support.batches import make_batch
from tests.support.frames import captured_frames, request_bytes

pytestmark = pytest.mark.unit


def with_deltas(deltas: list[int]) -> bytes:
    builder = DefaultRecordBatchBuilder(2, 0, False, -1, -1, -1, batch_size=1 << 20)
    for delta in deltas:
        builder.append(delta, 1_700_000_000_000, None, b"value-%d" % delta, [])
    return bytes(builder.build())


def with_crc(batch: bytearray) -> bytes:
    struct.pack_into(">i", batch, 8, len(batch) - batches.LOG_OVERHEAD)
    struct.pack_into(">I", batch, 17, crc32c.crc32c(memoryview(batch)[21:]))
    return bytes(batch)


def refusal(records: bytes) -> tuple[int, str] | None:
    try:
        batches.split_batches(records)
    except KafkaApiError as exc:
        return exc.code, exc.message
    return None


def test_records_whose_offset_deltas_skip_or_repeat_are_refused_under_a_valid_crc() -> None:
    refused = refusal(with_deltas([0, 0, 2]))  # the header says 3 records, last delta 2: consistent
    assert refused == (ErrorCode.INVALID_RECORD, "record 1 of the batch has offset delta 0"), refused


def test_records_that_do_not_fill_the_batch_are_refused() -> None:
    padded = with_crc(bytearray(make_batch([b"a", b"b"])) + b"\x00\x00\x00")
    refused = refusal(padded)
    assert refused == (ErrorCode.INVALID_RECORD, "the batch's 2 records end 3 bytes before the batch does"), (
        refused
    )
    short = bytearray(make_batch([b"a", b"b", b"c"]))
    struct.pack_into(">i", short, 57, 4)  # the header claims a fourth record
    struct.pack_into(">i", short, 23, 3)  # with a last offset delta to match
    refused = refusal(with_crc(short))
    assert refused is not None and refused[0] == ErrorCode.INVALID_RECORD, refused
    assert "run past its end" in refused[1], refused


def test_batches_real_clients_sent_pass_the_walk() -> None:
    from connect_rebalance.protocol import codec

    produced = 0
    for path in captured_frames():
        frame = request_bytes(path)
        header, offset = codec.parse_request_header(frame)
        if header.api_key != 0:
            continue
        request = codec.decode_request_body(header, frame, offset)
        for topic in request.topic_data:
            for partition in topic.partition_data:
                assert refusal(partition.records) is None, f"{path.name} was refused"
                produced += 1
    assert produced >= 5
    assert refusal(make_batch([b"x" * 1000] * 300)) is None


@pytest.mark.parametrize("codec", [0, 1], ids=["uncompressed", "gzip"])
def test_the_records_a_compacted_topic_refuses_are_those_with_a_null_key(codec: int) -> None:
    keys = [b"k", None, b"", None]  # an empty key is a key
    batch = bytearray(make_batch([b"v"] * 4, compression=codec, keys=keys))
    assert batches.keyless_records(batch) == [1, 3]

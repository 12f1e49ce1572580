"""The per-member consumer-group records (target assignment, current assignment) are encoded by
hand for speed, and committed offsets decoded by hand; their bytes must be exactly what the
schema codec writes and reads."""

from __future__ import annotations

import random
import uuid

import pytest

from connect_rebalance.protocol import coordinator_records as schemas
from coordinator.group_record_codec import (
    _decode_offset_commit,
    _partitions_field,
    decode_record,
    encode_record,
)
from coordinator.groups.reconciliation import MemberAssignment, MemberState
from coordinator.groups.records import (
    CommittedOffset,
    CurrentAssignmentRecord,
    OffsetCommitRecord,
    TargetMemberRecord,
)

pytestmark = pytest.mark.unit


def schema_bytes(data: object) -> bytes:
    """The generic schema encoder's bytes (the int16 version, then the fields)."""
    return bytes(schemas.ApiData.encode(data))  # type: ignore[arg-type]


def random_items(rng: random.Random, topics: list[str]) -> frozenset[tuple[str, int]]:
    many = rng.choice([0, 1, 5, 40, 300])  # 300 partitions: lengths past one varint byte
    return frozenset((rng.choice(topics), rng.randrange(100_000)) for _ in range(many))


def test_member_records_are_the_schema_codecs_bytes_and_decode_back() -> None:
    rng = random.Random(848)
    topics = [str(uuid.UUID(int=rng.getrandbits(128))) for _ in range(30)]
    for i in range(300):
        group = rng.choice(["g", "grüße-" * 30, "x" * 300])
        member = rng.choice([str(uuid.UUID(int=i)), f"m-{i}-ñ"])
        items = random_items(rng, topics)
        target = TargetMemberRecord(group, member, items)
        state = rng.choice(list(MemberState))
        assignment = MemberAssignment(
            state, rng.randrange(2**31), rng.randrange(-1, 2**31), items, random_items(rng, topics)
        )
        current = CurrentAssignmentRecord(group, member, assignment)

        ids = {"group_id": group, "member_id": member}
        target_key = schemas.ConsumerGroupTargetAssignmentMemberKey(version=7, **ids)
        cls = schemas.ConsumerGroupTargetAssignmentMemberValue
        target_value = cls(version=0, topic_partitions=_partitions_field(cls.TopicPartition, items))
        assert encode_record(target) == (schema_bytes(target_key), schema_bytes(target_value))

        current_key = schemas.ConsumerGroupCurrentMemberAssignmentKey(version=8, **ids)
        cls = schemas.ConsumerGroupCurrentMemberAssignmentValue
        pending = assignment.pending_revocation
        current_value = cls(
            version=0, member_epoch=assignment.member_epoch, previous_member_epoch=assignment.previous_epoch,
            state=int(state), assigned_partitions=_partitions_field(cls.TopicPartitions, items),
            partitions_pending_revocation=_partitions_field(cls.TopicPartitions, pending),
        )  # fmt: skip
        assert encode_record(current) == (schema_bytes(current_key), schema_bytes(current_value))

        for record in (target, current, TargetMemberRecord(group, member, None)):
            assert decode_record(*encode_record(record)) == record


def test_records_on_the_compiled_encoder_keep_the_schema_codecs_bytes() -> None:
    """Offsets and consumer-group records go through the compiled encoder: the same bytes."""
    member_cls = schemas.ConsumerGroupMemberMetadataValue
    classic = member_cls.ClassicMemberMetadata
    samples = [
        schemas.OffsetCommitKey(version=1, group="g", topic="orders", partition=7),
        schemas.OffsetCommitValue(
            version=3, offset=42, leader_epoch=-1, metadata="ñ", commit_timestamp=1, expire_timestamp=-1
        ),
        schemas.ConsumerGroupMetadataValue(version=0, epoch=12),
        member_cls(
            version=0, instance_id=None, rack_id="r1", client_id="c", client_host="/10.0.0.1",
            subscribed_topic_names=["a", "b"], subscribed_topic_regex=None, rebalance_timeout_ms=300_000,
            server_assignor="uniform", classic_member_metadata=classic(
                session_timeout_ms=45_000,
                supported_protocols=[classic.ClassicProtocol(name="range", metadata=b"\x00\x01")],
            ),
            client_assignors=None,
        ),
    ]  # fmt: skip
    for data in samples:
        assert bytes(data.encode()) == schema_bytes(data), type(data).__name__


def random_commits(rng: random.Random) -> list[OffsetCommitRecord]:
    """Committed offsets and tombstones with empty, long and non-ASCII strings, and the
    fields' extreme values."""
    records = []
    for i in range(300):
        offset = CommittedOffset(
            rng.randrange(-1, 2**62), rng.randrange(-1, 2**31), rng.choice(["", "m", "ü" * 200, "x" * 5000]),
            rng.randrange(2**41), rng.choice([-1, rng.randrange(2**41)]),
        )  # fmt: skip
        group = rng.choice(["g", "grüße-" * 30, ""])
        value = rng.choice([None, offset])
        records.append(OffsetCommitRecord(group, f"topic-{i}", rng.randrange(2**31), value))
    return records


def test_committed_offsets_read_by_hand_are_what_the_schema_codec_reads() -> None:
    """The start-up replay reads committed offsets by hand; every record reads as the schema
    codec reads it, and a record it does not know (an older value version, a truncated or
    over-long record) is left to the schema codec, which decides as before."""
    for record in random_commits(random.Random(14)):
        key, value_bytes = encode_record(record)
        by_hand = _decode_offset_commit(key, value_bytes)
        assert by_hand == record
        assert by_hand == schema_decoded(key, value_bytes)
    key, value_bytes = encode_record(record)
    older = bytes(schemas.OffsetCommitValue(version=1, offset=7, metadata="m", commit_timestamp=1,
                                            expire_timestamp=2).encode())  # fmt: skip
    assert _decode_offset_commit(key, older) is None
    assert decode_record(key, older).value == CommittedOffset(7, -1, "m", 1, 2)
    full = encode_record(OffsetCommitRecord("g", "t", 0, CommittedOffset(1, 2, "meta", 3, 4)))
    for broken in (full[0][:-1], full[0] + b"\0"):  # the key truncated, or longer than its fields
        assert _decode_offset_commit(broken, full[1]) is None
    for broken in (full[1][:-1], full[1] + b"\0", full[1][:12]):
        assert _decode_offset_commit(full[0], broken) is None


def test_committed_offsets_written_by_hand_are_the_schema_codecs_bytes() -> None:
    """Committed offsets are written by hand too; their key and value are byte for byte what
    the schema codec writes, and a string too long for an int16 length is refused."""
    for record in random_commits(random.Random(15)):
        key, value = encode_record(record)
        assert key == schema_bytes(schemas.OffsetCommitKey(
            version=1, group=record.group_id, topic=record.topic, partition=record.partition))  # fmt: skip
        if (offset := record.value) is None:
            assert value is None
            continue
        assert value == schema_bytes(schemas.OffsetCommitValue(
            version=3, offset=offset.offset, leader_epoch=offset.leader_epoch, metadata=offset.metadata,
            commit_timestamp=offset.commit_timestamp_ms, expire_timestamp=offset.expire_timestamp_ms,
        ))  # fmt: skip
    with pytest.raises(ValueError, match="over 32767 bytes"):
        encode_record(OffsetCommitRecord("g", "t", 0, CommittedOffset(1, -1, "x" * 32768, 1, -1)))


def schema_decoded(key: bytes, value: bytes | None) -> OffsetCommitRecord:
    k = schemas.OffsetCommitKey.decode(key)
    if value is None:
        return OffsetCommitRecord(k.group, k.topic, k.partition, None)
    v = schemas.OffsetCommitValue.decode(value)
    return OffsetCommitRecord(k.group, k.topic, k.partition, CommittedOffset(
        v.offset, v.leader_epoch, v.metadata, v.commit_timestamp, v.expire_timestamp))  # fmt: skip

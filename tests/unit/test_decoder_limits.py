"""The decoder's limits at their edges: 1,000,000 array elements and 10,000 tagged fields decode,
one more is refused; tagged fields read in place decode as the schema says (known ones as
fields, unknown ones kept), in nested structs too."""

from __future__ import annotations

import struct

import pytest

from connect_rebalance.protocol import codec
from connect_rebalance.protocol.api_keys import ApiKey
from connect_rebalance.protocol.codec import FrameError
from connect_rebalance.protocol.hot_messages import uvarint_bytes

pytestmark = pytest.mark.unit


def decode(api_key: int, version: int, body: bytes) -> object:
    frame = struct.pack(">hhih", api_key, version, 1, 1) + b"x" + b"\x00" + body
    header, offset = codec.parse_request_header(frame)
    return codec.decode_request_body(header, frame, offset)


def describe_groups(count: int) -> bytes:
    return uvarint_bytes(count + 1) + b"\x01" * count + b"\x00\x00"  # empty group ids


def tags(count: int) -> bytes:
    return uvarint_bytes(count) + b"".join(uvarint_bytes(100 + i) + b"\x01z" for i in range(count))


def test_an_array_of_a_million_elements_decodes_and_one_more_is_refused() -> None:
    assert len(decode(ApiKey.DESCRIBE_GROUPS, 5, describe_groups(1_000_000)).groups) == 1_000_000  # type: ignore[attr-defined]
    with pytest.raises(FrameError, match="1000001 elements is over the limit of 1,000,000"):
        decode(ApiKey.DESCRIBE_GROUPS, 5, describe_groups(1_000_001))


def test_an_array_claiming_more_elements_than_bytes_is_refused() -> None:
    with pytest.raises(FrameError, match="cannot fit in the 2 bytes left"):
        decode(ApiKey.DESCRIBE_GROUPS, 5, uvarint_bytes(11) + b"\x00\x00")


def test_ten_thousand_tagged_fields_decode_and_one_more_is_refused() -> None:
    body = uvarint_bytes(2) + b"\x02g" + b"\x00" + tags(10_000)
    request = decode(ApiKey.DESCRIBE_GROUPS, 5, body)
    assert request.groups == ["g"]  # type: ignore[attr-defined]
    assert len(request.unknown_tags) == 10_000 and request.unknown_tags["_100"] == b"z"  # type: ignore[attr-defined]
    with pytest.raises(FrameError, match="10001 tagged fields in one struct are over the limit of 10,000"):
        decode(ApiKey.DESCRIBE_GROUPS, 5, uvarint_bytes(2) + b"\x02g" + b"\x00" + tags(10_001))


def test_tagged_fields_of_nested_structs_are_read_where_they_are() -> None:
    # Metadata v12: two topics, the first carrying an unknown tag, then the request's own fields.
    topic = b"\x00" * 16 + b"\x02t"
    body = uvarint_bytes(3) + topic + b"\x01\x07\x02ab" + topic + b"\x00" + b"\x01\x00" + b"\x00"
    request = decode(ApiKey.METADATA, 12, body)
    assert [t.name for t in request.topics] == ["t", "t"]  # type: ignore[attr-defined]
    assert request.topics[0].unknown_tags == {"_7": b"ab"}  # type: ignore[attr-defined]
    assert request.allow_auto_topic_creation is True  # type: ignore[attr-defined]


def refusal(api_key: int, version: int, body: bytes) -> str | None:
    """Why the decoder refused the body, or None if it decoded."""
    try:
        decode(api_key, version, body)
    except FrameError as exc:
        return str(exc)
    return None


def test_a_null_where_the_schema_allows_none_is_refused_naming_the_field() -> None:
    # OffsetCommit v8 (flexible): group, generation, member, instance id (nullable), then topics.
    head = b"\x02g" + b"\x00\x00\x00\x01" + b"\x02m" + b"\x00"
    null_topics = refusal(ApiKey.OFFSET_COMMIT, 8, head + b"\x00" + b"\x00")
    assert null_topics and "topics is null, which its schema does not allow" in null_topics, null_topics
    null_group = refusal(ApiKey.OFFSET_COMMIT, 8, b"\x00" + head[2:] + b"\x01" + b"\x00")
    assert null_group and "group_id is null" in null_group, null_group
    committed = decode(ApiKey.OFFSET_COMMIT, 8, head + b"\x01" + b"\x00")  # null instance id: allowed
    assert committed.group_instance_id is None and committed.topics == []  # type: ignore[attr-defined]


def test_a_string_longer_than_the_frame_is_refused_not_cut_short() -> None:
    with pytest.raises(FrameError, match="groups of 9 bytes runs past the 3 bytes left"):
        decode(ApiKey.DESCRIBE_GROUPS, 5, b"\x02" + b"\x0a" + b"abc")

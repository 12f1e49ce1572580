"""The hand-written codecs of the hottest messages against the schema codec.

Given any ConsumerGroupHeartbeat (v0, v1), ConnectGroupHeartbeat or ApiVersions request the
schema codec encodes, the hand-written decoder either declines or reads exactly what the
schema codec reads; given any bytes at all after a real header, it never reads something the
schema codec would refuse or read differently. Every heartbeat answer without an assignment
and every ApiVersions answer is byte for byte the schema codec's.
"""

from __future__ import annotations

import uuid
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from connect_rebalance.protocol import codec, hot_messages
from connect_rebalance.protocol.api_keys import ApiKey
from connect_rebalance.protocol.codec import RequestHeader

pytestmark = pytest.mark.unit

CONSUMER, CONNECT = ApiKey.CONSUMER_GROUP_HEARTBEAT, ApiKey.CONNECT_GROUP_HEARTBEAT
API_VERSIONS = ApiKey.API_VERSIONS
text = st.text(st.characters(blacklist_categories=("Cs",)), max_size=12)
names = st.text(st.characters(blacklist_categories=("Cs",)), min_size=1, max_size=12)
int32 = st.integers(-(2**31), 2**31 - 1)
ids = st.builds(lambda b: str(uuid.UUID(bytes=b)), st.binary(min_size=16, max_size=16))
assignors = st.none() | st.lists(
    st.fixed_dictionaries({
        "name": names, "minimum_version": st.integers(0, 5), "maximum_version": st.integers(0, 5),
        "reason": st.integers(0, 1), "metadata_version": st.integers(0, 3), "metadata": st.binary(max_size=8),
    }), max_size=2,
)  # fmt: skip


def consumer_fields(version: int) -> st.SearchStrategy[dict[str, Any]]:
    consumer_assignors = assignors.map(  # KIP-848 names the metadata MetadataBytes
        lambda a: a and [{k if k != "metadata" else "metadata_bytes": v for k, v in x.items()} for x in a]
    )
    fields = {
        "group_id": text, "member_id": text, "member_epoch": int32, "instance_id": st.none() | text,
        "rack_id": st.none() | text, "rebalance_timeout_ms": int32,
        "subscribed_topic_names": st.none() | st.lists(text, max_size=3), "server_assignor": st.none() | text,
        "topic_partitions": st.none() | st.lists(
            st.fixed_dictionaries({"topic_id": ids, "partitions": st.lists(int32, max_size=4)}), max_size=3),
        "client_assignors": consumer_assignors,
    }  # fmt: skip
    if version >= 1:
        fields["subscribed_topic_regex"] = st.none() | text
    return st.fixed_dictionaries(fields)


connect_fields = st.fixed_dictionaries({
    "group_id": text, "member_id": text, "member_epoch": int32, "instance_id": st.none() | text,
    "url": st.none() | text, "rebalance_timeout_ms": int32, "server_assignor": st.none() | text,
    "client_assignors": assignors,
    "owned_connectors_and_tasks": st.none() | st.fixed_dictionaries({
        "connectors": st.lists(text, max_size=3),
        "tasks": st.lists(st.fixed_dictionaries({"connector": text, "task": int32}), max_size=3),
    }),
})  # fmt: skip
api_versions_fields = st.fixed_dictionaries({"client_software_name": text, "client_software_version": text})


def request_frame(api_key: int, version: int, fields: dict[str, Any]) -> bytes:
    body = codec.build_request(api_key, version, fields)
    return codec.encode_request_frame(RequestHeader(api_key, version, 7, "client"), body)[4:]


def plain(value: Any) -> Any:
    """A decoded body as nested dicts and lists, whichever codec decoded it."""
    if isinstance(value, hot_messages.Decoded):
        return value.as_fields()
    if hasattr(value, "to_dict"):
        return {k: plain(v) for k, v in value.to_dict(json=False).items()}
    if isinstance(value, list):
        return [plain(v) for v in value]
    return value


def schema_decode(frame: bytes) -> Any:
    header, offset = codec.parse_request_header(frame)
    return codec._REQUESTS[header.api_key].decode(memoryview(frame)[offset:], version=header.api_version)


def hot_decode(frame: bytes) -> Any:
    header, offset = codec.parse_request_header(frame)
    return hot_messages.decode_request(header.api_key, header.api_version, frame, offset)


def same_reading(frame: bytes) -> Any:
    """The hand-written decoder declines, or reads what the schema codec reads."""
    fast = hot_decode(frame)
    try:
        expected = plain(schema_decode(frame))
    except Exception:  # noqa: BLE001 - the schema codec refuses: the fast path must not accept
        assert fast is None, f"accepted what the schema codec refuses: {frame!r}"
        return None
    if fast is not None:
        got = plain(fast)
        assert {k: v for k, v in got.items() if k in expected} == expected
        assert all(v is None for k, v in got.items() if k not in expected)
    return fast


@given(st.integers(0, 1).flatmap(lambda v: st.tuples(st.just(v), consumer_fields(v))))
@settings(max_examples=300, suppress_health_check=[HealthCheck.too_slow])
def test_consumer_heartbeats_read_as_the_schema_codec_reads_them(case: tuple[int, dict[str, Any]]) -> None:
    version, fields = case
    fast = same_reading(request_frame(CONSUMER, version, fields))
    if fields["client_assignors"] is None:
        assert fast is not None, "a heartbeat without client assignors is read by hand"


@given(connect_fields)
@settings(max_examples=300, suppress_health_check=[HealthCheck.too_slow])
def test_connect_heartbeats_read_as_the_schema_codec_reads_them(fields: dict[str, Any]) -> None:
    fast = same_reading(request_frame(CONNECT, 0, fields))
    if fields["client_assignors"] is None:
        assert fast is not None, "a heartbeat without client assignors is read by hand"


@given(st.integers(0, 4), api_versions_fields)
def test_api_versions_requests_read_as_the_schema_codec_reads_them(
    version: int, fields: dict[str, Any]
) -> None:
    assert same_reading(request_frame(API_VERSIONS, version, fields if version >= 3 else {})) is not None


@given(
    st.sampled_from([(CONSUMER, 0), (CONSUMER, 1), (CONNECT, 0), (API_VERSIONS, 3)]),
    st.data(),
)
@settings(max_examples=500, suppress_health_check=[HealthCheck.too_slow])
def test_any_body_after_a_real_header_is_read_as_the_schema_codec_reads_it_or_declined(
    api: tuple[int, int], data: st.DataObject
) -> None:
    api_key, version = api
    header = codec.encode_request_frame(RequestHeader(api_key, version, 7, "client"), _Raw(b""))[4:]
    real = request_frame(api_key, version, {"group_id": "g", "member_id": "m", "member_epoch": 3}
                         if api_key != API_VERSIONS else {"client_software_name": "a",
                                                          "client_software_version": "1"})  # fmt: skip
    real_body = real[len(header) :]
    body = data.draw(
        st.binary(max_size=60)
        | st.builds(lambda cut: real_body[:cut], st.integers(0, len(real_body)))
        | st.builds(
            lambda at, byte: _flip(real_body, at, byte),
            st.integers(0, len(real_body) - 1),
            st.integers(0, 255),
        )  # fmt: skip
    )
    same_reading(header + body)


class _Raw:
    def __init__(self, data: bytes) -> None:
        self.data = data

    def encode(self) -> bytes:
        return self.data


def _flip(body: bytes, at: int, byte: int) -> bytes:
    return body[:at] + bytes((byte,)) + body[at + 1 :]


# -- answers ---------------------------------------------------------------------------------

answer_common = {
    "throttle_time_ms": int32, "error_code": st.integers(-(2**15), 2**15 - 1),
    "error_message": st.none() | text, "member_id": st.none() | text, "member_epoch": int32,
    "heartbeat_interval_ms": int32, "should_compute_assignment": st.booleans(),
}  # fmt: skip


def schema_answer(api_key: int, version: int, correlation: int, fields: dict[str, Any]) -> bytes:
    body = codec.build_response(api_key, version, fields)
    return codec.encode_response_frame(api_key, version, correlation, body)


@given(st.sampled_from([(CONSUMER, 0), (CONSUMER, 1), (CONNECT, 0)]), int32, st.data())
@settings(max_examples=300)
def test_heartbeat_answers_without_an_assignment_are_the_schema_codecs_bytes(
    api: tuple[int, int], correlation: int, data: st.DataObject
) -> None:
    api_key, version = api
    fields_of = {**answer_common, **({"session_timeout_ms": int32} if api_key == CONNECT else {})}
    drawn = data.draw(st.fixed_dictionaries({}, optional=fields_of))  # any subset: defaults fill the rest
    assert hot_messages.encode_answer(api_key, version, correlation, drawn) is not None
    assert codec.encode_answer(api_key, version, correlation, drawn) == schema_answer(
        api_key, version, correlation, drawn
    )


def test_heartbeat_answers_with_an_assignment_go_through_the_schema_codec() -> None:
    assigned = {"topic_partitions": [{"topic_id": str(uuid.uuid4()), "partitions": [0, 1]}]}
    fields = {"error_code": 0, "member_id": "m", "member_epoch": 3, "heartbeat_interval_ms": 5000,
              "assignment": assigned}  # fmt: skip
    assert hot_messages.encode_answer(CONSUMER, 1, 9, fields) is None
    assert codec.encode_answer(CONSUMER, 1, 9, fields) == schema_answer(CONSUMER, 1, 9, fields)
    with pytest.raises(ValueError, match="no field"):
        codec.encode_answer(CONSUMER, 1, 9, {"no_such_field": 1})


@pytest.mark.parametrize(
    "bad",
    [{"member_epoch": 2**31}, {"heartbeat_interval_ms": -(2**31) - 1}, {"error_code": 2**15},
     {"member_epoch": 1.5}, {"member_id": 5}, {"error_message": b"bytes"}, {"throttle_time_ms": None}],
)  # fmt: skip
def test_a_value_the_hot_encoder_cannot_write_is_left_to_the_schema_codec(bad: dict[str, Any]) -> None:
    fields = {"error_code": 0, "member_id": "m", "member_epoch": 3, "heartbeat_interval_ms": 5000, **bad}
    for api_key, version in ((CONSUMER, 1), (CONNECT, 0)):
        assert hot_messages.encode_answer(api_key, version, 9, fields) is None


@pytest.mark.parametrize("version", range(5))
def test_api_versions_answers_are_the_schema_codecs_bytes_every_time(version: int) -> None:
    from coordinator.apis.cluster import advertised_api_versions

    as_dicts = [entry._asdict() for entry in advertised_api_versions()]
    for error in (0, 35):
        fields = {"error_code": error, "api_keys": advertised_api_versions(), "throttle_time_ms": 0}
        for correlation in (1, 2, 2**31 - 1):
            assert codec.encode_answer(API_VERSIONS, version, correlation, fields) == schema_answer(
                API_VERSIONS, version, correlation, {**fields, "api_keys": as_dicts}
            )


DESCRIBE = ApiKey.CONSUMER_GROUP_DESCRIBE
topic_entry = st.fixed_dictionaries(
    {"topic_id": ids, "topic_name": text, "partitions": st.lists(int32, max_size=4)}
)
assignment = st.fixed_dictionaries({"topic_partitions": st.lists(topic_entry, max_size=3)})


@st.composite
def describe_answers(draw: st.DrawFn) -> dict[str, Any]:
    """ConsumerGroupDescribe answers as the group core writes them: members share the list of
    names of one subscription, and optional fields may be left to their defaults."""
    subscriptions = draw(st.lists(st.lists(text, max_size=4), min_size=1, max_size=3))
    member = st.fixed_dictionaries(
        {
            "member_id": text, "member_epoch": int32, "client_id": text, "client_host": text,
            "subscribed_topic_names": st.sampled_from(subscriptions), "assignment": assignment,
            "target_assignment": assignment,
        },
        optional={"instance_id": st.none() | text, "rack_id": st.none() | text,
                  "subscribed_topic_regex": st.none() | text, "member_type": st.integers(-1, 1)},
    )  # fmt: skip
    group = st.fixed_dictionaries(
        {
            "error_code": st.integers(0, 100), "group_id": text, "group_state": text, "group_epoch": int32,
            "assignment_epoch": int32, "assignor_name": text, "members": st.lists(member, max_size=4),
        },
        optional={"error_message": st.none() | text, "authorized_operations": int32},
    )  # fmt: skip
    return draw(
        st.fixed_dictionaries({"groups": st.lists(group, max_size=3)}, optional={"throttle_time_ms": int32})
    )


@given(st.integers(0, 1), int32, describe_answers())
@settings(max_examples=300, suppress_health_check=[HealthCheck.too_slow])
def test_consumer_group_describe_answers_are_the_schema_codecs_bytes(
    version: int, correlation: int, fields: dict[str, Any]
) -> None:
    assert hot_messages.encode_answer(DESCRIBE, version, correlation, fields) is not None
    assert codec.encode_answer(DESCRIBE, version, correlation, fields) == schema_answer(
        DESCRIBE, version, correlation, fields
    )


def test_a_describe_answer_the_hot_encoder_cannot_write_is_left_to_the_schema_codec() -> None:
    tp = {"topic_id": str(uuid.uuid4()), "topic_name": "t", "partitions": [0, 1]}
    member = {"member_id": "m", "member_epoch": 3, "client_id": "c", "client_host": "/h",
              "subscribed_topic_names": ["t"], "assignment": {"topic_partitions": [tp]},
              "target_assignment": {"topic_partitions": []}}  # fmt: skip
    group = {"error_code": 0, "group_id": "g", "group_state": "Stable", "group_epoch": 1,
             "assignment_epoch": 1, "assignor_name": "uniform", "members": [member]}  # fmt: skip
    good = {"groups": [group]}
    assert hot_messages.encode_answer(DESCRIBE, 1, 9, good) is not None
    bad_members = [{"member_epoch": 2**31}, {"member_id": None}, {"subscribed_topic_names": ("t",)},
                   {"assignment": {"topic_partitions": [{**tp, "topic_id": "not a uuid"}]}},
                   {"assignment": {"topic_partitions": [{**tp, "partitions": [2**31]}]}},
                   {"unknown": 1}]  # fmt: skip
    for bad in bad_members:
        fields = {"groups": [{**group, "members": [{**member, **bad}]}]}
        assert hot_messages.encode_answer(DESCRIBE, 1, 9, fields) is None, bad
    for bad in ({"group_epoch": "1"}, {"error_message": 5}, {"members": None}):
        assert hot_messages.encode_answer(DESCRIBE, 1, 9, {"groups": [{**group, **bad}]}) is None, bad


def test_members_handed_out_again_are_written_once_per_version_as_the_schema_codec_writes_them() -> None:
    """The group core hands out the same tuple of members while a group is unchanged; the
    encoder keeps what it wrote for it, per version (v1 adds MemberType)."""
    tp = {"topic_id": str(uuid.uuid4()), "topic_name": "t", "partitions": [0, 1]}
    members = tuple(
        {"member_id": f"m{i}", "member_epoch": 3, "client_id": "c", "client_host": "/h",
         "subscribed_topic_names": ["t"], "assignment": {"topic_partitions": [tp]},
         "target_assignment": {"topic_partitions": []}, "member_type": 1}
        for i in range(3)
    )  # fmt: skip
    group = {"error_code": 0, "group_id": "g", "group_state": "Stable", "group_epoch": 1,
             "assignment_epoch": 1, "assignor_name": "uniform", "members": members}  # fmt: skip
    for version in (0, 1, 1, 0):
        fields = {"groups": [group, {**group, "group_id": "other"}]}
        expected = schema_answer(DESCRIBE, version, 9, fields)
        assert codec.encode_answer(DESCRIBE, version, 9, fields) == expected

"""Hand-written codecs for the messages a coordinator answers most (the group heartbeats and
ApiVersions) and for its largest answer (ConsumerGroupDescribe of a big group). Only
`codec.py` calls this module; everything above it sees no difference.

A settled member's heartbeat is the coordinator's most frequent request, and the
schema-driven codec spends more time building and walking its message objects than the
coordinator spends on the heartbeat's bytes. These functions read and write exactly the
bytes the schemas describe (Apache Kafka's flexible encoding: compact strings and arrays,
tagged fields), for the shapes that are hot:
- ConsumerGroupHeartbeat v0-v1 and ConnectGroupHeartbeat v0 requests, decoded into plain
  objects whose attributes are the schema's snake_case fields, as the schema codec's are;
- their answers when they carry no assignment (an answer with one goes through the schema
  codec: it is rare, once per change);
- ApiVersions answers, which never change for a version and error: encoded once each (by
  the schema codec), keyed by their fields' values;
- ConsumerGroupDescribe answers (v0, v1), which for thousands of members repeat the same
  subscriptions and topics: each is encoded once per answer (`_DescribeWriter`).
Anything else — a request with tagged fields or a field this module does not read, a
value out of range, a truncated body, an answer with unexpected fields — makes these
functions answer None, and the caller uses the schema codec, which decides (and raises)
exactly as before. tests/unit/test_hot_messages.py checks every result against the
schema codec's.
"""

from __future__ import annotations

import struct
import uuid
from collections.abc import Callable
from types import SimpleNamespace
from typing import Any

from connect_rebalance.protocol.api_keys import ApiKey

_INT8, _INT16, _INT32 = struct.Struct(">b"), struct.Struct(">h"), struct.Struct(">i")
_INT32_INT32 = struct.Struct(">ii")
_THROTTLE_ERROR = struct.Struct(">ih")
_EPOCH_INTERVAL = struct.Struct(">ii")
_CONNECT_TAIL = struct.Struct(">iiib")  # epoch, interval, session timeout, should compute


_ZERO_UUID = bytes(16)


class Decoded(SimpleNamespace):
    """A request body decoded here: the schema's fields as attributes."""

    def as_fields(self) -> dict[str, Any]:
        """The fields as nested dicts and lists, as `codec.build_request` takes them."""
        return {name: _plain(value) for name, value in vars(self).items()}


def _plain(value: Any) -> Any:
    if isinstance(value, Decoded):
        return value.as_fields()
    if isinstance(value, list):
        return [_plain(v) for v in value]
    return value


class _NotHot(Exception):
    """The bytes are not a shape this module reads: the schema codec decides."""


# -- reading ---------------------------------------------------------------------------------


def _uvarint(buf: bytes, pos: int) -> tuple[int, int]:
    value = shift = 0
    while shift <= 28:
        byte = buf[pos]
        pos += 1
        value |= (byte & 0x7F) << shift
        if not byte & 0x80:
            return value, pos
        shift += 7
    raise _NotHot


def _string(buf: bytes, pos: int, nullable: bool) -> tuple[str | None, int]:
    length = buf[pos]
    if length & 0x80:
        length, pos = _uvarint(buf, pos)
    else:
        pos += 1
    if length == 0:
        if not nullable:
            raise _NotHot
        return None, pos
    end = pos + length - 1
    if end > len(buf):
        raise _NotHot
    return buf[pos:end].decode(), end


def _int32(buf: bytes, pos: int) -> tuple[int, int]:
    if pos + 4 > len(buf):
        raise _NotHot
    return _INT32.unpack_from(buf, pos)[0], pos + 4


def _no_tags(buf: bytes, pos: int) -> int:
    if buf[pos] != 0:
        raise _NotHot  # tagged fields: the schema codec knows them
    return pos + 1


Reader = Callable[[bytes, int], tuple[Any, int]]


def _array(buf: bytes, pos: int, item: Reader) -> tuple[list[Any] | None, int]:
    count = buf[pos]
    if count & 0x80:
        count, pos = _uvarint(buf, pos)
    else:
        pos += 1
    if count == 0:
        return None, pos
    if count - 1 > len(buf) - pos:
        raise _NotHot  # more elements than bytes: the schema codec refuses it (decoder_limits.py)
    items = []
    for _ in range(count - 1):
        value, pos = item(buf, pos)
        items.append(value)
    return items, pos


def _topic_partitions(buf: bytes, pos: int) -> tuple[Decoded, int]:
    if pos + 16 > len(buf):
        raise _NotHot
    raw = buf[pos : pos + 16]
    topic_id = None if raw == _ZERO_UUID else uuid.UUID(bytes=raw)  # as the schema codec reads it
    partitions, pos = _array(buf, pos + 16, _int32)
    if partitions is None:
        raise _NotHot
    return Decoded(topic_id=topic_id, partitions=partitions), _no_tags(buf, pos)


def _nullable_string(buf: bytes, pos: int) -> tuple[str | None, int]:
    return _string(buf, pos, True)


# What follows the member epoch in a settled member's heartbeat (v0, v1): every optional field
# null, the rebalance timeout -1, no tagged fields. The most frequent request reads no further.
_SETTLED_V0 = b"\x00\x00" + b"\xff" * 4 + b"\x00\x00\x00\x00"
_SETTLED_TAILS = (_SETTLED_V0, _SETTLED_V0[:6] + b"\x00" + _SETTLED_V0[6:])  # v1: the regex, null


def _consumer_heartbeat(buf: bytes, pos: int, version: int) -> Decoded:
    group_id, pos = _string(buf, pos, False)
    member_id, pos = _string(buf, pos, False)
    member_epoch, pos = _int32(buf, pos)
    if buf[pos:] == _SETTLED_TAILS[version]:
        return Decoded(
            group_id=group_id, member_id=member_id, member_epoch=member_epoch, instance_id=None,
            rack_id=None, rebalance_timeout_ms=-1, subscribed_topic_names=None, subscribed_topic_regex=None,
            server_assignor=None, topic_partitions=None, client_assignors=None,
        )  # fmt: skip
    instance_id, pos = _string(buf, pos, True)
    rack_id, pos = _string(buf, pos, True)
    rebalance_timeout_ms, pos = _int32(buf, pos)
    subscribed_topic_names, pos = _array(buf, pos, lambda b, p: _string(b, p, False))
    regex = None
    if version >= 1:
        regex, pos = _string(buf, pos, True)
    server_assignor, pos = _string(buf, pos, True)
    topic_partitions, pos = _array(buf, pos, _topic_partitions)
    _no_tags(buf, pos)
    return Decoded(
        group_id=group_id, member_id=member_id, member_epoch=member_epoch, instance_id=instance_id,
        rack_id=rack_id, rebalance_timeout_ms=rebalance_timeout_ms,
        subscribed_topic_names=subscribed_topic_names, subscribed_topic_regex=regex,
        server_assignor=server_assignor, topic_partitions=topic_partitions, client_assignors=None,
    )  # fmt: skip


def _connect_task(buf: bytes, pos: int) -> tuple[Decoded, int]:
    connector, pos = _string(buf, pos, False)
    task, pos = _int32(buf, pos)
    return Decoded(connector=connector, task=task), _no_tags(buf, pos)


def _connect_heartbeat(buf: bytes, pos: int, version: int) -> Decoded:
    group_id, pos = _string(buf, pos, False)
    member_id, pos = _string(buf, pos, False)
    member_epoch, pos = _int32(buf, pos)
    instance_id, pos = _string(buf, pos, True)
    url, pos = _string(buf, pos, True)
    rebalance_timeout_ms, pos = _int32(buf, pos)
    server_assignor, pos = _string(buf, pos, True)
    if buf[pos] != 0:
        raise _NotHot  # client assignors: a join or a change, the schema codec reads them
    pos += 1
    owned = None
    present = buf[pos]
    pos += 1
    if present == 1:
        connectors, pos = _array(buf, pos, lambda b, p: _string(b, p, False))
        tasks, pos = _array(buf, pos, _connect_task)
        if connectors is None or tasks is None:
            raise _NotHot
        owned = Decoded(connectors=connectors, tasks=tasks)
        pos = _no_tags(buf, pos)
    elif present != 0xFF:
        raise _NotHot
    _no_tags(buf, pos)
    return Decoded(
        group_id=group_id, member_id=member_id, member_epoch=member_epoch, instance_id=instance_id,
        url=url, rebalance_timeout_ms=rebalance_timeout_ms, server_assignor=server_assignor,
        client_assignors=None, owned_connectors_and_tasks=owned,
    )  # fmt: skip


def _api_versions(buf: bytes, pos: int, version: int) -> Decoded:
    if version < 3:
        return Decoded()
    name, pos = _string(buf, pos, False)
    software_version, pos = _string(buf, pos, False)
    _no_tags(buf, pos)
    return Decoded(client_software_name=name, client_software_version=software_version)


_DECODERS: dict[tuple[int, int], Callable[[bytes, int, int], Decoded]] = {
    (ApiKey.CONSUMER_GROUP_HEARTBEAT, 0): _consumer_heartbeat,
    (ApiKey.CONSUMER_GROUP_HEARTBEAT, 1): _consumer_heartbeat,
    (ApiKey.CONNECT_GROUP_HEARTBEAT, 0): _connect_heartbeat,
    **{(ApiKey.API_VERSIONS, v): _api_versions for v in range(5)},
}


def decode_request(api_key: int, version: int, frame: bytes, offset: int) -> Decoded | None:
    """The body after the header, or None when the schema codec must read it."""
    decoder = _DECODERS.get((api_key, version))
    if decoder is None or not isinstance(frame, bytes):
        return None
    try:
        return decoder(frame, offset, version)
    except (_NotHot, IndexError, UnicodeDecodeError):
        return None


# -- writing ---------------------------------------------------------------------------------


def uvarint_bytes(value: int) -> bytes:
    if value < 0x80:
        return bytes((value,))
    out = bytearray()
    while value >= 0x80:
        out.append((value & 0x7F) | 0x80)
        value >>= 7
    out.append(value)
    return bytes(out)


def _compact_string(value: str | None) -> bytes:
    if value is None:
        return b"\x00"
    data = value.encode()
    return uvarint_bytes(len(data) + 1) + data


_CONSUMER_ANSWER = frozenset({
    "throttle_time_ms", "error_code", "error_message", "member_id", "member_epoch", "heartbeat_interval_ms",
    "should_compute_assignment", "assignment",
})  # fmt: skip
_CONNECT_ANSWER = _CONSUMER_ANSWER | {"session_timeout_ms"}
_DESCRIBE_ANSWER = frozenset({"throttle_time_ms", "groups"})


# ShouldComputeAssignment is ConsumerGroupHeartbeat's tagged field 10000, written only when true.
_COMPUTE_TAG = b"\x01" + uvarint_bytes(10000) + b"\x01\x01"


def _consumer_answer(correlation_id: int, fields: dict[str, Any]) -> bytes:
    get = fields.get
    return b"".join((
        _INT32.pack(correlation_id), b"\x00",  # header v1: no tagged fields
        _THROTTLE_ERROR.pack(get("throttle_time_ms", 0), get("error_code", 0)),
        _compact_string(get("error_message")), _compact_string(get("member_id")),
        _EPOCH_INTERVAL.pack(get("member_epoch", 0), get("heartbeat_interval_ms", 0)),
        b"\xff",  # no assignment
        _COMPUTE_TAG if get("should_compute_assignment", False) else b"\x00",
    ))  # fmt: skip


def _connect_answer(correlation_id: int, fields: dict[str, Any]) -> bytes:
    get = fields.get
    return b"".join((
        _INT32.pack(correlation_id), b"\x00",
        _THROTTLE_ERROR.pack(get("throttle_time_ms", 0), get("error_code", 0)),
        _compact_string(get("error_message")), _compact_string(get("member_id")),
        _CONNECT_TAIL.pack(get("member_epoch", 0), get("heartbeat_interval_ms", 0),
                           get("session_timeout_ms", 0), 1 if get("should_compute_assignment", False) else 0),
        b"\xff\x00",  # no assignment; no tagged fields
    ))  # fmt: skip


_GROUP_FIELDS = frozenset({
    "error_code", "error_message", "group_id", "group_state", "group_epoch", "assignment_epoch",
    "assignor_name", "members", "authorized_operations",
})  # fmt: skip
_MEMBER_FIELDS = frozenset({
    "member_id", "instance_id", "rack_id", "member_epoch", "client_id", "client_host",
    "subscribed_topic_names", "subscribed_topic_regex", "assignment", "target_assignment", "member_type",
})  # fmt: skip


# The members of a group as last written, by the tuple that held them: a tuple of members is
# the group core's describe of a group as it stands, which it hands out again, unchanged, until
# the group changes (`ModernGroups._described_members`). A monitor polling a big group then
# costs no encoding; the tuple is kept with its bytes, so its id cannot be reused meanwhile.
_WRITTEN_MEMBERS: dict[tuple[int, int], tuple[tuple[Any, ...], bytes]] = {}
_WRITTEN_MEMBERS_KEPT = 8


class _DescribeWriter:
    """ConsumerGroupDescribe's body (v0, v1), written piece by piece.

    A big group's answer repeats itself: members that name the same topics carry the same list
    of names (the group core hands out one list per distinct subscription), and every member's
    assignment names topics that others' name too. Each such list, topic name and topic id is
    encoded once per answer; the schema codec wrote every one of them again, which for 2,000
    members subscribed to 200 topics held the event loop for half a second.
    """

    def __init__(self, version: int) -> None:
        self.version = version
        self.parts: list[bytes] = []
        self._lists: dict[int, bytes] = {}  # id of a list of names -> its bytes
        self._strings: dict[str, bytes] = {}
        self._ids: dict[Any, bytes] = {}
        self._heads: dict[tuple[Any, str], bytes] = {}  # (topic id, name) -> their bytes

    def answer(self, fields: dict[str, Any]) -> bytes:
        groups = fields["groups"]
        self.parts += (_INT32.pack(fields.get("throttle_time_ms", 0)), uvarint_bytes(len(groups) + 1))
        for group in groups:
            self._group(group)
        self.parts.append(b"\x00")
        return b"".join(self.parts)

    def _group(self, group: dict[str, Any]) -> None:
        if not _GROUP_FIELDS.issuperset(group):
            raise _NotHot
        get, parts = group.get, self.parts
        members = group["members"]
        parts += (
            _INT16.pack(group["error_code"]), _compact_string(get("error_message")),
            _required_string(group["group_id"]), _required_string(group["group_state"]),
            _INT32_INT32.pack(group["group_epoch"], group["assignment_epoch"]),
            self._string(group["assignor_name"]),
        )  # fmt: skip
        key = (id(members), self.version)
        known = _WRITTEN_MEMBERS.get(key) if type(members) is tuple else None
        if known is not None and known[0] is members:
            parts.append(known[1])
        else:
            start = len(parts)
            parts.append(uvarint_bytes(len(members) + 1))
            for member in members:
                self._member(member)
            if type(members) is tuple:
                if len(_WRITTEN_MEMBERS) >= _WRITTEN_MEMBERS_KEPT:
                    del _WRITTEN_MEMBERS[next(iter(_WRITTEN_MEMBERS))]
                _WRITTEN_MEMBERS[key] = (members, b"".join(parts[start:]))
        parts += (_INT32.pack(get("authorized_operations", -(2**31))), b"\x00")

    def _member(self, member: dict[str, Any]) -> None:
        if not _MEMBER_FIELDS.issuperset(member):
            raise _NotHot
        get, parts = member.get, self.parts
        parts += (
            _required_string(member["member_id"]), _compact_string(get("instance_id")),
            _compact_string(get("rack_id")), _INT32.pack(member["member_epoch"]),
            self._string(member["client_id"]), self._string(member["client_host"]),
            self._names(member["subscribed_topic_names"]), _compact_string(get("subscribed_topic_regex")),
        )  # fmt: skip
        self._assignment(member["assignment"])
        self._assignment(member["target_assignment"])
        if self.version >= 1:
            parts.append(_INT8.pack(get("member_type", -1)))
        parts.append(b"\x00")

    def _assignment(self, assignment: dict[str, Any]) -> None:
        if len(assignment) != 1:
            raise _NotHot  # only TopicPartitions: a KeyError below if it is another field
        topics = assignment["topic_partitions"]
        parts, heads = self.parts, self._heads
        parts.append(uvarint_bytes(len(topics) + 1))
        for topic in topics:
            if len(topic) != 3:
                raise _NotHot  # TopicId, TopicName and Partitions: a KeyError below if not these
            key = (topic["topic_id"], topic["topic_name"])
            head = heads.get(key)
            if head is None:
                head = heads[key] = self._topic_id(key[0]) + _required_string(key[1])
            partitions = topic["partitions"]
            count = len(partitions)
            if count < len(_SMALL_INT32_ARRAYS):
                parts += (head, _SMALL_INT32_ARRAYS[count].pack(count + 1, *partitions))
            else:
                parts += (head, uvarint_bytes(count + 1), struct.pack(f">{count}i", *partitions), b"\x00")
        parts.append(b"\x00")

    def _string(self, value: str) -> bytes:
        found = self._strings.get(value)
        if found is None:
            found = self._strings[value] = _required_string(value)
        return found

    def _names(self, names: list[str]) -> bytes:
        key = id(names)  # alive in the fields until the answer is written
        found = self._lists.get(key)
        if found is None:
            if type(names) is not list:
                raise _NotHot
            encoded = b"".join([self._string(n) for n in names])
            found = self._lists[key] = uvarint_bytes(len(names) + 1) + encoded
        return found

    def _topic_id(self, topic_id: Any) -> bytes:
        found = self._ids.get(topic_id)
        if found is None:
            if topic_id is None:
                found = _ZERO_UUID
            else:
                found = topic_id.bytes if isinstance(topic_id, uuid.UUID) else uuid.UUID(topic_id).bytes
            self._ids[topic_id] = found
        return found


# A short compact array of int32 and the empty tagged fields of the struct it ends, packed at once.
_SMALL_INT32_ARRAYS = tuple(struct.Struct(f">B{n}ix") for n in range(127))


def _required_string(value: str) -> bytes:
    """A non-nullable string: a None is left to the schema codec to refuse or write."""
    if type(value) is not str:
        raise _NotHot
    return _compact_string(value)


def _consumer_group_describe(version: int) -> Callable[[int, dict[str, Any]], bytes]:
    def encode(correlation_id: int, fields: dict[str, Any]) -> bytes:
        return _INT32.pack(correlation_id) + b"\x00" + _DescribeWriter(version).answer(fields)

    return encode


_ENCODERS: dict[tuple[int, int], tuple[frozenset[str], Callable[[int, dict[str, Any]], bytes]]] = {
    (ApiKey.CONSUMER_GROUP_HEARTBEAT, 0): (_CONSUMER_ANSWER, _consumer_answer),
    (ApiKey.CONSUMER_GROUP_HEARTBEAT, 1): (_CONSUMER_ANSWER, _consumer_answer),
    (ApiKey.CONNECT_GROUP_HEARTBEAT, 0): (_CONNECT_ANSWER, _connect_answer),
    **{(ApiKey.CONSUMER_GROUP_DESCRIBE, v): (_DESCRIBE_ANSWER, _consumer_group_describe(v)) for v in (0, 1)},
}


def encode_answer(api_key: int, version: int, correlation_id: int, fields: dict[str, Any]) -> bytes | None:
    """A heartbeat answer without an assignment or a ConsumerGroupDescribe answer, as a frame
    without its size; None otherwise."""
    found = _ENCODERS.get((api_key, version))
    if found is None:
        return None
    names, encoder = found
    if fields.get("assignment") is not None or not names.issuperset(fields):
        return None
    try:  # a value the frame cannot hold (out of range, not an int, not a string) fails here
        return encoder(correlation_id, fields)
    except (_NotHot, struct.error, TypeError, AttributeError, ValueError, KeyError):
        return None  # the schema codec says what is wrong


class EncodedOnce:
    """Answers that are the same whenever their fields are (ApiVersions): encoded once each,
    by the schema codec, then reused."""

    def __init__(self, encode: Callable[[int, int, int, dict[str, Any]], bytes], limit: int = 64) -> None:
        self._encode = encode
        self._bodies: dict[Any, bytes] = {}
        self._limit = limit

    def answer(self, api_key: int, version: int, correlation_id: int, fields: dict[str, Any]) -> bytes:
        """The answer frame (without its size) for these fields; their body cached by value."""
        key = (api_key, version, _frozen(fields))
        body = self._bodies.get(key)
        if body is None:
            body = self._encode(api_key, version, 0, fields)[4:]  # without the correlation id
            if len(self._bodies) < self._limit:
                self._bodies[key] = body
        return _INT32.pack(correlation_id) + body


_SCALARS = frozenset({int, str, bytes, bool, float, type(None)})


def _frozen(value: Any) -> Any:
    """A hashable value of nested dicts and lists (dict keys in order)."""
    kind = type(value)
    if kind is dict:
        return tuple([(k, v if type(v) in _SCALARS else _frozen(v)) for k, v in value.items()])
    if kind is tuple:
        try:
            hash(value)  # already immutable (named tuples of scalars, say)
            return value
        except TypeError:
            pass
    if kind is list or kind is tuple:
        return tuple([v if type(v) in _SCALARS else _frozen(v) for v in value])
    return value

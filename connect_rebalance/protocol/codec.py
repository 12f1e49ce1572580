"""The wire adapter: the only module that touches kafka-python's protocol internals.

kafka-python 3.0.12 generates encoders and decoders from Apache Kafka's JSON message
schemas, but it is a client library: it has no request registry, no server-side header
parser, no response framing and no version-range policy. This module adds exactly those,
so that everything above it deals in plain header tuples, decoded request objects and
response dictionaries.

Rules this module keeps:
- Request headers are parsed by hand (v1 or v2): the library's header decoder copies the
  whole frame, and a server must parse headers of APIs it does not know.
- Trailing bytes after a request body are ignored, as Kafka does (librdkafka sends some).
- Responses are framed here: header v0 (correlation id) or v1 (plus empty tagged fields)
  for flexible versions; ApiVersions always answers with header v0.
- It never decides what the server supports; `coordinator.apis` does.
- A count in a frame builds nothing over Kafka's limits (decoder_limits.py, installed here):
  such a request is a FrameError, and the connection is closed.
- The hottest messages (the group heartbeats, ApiVersions) and the largest answer
  (ConsumerGroupDescribe) are read or written by hand-written codecs (hot_messages.py) when
  their shape allows, with the same results;
  callers never choose: `decode_request_body` and `encode_answer` do.
"""

from __future__ import annotations

import importlib
import pkgutil
import struct
import warnings
from dataclasses import dataclass
from functools import cache
from typing import Any

from connect_rebalance.protocol.api_keys import ApiKey

from . import decoder_limits, hot_messages

with warnings.catch_warnings():
    # kafka-python loads each schema with importlib.resources.read_text, which warns on 3.11+.
    warnings.simplefilter("ignore", DeprecationWarning)
    import kafka.protocol as _kafka_protocol
    from kafka.protocol.api_message import ApiMessage

    for _module in pkgutil.walk_packages(_kafka_protocol.__path__, "kafka.protocol."):
        if _module.name.endswith("generate_stubs"):
            continue
        importlib.import_module(_module.name)
    # The project's own API schemas register themselves on import.
    importlib.import_module("connect_rebalance.protocol.messages")
decoder_limits.install()  # before any decoder is compiled


class FrameError(ValueError):
    """The bytes are not a request this server can answer; the connection is closed."""


class UnsupportedApiError(FrameError):
    """The header parsed, but its API key or version has no schema here."""

    def __init__(self, header: RequestHeader, message: str) -> None:
        super().__init__(message)
        self.header = header


@dataclass(frozen=True, slots=True)
class RequestHeader:
    api_key: int
    api_version: int
    correlation_id: int
    client_id: str | None


def _all_subclasses(cls: type) -> list[type]:
    found = []
    for sub in cls.__subclasses__():
        found.append(sub)
        found.extend(_all_subclasses(sub))
    return found


def _primary_classes(kind: str) -> dict[int, type]:
    table: dict[int, type] = {}
    for cls in _all_subclasses(ApiMessage):
        if getattr(cls, "_class_version", None) is None and cls.type == kind:
            table[cls.API_KEY] = cls
    return table


_REQUESTS: dict[int, type] = _primary_classes("request")
_RESPONSES: dict[int, type] = _primary_classes("response")


@cache
def schema_versions(api_key: int) -> tuple[int, int] | None:
    """The (min, max) versions the request schema declares, or None for an unknown key."""
    cls = _REQUESTS.get(api_key)
    if cls is None or api_key not in _RESPONSES:
        return None
    low, high = cls._valid_versions
    return int(low), int(high)


def api_name(api_key: int) -> str:
    cls = _REQUESTS.get(api_key)
    return cls.__name__.removesuffix("Request") if cls is not None else f"Api{api_key}"


@cache
def is_flexible(api_key: int, version: int) -> bool:
    cls = _REQUESTS.get(api_key)
    return bool(cls is not None and cls.flexible_version_q(version))


@cache
def _header_rule(api_key: int, api_version: int) -> tuple[bool, bool]:
    """(known API key, header v2 with tagged fields) for a request header."""
    versions = schema_versions(api_key)
    if versions is None:
        return False, False
    too_new_api_versions = api_key == ApiKey.API_VERSIONS and api_version > versions[1]
    return True, is_flexible(api_key, api_version) and not too_new_api_versions


def _read_unsigned_varint(buf: memoryview, pos: int) -> tuple[int, int]:
    value = shift = 0
    while True:
        if pos >= len(buf):
            raise FrameError("truncated varint")
        byte = buf[pos]
        pos += 1
        value |= (byte & 0x7F) << shift
        if not byte & 0x80:
            return value, pos
        shift += 7
        if shift > 28:
            raise FrameError("varint longer than 5 bytes")


def parse_request_header(frame: bytes | memoryview) -> tuple[RequestHeader, int]:
    """Parse a request header (v1, or v2 for flexible versions); return it and the body offset.

    ApiVersions requests newer than the schema knows are parsed as header v1: the client
    may send tagged fields we cannot know about, and KIP-511 says to answer with v0 anyway.
    """
    buf = memoryview(frame)
    if len(buf) < 10:
        raise FrameError(f"request of {len(buf)} bytes is shorter than a request header")
    api_key, api_version, correlation_id, client_id_len = struct.unpack_from(">hhih", buf, 0)
    pos = 10
    client_id = None
    if client_id_len >= 0:
        end = pos + client_id_len
        if end > len(buf):
            raise FrameError("client id runs past the end of the frame")
        try:
            client_id = bytes(buf[pos:end]).decode("utf-8")
        except UnicodeDecodeError as exc:
            raise FrameError("client id is not UTF-8") from exc
        pos = end
    elif client_id_len != -1:
        raise FrameError(f"invalid client id length {client_id_len}")
    header = RequestHeader(api_key, api_version, correlation_id, client_id)
    known, tagged = _header_rule(api_key, api_version)
    if not known:
        raise UnsupportedApiError(header, f"unknown API key {api_key}")
    if tagged:
        count, pos = _read_unsigned_varint(buf, pos)
        for _ in range(count):
            _tag, pos = _read_unsigned_varint(buf, pos)
            size, pos = _read_unsigned_varint(buf, pos)
            pos += size
            if pos > len(buf):
                raise FrameError("header tagged field runs past the end of the frame")
    return header, pos


def decode_request_body(header: RequestHeader, frame: bytes | memoryview, offset: int) -> Any:
    """Decode the body that follows the header; any codec failure becomes a FrameError."""
    versions = schema_versions(header.api_key)
    if versions is None or not versions[0] <= header.api_version <= versions[1]:
        raise UnsupportedApiError(
            header, f"{api_name(header.api_key)} v{header.api_version} is not supported"
        )
    fast = hot_messages.decode_request(header.api_key, header.api_version, frame, offset)
    if fast is not None:
        return fast
    cls = _REQUESTS[header.api_key]
    try:
        return cls.decode(memoryview(frame)[offset:], version=header.api_version)
    except decoder_limits.DecodeLimitError as exc:
        raise FrameError(f"{api_name(header.api_key)} v{header.api_version} refused: {exc}") from exc
    except Exception as exc:  # the generated decoders raise struct/Value/Index/Unicode errors
        raise FrameError(
            f"{api_name(header.api_key)} v{header.api_version} body does not decode: {exc!r}"
        ) from exc


def _to_container(data_class: type, fields: dict[str, Any], version: int | None) -> Any:
    struct_fields = data_class._struct.fields
    converted: dict[str, Any] = {}
    for name, value in fields.items():
        field = struct_fields.get(name)
        if field is None:
            raise ValueError(f"{data_class.__name__} has no field {name!r}")
        if value is not None and field.is_struct_array():
            value = [_to_container(field.data_class, v, None) if isinstance(v, dict) else v for v in value]
        elif isinstance(value, dict) and field.is_struct():
            value = _to_container(field.data_class, value, None)
        converted[name] = value
    if version is None:
        return data_class(**converted)
    return data_class(version=version, **converted)


def response_field_names(api_key: int) -> frozenset[str]:
    """The top-level fields of an API's response (any version; a version encodes only its own)."""
    return frozenset(_RESPONSES[api_key]._struct.fields)


def build_response(api_key: int, version: int, fields: dict[str, Any]) -> Any:
    """A response object from plain (nested) dicts with the schema's snake_case names.

    Fields left out take the schema defaults.
    """
    return _to_container(_RESPONSES[api_key], fields, version)


def build_request(api_key: int, version: int, fields: dict[str, Any]) -> Any:
    """A request object from plain dicts (used by the project's own protocol clients)."""
    return _to_container(_REQUESTS[api_key], fields, version)


def encode_response_frame(api_key: int, version: int, correlation_id: int, body: Any) -> bytes:
    """A size-prefixed response frame: header v0/v1 and the encoded body."""
    payload = body.encode() if not isinstance(body, bytes | bytearray) else body
    flexible_header = api_key != ApiKey.API_VERSIONS and is_flexible(api_key, version)
    header = struct.pack(">i", correlation_id) + (b"\x00" if flexible_header else b"")
    # One copy of the payload (a Fetch answer's is its records), not one per concatenation.
    return b"".join((struct.pack(">i", len(header) + len(payload)), header, payload))


def encode_answer(api_key: int, version: int, correlation_id: int, fields: dict[str, Any]) -> bytes:
    """A size-prefixed response frame from response fields (as `build_response` takes them)."""
    frame = hot_messages.encode_answer(api_key, version, correlation_id, fields)
    if frame is None:
        if api_key == ApiKey.API_VERSIONS:
            frame = _API_VERSIONS_ANSWERS.answer(api_key, version, correlation_id, fields)
        else:
            return _schema_answer(api_key, version, correlation_id, fields)
    return struct.pack(">i", len(frame)) + frame


def _schema_answer(api_key: int, version: int, correlation_id: int, fields: dict[str, Any]) -> bytes:
    return encode_response_frame(api_key, version, correlation_id, build_response(api_key, version, fields))


_API_VERSIONS_ANSWERS = hot_messages.EncodedOnce(lambda *args: _schema_answer(*args)[4:])


def encode_request_frame(header: RequestHeader, body: Any) -> bytes:
    """A size-prefixed request frame (header v1/v2), for the project's own clients and tests."""
    if isinstance(body, hot_messages.Decoded):  # read by hand: the schema codec writes it
        body = build_request(header.api_key, header.api_version, body.as_fields())
    client_id = header.client_id.encode() if header.client_id is not None else None
    parts = [struct.pack(">hhi", header.api_key, header.api_version, header.correlation_id)]
    parts.append(
        struct.pack(">h", -1) if client_id is None else struct.pack(">h", len(client_id)) + client_id
    )
    if is_flexible(header.api_key, header.api_version):
        parts.append(b"\x00")
    parts.append(bytes(body.encode()))
    payload = b"".join(parts)
    return struct.pack(">i", len(payload)) + payload


def decode_response_body(api_key: int, version: int, frame: bytes | memoryview) -> tuple[int, Any]:
    """Decode a size-less response (header + body); return (correlation id, body)."""
    buf = memoryview(frame)
    (correlation_id,) = struct.unpack_from(">i", buf, 0)
    pos = 4
    if api_key != ApiKey.API_VERSIONS and is_flexible(api_key, version):
        count, pos = _read_unsigned_varint(buf, pos)
        for _ in range(count):
            _tag, pos = _read_unsigned_varint(buf, pos)
            size, pos = _read_unsigned_varint(buf, pos)
            pos += size
    return correlation_id, _RESPONSES[api_key].decode(buf[pos:], version=version)


def response_fields(body: Any) -> dict[str, Any]:
    """A decoded response as plain dicts and lists (bytes kept as bytes)."""
    return dict(body.to_dict(json=False))

"""Kafka Connect's embedded group protocol, byte for byte (classic JoinGroup/SyncGroup payloads).

Workers on `group.protocol=classic` put these bytes in JoinGroup protocol metadata and in
SyncGroup member assignments (and the coordinator reads and writes them for classic workers
inside a connect group, coordinator/groups/classic_bridge.py), so that they can share a
group with Apache Kafka Connect workers (reference/connect-protocol-wire.md):
- protocol type "connect"; protocol names "default" (v0, eager), "compatible" (v1,
  incremental cooperative) and "sessioned" (v2: v1's layout, and the group supports session
  keys); `connect.protocol` chooses which are offered, most preferred first;
- metadata: version INT16, url STRING, config offset INT64, and from v1 the worker's current
  allocation as NULLABLE_BYTES holding a whole serialized assignment (null if it has none);
- assignment: version INT16, error INT16, leader STRING, leader url STRING, config offset
  INT64, assigned ARRAY{connector STRING, tasks ARRAY INT32} (task -1 = the connector itself),
  and from v1 revoked (same array) and delay INT32.

Reading follows Kafka Connect's tolerant v1 schema, which it uses for every version: fields
missing at the end of the buffer take their defaults (null arrays, delay 0), null arrays
read as empty, and bytes after the last field are ignored. Anything else malformed raises
`ConnectProtocolError`. Pure: no IO.
"""

from __future__ import annotations

import struct
from collections.abc import Iterable
from dataclasses import dataclass, field

from connect_rebalance.work import CONNECTOR, Work

PROTOCOL_TYPE = "connect"
EAGER, COMPATIBLE, SESSIONED = "default", "compatible", "sessioned"
PROTOCOL_VERSIONS = {EAGER: 0, COMPATIBLE: 1, SESSIONED: 2}
OFFERED = {
    "eager": [EAGER],
    "compatible": [COMPATIBLE, EAGER],
    "sessioned": [SESSIONED, COMPATIBLE, EAGER],
}
NO_ERROR, CONFIG_MISMATCH = 0, 1
MAX_STRING = 32767


class ConnectProtocolError(ValueError):
    """Bytes that are not a Kafka Connect worker metadata or assignment."""


@dataclass(frozen=True)
class ConnectAssignment:
    """One worker's part of a rebalance; `assigned` and `revoked` are deltas from v1 on."""

    version: int
    error: int
    leader: str
    leader_url: str
    config_offset: int
    assigned: frozenset[Work] = frozenset()
    revoked: frozenset[Work] = frozenset()
    delay_ms: int = 0


@dataclass(frozen=True)
class WorkerState:
    """What a worker says of itself when it joins: REST url, config offset, what it owns."""

    version: int
    url: str
    config_offset: int
    allocation: ConnectAssignment | None = field(default=None)

    @property
    def owned(self) -> frozenset[Work]:
        return self.allocation.assigned if self.allocation is not None else frozenset()


def offered_protocols(connect_protocol: str) -> list[tuple[str, int]]:
    """The (protocol name, metadata version) pairs a worker offers, most preferred first."""
    try:
        return [(name, PROTOCOL_VERSIONS[name]) for name in OFFERED[connect_protocol.lower()]]
    except KeyError:
        raise ValueError(
            f"connect.protocol must be one of {sorted(OFFERED)}, not {connect_protocol!r}"
        ) from None


def protocol_version(name: str) -> int:
    """The metadata/assignment version of a protocol name the coordinator chose."""
    if name not in PROTOCOL_VERSIONS:
        raise ConnectProtocolError(f"unknown connect protocol {name!r}")
    return PROTOCOL_VERSIONS[name]


# -- writing ---------------------------------------------------------------------------------


def _string(value: str) -> bytes:
    data = value.encode()
    if len(data) > MAX_STRING:
        raise ValueError(f"string of {len(data)} bytes is longer than {MAX_STRING}")
    return struct.pack(">h", len(data)) + data


def _work_array(items: Iterable[Work]) -> bytes:
    """ARRAY{connector, tasks}: per connector (sorted), -1 first if the instance is included."""
    by_connector: dict[str, list[int]] = {}
    for connector, task in sorted(items):
        by_connector.setdefault(connector, []).append(task)
    parts = [struct.pack(">i", len(by_connector))]
    for connector, tasks in by_connector.items():
        parts.append(_string(connector))
        parts.append(struct.pack(f">i{len(tasks)}i", len(tasks), *tasks))
    return b"".join(parts)


def encode_assignment(assignment: ConnectAssignment) -> bytes:
    a = assignment
    head = struct.pack(">hh", a.version, a.error) + _string(a.leader) + _string(a.leader_url)
    body = head + struct.pack(">q", a.config_offset) + _work_array(a.assigned)
    if a.version == 0:
        if a.revoked or a.delay_ms:
            raise ValueError("a v0 (eager) assignment has no revocations and no delay")
        return body
    return body + _work_array(a.revoked) + struct.pack(">i", a.delay_ms)


def encode_metadata(state: WorkerState) -> bytes:
    body = struct.pack(">h", state.version) + _string(state.url) + struct.pack(">q", state.config_offset)
    if state.version == 0:
        return body
    if state.allocation is None:
        return body + struct.pack(">i", -1)
    allocation = encode_assignment(state.allocation)
    return body + struct.pack(">i", len(allocation)) + allocation


# -- reading ---------------------------------------------------------------------------------


class _Reader:
    def __init__(self, data: bytes) -> None:
        self.data, self.pos = bytes(data), 0

    @property
    def exhausted(self) -> bool:
        return self.pos >= len(self.data)

    def take(self, fmt: str, what: str) -> int:
        size = struct.calcsize(fmt)
        if self.pos + size > len(self.data):
            raise ConnectProtocolError(f"{what}: needs {size} bytes at {self.pos}, {len(self.data)} in all")
        (value,) = struct.unpack_from(fmt, self.data, self.pos)
        self.pos += size
        return int(value)

    def string(self, what: str) -> str:
        size = self.take(">h", what)
        if size < 0:
            raise ConnectProtocolError(f"{what}: a string of length {size}")
        raw = self.bytes_(size, what)
        try:
            return raw.decode()
        except UnicodeDecodeError as exc:
            raise ConnectProtocolError(f"{what}: not UTF-8") from exc

    def bytes_(self, size: int, what: str) -> bytes:
        if self.pos + size > len(self.data):
            raise ConnectProtocolError(f"{what}: {size} bytes at {self.pos}, {len(self.data)} in all")
        raw = self.data[self.pos : self.pos + size]
        self.pos += size
        return raw

    def work_array(self, what: str) -> frozenset[Work]:
        count = self.take(">i", what)
        if count == -1:
            return frozenset()
        if count < 0:
            raise ConnectProtocolError(f"{what}: array of length {count}")
        items: set[Work] = set()
        for _ in range(count):
            connector = self.string(f"{what} connector")
            tasks = self.take(">i", f"{what} tasks of {connector!r}")
            if tasks < 0:
                raise ConnectProtocolError(f"{what}: tasks of {connector!r} has length {tasks}")
            for _ in range(tasks):
                task = self.take(">i", f"{what} task of {connector!r}")
                if task < CONNECTOR:
                    raise ConnectProtocolError(f"{what}: task id {task} of {connector!r}")
                items.add((connector, task))
        return frozenset(items)

    def version(self, what: str) -> int:
        version = self.take(">h", f"{what} version")
        if version < 0:
            raise ConnectProtocolError(f"unsupported {what} version {version}")
        return version


def decode_assignment(data: bytes) -> ConnectAssignment:
    """Any version: v0's layout is a prefix of v1's, whose trailing fields default."""
    r = _Reader(data)
    version = r.version("assignment")
    error = r.take(">h", "error")
    leader, leader_url = r.string("leader"), r.string("leader url")
    offset = r.take(">q", "config offset")
    assigned = frozenset() if r.exhausted else r.work_array("assignment")
    revoked = frozenset() if r.exhausted else r.work_array("revoked")
    delay = 0 if r.exhausted else r.take(">i", "delay")
    return ConnectAssignment(version, error, leader, leader_url, offset, assigned, revoked, delay)


def decode_metadata(data: bytes) -> WorkerState:
    """Any version, as Kafka Connect's leader reads them all (v0 simply has no allocation)."""
    r = _Reader(data)
    version = r.version("metadata")
    url, offset = r.string("url"), r.take(">q", "config offset")
    allocation = None
    if not r.exhausted:
        size = r.take(">i", "allocation")
        if size < -1:
            raise ConnectProtocolError(f"allocation of length {size}")
        if size >= 0:
            allocation = decode_assignment(r.bytes_(size, "allocation"))
    return WorkerState(version, url, offset, allocation)

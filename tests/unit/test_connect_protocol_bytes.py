"""Kafka Connect's embedded protocol bytes: the worked examples of reference/connect-protocol-wire.md
exactly, payloads as Apache Kafka Connect workers write them (any connector order, the connector
instance and its tasks in one entry or apart, null arrays, older shorter assignments), bad bytes
refused with a message, and round trips of every version."""

from __future__ import annotations

import pytest
from hypothesis import given
from hypothesis import strategies as st

from connect_rebalance.connect_protocol import (
    COMPATIBLE,
    CONFIG_MISMATCH,
    EAGER,
    SESSIONED,
    ConnectAssignment,
    ConnectProtocolError,
    WorkerState,
    decode_assignment,
    decode_metadata,
    encode_assignment,
    encode_metadata,
    offered_protocols,
    protocol_version,
)

pytestmark = pytest.mark.unit

URL = "http://w1:8083/"
URL_HEX = "000f 687474703a2f2f77313a383038332f"
LEADER = "connect-w1:8083-abc"
LEADER_HEX = "0013 636f6e6e6563742d77313a383038332d616263"


def b(hex_text: str) -> bytes:
    return bytes.fromhex(hex_text.replace(" ", ""))


def test_v0_metadata_bytes() -> None:
    expected = b(f"0000 {URL_HEX} 0000000000000005")
    assert encode_metadata(WorkerState(0, URL, 5)) == expected
    assert decode_metadata(expected) == WorkerState(0, URL, 5, None)


def test_v1_assignment_bytes_write_an_empty_revoked_array_as_count_zero() -> None:
    expected = b(
        f"0001 0000 {LEADER_HEX} {URL_HEX} 0000000000000005"
        " 00000001 0002 6331 00000003 ffffffff 00000000 00000001"
        " 00000000 00000000"
    )
    assignment = ConnectAssignment(1, 0, LEADER, URL, 5, frozenset({("c1", -1), ("c1", 0), ("c1", 1)}))
    assert encode_assignment(assignment) == expected
    assert decode_assignment(expected) == assignment


def test_v2_metadata_of_a_fresh_worker_has_a_null_allocation() -> None:
    expected = b(f"0002 {URL_HEX} 0000000000000005 ffffffff")
    assert encode_metadata(WorkerState(2, URL, 5)) == expected
    assert decode_metadata(expected) == WorkerState(2, URL, 5, None)


def test_v0_assignment_bytes_have_no_revocations_or_delay() -> None:
    expected = b(
        f"0000 0000 {LEADER_HEX} {URL_HEX} 0000000000000007"
        " 00000002 0002 6331 00000002 ffffffff 00000002 0002 6332 00000001 00000000"
    )
    assignment = ConnectAssignment(0, 0, LEADER, URL, 7, frozenset({("c1", -1), ("c1", 2), ("c2", 0)}))
    assert encode_assignment(assignment) == expected
    assert decode_assignment(expected) == assignment
    with pytest.raises(ValueError, match="v0"):
        encode_assignment(ConnectAssignment(0, 0, LEADER, URL, 7, revoked=frozenset({("c1", 0)})))


def test_a_v2_metadata_with_the_allocation_a_kafka_connect_worker_sends() -> None:
    # A Java worker's assignment snapshot: connectors in hash order, c2's instance in its own
    # entry after its tasks' entry, a revocation and a delay from its last assignment.
    allocation = (
        f"0002 0000 {LEADER_HEX} {URL_HEX} 0000000000000009"
        " 00000003 0002 6332 00000002 00000001 00000000"
        " 0002 6331 00000001 00000003"
        " 0002 6332 00000001 ffffffff"
        " 00000001 0002 6333 00000001 00000004"
        " 00002710"
    )
    size = len(b(allocation))
    data = b(f"0002 {URL_HEX} 0000000000000009 {size:08x} {allocation}")
    state = decode_metadata(data)
    assert (state.version, state.url, state.config_offset) == (2, URL, 9)
    assert state.owned == {("c2", 0), ("c2", 1), ("c2", -1), ("c1", 3)}
    assert state.allocation is not None
    assert state.allocation.revoked == {("c3", 4)} and state.allocation.delay_ms == 10000
    assert state.allocation.leader == LEADER and state.allocation.version == 2
    # Written again it comes out in a canonical order, and reads back the same.
    assert decode_metadata(encode_metadata(state)) == state


def test_older_and_shorter_assignments_read_with_defaults() -> None:
    head = f"0001 0000 {LEADER_HEX} {URL_HEX} 0000000000000003"
    # Null arrays (count -1) read as empty; a missing delay reads as 0.
    nulls = decode_assignment(b(f"{head} ffffffff ffffffff"))
    assert (nulls.assigned, nulls.revoked, nulls.delay_ms) == (frozenset(), frozenset(), 0)
    no_revoked = decode_assignment(b(f"{head} 00000001 0002 6331 00000001 00000000"))
    assert no_revoked.assigned == {("c1", 0)} and no_revoked.revoked == frozenset()
    # A v1 reader ignores what a future version appends; a v0 metadata reads with no allocation.
    future = decode_assignment(b(f"0003 0001 {LEADER_HEX} {URL_HEX} 0000000000000003 "
                                 "00000000 00000000 00000064 cafe"))  # fmt: skip
    assert future.version == 3 and future.error == CONFIG_MISMATCH and future.delay_ms == 100
    assert decode_metadata(b(f"0001 {URL_HEX} 0000000000000005")).allocation is None


@pytest.mark.parametrize(
    ("hex_text", "message"),
    [
        ("", "metadata version"),
        ("ffff 000f", "unsupported metadata version -1"),
        ("0001 0010 687474703a2f2f77313a383038332f", "url"),
        (f"0001 {URL_HEX} 00000000", "config offset"),
        (f"0001 {URL_HEX} 0000000000000005 fffffffe", "allocation of length -2"),
        (f"0001 {URL_HEX} 0000000000000005 00000010 0001", "allocation"),
        (f"0001 {URL_HEX} 0000000000000005 00000002 0001", "error"),
        (f"0001 ffff {URL_HEX}", "url: a string of length -1"),
        ("0001 0002 ff fe", "url: not UTF-8"),
    ],
)
def test_bad_metadata_is_refused_with_a_message(hex_text: str, message: str) -> None:
    with pytest.raises(ConnectProtocolError, match=message):
        decode_metadata(b(hex_text))


@pytest.mark.parametrize(
    ("tail", "message"),
    [
        ("fffffffe", "assignment: array of length -2"),
        ("00000001 0002 6331 fffffffe", "tasks of 'c1' has length -2"),
        ("00000001 0002 6331 00000001 fffffffe", "task id -2 of 'c1'"),
        ("00000001 0002 6331 00000002 00000001", "task of 'c1'"),
        ("00000000 00000000 0000", "delay"),
    ],
)
def test_bad_assignments_are_refused_with_a_message(tail: str, message: str) -> None:
    with pytest.raises(ConnectProtocolError, match=message):
        decode_assignment(b(f"0001 0000 {LEADER_HEX} {URL_HEX} 0000000000000003 {tail}"))


def test_protocols_offered_per_connect_protocol_most_preferred_first() -> None:
    assert offered_protocols("eager") == [(EAGER, 0)]
    assert offered_protocols("compatible") == [(COMPATIBLE, 1), (EAGER, 0)]
    assert offered_protocols("SESSIONED") == [(SESSIONED, 2), (COMPATIBLE, 1), (EAGER, 0)]
    assert [protocol_version(n) for n in ("default", "compatible", "sessioned")] == [0, 1, 2]
    with pytest.raises(ValueError, match="connect.protocol"):
        offered_protocols("lazy")
    with pytest.raises(ConnectProtocolError, match="unknown connect protocol"):
        protocol_version("range")


names = st.text(min_size=1, max_size=8)
work_sets = st.frozensets(st.tuples(names, st.integers(-1, 50)), max_size=12)


@given(
    version=st.integers(1, 2),
    offset=st.integers(-1, 2**62),
    assigned=work_sets,
    revoked=work_sets,
    delay=st.integers(0, 2**31 - 1),
    error=st.sampled_from([0, CONFIG_MISMATCH]),
    leader=names,
)
def test_round_trips_of_v1_and_v2(
    version: int,
    offset: int,
    assigned: frozenset[tuple[str, int]],
    revoked: frozenset[tuple[str, int]],
    delay: int,
    error: int,
    leader: str,
) -> None:
    assignment = ConnectAssignment(version, error, leader, URL, offset, assigned, revoked, delay)
    encoded = encode_assignment(assignment)
    assert decode_assignment(encoded) == assignment
    assert encode_assignment(decode_assignment(encoded)) == encoded
    state = WorkerState(version, URL, offset, assignment)
    assert decode_metadata(encode_metadata(state)) == state
    # A v0 reader's view of the same bytes is their v0 prefix.
    v0 = ConnectAssignment(0, error, leader, URL, offset, assigned)
    assert decode_assignment(encode_assignment(v0)) == v0

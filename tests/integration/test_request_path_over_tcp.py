"""The request path over real TCP, on either event loop (`event.loop`): pipelined requests
are answered in order however their bytes arrive, answers written together still arrive one
frame each, and a client that closes its side after sending still gets every answer."""

from __future__ import annotations

import socket
import struct
import uuid
from collections.abc import Iterator
from pathlib import Path

import pytest

from connect_rebalance.processes import CoordinatorProcess
from connect_rebalance.protocol import codec
from connect_rebalance.protocol.api_keys import ApiKey
from connect_rebalance.protocol.codec import RequestHeader
from connect_rebalance.protocol.consumer_group import heartbeat_fields
from tests.support.wire import RawConnection

pytestmark = pytest.mark.integration

API_VERSIONS, METADATA = ApiKey.API_VERSIONS, ApiKey.METADATA
CONSUMER_GROUP_HEARTBEAT = ApiKey.CONSUMER_GROUP_HEARTBEAT


@pytest.fixture(params=["uvloop", "asyncio"])
def coordinator_on(request: pytest.FixtureRequest, tmp_path: Path) -> Iterator[CoordinatorProcess]:
    # Targets computed inline: a join's answer carries epoch 1, which the pipelined heartbeats use.
    overrides = {"event.loop": request.param, "group.consumer.assignor.offload.enable": "false"}
    process = CoordinatorProcess(tmp_path / "data", overrides).start()
    try:
        yield process
    finally:
        process.stop()
    assert f"serving on the {request.param} event loop" in process.log_text()


def frame(api_key: int, version: int, correlation: int, fields: dict) -> bytes:  # type: ignore[type-arg]
    body = codec.build_request(api_key, version, fields)
    return codec.encode_request_frame(RequestHeader(api_key, version, correlation, "pipeline"), body)


def requests(member_id: str) -> list[tuple[int, int, bytes]]:
    """ApiVersions, Metadata, a consumer group join and heartbeats of the joined member,
    interleaved, in a group of its own: (api key, version, frame), correlation ids 1, 2, ..."""
    out = []
    join = heartbeat_fields(member_id, member_id, 0, topics=["t"], rebalance_timeout_ms=30000, owned=[])
    calls = [(CONSUMER_GROUP_HEARTBEAT, 1, join)]
    for _ in range(10):
        calls += [
            (API_VERSIONS, 3, {"client_software_name": "p", "client_software_version": "1"}),
            (METADATA, 12, {"topics": None, "allow_auto_topic_creation": False}),
            (CONSUMER_GROUP_HEARTBEAT, 1, heartbeat_fields(member_id, member_id, 1)),
        ]
    for correlation, (api_key, version, fields) in enumerate(calls, start=1):
        out.append((api_key, version, frame(api_key, version, correlation, fields)))
    return out


def answers(conn: RawConnection, sent: list[tuple[int, int, bytes]]) -> list[object]:
    decoded = []
    for correlation, (api_key, version, _) in enumerate(sent, start=1):
        raw = conn.receive_frame()
        assert raw is not None, f"closed before answer {correlation}"
        got, body = codec.decode_response_body(api_key, version, raw)
        assert got == correlation, "answers come back in the order the requests were sent"
        decoded.append(body)
    return decoded


def test_pipelined_requests_are_answered_in_order_however_their_bytes_arrive(
    coordinator_on: CoordinatorProcess,
) -> None:
    whole = RawConnection(coordinator_on.bootstrap)
    sent = requests(str(uuid.uuid4()))
    whole.send_raw(b"".join(f for *_, f in sent))  # all in flight at once
    bodies = answers(whole, sent)
    heartbeats = [b for (key, *_), b in zip(sent, bodies, strict=True) if key == CONSUMER_GROUP_HEARTBEAT]
    assert [b.error_code for b in heartbeats] == [0] * 11
    assert all(b.member_epoch == 1 for b in heartbeats)

    dribbled = RawConnection(coordinator_on.bootstrap)
    sent = requests(str(uuid.uuid4()))
    data = b"".join(f for *_, f in sent)
    for i in range(len(data)):  # one byte per send
        dribbled.sock.sendall(data[i : i + 1])
    assert [b.error_code for (key, *_), b in zip(sent, answers(dribbled, sent), strict=True)
            if key == CONSUMER_GROUP_HEARTBEAT] == [0] * 11  # fmt: skip


def test_a_client_that_closes_its_side_after_sending_gets_every_answer(
    coordinator_on: CoordinatorProcess,
) -> None:
    conn = RawConnection(coordinator_on.bootstrap)
    sent = requests(str(uuid.uuid4()))
    conn.send_raw(b"".join(f for *_, f in sent))
    conn.sock.shutdown(socket.SHUT_WR)
    answers(conn, sent)
    assert conn.is_closed_by_server(), "then the server closes the connection"
    assert coordinator_on.is_running()


def test_a_frame_too_large_closes_only_its_connection_after_the_answers_before_it(
    coordinator_on: CoordinatorProcess,
) -> None:
    conn, other = RawConnection(coordinator_on.bootstrap), RawConnection(coordinator_on.bootstrap)
    sent = requests(str(uuid.uuid4()))[:4]
    conn.send_raw(b"".join(f for *_, f in sent) + struct.pack(">i", 2**31 - 1) + b"x" * 64)
    answers(conn, sent)
    assert conn.is_closed_by_server()
    assert other.request(API_VERSIONS, 3, {"client_software_name": "o", "client_software_version": "1"})

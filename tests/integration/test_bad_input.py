"""Bad input over real TCP: errors or a closed connection, never a crash, never lost data,
and the coordinator keeps serving its other clients meanwhile."""

from __future__ import annotations

import os
import socket
import struct
import threading
import time

import pytest

from connect_rebalance.errors import ErrorCode
from connect_rebalance.protocol import codec
from connect_rebalance.protocol.api_keys import ApiKey
from connect_rebalance.protocol.codec import RequestHeader
from tests.support.batches import make_batch
from tests.support.clients import consume_confluent, produce_confluent
from tests.support.wire import RawConnection

pytestmark = pytest.mark.integration


def header(api_key: int, version: int, correlation: int = 1, client: bytes = b"bad") -> bytes:
    return struct.pack(">hhih", api_key, version, correlation, len(client)) + client


def framed(payload: bytes) -> bytes:
    return struct.pack(">i", len(payload)) + payload


@pytest.mark.parametrize(
    "frame",
    [
        pytest.param(framed(os.urandom(64)), id="random bytes"),
        pytest.param(struct.pack(">i", 2**31 - 1) + b"x" * 100, id="size over socket.request.max.bytes"),
        pytest.param(struct.pack(">i", -5), id="negative size"),
        pytest.param(framed(b"\x00\x03"), id="shorter than a header"),
        pytest.param(framed(header(9999, 0)), id="unknown api key"),
        pytest.param(framed(header(3, 99)), id="unsupported version"),
        pytest.param(framed(header(3, 12) + b"\x00" + b"\xff" * 30), id="garbage body after a valid header"),
        pytest.param(framed(header(19, 7) + b"\x00\x05\x02"), id="truncated CreateTopics body"),
    ],
)
def test_bad_frames_close_the_connection_and_the_server_keeps_serving(coordinator, frame: bytes) -> None:
    bad = RawConnection(coordinator.bootstrap)
    bad.send_raw(frame)
    assert bad.is_closed_by_server()
    bad.close()
    good = RawConnection(coordinator.bootstrap)
    response = good.request(3, 12, {"topics": None, "allow_auto_topic_creation": False})
    assert response.brokers[0].port == coordinator.port
    good.close()
    assert coordinator.is_running()


def test_too_new_api_versions_gets_v0_with_unsupported_version_and_our_ranges(coordinator) -> None:
    conn = RawConnection(coordinator.bootstrap)
    conn.send_raw(framed(header(18, 99, correlation=42) + b"\x00\x00\x00"))
    frame = conn.receive_frame()
    assert frame is not None
    correlation, error = struct.unpack_from(">ih", frame)
    assert (correlation, error) == (42, ErrorCode.UNSUPPORTED_VERSION)
    conn.close()


def test_corrupt_batch_is_refused_with_an_error_and_nothing_is_stored(coordinator) -> None:
    produce_confluent(coordinator.bootstrap, "guarded", [(b"k", b"good-1")])
    conn = RawConnection(coordinator.bootstrap)
    batch = bytearray(make_batch([b"evil"]))
    batch[-1] ^= 0xFF  # the CRC no longer matches
    answers = []
    for records in (bytes(batch), bytes(batch[:30]), make_batch([b"ok"]) + b"\x00" * 7):
        response = conn.request(
            0,
            9,
            {
                "transactional_id": None,
                "acks": -1,
                "timeout_ms": 5000,
                "topic_data": [{"name": "guarded", "partition_data": [{"index": 0, "records": records}]}],
            },
        )
        part = response.responses[0].partition_responses[0]
        answers.append((part.error_code, part.error_message))
    assert [code for code, _ in answers] == [ErrorCode.CORRUPT_MESSAGE] * 3
    assert all(message for _, message in answers), "errors carry a message"
    response = conn.request(
        0,
        9,
        {
            "transactional_id": None,
            "acks": 7,
            "timeout_ms": 5000,
            "topic_data": [
                {"name": "guarded", "partition_data": [{"index": 0, "records": make_batch([b"x"])}]}
            ],
        },
    )
    assert response.responses[0].partition_responses[0].error_code == ErrorCode.INVALID_REQUIRED_ACKS
    conn.close()
    produce_confluent(coordinator.bootstrap, "guarded", [(b"k", b"good-2")])
    values = [v for *_, v in consume_confluent(coordinator.bootstrap, "guarded", 1, 2)]
    assert values == [b"good-1", b"good-2"]


def test_slow_and_hostile_connections_do_not_stall_other_clients(coordinator) -> None:
    """Half-sent frames and random garbage on many sockets while a real client works."""
    stop = threading.Event()

    def hostile() -> None:
        while not stop.is_set():
            with socket.create_connection(("127.0.0.1", coordinator.port)) as sock:
                sock.sendall(struct.pack(">i", 1000) + os.urandom(10))  # never finishes the frame
                other = socket.create_connection(("127.0.0.1", coordinator.port))
                other.sendall(framed(os.urandom(200)))
                other.close()
                time.sleep(0.01)

    threads = [threading.Thread(target=hostile, daemon=True) for _ in range(3)]
    for thread in threads:
        thread.start()
    try:
        items = [(b"k", f"v{i}".encode()) for i in range(300)]
        produce_confluent(coordinator.bootstrap, "meanwhile", items)
        values = [v for *_, v in consume_confluent(coordinator.bootstrap, "meanwhile", 1, 300)]
        assert values == [v for _, v in items]
    finally:
        stop.set()
        for thread in threads:
            thread.join(5)
    assert coordinator.is_running()
    assert "Traceback" not in coordinator.log_text()


def test_idle_connections_are_closed_after_connections_max_idle_ms(tmp_path) -> None:
    from connect_rebalance.processes import CoordinatorProcess

    process = CoordinatorProcess(tmp_path / "data", {"connections.max.idle.ms": "300"}).start()
    try:
        idle = RawConnection(process.bootstrap, timeout=10)
        idle.request(ApiKey.API_VERSIONS, 3, {"client_software_name": "idle", "client_software_version": "1"})
        started = time.monotonic()
        assert idle.is_closed_by_server()  # blocks until the server closes it
        assert time.monotonic() - started < 5
    finally:
        process.kill()


def test_a_failed_acks0_produce_closes_the_connection_so_the_producer_refreshes(coordinator) -> None:
    conn = RawConnection(coordinator.bootstrap)
    data = [{"index": 0, "records": make_batch([b"x"])}]
    body = {"transactional_id": None, "acks": 0, "timeout_ms": 5000,
            "topic_data": [{"name": "no-such-topic", "partition_data": data}]}  # fmt: skip

    conn.send_raw(
        codec.encode_request_frame(RequestHeader(0, 9, 1, "acks0"), codec.build_request(0, 9, body))
    )
    assert conn.is_closed_by_server()
    conn.close()
    assert coordinator.is_running()

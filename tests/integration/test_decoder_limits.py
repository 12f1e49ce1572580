"""Counts in a frame over the decoder's limits, sent over TCP to a coordinator process: an array
of more than 1,000,000 elements, an array claiming more elements than the frame has bytes, and
more than 10,000 tagged fields in one struct. Each is refused before anything is built for it:
the connection is closed with a log line naming the request and the limit, the coordinator's
peak memory does not grow with the count, and another client is answered meanwhile."""

from __future__ import annotations

import struct
from collections.abc import Iterator
from pathlib import Path

import pytest

from connect_rebalance.processes import CoordinatorProcess
from connect_rebalance.protocol.api_keys import ApiKey
from connect_rebalance.protocol.hot_messages import uvarint_bytes
from tests.support.wire import RawConnection

pytestmark = pytest.mark.integration


def frame(api_key: int, version: int, body: bytes) -> bytes:
    payload = struct.pack(">hhih", api_key, version, 7, 3) + b"bad" + b"\x00" + body  # header v2
    return struct.pack(">i", len(payload)) + payload


def metadata_topics(count: int) -> bytes:
    """Metadata v12 naming `count` topics by id: 18 bytes each, a struct the decoder builds."""
    topic = b"\x11" * 16 + b"\x00" + b"\x00"  # topic id, null name, no tagged fields
    return frame(ApiKey.METADATA, 12, uvarint_bytes(count + 1) + topic * count + b"\x00\x00\x00")


CASES = {
    # 1,500,000 structs in a 27 MB frame: 3.3 s of decoding and 290 MB of objects, unchecked.
    "an array over 1,000,000 elements": (metadata_topics(1_500_000), "over the limit of 1,000,000"),
    "an array claiming more elements than bytes": (
        frame(ApiKey.METADATA, 12, uvarint_bytes(500_000) + b"\x00" * 32),
        "cannot fit in the",
    ),
    "10,001 tagged fields in one struct": (
        frame(
            ApiKey.DESCRIBE_GROUPS,
            5,
            b"\x02\x01"
            + b"\x00"
            + uvarint_bytes(10_001)
            + b"".join(uvarint_bytes(100 + i) + b"\x00" for i in range(10_001)),
        ),
        "tagged fields in one struct are over the limit of 10,000",
    ),
}


@pytest.fixture(scope="module")
def coordinator(tmp_path_factory: pytest.TempPathFactory) -> Iterator[CoordinatorProcess]:
    data = tmp_path_factory.mktemp("limits") / "data"
    process = CoordinatorProcess(data).start()
    try:
        yield process
    finally:
        process.kill()


def peak_rss_mb(pid: int) -> float:
    for line in Path(f"/proc/{pid}/status").read_text().splitlines():
        if line.startswith("VmHWM:"):
            return int(line.split()[1]) / 1024
    raise AssertionError("no VmHWM in /proc status")


@pytest.mark.parametrize("case", list(CASES))
def test_counts_over_the_decoders_limits_are_refused_before_anything_is_built(
    coordinator: CoordinatorProcess, case: str
) -> None:
    data, reason = CASES[case]
    assert coordinator.process is not None
    before = peak_rss_mb(coordinator.process.pid)
    bad = RawConnection(coordinator.bootstrap, timeout=60)
    try:
        bad.send_raw(data)
        closed = bad.is_closed_by_server()
    finally:
        bad.close()
    good = RawConnection(coordinator.bootstrap)
    try:
        answer = good.request(ApiKey.METADATA, 12, {"topics": None, "allow_auto_topic_creation": False})
    finally:
        good.close()
    grown = peak_rss_mb(coordinator.process.pid) - before

    assert closed, "the connection stayed open"
    assert answer.brokers[0].port == coordinator.port
    refusals = [line for line in coordinator.log_text().splitlines() if reason in line]
    assert refusals, f"no log line says {reason!r}"
    assert "closing" in refusals[-1]
    # The frame itself is read whole (27 MB at most here); what it claims is never built.
    assert grown < len(data) / 2**20 * 2 + 40, (
        f"peak memory grew {grown:.0f} MB for a {len(data) >> 20} MB frame"
    )

"""Property test of the frame decoder and request dispatch with hostile input.

The server's per-frame entry point is driven in-process (no sockets) with random bytes,
truncated and bit-flipped copies of real client frames, and real headers followed by
garbage. It must always answer with a response frame, nothing, or "close the
connection" — never raise — and truncated frames must not change what is stored.
"""

from __future__ import annotations

import asyncio
import struct
from collections.abc import Iterator
from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from connect_rebalance.errors import ErrorCode
from connect_rebalance.protocol import codec
from connect_rebalance.protocol.api_keys import ApiKey
from coordinator.broker import Broker
from coordinator.configs.coordinator import CoordinatorConfig
from coordinator.groups.coordinator import GROUP_APIS
from coordinator.main import group_service
from coordinator.network.server import CoordinatorServer
from tests.support.frames import captured_frames, request_bytes

pytestmark = pytest.mark.unit
REAL_FRAMES = [request_bytes(p) for p in captured_frames()]
FUZZ = settings(max_examples=400, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])


class InProcessServer:
    def __init__(self, data_dir: Path, load_groups: bool = True) -> None:
        self.loop = asyncio.new_event_loop()
        self.broker = Broker(
            CoordinatorConfig.from_settings({"log.dirs": str(data_dir), "listeners": "127.0.0.1:0"})
        )
        self.broker.open()
        self.groups = group_service(self.broker)
        if load_groups:
            self.loop.run_until_complete(self._load_groups())
        self.server = CoordinatorServer(self.broker, self.groups)
        self.session = self.server.new_session(self.server.listeners[0], "fuzz", None)

    async def _load_groups(self) -> None:
        """Group requests reach the core, not the start-up's COORDINATOR_LOAD_IN_PROGRESS."""
        self.groups.start()
        await self.groups.loaded_state()

    def answer(self, frame: bytes) -> bytes | None:
        """The response frame, b"" for none (acks=0, or a JoinGroup parked for its rebalance),
        or None when the server closes the connection."""
        try:
            answering = self.server._answer(frame, self.session)
            return self.loop.run_until_complete(asyncio.wait_for(answering, 0.5))
        except TimeoutError:
            return b""

    def stored_state(self) -> dict[str, list[int]]:
        return {
            name: [p.log_end_offset for p in t.partitions]
            for name, t in self.broker.topics.topics.items()
            if not t.is_internal  # group requests may legitimately write there
        }

    def close(self) -> None:
        self.loop.run_until_complete(self.groups.close())
        self.loop.run_until_complete(self.broker.close())
        self.loop.close()


@pytest.fixture
def server(tmp_path: Path) -> Iterator[InProcessServer]:
    instance = InProcessServer(tmp_path / "data")
    instance.broker.topics.create("probe", 1, {})
    try:
        yield instance
    finally:
        instance.close()


def assert_well_formed(answer: bytes | None) -> None:
    if answer:
        (size,) = struct.unpack_from(">i", answer)
        assert size == len(answer) - 4


@FUZZ
@given(frame=st.binary(max_size=300))
def test_random_bytes_never_crash_dispatch(server: InProcessServer, frame: bytes) -> None:
    before = server.stored_state()
    assert_well_formed(server.answer(frame))
    # Random bytes can at most be a valid request by chance; they never damage topics.
    assert set(before) <= set(server.stored_state())


@FUZZ
@given(data=st.data())
def test_truncated_real_frames_are_refused_without_changing_state(server: InProcessServer, data) -> None:  # type: ignore[no-untyped-def]
    frame = data.draw(st.sampled_from(REAL_FRAMES))
    cut = data.draw(st.integers(min_value=0, max_value=len(frame) - 1))
    before = server.stored_state()
    assert_well_formed(server.answer(frame[:cut]))
    assert server.stored_state() == before


@FUZZ
@given(data=st.data())
def test_bit_flipped_real_frames_never_crash_dispatch(server: InProcessServer, data) -> None:  # type: ignore[no-untyped-def]
    frame = bytearray(data.draw(st.sampled_from(REAL_FRAMES)))
    for _ in range(data.draw(st.integers(min_value=1, max_value=8))):
        position = data.draw(st.integers(min_value=0, max_value=len(frame) - 1))
        frame[position] ^= 1 << data.draw(st.integers(min_value=0, max_value=7))
    assert_well_formed(server.answer(bytes(frame)))


@FUZZ
@given(data=st.data(), garbage=st.binary(min_size=0, max_size=200))
def test_real_headers_with_garbage_bodies_never_crash_dispatch(
    server: InProcessServer, data, garbage: bytes
) -> None:  # type: ignore[no-untyped-def]
    frame = data.draw(st.sampled_from(REAL_FRAMES))
    _, body_offset = codec.parse_request_header(frame)
    assert_well_formed(server.answer(frame[:body_offset] + garbage))


def test_every_real_frame_gets_an_answer_or_no_response(server: InProcessServer) -> None:
    """The captured requests themselves are served (or, for acks=0, silently accepted)."""
    for frame in REAL_FRAMES:
        header, _ = codec.parse_request_header(frame)
        if header.api_key in (11, 68):
            continue  # a JoinGroup is parked until its rebalance completes; 68 is not served yet
        answer = server.answer(frame)
        assert answer is not None, f"{codec.api_name(header.api_key)} v{header.api_version} was refused"
        assert_well_formed(answer)


def error_codes(value: object) -> set[int]:
    """Every error code anywhere in a decoded answer."""
    if isinstance(value, dict):
        found = {value["error_code"]} if "error_code" in value else set()
        return found.union(*(error_codes(v) for v in value.values()))
    if isinstance(value, list):
        return set().union(*(error_codes(v) for v in value))
    return set()


def test_group_requests_answer_load_in_progress_in_their_own_shape_while_group_state_loads(
    tmp_path: Path,
) -> None:
    """Before group state is loaded, every captured group request (a JoinGroup too: it is not
    parked) gets its API's answer with COORDINATOR_LOAD_IN_PROGRESS where its clients read
    errors, and nothing else; a data request is served as usual."""
    loading = InProcessServer(tmp_path / "data", load_groups=False)
    try:
        group_apis = set(GROUP_APIS) | {ApiKey.CONSUMER_GROUP_HEARTBEAT, ApiKey.CONSUMER_GROUP_DESCRIBE,
                                        ApiKey.CONNECT_GROUP_HEARTBEAT}  # fmt: skip
        seen = set()
        for frame in REAL_FRAMES:
            header, _ = codec.parse_request_header(frame)
            answer = loading.answer(frame)
            assert answer, f"{codec.api_name(header.api_key)} v{header.api_version} got no answer"
            _, body = codec.decode_response_body(header.api_key, header.api_version, answer[4:])
            codes = error_codes(codec.response_fields(body))
            if header.api_key in group_apis:
                seen.add(header.api_key)
                assert codes == {ErrorCode.COORDINATOR_LOAD_IN_PROGRESS}, codec.api_name(header.api_key)
            elif header.api_key == ApiKey.METADATA:
                assert ErrorCode.COORDINATOR_LOAD_IN_PROGRESS not in codes
        assert {ApiKey.JOIN_GROUP, ApiKey.OFFSET_COMMIT, ApiKey.OFFSET_FETCH, ApiKey.HEARTBEAT} <= seen
    finally:
        loading.close()

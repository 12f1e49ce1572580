"""Connections take turns: a burst of pipelined requests on some connections does not hold up a
request arriving alone on another (coordinator/turns.py). Real sockets on a real event loop,
with the coordinator's Connection and an answer that costs a millisecond of CPU per request;
the order in which requests are answered is what is checked, not how long anything took."""

from __future__ import annotations

import asyncio
import struct
import time
from types import SimpleNamespace
from typing import Any

import pytest

from coordinator.network.connection import Connection
from coordinator.turns import Turns

pytestmark = pytest.mark.integration

BURST_CONNECTIONS, PIPELINED = 10, 60


def frame(tag: bytes) -> bytes:
    return struct.pack(">i", len(tag)) + tag


async def serve() -> tuple[asyncio.base_events.Server, list[bytes], set[asyncio.Task[None]]]:
    answered: list[bytes] = []  # request tags in the order they were answered
    tasks: set[asyncio.Task[None]] = set()
    turns = Turns()

    async def answer(request: bytes, session: Any) -> bytes:
        deadline = time.perf_counter() + 0.001
        while time.perf_counter() < deadline:  # a millisecond of work, holding the loop
            pass
        answered.append(request)
        return frame(request)

    def new_session(transport: asyncio.BaseTransport) -> Any:
        return SimpleNamespace(close_after_response=False, muted_until=0.0, client_host="test")

    loop = asyncio.get_running_loop()
    server = await loop.create_server(
        lambda: Connection(answer, new_session, tasks, turns, 1 << 20, 60), "127.0.0.1", 0
    )
    return server, answered, tasks


async def read_answers(reader: asyncio.StreamReader, count: int) -> None:
    for _ in range(count):
        size = struct.unpack(">i", await reader.readexactly(4))[0]
        await reader.readexactly(size)


async def burst_then_alone() -> tuple[int, int]:
    server, answered, tasks = await serve()
    port = server.sockets[0].getsockname()[1]
    try:
        burst = [await asyncio.open_connection("127.0.0.1", port) for _ in range(BURST_CONNECTIONS)]
        alone_reader, alone_writer = await asyncio.open_connection("127.0.0.1", port)
        for i, (_, writer) in enumerate(burst):
            writer.write(b"".join(frame(b"burst-%d-%d" % (i, n)) for n in range(PIPELINED)))
            await writer.drain()
        deadline = time.monotonic() + 30
        while len(answered) < BURST_CONNECTIONS and time.monotonic() < deadline:  # the burst is under way
            await asyncio.sleep(0.001)
        alone_writer.write(frame(b"alone"))
        await alone_writer.drain()
        await asyncio.wait_for(read_answers(alone_reader, 1), 30)
        before_alone = answered.index(b"alone")
        await asyncio.wait_for(asyncio.gather(*(read_answers(r, PIPELINED) for r, _ in burst)), 60)
        for _, writer in [*burst, (alone_reader, alone_writer)]:
            writer.close()
        return before_alone, len(answered)
    finally:
        server.close()
        for task in tasks:
            task.cancel()
        await asyncio.gather(*tasks, return_exceptions=True)


def test_a_request_alone_on_its_connection_is_answered_within_a_burst_on_others() -> None:
    before_alone, total = asyncio.run(burst_then_alone())
    assert total == BURST_CONNECTIONS * PIPELINED + 1
    # Answered back to back, the 600 pipelined requests (0.6 s of work) would all go first. Taking
    # turns, the lone request waits for about a turn (4 ms) and one request of each connection.
    assert before_alone < 100, f"{before_alone} of {total - 1} pipelined requests were answered first"

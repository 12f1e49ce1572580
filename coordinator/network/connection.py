"""One client connection: Kafka's size-prefixed frames in, answers out, strictly in order.

The server (server.py) says what a frame's answer is; this module owns everything between the
socket and that: framing, the order of answers, how answers are written, flow control and the
idle timeout. It is an `asyncio.Protocol` with one task per connection, because the request
path is the coordinator's hottest code and a stream reader costs a task per read and a timer
per request:
- bytes are buffered as they arrive; the connection's task takes every complete frame in
  turn and awaits its answer before the next, as Kafka's broker does (a client may
  pipeline; a parked JoinGroup or a long-poll Fetch holds only its own connection). A
  handler that answers at once does not suspend the task, so a read carrying several
  frames is answered without a trip through the event loop per frame;
- connections take turns (turns.py): a task woken by bytes answers one frame, and more only
  while the event loop's current turn lasts; otherwise it waits in the backlog for a turn of
  its own, so a burst of pipelined requests on some connections does not hold up the others;
- answers are written together: each goes into the connection's output, which is written
  in one piece when the task next gives the loop a turn (it waits for bytes, or a handler
  waits for something), so pipelined answers cost one send instead of one each;
- flow control both ways: reading pauses while more than `READ_AHEAD` bytes of complete
  requests wait (never while a frame is incomplete), and the task waits while the
  transport's write buffer is over its high-water mark;
- a frame larger than `socket.request.max.bytes` (or negative) closes the connection;
- a connection with no request under way and nothing read for `connections.max.idle.ms`
  is closed; one timer per connection, moved on only when it fires;
- a connection whose answer was throttled by a client quota (the session's `muted_until`)
  reads no further request until the throttle time is over, as Kafka mutes the channel
  (KIP-219); the answer itself goes out at once.
Answers given before a close are still written.
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Awaitable, Callable
from typing import Any

from coordinator.network.connection_limits import ConnectionLimits
from coordinator.turns import Turns

log = logging.getLogger(__name__)

READ_AHEAD = 256 * 1024  # bytes of unanswered requests buffered before reading pauses
WRITE_AT_ONCE = 256 * 1024  # answers buffered beyond this are written without waiting for the turn

Answer = Callable[[bytes, Any], Awaitable[bytes | None]]  # (frame, session) -> answer, b"" or None


class Connection(asyncio.Protocol):
    def __init__(
        self,
        answer: Answer,
        new_session: Callable[[asyncio.BaseTransport], Any],
        tasks: set[asyncio.Task[None]],
        turns: Turns,
        max_request_bytes: int,
        idle_timeout: float,
        limits: ConnectionLimits | None = None,
    ) -> None:
        self._answer, self._new_session, self._tasks, self._turns = answer, new_session, tasks, turns
        self._max_request_bytes, self._idle_timeout = max_request_bytes, idle_timeout
        self._limits = limits
        self._counted_host: str | None = None  # the address `limits` counts this connection under
        self._buffer = bytearray()
        self._start = 0  # where the next frame begins in the buffer
        self._out: list[bytes] = []
        self._out_bytes = 0
        self._flush_scheduled = False
        self._waiter: asyncio.Future[None] | None = None  # the task waits for bytes
        self._drained: asyncio.Future[None] | None = None  # the task waits for the write buffer
        self._unmuted: asyncio.Future[None] | None = None  # the task sits out a quota's throttle
        self._reading_paused = self._writing_paused = self._gone = False
        self._last_active = 0.0

    # -- the transport's callbacks ----------------------------------------------------------

    def connection_made(self, transport: asyncio.BaseTransport) -> None:
        self._transport: asyncio.Transport = transport  # type: ignore[assignment]
        if self._limits is not None:
            peer = transport.get_extra_info("peername")
            host = str(peer[0]) if peer else "unknown"
            if not self._limits.admit(host):
                self._gone = True
                transport.abort()  # nothing read, nothing answered: the client connects again later
                return
            self._counted_host = host
        self._loop = asyncio.get_running_loop()
        self._session = self._new_session(transport)
        self._last_active = self._loop.time()
        self._idle = self._loop.call_later(self._idle_timeout, self._check_idle)
        self._task = self._loop.create_task(self._serve())
        self._tasks.add(self._task)

    def data_received(self, data: bytes) -> None:
        self._buffer += data
        if len(self._buffer) - self._start > READ_AHEAD and not self._reading_paused:
            self._reading_paused = True
            self._transport.pause_reading()
        self._wake()

    def eof_received(self) -> bool:
        self._gone = True
        self._wake()
        return True  # keep the transport open: answers to what was sent still go out

    def connection_lost(self, exc: Exception | None) -> None:
        self._gone = True
        if self._counted_host is not None and self._limits is not None:
            self._limits.release(self._counted_host)
            self._counted_host = None
        self._wake()
        self._writable()
        self._unmute()

    def pause_writing(self) -> None:
        self._writing_paused = True

    def resume_writing(self) -> None:
        self._writing_paused = False
        self._writable()

    def _wake(self) -> None:
        waiter = self._waiter
        if waiter is not None and not waiter.done():
            waiter.set_result(None)

    def _writable(self) -> None:
        drained = self._drained
        if drained is not None and not drained.done():
            drained.set_result(None)

    # -- the connection's task ----------------------------------------------------------------

    async def _serve(self) -> None:
        session, turns = self._session, self._turns
        answered = 0  # frames answered since the task was last woken by bytes or its turn
        try:
            while True:
                frame = self._next_frame()
                if frame is None:
                    if self._gone:
                        return
                    await self._more_bytes()
                    answered = 0
                    continue
                if not turns.may_answer(answered):
                    await turns.wait()
                    answered = 0
                answered += 1
                answer = await self._answer(frame, session)
                if answer is None:
                    return
                if answer:
                    self._send(answer)
                if session.close_after_response:
                    return
                if session.muted_until > self._loop.time():
                    await self._muted(session.muted_until)
                if self._writing_paused:
                    await self._drain()
        except _FrameTooLarge as exc:
            log.warning("%s: request size %d outside 0..%d; closing", session.client_host, exc.size,
                        self._max_request_bytes)  # fmt: skip
        except (ConnectionError, asyncio.CancelledError):
            pass
        finally:
            self._idle.cancel()
            self._tasks.discard(self._task)
            self._flush()
            self._transport.close()

    def _next_frame(self) -> bytes | None:
        """The next complete frame, or None when more bytes are needed (reading resumes then)."""
        buffer, start = self._buffer, self._start
        available = len(buffer) - start
        if available >= 4:
            size = int.from_bytes(buffer[start : start + 4], "big", signed=True)
            if not 0 <= size <= self._max_request_bytes:
                raise _FrameTooLarge(size)
            end = start + 4 + size
            if end <= len(buffer):
                frame = bytes(buffer[start + 4 : end])
                if end == len(buffer):
                    buffer.clear()
                    self._start = 0
                elif end > READ_AHEAD:
                    del buffer[:end]
                    self._start = 0
                else:
                    self._start = end
                if self._reading_paused and len(buffer) - self._start <= READ_AHEAD:
                    self._resume_reading()
                return frame
        if self._reading_paused:
            self._resume_reading()
        return None

    def _resume_reading(self) -> None:
        self._reading_paused = False
        if not self._gone:
            self._transport.resume_reading()

    async def _more_bytes(self) -> None:
        self._last_active = self._loop.time()
        self._waiter = self._loop.create_future()
        try:
            await self._waiter
        finally:
            self._waiter = None

    async def _muted(self, until: float) -> None:
        """Send what is answered, then wait until `until` (or until the client goes)."""
        self._flush()
        self._unmuted = self._loop.create_future()
        timer = self._loop.call_at(until, self._unmute)
        try:
            await self._unmuted
        finally:
            timer.cancel()
            self._unmuted = None
        if self._gone:
            raise ConnectionResetError("the client closed the connection")

    def _unmute(self) -> None:
        unmuted = self._unmuted
        if unmuted is not None and not unmuted.done():
            unmuted.set_result(None)

    async def _drain(self) -> None:
        self._flush()
        while self._writing_paused and not self._gone:
            self._drained = self._loop.create_future()
            try:
                await self._drained
            finally:
                self._drained = None
        if self._gone:
            raise ConnectionResetError("the client closed the connection")

    # -- writing ------------------------------------------------------------------------------

    def _send(self, answer: bytes) -> None:
        self._out.append(answer)
        self._out_bytes += len(answer)
        if self._out_bytes > WRITE_AT_ONCE:
            self._flush()
        elif not self._flush_scheduled:
            self._flush_scheduled = True
            self._loop.call_soon(self._flush)

    def _flush(self) -> None:
        self._flush_scheduled = False
        if not self._out:
            return
        out = self._out[0] if len(self._out) == 1 else b"".join(self._out)
        self._out.clear()
        self._out_bytes = 0
        if not self._transport.is_closing():
            self._transport.write(out)

    # -- idleness -----------------------------------------------------------------------------

    def _check_idle(self) -> None:
        """Close if waiting for a request and nothing came for the idle timeout; else look again
        when it could next be over."""
        now = self._loop.time()
        waiting = self._waiter is not None
        if waiting and now - self._last_active >= self._idle_timeout:
            log.debug("%s: idle for %.0f s; closing", self._session.client_host, self._idle_timeout)
            self._task.cancel()
            return
        since = self._last_active if waiting else now
        self._idle = self._loop.call_at(since + self._idle_timeout, self._check_idle)


class _FrameTooLarge(Exception):
    def __init__(self, size: int) -> None:
        super().__init__(size)
        self.size = size

"""The event loop's time shared among connections: a burst of pipelined requests on some
connections does not hold up a request arriving on another.

A connection's task answers the complete frames it has in turn without giving the loop a
turn in between, because that is what makes pipelined requests cheap. Left at that, 100
connections that each carry 20 pipelined JoinGroups at once are answered back to back, and
a heartbeat arriving on another connection waits for all 2,000 (half a second). So time is
handed out in turns:

- A turn lasts `TURN_S` of answering, shared by whatever tasks run until it ends; the first
  frame answered after none was starts it, and it ends at the next pass of the event loop
  (a callback scheduled when it began).
- A task woken by new bytes always answers one frame; after that, and for every further
  frame, it answers only while the turn lasts. Otherwise it parks at the back of the
  backlog, keeping its frames in order.
- The end of a turn wakes the task at the head of the backlog, which then has a turn of its
  own. A request that arrives alone therefore waits at most about one turn of others' work
  (plus one frame from each connection woken with it), however long the backlog is, and a
  backlogged connection is answered one turn per pass of the loop, in the order it parked.

With nothing backlogged nothing is scheduled, so an idle coordinator stays idle.
"""

from __future__ import annotations

import asyncio
import time
from collections import deque

TURN_S = 0.004  # answering time a pass of the event loop gives the requests that wait


class Turns:
    def __init__(self, turn_s: float = TURN_S) -> None:
        self._turn_s = turn_s
        self._deadline = 0.0  # when the current turn ends; 0: no turn runs
        self._ending = False  # the callback that ends the turn is scheduled
        self._backlog: deque[asyncio.Future[None]] = deque()
        self._loop: asyncio.AbstractEventLoop | None = None

    def may_answer(self, answered_since_woken: int) -> bool:
        """Whether a task that has answered `answered_since_woken` frames since it was last woken
        answers another now (starting a turn if none runs)."""
        loop = self._loop
        if loop is None:
            loop = self._loop = asyncio.get_running_loop()
        now = loop.time()
        if self._deadline == 0.0:
            self._begin(now)
            return True
        return answered_since_woken == 0 or now < self._deadline

    async def wait(self) -> None:
        """Park at the back of the backlog until it is this task's turn; the turn is its own."""
        assert self._loop is not None
        waiter = self._loop.create_future()
        self._backlog.append(waiter)
        self._end_soon()
        try:
            await waiter
        except asyncio.CancelledError:
            if waiter.done() and not waiter.cancelled():
                self._end_soon()  # woken, then cancelled (the server stopping): pass the turn on
            raise
        self._begin(self._loop.time())

    def _begin(self, now: float) -> None:
        self._deadline = now + self._turn_s
        self._end_soon()

    def _end_soon(self) -> None:
        if not self._ending:
            self._ending = True
            assert self._loop is not None
            self._loop.call_soon(self._end)

    def _end(self) -> None:
        self._ending = False
        self._deadline = 0.0
        backlog = self._backlog
        while backlog:
            waiter = backlog.popleft()
            if not waiter.done():  # a cancelled task (the server stopping) has left
                waiter.set_result(None)
                return


class Slices:
    """A long request's work given back to the event loop every `TURN_S`: a Produce or Fetch
    of 1,000 partitions is 50-100 ms of work, which the requests of every other connection
    would otherwise wait for. Between slices the handler's state is its own; what it read of
    shared state before a pause may have changed after it (Fetch checks its logs' ends)."""

    __slots__ = ("_until",)

    def __init__(self) -> None:
        self._until = time.perf_counter() + TURN_S

    async def pause(self) -> None:
        """Let the loop run other tasks if this slice is spent."""
        if time.perf_counter() >= self._until:
            await asyncio.sleep(0)
            self._until = time.perf_counter() + TURN_S

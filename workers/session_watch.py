"""No zombies, on either group protocol: a worker gives its work up before the coordinator
can expire its session and hand the work to another worker.

The coordinator expires a session `session.timeout.ms` after it handled the last request that
refreshed it, which it handled no earlier than this worker sent it. So all work is stopped by
`sent + session timeout - safety` (`SessionWatch.deadline`), whatever else is blocked: the
heartbeat loop, a rebalance round, a frozen process that just resumed. `SessionWatch` holds
the rule and is pure (the caller passes the clock); `watch` is the one watchdog both
memberships run.
"""

from __future__ import annotations

import asyncio
import logging
import time
from collections.abc import Awaitable, Callable
from dataclasses import dataclass

log = logging.getLogger(__name__)
IDLE_POLL_S = 0.1  # how often a worker with no work or no answer yet looks again


@dataclass
class SessionWatch:
    session_timeout_ms: int  # what the coordinator applies, once it has said it
    answered_sent_at: float | None = None  # monotonic: when the latest answered request was sent
    zombie_stops: int = 0

    def answered(self, sent_at: float) -> None:
        """A request that refreshes the session, sent at `sent_at`, was answered."""
        if self.answered_sent_at is None or sent_at > self.answered_sent_at:
            self.answered_sent_at = sent_at

    def deadline(self) -> float | None:
        """When the work must have stopped: before the coordinator can expire the session,
        by a safety margin of a third of it (at least 1 s, at most half)."""
        if self.answered_sent_at is None:
            return None
        session_s = self.session_timeout_ms / 1000
        return self.answered_sent_at + session_s - min(max(session_s / 3, 1.0), session_s / 2)


async def watch(
    session: SessionWatch,
    runs_work: Callable[[], bool],
    give_up: Callable[[], Awaitable[None]],
    stopping: Callable[[], bool],
    who: str,
) -> None:
    """Until `stopping()`: whenever work runs past the session's deadline with no newer answer,
    `give_up()` (stop everything, then rejoin as the protocol does)."""
    while not stopping():
        sent, deadline = session.answered_sent_at, session.deadline()
        if not runs_work() or deadline is None:
            await asyncio.sleep(IDLE_POLL_S)
            continue
        if time.monotonic() < deadline:
            await asyncio.sleep(min(deadline - time.monotonic(), IDLE_POLL_S))
            continue
        if session.answered_sent_at == sent and runs_work():
            log.warning("%s: no heartbeat answered for too long; stopping all work", who)
            session.zombie_stops += 1
            await give_up()

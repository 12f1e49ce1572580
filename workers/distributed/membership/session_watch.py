"""No zombies, on either group protocol: a worker gives its work up before the coordinator
can expire its session and hand the work to another worker.

The coordinator expires a session `session.timeout.ms` after it handled the last request that
refreshed it, which it handled no earlier than this worker sent it (a coordinator still
loading group state after a restart refreshes every session at the load's end, later still:
its COORDINATOR_LOAD_IN_PROGRESS counts as an answer, so a restart shorter than the session
stops nothing). So all work is stopped by
`sent + session timeout - safety` (`SessionWatch.deadline`), whatever else is blocked: the
heartbeat loop, a rebalance round, a frozen process that just resumed. `SessionWatch` holds
the rule and is pure (the caller passes the clock); the member machine applies it
(machine.py) and driver.py's watchdog feeds it the time, for both protocols.
"""

from __future__ import annotations

from dataclasses import dataclass

from connect_rebalance.errors import ErrorCode

# Heartbeat answers that prove the session lasts from the request's send time: a success; a
# classic group's rebalance under way (the heartbeat still refreshed the session); and a
# coordinator loading group state after its start, which gives every member it loads a full
# session from the load's end, and that end comes after it read this request.
SESSION_KEEPING_ANSWERS = frozenset(
    {ErrorCode.NONE, ErrorCode.REBALANCE_IN_PROGRESS, ErrorCode.COORDINATOR_LOAD_IN_PROGRESS}
)


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

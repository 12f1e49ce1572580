"""How long this worker takes to converge after a rebalance reaches it.

Kafka Connect reports `rebalance-avg-time-ms` and `rebalance-max-time-ms` per worker; this is
the same idea for both group protocols. A rebalance *begins* on this worker when it first
hears of a change that concerns it — a new epoch or generation, work to stop, work to start,
or (classic) a join — and *ends* once everything it was given runs and nothing is left to
stop or to rejoin for. Several changes in a row (revoke, then the follow-up assignment) count
as one rebalance. Pure: the caller passes the monotonic clock.
"""

from __future__ import annotations

from dataclasses import dataclass


@dataclass
class RebalanceClock:
    began_at: float | None = None
    count: int = 0
    total_s: float = 0.0
    max_s: float = 0.0
    last_s: float = 0.0

    @property
    def rebalancing(self) -> bool:
        return self.began_at is not None

    def begin(self, now: float) -> None:
        """A change reached the worker; a rebalance already under way keeps its start."""
        if self.began_at is None:
            self.began_at = now

    def end(self, now: float) -> None:
        """The worker converged: what it was given runs, nothing is pending."""
        if self.began_at is None:
            return
        took = max(now - self.began_at, 0.0)
        self.began_at = None
        self.count += 1
        self.total_s += took
        self.max_s = max(self.max_s, took)
        self.last_s = took

"""Deadlines on the injected clock: the group coordinator's only notion of time.

A deadline is scheduled with the operation it runs (Kafka's `timer.schedule(key, delay,
operation)`): a member's session, a group's join or sync phase, the offset-expiry sweep.
The server asks for the next deadline, sleeps until then and calls `on_timer(now)`, which
runs each expired operation. Rescheduling a key replaces its deadline and its operation.
Expired keys come out in deadline order, ties in scheduling order, so runs are deterministic.
"""

from __future__ import annotations

import heapq
import itertools
from collections.abc import Callable, Hashable

Operation = Callable[[int], None]  # runs with the clock's time when the deadline passed


class Timers:
    def __init__(self) -> None:
        self._heap: list[tuple[int, int, Hashable]] = []
        self._current: dict[Hashable, tuple[int, int, Operation]] = {}
        self._sequence = itertools.count()

    def schedule(self, key: Hashable, deadline_ms: int, operation: Operation) -> None:
        entry = (deadline_ms, next(self._sequence))
        self._current[key] = (*entry, operation)
        heapq.heappush(self._heap, (*entry, key))

    def cancel(self, key: Hashable) -> None:
        self._current.pop(key, None)

    def entry(self, key: Hashable) -> tuple[int, Operation] | None:
        """(deadline, operation) of a scheduled key: what undoing a change to it puts back."""
        found = self._current.get(key)
        return (found[0], found[2]) if found else None

    def deadline(self, key: Hashable) -> int | None:
        found = self._current.get(key)
        return found[0] if found else None

    def _drop_stale(self) -> None:
        while self._heap:
            deadline, sequence, key = self._heap[0]
            current = self._current.get(key)
            if current is not None and current[:2] == (deadline, sequence):
                return
            heapq.heappop(self._heap)

    def next_deadline(self) -> int | None:
        self._drop_stale()
        return self._heap[0][0] if self._heap else None

    def pop_expired(self, now_ms: int) -> list[tuple[Hashable, Operation]]:
        expired = []
        while True:
            self._drop_stale()
            if not self._heap or self._heap[0][0] > now_ms:
                return expired
            _, _, key = heapq.heappop(self._heap)
            expired.append((key, self._current.pop(key)[2]))

    def __len__(self) -> int:
        return len(self._current)

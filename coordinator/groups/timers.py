"""Deadlines on the injected clock: the group coordinator's only notion of time.

The core schedules keyed deadlines (a member's session, a group's join or sync phase, the
offset-expiry sweep); the server asks for the next deadline, sleeps until then and calls
`on_timer(now)`. Rescheduling a key replaces its deadline. Expired keys come out in
deadline order, ties in scheduling order, so runs are deterministic.
"""

from __future__ import annotations

import heapq
import itertools
from collections.abc import Hashable


class Timers:
    def __init__(self) -> None:
        self._heap: list[tuple[int, int, Hashable]] = []
        self._current: dict[Hashable, tuple[int, int]] = {}
        self._sequence = itertools.count()

    def schedule(self, key: Hashable, deadline_ms: int) -> None:
        entry = (deadline_ms, next(self._sequence))
        self._current[key] = entry
        heapq.heappush(self._heap, (*entry, key))

    def cancel(self, key: Hashable) -> None:
        self._current.pop(key, None)

    def deadline(self, key: Hashable) -> int | None:
        entry = self._current.get(key)
        return entry[0] if entry else None

    def _drop_stale(self) -> None:
        while self._heap:
            deadline, sequence, key = self._heap[0]
            if self._current.get(key) == (deadline, sequence):
                return
            heapq.heappop(self._heap)

    def next_deadline(self) -> int | None:
        self._drop_stale()
        return self._heap[0][0] if self._heap else None

    def pop_expired(self, now_ms: int) -> list[Hashable]:
        expired = []
        while True:
            self._drop_stale()
            if not self._heap or self._heap[0][0] > now_ms:
                return expired
            _, _, key = heapq.heappop(self._heap)
            del self._current[key]
            expired.append(key)

    def __len__(self) -> int:
        return len(self._current)

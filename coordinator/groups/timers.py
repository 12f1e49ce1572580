"""Deadlines on the injected clock: the group coordinator's only notion of time.

A deadline is scheduled with the operation it runs (Kafka's `timer.schedule(key, delay,
operation)`): a member's session, a group's join or sync phase, the offset-expiry sweep.
The server asks for the next deadline, sleeps until then and calls `on_timer(now)`, which
runs each expired operation. Rescheduling a key replaces its deadline and its operation.
Expired keys come out in deadline order, ties in scheduling order, so runs are deterministic.

A deadline pushed later (a member's session, at each of its heartbeats) keeps the heap entry
it has: the entry, now early, is moved to the key's current deadline when it reaches the top.
So a heartbeat costs no heap push, and the heap holds about one entry per key instead of one
per heartbeat of the session timeout.
"""

from __future__ import annotations

import heapq
import itertools
from collections.abc import Callable, Hashable

Operation = Callable[[int], None]  # runs with the clock's time when the deadline passed


class Timers:
    def __init__(self) -> None:
        self._heap: list[tuple[int, int, Hashable]] = []
        self._current: dict[Hashable, tuple[int, int, Operation]] = {}  # deadline, sequence, operation
        self._in_heap: dict[Hashable, tuple[int, int]] = {}  # the key's live heap entry
        self._sequence = itertools.count()
        self._earliest_pushed: int | None = None  # since `take_earlier`: the earliest new entry

    def schedule(self, key: Hashable, deadline_ms: int, operation: Operation) -> None:
        entry = (deadline_ms, next(self._sequence))
        self._current[key] = (*entry, operation)
        live = self._in_heap.get(key)
        if live is None or live[0] > deadline_ms:  # none, or too late: a new one (the old is dropped)
            self._in_heap[key] = entry
            heapq.heappush(self._heap, (*entry, key))
            if self._earliest_pushed is None or deadline_ms < self._earliest_pushed:
                self._earliest_pushed = deadline_ms

    def take_earlier(self) -> int | None:
        """The earliest deadline scheduled earlier than its key's previous one (or for a new key)
        since the last call: only such a deadline can come before the one already waited for, so
        a heartbeat, which only moves its session later, needs no look at the heap."""
        earliest, self._earliest_pushed = self._earliest_pushed, None
        return earliest

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
        """Until the top entry is a key's exact current deadline: drop dead entries, move early
        ones to their key's deadline."""
        heap = self._heap
        while heap:
            deadline, sequence, key = heap[0]
            current = self._current.get(key)
            if current is not None and current[0] == deadline and current[1] == sequence:
                return
            if self._in_heap.get(key) != (deadline, sequence):
                heapq.heappop(heap)  # replaced by an earlier entry of its key
            elif current is None:
                heapq.heappop(heap)  # cancelled
                del self._in_heap[key]
            else:
                entry = current[:2]
                self._in_heap[key] = entry
                heapq.heapreplace(heap, (*entry, key))

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
            del self._in_heap[key]
            expired.append((key, self._current.pop(key)[2]))

    def __len__(self) -> int:
        return len(self._current)

"""Client-library noise kept to what tells something: a message a Kafka client library
repeats is written once, then held back for a while, and the next one says how many were
held back ("No node available for metadata refresh" came every few milliseconds while a
coordinator restarted). Our own loggers' lines always pass."""

from __future__ import annotations

import logging
import time
from collections.abc import Callable

NOISY = ("kafka", "aiokafka")
QUIET_S = 10.0  # a repeated message is written at most once in this long


class RepeatedMessages(logging.Filter):
    def __init__(
        self,
        prefixes: tuple[str, ...] = NOISY,
        quiet_s: float = QUIET_S,
        clock: Callable[[], float] = time.monotonic,
    ) -> None:
        super().__init__()
        self.prefixes, self.quiet_s, self.clock = prefixes, quiet_s, clock
        self._last: dict[tuple[str, str], float] = {}  # (logger, message template) -> when it was written
        self._held: dict[tuple[str, str], int] = {}  # -> how many were held back since

    def filter(self, record: logging.LogRecord) -> bool:
        if not record.name.startswith(self.prefixes):
            return True
        key, now = (record.name, str(record.msg)), self.clock()
        last = self._last.get(key)
        if last is not None and now - last < self.quiet_s:
            self._held[key] = self._held.get(key, 0) + 1
            return False
        self._last[key] = now
        held = self._held.pop(key, 0)
        if held:
            record.msg = f"{record.msg} (and {held} more like it in the last {now - last:.0f} s)"  # type: ignore[operator]
        return True


def quiet_repeats(logger: logging.Logger | None = None) -> None:
    """Install the filter on the handlers of `logger` (the root logger's by default)."""
    for handler in (logger or logging.getLogger()).handlers:
        handler.addFilter(RepeatedMessages())

"""An outage said once when it starts and once when it ends, not once per failed attempt.

A full disk fails every produce to a partition and every group write until space comes back:
at thousands of requests a second, a line per failure would bury the one fact an operator
needs (what fails since when, and when it worked again) and fill the disk that is full.
"""

from __future__ import annotations

import logging
import threading


class OutageLog:
    def __init__(self, logger: logging.Logger, what: str) -> None:
        self._logger = logger
        self._what = what
        self._lock = threading.Lock()  # the group log is written from a thread of its own
        self.failing = False
        self._failures = 0

    def failed(self, reason: str) -> None:
        with self._lock:
            self._failures += 1
            if self.failing:
                return
            self.failing = True
        self._logger.error("%s fail: %s (said once until they work again)", self._what, reason)

    def succeeded(self) -> None:
        if not self.failing:  # the common case, without the lock
            return
        with self._lock:
            if not self.failing:
                return
            self.failing, failures, self._failures = False, self._failures, 0
        self._logger.warning("%s work again, after %d failed", self._what, failures)

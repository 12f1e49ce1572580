"""Polling with a deadline that hands the last value back, so that the test's own assertion
(not a timeout) says what was wrong."""

from __future__ import annotations

import time
from collections.abc import Callable
from typing import TypeVar

T = TypeVar("T")


def settle(read: Callable[[], T], done: Callable[[T], bool], within_s: float, every_s: float = 0.2) -> T:
    """`read()` until `done` holds or time is up; the last value read, for the test to assert on."""
    deadline = time.monotonic() + within_s
    value = read()
    while not done(value) and time.monotonic() < deadline:
        time.sleep(every_s)
        value = read()
    return value

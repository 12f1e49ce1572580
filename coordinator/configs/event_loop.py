"""Which asyncio event loop the coordinator runs on (`event.loop`).

`uvloop` (the default) is libuv's event loop behind asyncio's interface: its transports,
callbacks and timers are written in C, so each request costs less of the loop's own time.
On a 2-core machine it answered a stable 1,000-member group's heartbeats about 15% faster
than the standard loop (24-27k/s against 19-24k/s, 37-41 against 42-52 µs of coordinator
CPU each) and ApiVersions likewise (bench/heartbeats.py). `asyncio` is the standard
library's loop: the same code runs on it unchanged (the test suite runs a coordinator on
it), and it is what a platform without uvloop (Windows) gets.
"""

from __future__ import annotations

import asyncio
from collections.abc import Callable

EVENT_LOOPS = ("uvloop", "asyncio")


def loop_factory(name: str) -> Callable[[], asyncio.AbstractEventLoop]:
    """A factory of event loops of the named kind; uvloop falls back to asyncio's loop where
    it is not installed."""
    if name == "uvloop":
        try:
            import uvloop
        except ImportError:
            return asyncio.new_event_loop
        return uvloop.new_event_loop  # type: ignore[no-any-return]
    return asyncio.new_event_loop

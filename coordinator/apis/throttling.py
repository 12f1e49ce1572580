"""Byte-rate quotas on Produce and Fetch: what a request counts, and how its client sits out
the throttle time.

As Kafka does since KIP-219: an answer that takes its client over a quota carries the
throttle time and goes out at once, and the connection then reads nothing more for that long
(Produce v6+, Fetch v8+, whose clients also hold back on their own). Older versions get
their answer after the throttle time instead. A produce counts the bytes of the batches it
carries; a fetch counts the bytes of its answer, and a fetch that would go over is answered
empty, its bytes not counted, as Kafka answers it. A fetch under a quota also reads no more
than the quota allows over its window, so that an answer can pass at all.
"""

from __future__ import annotations

import asyncio

from connect_rebalance.protocol.api_keys import ApiKey
from coordinator.apis.registry import RequestContext
from coordinator.storage.partition_log import now_ms

# The first version of each API whose clients are throttled after their answer (KIP-219).
MUTED_FROM_VERSION = {ApiKey.PRODUCE: 6, ApiKey.FETCH: 8}


def quota_user(principal: str) -> str:
    """The user a quota names: the principal's name without its type (`User:alice` -> `alice`)."""
    return principal.partition(":")[2] or principal


def _who(ctx: RequestContext) -> tuple[str, str]:
    """The user and client id a quota is looked up for."""
    return quota_user(ctx.principal), ctx.header.client_id or ""


def throttle_ms(ctx: RequestContext, key: str, nbytes: int, *, keep_if_throttled: bool = True) -> int:
    """Count `nbytes` against the quota on `key` that applies to this connection; the throttle
    time it earns, in ms."""
    throttles = ctx.broker.throttles
    if throttles is None:
        return 0
    return throttles.record(key, *_who(ctx), nbytes, now_ms(), keep_if_throttled=keep_if_throttled)


def most_in_window(ctx: RequestContext, key: str) -> int | None:
    """The most bytes one answer may carry under this connection's quota on `key`."""
    throttles = ctx.broker.throttles
    if throttles is None:
        return None
    return throttles.most_in_window(key, *_who(ctx))


async def sit_out(ctx: RequestContext, throttle: int) -> None:
    """Mute the connection for `throttle` ms after this answer, or, for a client too old to
    hold back, delay the answer by it."""
    if throttle <= 0:
        return
    loop = asyncio.get_running_loop()
    if ctx.version >= MUTED_FROM_VERSION[ctx.header.api_key]:
        if ctx.session is not None:
            ctx.session.muted_until = max(ctx.session.muted_until, loop.time() + throttle / 1000)
        return
    await asyncio.sleep(throttle / 1000)

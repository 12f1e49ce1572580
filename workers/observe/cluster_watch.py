"""What feeds a worker's `ClusterTimeline` (timeline.py), and the rows/s of its tasks.

The timeline stands on what a worker knows itself: the status topic every worker follows
(task and connector states with worker ids and record timestamps, presence records), and its
connect group as ConnectGroupDescribe says it is, asked over the Kafka wire on a connection
of its own (the heartbeat connection is not held up by it). The group is described when this
worker's own epoch changed (every member's epoch moves with the group's) and, while someone
watches the web view, every WATCH_INTERVAL_S; otherwise not at all. On the classic protocol
the group's generation is the worker's own and its members are the workers whose presence is
UP. Nothing here blocks the event loop: the describe is one request on an asyncio
connection, and a failure is logged and retried on the next round.

Rows/s: each running task's row count (its progress' `rows`) is sampled every round and the
rate is taken over the last RATE_WINDOW_S.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import time
from collections import deque
from collections.abc import Callable, Mapping
from typing import Any

from connect_rebalance.client_security import ClientSecurity
from connect_rebalance.protocol.client import ProtocolClient
from connect_rebalance.protocol.connect_group import ConnectGroupApi
from connect_rebalance.work import Work
from workers.observe.timeline import ClusterTimeline
from workers.storage.status_store import PRESENCE_PREFIX, StatusStore, item_of_key

log = logging.getLogger(__name__)
WATCH_INTERVAL_S = 1.0  # while the web view is watched
VIEWED_FOR_S = 30.0  # a view polled within this long is being watched
ROUND_S = 0.25  # how often the loop checks the worker's own epoch and samples rows
RATE_WINDOW_S = 10.0
DESCRIBE_TIMEOUT_S = 5.0


class RowRates:
    """Rows per second of each task running here, from samples of its row count."""

    def __init__(self) -> None:
        self.samples: dict[Work, deque[tuple[float, float]]] = {}

    def sample(self, rows: Mapping[Work, float], now: float) -> None:
        for item in list(self.samples):
            if item not in rows:
                del self.samples[item]
        for item, count in rows.items():
            kept = self.samples.setdefault(item, deque())
            if kept and count < kept[-1][1]:
                kept.clear()  # a new run counts from zero
            kept.append((now, count))
            while len(kept) > 2 and kept[1][0] <= now - RATE_WINDOW_S:
                kept.popleft()

    def rates(self) -> dict[Work, float]:
        rates = {}
        for item, kept in self.samples.items():
            if len(kept) >= 2 and kept[-1][0] > kept[0][0]:
                rates[item] = round((kept[-1][1] - kept[0][1]) / (kept[-1][0] - kept[0][0]), 1)
        return rates


class ClusterWatch:
    def __init__(
        self,
        statuses: StatusStore,
        own_epoch: Callable[[], int],
        task_rows: Callable[[], Mapping[Work, float]],
        *,
        bootstrap: str,
        group_id: str,
        connect_protocol: bool,
        security: ClientSecurity | None = None,
    ) -> None:
        self.timeline = ClusterTimeline(since=time.time())
        self.rates = RowRates()
        self.statuses, self.own_epoch, self.task_rows = statuses, own_epoch, task_rows
        self.bootstrap, self.group_id, self.security = bootstrap, group_id, security
        self.connect_protocol = connect_protocol
        self.group_state = ""
        self.viewed_at = -VIEWED_FOR_S
        self._client: ProtocolClient | None = None
        statuses.listeners.append(self._on_status)

    def _on_status(self, key: str, status: Mapping[str, Any], at: float) -> None:
        if key.startswith(PRESENCE_PREFIX):
            worker = key.removeprefix(PRESENCE_PREFIX)
            self.timeline.presence_record(worker, status.get("state", ""), status.get("url", ""), at)
            return
        item = item_of_key(key)
        if item is not None:
            self.timeline.status(item, status.get("state", ""), status.get("worker_id", ""), at)

    def viewed(self) -> None:
        """The web view asked for the cluster's state: describe the group often for a while."""
        self.viewed_at = time.monotonic()

    async def run(self) -> None:
        """Until cancelled: sample rows, and describe the group when its epoch moved or the
        view is watched."""
        seen_epoch, described_at = None, -WATCH_INTERVAL_S
        try:
            while True:
                now = time.monotonic()
                self.rates.sample(self.task_rows(), now)
                epoch = self.own_epoch()
                watched = now - self.viewed_at < VIEWED_FOR_S and now - described_at >= WATCH_INTERVAL_S
                if epoch != seen_epoch or watched:
                    seen_epoch, described_at = epoch, now
                    await self.describe()
                await asyncio.sleep(ROUND_S)
        finally:
            await self.close()

    async def describe(self) -> None:
        """The group's epoch and workers, into the timeline (a failure waits for the next round)."""
        if not self.connect_protocol:
            left = self.statuses.left_workers()
            up = [w for w, p in self.timeline.presence.items() if p["state"] == "UP" and w not in left]
            self.timeline.group(self.own_epoch(), up, time.time())
            return
        try:
            if self._client is None or not self._client.connected:
                self._client = await ProtocolClient.connect(
                    self.bootstrap, "connect-worker-view", self.security
                )
            answer = await asyncio.wait_for(
                ConnectGroupApi(self._client).describe(self.group_id), DESCRIBE_TIMEOUT_S
            )
        except (OSError, ConnectionError, TimeoutError) as exc:
            log.debug("describing group %s: %s", self.group_id, exc)
            await self.close()
            return
        group = answer[0] if answer else None
        if group is None or group["error_code"]:
            return
        workers = [self.statuses.worker_id_of_url(member["url"]) for member in group["members"]]
        self.group_state = group["group_state"]
        self.timeline.group(group["group_epoch"], workers, time.time())

    async def close(self) -> None:
        client, self._client = self._client, None
        if client is not None:
            with contextlib.suppress(Exception):
                await client.close()

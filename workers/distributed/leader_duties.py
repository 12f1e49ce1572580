"""What a worker does while it leads (its last target names it): tell the group when the work
changed, once per burst of changes, and keep a fresh session key in the config topic.

A burst (a script creating connectors one after another, connectors writing their task
configs) ends once the config topic has been quiet for CONFIG_QUIET_S and every connector
placed by the previous announcement has written its task configs, or after
CONFIG_BURST_MAX_S; only then is the new config offset announced (connect protocol: in the
assignor metadata, which starts a new epoch; classic: a rejoin). Waiting for the placed
connectors' task configs makes their tasks one epoch, however the workers' heartbeats and
connector starts are spread in time. Followers keep reporting the offset they joined with,
so only the leader's changes start new epochs, and the leader's only once a burst is over.
"""

from __future__ import annotations

import asyncio
import contextlib
import time
from collections.abc import Callable

from workers.storage.config_state import STOPPED, ConfigState
from workers.storage.config_store import ConfigStore
from workers.storage.session_key import SessionKey

CONFIG_QUIET_S = 1.0  # config changes closer than this are one burst (one rebalance)
CONFIG_BURST_MAX_S = 5.0  # ... up to this long


class ConfigAnnouncer:
    def __init__(
        self, state: ConfigState, is_leader: Callable[[], bool], announce: Callable[[], None]
    ) -> None:
        """`announce()` tells the group (a heartbeat now, or a rejoin)."""
        self.state, self.is_leader, self.announce = state, is_leader, announce
        self._changed = asyncio.Event()
        self._announced_offset = 0  # the config offset the last burst ended at
        self._announced_connectors: set[str] = set()  # the connectors at that offset
        self._placed: set[str] = set()  # connectors new at that offset (their tasks are due next)
        self._reported = 0

    def joined(self) -> None:
        """The config as this worker joins with it (read to its end)."""
        self._announced_offset = self._reported = self.state.offset
        self._announced_connectors = set(self.state.connectors)

    def changed(self) -> None:
        """The work to assign (or a target state) changed."""
        self._changed.set()

    def reported_offset(self, leader_known: bool) -> int:
        """The config offset this worker reports to the group."""
        if self.is_leader() or not leader_known:
            self._reported = self._announced_offset
        return self._reported

    async def run(self) -> None:
        loop = asyncio.get_running_loop()
        while True:
            await self._changed.wait()
            until = loop.time() + CONFIG_BURST_MAX_S
            while True:
                self._changed.clear()
                quiet = min(CONFIG_QUIET_S, until - loop.time())
                if quiet <= 0:
                    break
                try:
                    await asyncio.wait_for(self._changed.wait(), quiet)
                except TimeoutError:
                    if not self._tasks_pending():
                        break
                    with contextlib.suppress(TimeoutError):  # a placed connector's tasks are due
                        await asyncio.wait_for(self._changed.wait(), until - loop.time())
            self._placed = set(self.state.connectors) - self._announced_connectors
            self._announced_connectors = set(self.state.connectors)
            self._announced_offset = self.state.offset
            if self.is_leader():
                self.announce()

    def _tasks_pending(self) -> bool:
        """A connector the last announcement placed has not written its task configs yet."""
        state = self.state
        return any(
            name in state.connectors and name not in state.tasks and state.target_state(name) != STOPPED
            for name in self._placed
        )


async def keep_session_key(configs: ConfigStore, is_leader: Callable[[], bool], ttl_ms: int) -> None:
    """While this worker leads, a session key younger than `inter.worker.key.ttl.ms` is in the
    config topic."""
    while True:
        await configs.read_to_end()
        if not is_leader():
            return
        now_ms = int(time.time() * 1000)
        key = configs.state.session_key
        if key is None or key.expired(now_ms, ttl_ms):
            key = SessionKey.new(now_ms)
            await configs.put_session_key(key)
        await asyncio.sleep(max(key.created_ms + ttl_ms - now_ms, 0) / 1000)

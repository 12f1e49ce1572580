"""How many client connections the coordinator holds: Kafka's `max.connections`,
`max.connections.per.ip` and `max.connections.per.ip.overrides`.

A connection past a limit is closed as soon as it is accepted, before anything is read from
it, and the ones already open (a consumer group's heartbeats among them) are served as
before. Kafka closes a connection over the per-address limit the same way; over the broker
limit it holds the accept back until a connection ends, which asyncio's server cannot do, so
here that connection is closed too and the client connects again after its reconnect backoff.
Each refusal is logged once per address until that address has a connection freed.
Pure: the connections layer (connection.py) says who came and who went.
"""

from __future__ import annotations

import collections
import logging
from dataclasses import dataclass, field

log = logging.getLogger(__name__)
UNLIMITED = 2**31 - 1


@dataclass
class ConnectionLimits:
    total: int = UNLIMITED
    per_ip: int = UNLIMITED
    overrides: dict[str, int] = field(default_factory=dict)
    count: int = 0
    by_host: collections.Counter[str] = field(default_factory=collections.Counter)
    _told: set[str] = field(default_factory=set)  # addresses whose refusal was logged

    def admit(self, host: str) -> bool:
        """Count a new connection from `host` in, or refuse it (and say so, once)."""
        allowed = self.overrides.get(host, self.per_ip)
        if self.by_host[host] >= allowed:
            setting, limit, holder = "max.connections.per.ip", allowed, f"address {host}"
        elif self.count >= self.total:
            setting, limit, holder = "max.connections", self.total, "the coordinator"
        else:
            self.count += 1
            self.by_host[host] += 1
            return True
        if host not in self._told:
            self._told.add(host)
            log.info("rejected a connection from %s: %s already has the configured maximum of %d "
                     "connections (%s)", host, holder, limit, setting)  # fmt: skip
        return False

    def release(self, host: str) -> None:
        """A connection admitted from `host` has ended."""
        self.count -= 1
        self.by_host[host] -= 1
        if self.by_host[host] <= 0:
            del self.by_host[host]
        self._told.clear()  # room again: a refusal from now on is news

"""The worker's connections for task output: its own, and one per identity connectors ask for.

Tasks write through the worker's connection, as the worker's producer (`producer.*`), unless
their connector's `producer.override.*` gives its producer another identity: other
credentials (`Principal` policy: `sasl.jaas.config`...), other TLS settings, or another
`client.id` (which the coordinator's client quotas and logs go by). Then its tasks write,
and begin their fences, through a connection with that identity, shared by every connector
that asks for the same one. The fence is the task's wherever its writes come from, so moving
a connector to another identity keeps every promise of `fenced_output`.
"""

from __future__ import annotations

import asyncio
from collections.abc import Mapping

from connect_rebalance.client_security import ClientSecurity, is_security_setting
from workers.storage.fenced_output import OutputConnection


class OutputConnections:
    def __init__(self, bootstrap: str, client_id: str, security: ClientSecurity) -> None:
        self.bootstrap, self.client_id, self.security = bootstrap, client_id, security
        self.default = OutputConnection(bootstrap, client_id, security)
        self._own: dict[tuple[tuple[str, str], ...], OutputConnection] = {}

    def for_producer(self, settings: Mapping[str, str]) -> OutputConnection:
        """The connection for a connector's producer settings (the worker's `producer.*`
        security with its overrides over them): the worker's own when they name no other identity."""
        security = {k: str(v).strip() for k, v in settings.items() if is_security_setting(k)}
        client_id = settings.get("client.id", "").strip() or self.client_id
        if security == dict(self.security.settings) and client_id == self.client_id:
            return self.default
        identity = tuple(sorted({**security, "client.id": client_id}.items()))
        if identity not in self._own:
            parsed = ClientSecurity.parse(security, "producer.override.")
            self._own[identity] = OutputConnection(self.bootstrap, client_id, parsed)
        return self._own[identity]

    async def close(self) -> None:
        await asyncio.gather(self.default.close(), *(c.close() for c in self._own.values()))

"""What the coordinator knows about one client connection: where it came in, who it is.

A session is made when a connection is accepted and lives as long as it does. Its principal
is `User:ANONYMOUS` on PLAINTEXT listeners, the client certificate's subject on SSL
listeners, and the SASL user once authentication succeeds on SASL listeners; every request
on the connection is authorized as that principal.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import TYPE_CHECKING

from connect_rebalance.tls_server import ANONYMOUS
from coordinator.security.listeners import Listener

if TYPE_CHECKING:
    from coordinator.security.sasl import SaslState


@dataclass(slots=True)
class Session:
    listener: Listener
    client_host: str
    # The address Metadata and FindCoordinator give clients of this listener.
    advertised: tuple[str, int]
    principal: str = ANONYMOUS
    # On SASL listeners: the exchange, until it completes.
    sasl: SaslState | None = None
    # Set by a handler whose answer is the last one on this connection (a failed SASL exchange).
    close_after_response: bool = field(default=False)
    # KIP-219: a quota-throttled answer mutes the connection until this event-loop time.
    muted_until: float = field(default=0.0)

    @property
    def authenticated(self) -> bool:
        return self.sasl is None or self.sasl.complete

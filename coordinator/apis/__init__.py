"""Request handlers, one module per API family; importing this package registers them all.

Handlers import the broker, the group service, configs, security, quotas, storage and the
turns; the network edge (`coordinator/network/server.py`) calls them, and nothing here
imports it.
"""

from coordinator.apis import (  # noqa: F401 (importing a module registers its handlers)
    acls,
    alter_configs,
    client_quotas,
    cluster,
    fetch,
    groups,
    produce,
    sasl,
    scram_users,
    topics,
)
from coordinator.apis.registry import HANDLERS, ApiSpec, RequestContext

__all__ = ["HANDLERS", "ApiSpec", "RequestContext"]

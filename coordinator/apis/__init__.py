"""Request handlers, one module per API family; importing this package registers them all."""

from . import acls, alter_configs, client_quotas, cluster, fetch, groups, produce, sasl, scram_users, topics  # noqa: F401
from .registry import HANDLERS, ApiSpec, RequestContext

__all__ = ["HANDLERS", "ApiSpec", "RequestContext"]

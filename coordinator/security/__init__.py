"""The coordinator's security at the IO edge: TLS listeners, SASL authentication, SCRAM
credentials, ACLs and the authorizer that enforces them.

Everything here sits beside the server and the request handlers; the pure group core
(coordinator/groups) never sees a principal. A request reaches the core only once the API
layer has authorized it. Imports configs, storage and quotas (its store keeps the quota
settings); the offline writes take the broker's data directory lock.
"""

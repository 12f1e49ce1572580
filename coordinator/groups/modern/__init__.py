"""The modern-group engine: what KIP-848 consumer groups and connect groups share.

`group.py` holds the model (epochs, members, target, ownership, the computing round) and
`engine.py` the lifecycle written once (heartbeat envelope, membership, fencing, advancing an
epoch, reconciliation, leaving, the three timeouts, Prepare/Install, replay). A group type is
a flavour of the engine (consumer.py, connect.py beside this package) that says only what
differs: validation, the request's fields, what bumps the epoch, who computes the target,
the records, the answers.
"""

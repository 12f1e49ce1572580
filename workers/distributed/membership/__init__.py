"""A worker's membership of its connect group, on either group protocol: the member's
state machine and its driver, the `classic` and `connect` memberships, and the session watch
that gives work up before the coordinator can expire the session.

Imports `observe/` (the rebalance clock) and the assignors.
"""

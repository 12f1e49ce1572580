"""The top of the house: the `connect-rebalance` command (coordinator, worker, admin commands),
the quickstart and the demos. It may use every package; no package uses it."""

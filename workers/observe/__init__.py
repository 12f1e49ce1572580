"""What a worker shows of itself: the connect group's timeline and what feeds it, the
`/metrics` text, the rebalance clock, and the log levels set at run time.

Imports `storage/` and `config/`; never the herder or REST.
"""

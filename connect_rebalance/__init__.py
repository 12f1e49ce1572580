"""connect-rebalance: a Kafka-wire coordinator and Connect-style workers.

This package holds what the coordinator and the workers share: the protocol codec and
schemas, Kafka's error codes, record-batch helpers, configuration models and the CLI.
"""

__version__ = "0.1.0"

"""JSON message schemas in Apache Kafka's format, loaded by connect_rebalance.protocol.messages."""

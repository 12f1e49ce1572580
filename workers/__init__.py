"""Kafka Connect-style workers that rebalance connectors and tasks through the coordinator."""

"""Connectors that ship with the worker (as Kafka Connect ships its own test connectors)."""

"""The Kafka wire protocol: codec adapter, API schemas and version policy helpers."""

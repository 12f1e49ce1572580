"""The backing stores on Kafka topics, as Kafka Connect's `storage/`: the topic log every
store follows, the config topic (its records and state), the status and offset stores, the
session key, and fenced (transactional) output.

Imports `config/` and `plugins/`.
"""

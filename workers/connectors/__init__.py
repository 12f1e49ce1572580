"""Connectors that ship with the worker (as Kafka Connect ships its own test connectors):
VerifiableSource, and the Spark ingestion connectors TopicIngest, FileIngest and Datagen.

Connectors only: they import the plugin API (`plugins/`) and the Spark task runtime
(`spark/`); nothing of the worker imports them (tests/test_layout.py holds the rule).
"""

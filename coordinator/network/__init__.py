"""The coordinator's network edge: the Kafka-protocol server and its connections (framing,
SASL, pipelining, connection limits) and the admin HTTP port. The turns that keep one
connection from starving the others are `coordinator/turns.py`, beside the handlers that take
them too.

Imports the broker, the APIs, configs and security; nothing below imports it.
"""

"""The coordinator's network edge: the Kafka-protocol server and its connections (framing,
SASL, pipelining, the turns that keep one connection from starving the others, connection
limits), the admin HTTP port, and the choice of event loop.

Imports the broker, the APIs, configs and security; nothing below imports it.
"""

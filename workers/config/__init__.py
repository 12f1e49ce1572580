"""A worker's settings and what a connector's config asks of the worker: the worker file
(`worker`), config providers (`providers`), client overrides (KIP-458), topic creation
(KIP-158), the REST response headers, and the Kafka Connect settings with no work to do here.

Imports `plugins/` and nothing else of workers/.
"""

"""The REST API, Kafka Connect's: the server and its routes, errors as Kafka Connect's JSON,
authentication, the loggers resource, the OpenAPI document and the web view (`/ui`).

The top of the worker: it asks the worker only what the `Herder` protocol (herder.py) offers,
and imports `config/`, `observe/`, `plugins/` and `storage/` for their types; never
`distributed/` (which answers the protocol) nor `connectors/`.
"""

"""The REST API, Kafka Connect's: the server and its routes, errors as Kafka Connect's JSON,
authentication, the loggers resource, the OpenAPI document and the web view (`/ui`).

The top of the worker: it may import any package of workers/ but `connectors/`.
"""

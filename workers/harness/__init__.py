"""Worker processes and clusters of them for the quickstart, the benches and the tests: a
worker process, a cluster of them on one coordinator, and the shared short-lived Spark JVM.

Imports `spark/` (the shared JVM is a Spark runtime); the worker's own packages never import it.
"""

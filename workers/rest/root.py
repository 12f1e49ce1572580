"""The worker's own endpoints, as Kafka Connect's `RootResource` and its health check: `/`,
`/health`, and ours beside them: `/metrics` (Prometheus' text) and `/openapi.json`."""

from __future__ import annotations

from aiohttp import web

from connect_rebalance import __version__
from connect_rebalance.prometheus import Exposition
from workers.observe.metrics import metrics_text
from workers.rest import openapi
from workers.rest.herder import WorkerHerder

# Answered while the worker still reads the cluster's state (its REST port answers first).
ANSWERED_WHILE_STARTING = frozenset({"/", "/health", "/metrics", "/openapi.json"})


class RootResource:
    def __init__(self, herder: WorkerHerder) -> None:
        self.herder = herder

    async def root(self, request: web.Request) -> web.Response:
        # Kafka Connect's three fields, and the worker's Spark runtime: a task assigned while
        # it starts waits for it (its status says so too).
        return web.json_response({
            "version": __version__, "commit": "", "kafka_cluster_id": self.herder.cluster_id(),
            "spark_runtime": self.herder.spark_runtime(),
        })  # fmt: skip

    async def health(self, request: web.Request) -> web.Response:
        if not self.herder.started():
            return web.json_response(
                {"status": "starting", "message": "Worker is still starting up"}, status=503
            )
        return web.json_response(
            {"status": "healthy", "message": "Worker has completed startup and is ready to handle requests."}
        )

    async def metrics(self, request: web.Request) -> web.Response:
        """Prometheus text: rebalances, connectors and tasks started and stopped, per connector."""
        text = metrics_text(self.herder.figures())
        return web.Response(text=text, content_type=Exposition.CONTENT_TYPE)

    async def openapi(self, request: web.Request) -> web.Response:
        """The API as an OpenAPI document (openapi.py), for generated clients and fuzzers."""
        return web.json_response(openapi.document())

"""The worker's REST server, compatible with Kafka Connect's (connect-reference.md §5): every
route in one table, behind the middlewares every request passes (configured headers, CORS,
errors as Kafka Connect's JSON, authentication, the wait for the worker's start and the
refusal of writes once it stops).

Status codes, JSON shapes and `{"error_code", "message"}` errors are Kafka Connect's, so its
REST clients work unchanged. One resource a module, as Kafka Connect's `rest/resources/`:
root.py, connectors.py, tasks.py, offsets.py, plugins.py, internal.py, loggers.py and the
web view; each asks the worker only what the `Herder` protocol (herder.py) offers. Writes to
the cluster's config are made by the leader (forwarding.py).
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Awaitable, Callable

from aiohttp import web

from workers.config.connector_validation import InvalidConnectorConfig
from workers.config.http_headers import configured_headers, cross_origin, header_rules
from workers.plugins.api import OffsetsRefused
from workers.rest.connectors import ConnectorsResource
from workers.rest.errors import RestError, error
from workers.rest.forwarding import SHUTTING_DOWN, Forwarding
from workers.rest.herder import Herder, WorkerHerder
from workers.rest.internal import InternalResource
from workers.rest.loggers import logger_routes
from workers.rest.offsets import OffsetsResource
from workers.rest.plugins import PluginsResource
from workers.rest.root import ANSWERED_WHILE_STARTING, RootResource
from workers.rest.security import Refused, RestAuthenticator
from workers.rest.tasks import TasksResource
from workers.rest.web_view import web_view_routes

log = logging.getLogger(__name__)
Handler = Callable[[web.Request], Awaitable[web.StreamResponse]]
# A request that needs the cluster's state, made while the worker is still reading it (its REST
# port answers first), waits this long for the start, as Kafka Connect queues it; then 503.
STARTUP_WAIT_S = 60.0
READS = frozenset({"GET", "HEAD", "OPTIONS"})


@web.middleware
async def errors_as_json(request: web.Request, handler: Handler) -> web.StreamResponse:
    try:
        return await handler(request)
    except RestError as exc:
        return error(exc.status, exc.message)
    except (InvalidConnectorConfig, OffsetsRefused) as exc:  # the herder's refusals, Kafka Connect's 400s
        return error(400, str(exc))
    except web.HTTPException as exc:
        return error(exc.status, exc.reason or "error")
    except Exception as exc:  # noqa: BLE001 - the process never dies of a request
        log.exception("%s %s", request.method, request.path)
        return error(500, f"{type(exc).__name__}: {exc}")


def after_start(herder: WorkerHerder) -> Callable[[web.Request, Handler], Awaitable[web.StreamResponse]]:
    """Requests other than `/`, `/health` and `/metrics` wait until the worker has started;
    once it is shutting down, it takes no more writes (503: a follower sends them to the next
    leader, a client may send them to another worker), and reads are still answered."""

    @web.middleware
    async def started(request: web.Request, handler: Handler) -> web.StreamResponse:
        if herder.stopping() and request.method not in READS:
            return error(503, SHUTTING_DOWN)
        if not herder.started() and request.path not in ANSWERED_WHILE_STARTING:
            try:
                await asyncio.wait_for(herder.wait_started(), STARTUP_WAIT_S)
            except TimeoutError:
                return error(503, "Worker is still starting up")
        return await handler(request)

    return started


def authentication(
    authenticator: RestAuthenticator,
) -> Callable[[web.Request, Handler], Awaitable[web.StreamResponse]]:
    """401 and 403 before any handler runs (`security`)."""

    @web.middleware
    async def authenticated(request: web.Request, handler: Handler) -> web.StreamResponse:
        try:
            authenticator.check(request)
        except Refused as refused:
            challenge = {"WWW-Authenticate": 'Basic realm="connect"'} if refused.status == 401 else None
            return error(refused.status, refused.message, challenge)
        return await handler(request)

    return authenticated


class RestApi:
    """The REST API of one worker: `app` on its listeners, `admin_app` on `admin.listeners`."""

    def __init__(self, herder: Herder) -> None:
        authenticator = RestAuthenticator(herder.config)
        config = herder.config
        # Outermost first: configured headers go on every answer, errors included; a CORS
        # preflight is answered before authentication, as browsers send it without credentials.
        middlewares = [configured_headers(header_rules(config.response_http_headers_config))]
        if config.access_control_allow_origin.strip():
            middlewares.append(
                cross_origin(config.access_control_allow_origin, config.access_control_allow_methods)
            )
        middlewares += [errors_as_json, authentication(authenticator), after_start(herder)]
        self.app = web.Application(middlewares=middlewares)
        forwarding = Forwarding(herder)
        root, plugins = RootResource(herder), PluginsResource(herder)
        connectors, tasks = ConnectorsResource(herder, forwarding), TasksResource(herder, forwarding)
        offsets, internal = OffsetsResource(herder, forwarding), InternalResource(herder, forwarding)
        # Every route, in one place (openapi.py documents each; a test holds them to it).
        routes = [
            web.get("/", root.root),
            web.get("/health", root.health),
            web.get("/metrics", root.metrics),
            web.get("/openapi.json", root.openapi),
            web.get("/connectors", connectors.list_connectors),
            web.post("/connectors", connectors.create_connector),
            web.get("/connectors/{connector}", connectors.get_connector),
            web.delete("/connectors/{connector}", connectors.delete_connector),
            web.get("/connectors/{connector}/config", connectors.get_config),
            web.put("/connectors/{connector}/config", connectors.put_config),
            web.patch("/connectors/{connector}/config", connectors.patch_config),
            web.get("/connectors/{connector}/status", connectors.get_status),
            web.put("/connectors/{connector}/pause", connectors.pause),
            web.put("/connectors/{connector}/resume", connectors.resume),
            web.put("/connectors/{connector}/stop", connectors.stop),
            web.post("/connectors/{connector}/restart", connectors.restart_connector),
            web.get("/connectors/{connector}/topics", connectors.get_topics),
            web.put("/connectors/{connector}/topics/reset", connectors.reset_topics),
            web.get("/connectors/{connector}/tasks", tasks.get_tasks),
            web.get("/connectors/{connector}/tasks/{task}/status", tasks.get_task_status),
            web.post("/connectors/{connector}/tasks/{task}/restart", tasks.restart_task),
            web.post("/connectors/{connector}/tasks", internal.put_task_configs),
            web.get("/connectors/{connector}/offsets", offsets.get_offsets),
            web.patch("/connectors/{connector}/offsets", offsets.alter_offsets),
            web.delete("/connectors/{connector}/offsets", offsets.reset_offsets),
            web.get("/connector-plugins", plugins.list_plugins),
            web.get("/connector-plugins/{pluginName}/config", plugins.plugin_config),
            web.put("/connector-plugins/{pluginName}/config/validate", plugins.validate),
        ]
        routes += web_view_routes(herder)
        # The admin endpoints: on these listeners unless `admin.listeners` gives them their own
        # (served by `admin_app`), or, blank, turns them off.
        self.admin_app: web.Application | None = None
        if config.admin_listeners is None:
            routes += logger_routes(herder)
        elif config.admin_rest_listeners:
            self.admin_app = web.Application(middlewares=list(middlewares))
            self.admin_app.add_routes(logger_routes(herder))
        self.app.add_routes(routes)

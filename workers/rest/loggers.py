"""`/admin/loggers`: a worker's log levels read and changed at run time, as Kafka Connect's
LoggingResource answers (KIP-495, and KIP-976's `scope=cluster`).

- `GET /admin/loggers`: the loggers whose level is set, and `root`: {"level", "last_modified"}.
- `GET /admin/loggers/{logger}`: one logger's level (its effective one if none is set); 404
  "Logger <name> not found." for a logger that does not exist.
- `PUT /admin/loggers/{logger}` with `{"level": "DEBUG"}`: this worker's namespace and every
  logger under it; 200 with their names. With `?scope=cluster`: written to the config topic
  for every worker running when it is read; 204. A missing level is 400; a level that is no
  log4j level is 404 "invalid log level", both as Kafka Connect answers them. Another scope
  is taken as `worker`, as there.
"""

from __future__ import annotations

import logging

from aiohttp import web

from workers.observe.loggers import level_number
from workers.rest.errors import RestError, json_body
from workers.rest.herder import WorkerHerder

log = logging.getLogger(__name__)


def logger_routes(herder: WorkerHerder) -> list[web.RouteDef]:
    async def list_loggers(request: web.Request) -> web.Response:
        return web.json_response(herder.logger_levels())

    async def get_logger(request: web.Request) -> web.Response:
        name = request.match_info["logger"]
        found = herder.logger_level(name)
        if found is None:
            raise RestError(404, f"Logger {name} not found.")
        return web.json_response(found)

    async def set_level(request: web.Request) -> web.StreamResponse:
        name = request.match_info["logger"]
        body = await json_body(request)
        level = body.get("level") if isinstance(body, dict) else None
        if not isinstance(level, str):
            raise RestError(400, "Desired 'level' parameter was not specified in request.")
        if level_number(level) is None:
            raise RestError(404, f"invalid log level '{level}'.")
        scope = request.query.get("scope", "worker").lower()
        if scope == "cluster":
            await herder.set_cluster_logger_level(name, level.upper())
            return web.Response(status=204)
        if scope != "worker":
            log.warning("invalid scope %r in a request to set a log level; taken as worker", scope)
        affected = herder.set_logger_level(name, level)
        log.info(
            "log level of %s and the loggers under it set to %s (%d loggers)",
            name,
            level.upper(),
            len(affected),
        )
        return web.json_response(affected)

    return [
        web.get("/admin/loggers", list_loggers),
        web.get("/admin/loggers/{logger}", get_logger),
        web.put("/admin/loggers/{logger}", set_level),
    ]

"""The worker's REST API, compatible with Kafka Connect's (connect-reference.md §5).

Status codes, JSON shapes and `{"error_code", "message"}` errors are Kafka Connect's, so its
REST clients work unchanged. Reads are answered from this worker's view of the config and
status topics. Writes to the cluster's config are made by the leader: a follower forwards
the identical request to the leader's url (adding `forward=true`), as Kafka Connect does.
"""

from __future__ import annotations

import asyncio
import json
import logging
import time
from collections.abc import Awaitable, Callable
from typing import Any
from urllib.parse import quote

from aiohttp import ClientError, ClientSession, ClientTimeout, web
from yarl import URL

from connect_rebalance import __version__
from connect_rebalance.prometheus import Exposition
from workers.config.connector_clients import connector_problems
from workers.config.http_headers import configured_headers, cross_origin, header_rules
from workers.config.providers import VariableError, resolve
from workers.distributed.herder import Herder
from workers.observe.metrics import metrics_text
from workers.plugins.api import ConfigDef, ConfigProblem, Connector, find_plugin, plugins
from workers.plugins.names import java_trim, name_problem
from workers.rest import openapi
from workers.rest.errors import RestError, error
from workers.rest.loggers import logger_routes
from workers.rest.security import Refused, RestAuthenticator
from workers.rest.web_view import web_view_routes
from workers.spark.checkpoint_generations import OffsetsRefused
from workers.storage.config_state import PAUSED, STARTED, STOPPED
from workers.storage.session_key import (
    ALGORITHM_HEADER,
    SIGNATURE_HEADER,
    TIMESTAMP_HEADER,
    SeenSignatures,
    task_configs_path,
)

log = logging.getLogger(__name__)
Handler = Callable[[web.Request], Awaitable[web.StreamResponse]]
INITIAL_STATES = {"RUNNING": STARTED, "PAUSED": PAUSED, "STOPPED": STOPPED}
# A request that needs the cluster's state, made while the worker is still reading it (its REST
# port answers first), waits this long for the start, as Kafka Connect queues it; then 503.
STARTUP_WAIT_S = 60.0
ANSWERED_WHILE_STARTING = frozenset({"/", "/health", "/metrics", "/openapi.json"})


@web.middleware
async def errors_as_json(request: web.Request, handler: Handler) -> web.StreamResponse:
    try:
        return await handler(request)
    except RestError as exc:
        return error(exc.status, exc.message)
    except web.HTTPException as exc:
        return error(exc.status, exc.reason or "error")
    except Exception as exc:  # noqa: BLE001 - the process never dies of a request
        log.exception("%s %s", request.method, request.path)
        return error(500, f"{type(exc).__name__}: {exc}")


def after_start(herder: Herder) -> Callable[[web.Request, Handler], Awaitable[web.StreamResponse]]:
    """Requests other than `/`, `/health` and `/metrics` wait until the worker has started."""

    @web.middleware
    async def started(request: web.Request, handler: Handler) -> web.StreamResponse:
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
    def __init__(self, herder: Herder) -> None:
        self.herder = herder
        self._seen_signatures = SeenSignatures()  # internal requests already taken (replays)
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
        routes = [
            web.get("/", self.root),
            web.get("/health", self.health),
            web.get("/metrics", self.metrics),
            web.get("/openapi.json", self.openapi),
            web.get("/connectors", self.list_connectors),
            web.post("/connectors", self.create_connector),
            web.get("/connectors/{connector}", self.get_connector),
            web.delete("/connectors/{connector}", self.delete_connector),
            web.get("/connectors/{connector}/config", self.get_config),
            web.put("/connectors/{connector}/config", self.put_config),
            web.patch("/connectors/{connector}/config", self.patch_config),
            web.get("/connectors/{connector}/status", self.get_status),
            web.put("/connectors/{connector}/pause", self.pause),
            web.put("/connectors/{connector}/resume", self.resume),
            web.put("/connectors/{connector}/stop", self.stop),
            web.post("/connectors/{connector}/restart", self.restart_connector),
            web.get("/connectors/{connector}/tasks", self.get_tasks),
            web.post("/connectors/{connector}/tasks", self.put_task_configs),
            web.get("/connectors/{connector}/tasks/{task}/status", self.get_task_status),
            web.post("/connectors/{connector}/tasks/{task}/restart", self.restart_task),
            web.get("/connectors/{connector}/offsets", self.get_offsets),
            web.patch("/connectors/{connector}/offsets", self.alter_offsets),
            web.delete("/connectors/{connector}/offsets", self.reset_offsets),
            web.get("/connectors/{connector}/topics", self.get_topics),
            web.put("/connectors/{connector}/topics/reset", self.reset_topics),
            web.get("/connector-plugins", self.list_plugins),
            web.get("/connector-plugins/{pluginName}/config", self.plugin_config),
            web.put("/connector-plugins/{pluginName}/config/validate", self.validate),
            *web_view_routes(herder),
        ]
        # The admin endpoints: on these listeners unless `admin.listeners` gives them their own
        # (served by `admin_app`), or, blank, turns them off.
        self.admin_app: web.Application | None = None
        if config.admin_listeners is None:
            routes += logger_routes(herder)
        elif config.admin_rest_listeners:
            self.admin_app = web.Application(middlewares=list(middlewares))
            self.admin_app.add_routes(logger_routes(herder))
        self.app.add_routes(routes)

    # -- helpers --------------------------------------------------------------------------

    def _known(self, name: str) -> dict[str, str]:
        config = self.herder.connector_config(name)
        if config is None:
            raise RestError(404, f"Connector {name} not found")
        return config

    def _info(self, name: str) -> dict[str, Any]:
        config = self._known(name)
        plugin = find_plugin(config.get("connector.class", ""))
        tasks = [{"connector": name, "task": i} for i in range(len(self.herder.task_configs(name)))]
        return {"name": name, "config": config, "tasks": tasks, "type": plugin.type if plugin else "unknown"}

    async def _body(self, request: web.Request) -> Any:
        try:
            return await request.json()
        except (json.JSONDecodeError, UnicodeDecodeError) as exc:
            raise RestError(400, f"Invalid JSON in the request body: {exc}") from exc

    def _validated(self, name: str, config: dict[str, Any]) -> dict[str, str]:
        if not isinstance(config, dict):
            raise RestError(400, "The connector configuration must be a JSON object")
        problem = name_problem(name)
        if problem is not None:
            raise _invalid([ConfigProblem.invalid("name", name, problem)])
        config = _string_values(config)
        config["name"] = name
        if "connector.class" not in config:
            raise RestError(
                400,
                "Connector config contains no connector type: "
                'Missing required configuration "connector.class"',
            )
        plugin = find_plugin(config["connector.class"])
        if plugin is None:
            raise RestError(
                400,
                "Failed to find any class that implements Connector and which name matches "
                f"{config['connector.class']}",
            )
        problems = self._problems(plugin, config)
        if problems:
            raise _invalid(problems)
        return config

    def _problems(self, plugin: type[Connector], config: dict[str, str]) -> list[ConfigProblem]:
        """The plugin's problems with `config` as its connector will see it: variables resolved
        by the worker's config providers, as Kafka Connect validates. A variable that cannot
        be read is its setting's problem; a value a provider read is not shown, in any problem
        (its setting's `${...}` text is, or `[hidden]`).
        Topic creation and client overrides are checked against this worker's settings."""
        try:
            resolution = resolve(config, self.herder.runner.providers)
        except VariableError as exc:
            return [ConfigProblem(f.setting, str(f)) for f in exc.failures]
        problems = []
        values = resolution.values
        for problem in [*plugin.validate(values), *connector_problems(plugin, values, self.herder.config)]:
            problems.append(ConfigProblem(problem.name, resolution.hidden(problem.message, config)))
        return problems

    async def _leader_only(self, request: web.Request) -> web.StreamResponse | None:
        """Forward a config write to the leader unless this worker is it."""
        leader_url = self.herder.leader_url()
        if leader_url is None:
            return None
        if request.query.get("forward") == "false":
            raise RestError(
                409, "Cannot complete request because of a conflicting operation (e.g. worker rebalance)"
            )
        query = {**request.query, "forward": "true" if "forward" not in request.query else "false"}
        return await self._forward(request, leader_url, query)

    async def _forward(self, request: web.Request, base_url: str, query: dict[str, str]) -> web.Response:
        """The identical request, sent to another worker; its answer, passed back.

        The path goes as it came, still percent-encoded: decoded, a connector named
        `x/../victim` would be read there as `/connectors/victim`."""
        url = URL(f"{base_url}{request.rel_url.raw_path}", encoded=True)
        body = await request.read()
        passed_on = (SIGNATURE_HEADER, ALGORITHM_HEADER, TIMESTAMP_HEADER, "Authorization")
        async with (
            ClientSession(timeout=ClientTimeout(total=90)) as session,
            session.request(
                request.method,
                url,
                params=query,
                data=body or None,
                # A signed request stays signed, and the caller's credentials go along (as
                # Kafka Connect forwards them); TLS as the worker's REST client has it.
                headers={
                    "Content-Type": "application/json",
                    **{h: request.headers[h] for h in passed_on if h in request.headers},
                },
                ssl=self.herder.client_tls() or True,
            ) as answer,
        ):
            payload = await answer.read()
            kept = {h: answer.headers[h] for h in ("Location",) if h in answer.headers}
            return web.Response(
                status=answer.status, body=payload, content_type="application/json", headers=kept
            )

    # -- routes ---------------------------------------------------------------------------

    async def root(self, request: web.Request) -> web.Response:
        # Kafka Connect's three fields, and the worker's Spark runtime: a task assigned while
        # it starts waits for it (its status says so too).
        return web.json_response({
            "version": __version__, "commit": "", "kafka_cluster_id": self.herder.cluster_id(),
            "spark_runtime": self.herder.spark.describe(),
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

    async def list_connectors(self, request: web.Request) -> web.Response:
        names = self.herder.connectors()
        expand = request.query.getall("expand", [])
        if not expand:
            return web.json_response(names)
        out: dict[str, Any] = {}
        for name in names:
            entry: dict[str, Any] = {}
            if "status" in expand:
                entry["status"] = self.herder.connector_status(name)
            if "info" in expand:
                entry["info"] = self._info(name)
            out[name] = entry
        return web.json_response(out)

    async def create_connector(self, request: web.Request) -> web.StreamResponse:
        body = await self._body(request)
        if not isinstance(body, dict):
            raise RestError(400, "The request body must be a JSON object with name and config")
        name = java_trim(str(body.get("name") or ""))  # checked, with the config, by _validated
        config = body.get("config")
        if not isinstance(config, dict):
            raise RestError(400, "Connector config must be a JSON object")
        if config.get("name") not in (None, name):
            raise RestError(
                400,
                "Connector name configuration ("
                + str(config["name"])
                + ") doesn't match connector name in the URL ("
                + name
                + ")",
            )
        initial = str(body.get("initial_state") or "RUNNING").upper()
        if initial not in INITIAL_STATES:
            raise RestError(
                400, f"Invalid initial state {body.get('initial_state')}; one of RUNNING, PAUSED, STOPPED"
            )
        validated = self._validated(name, config)
        if self.herder.connector_config(name) is not None:
            raise RestError(409, f"Connector {name} already exists")
        forwarded = await self._leader_only(request)
        if forwarded is not None:
            return forwarded
        await self.herder.create_connector(name, validated, INITIAL_STATES[initial])
        return web.json_response(self._info(name), status=201, headers=_location(name))

    async def get_connector(self, request: web.Request) -> web.Response:
        return web.json_response(self._info(request.match_info["connector"]))

    async def delete_connector(self, request: web.Request) -> web.StreamResponse:
        name = request.match_info["connector"]
        forwarded = await self._leader_only(request)  # the leader knows: see stop()
        if forwarded is not None:
            return forwarded
        self._known(name)
        await self.herder.delete_connector(name)
        return web.Response(status=204)

    def _topic_tracking(self, reset: bool = False) -> None:
        """403 as Kafka Connect answers it when `topic.tracking.*` turned it off."""
        if not self.herder.config.topic_tracking_enable:
            raise RestError(403, "Topic tracking is disabled.")
        if reset and not self.herder.config.topic_tracking_allow_reset:
            raise RestError(403, "Topic tracking reset is disabled.")

    async def get_topics(self, request: web.Request) -> web.Response:
        """The topics the connector's tasks used since its creation or the last reset (KIP-558)."""
        self._topic_tracking()
        name = request.match_info["connector"]
        return web.json_response({name: {"topics": self.herder.statuses.active_topics(name)}})

    async def reset_topics(self, request: web.Request) -> web.Response:
        self._topic_tracking(reset=True)
        await self.herder.statuses.reset_topics(request.match_info["connector"])
        return web.Response(status=202)

    async def get_config(self, request: web.Request) -> web.Response:
        return web.json_response(self._known(request.match_info["connector"]))

    async def put_config(self, request: web.Request) -> web.StreamResponse:
        name = request.match_info["connector"]
        body = await self._body(request)
        if isinstance(body, dict) and body.get("name") not in (None, name):
            raise RestError(
                400,
                "Connector name configuration ("
                + str(body["name"])
                + ") doesn't match connector name in the URL ("
                + name
                + ")",
            )
        validated = self._validated(name, body)
        existed = self.herder.connector_config(name) is not None
        forwarded = await self._leader_only(request)
        if forwarded is not None:
            return forwarded
        await self.herder.put_connector_config(name, validated)
        headers = {} if existed else _location(name)
        return web.json_response(self._info(name), status=200 if existed else 201, headers=headers)

    async def patch_config(self, request: web.Request) -> web.StreamResponse:
        name = request.match_info["connector"]
        current = dict(self._known(name))
        body = await self._body(request)
        if not isinstance(body, dict):
            raise RestError(400, "The patch must be a JSON object")
        for key, value in body.items():
            if value is None:
                current.pop(key, None)
            else:
                current[key] = str(value)
        validated = self._validated(name, current)
        forwarded = await self._leader_only(request)
        if forwarded is not None:
            return forwarded
        await self.herder.put_connector_config(name, validated)
        return web.json_response(self._info(name))

    async def get_status(self, request: web.Request) -> web.Response:
        name = request.match_info["connector"]
        status = self.herder.connector_status(name)
        if status is None:
            raise RestError(404, f"No status found for connector {name}")
        return web.json_response(status)

    async def _set_target(self, request: web.Request, state: str) -> None:
        name = request.match_info["connector"]
        self._known(name)
        await self.herder.set_target_state(name, state)

    async def pause(self, request: web.Request) -> web.Response:
        await self._set_target(request, PAUSED)
        return web.Response(status=202)

    async def resume(self, request: web.Request) -> web.Response:
        await self._set_target(request, STARTED)
        return web.Response(status=202)

    async def stop(self, request: web.Request) -> web.StreamResponse:
        # Asked of the leader, which writes the config topic: a follower may not have read a
        # connector created through it a moment ago, and must not answer 404 for it.
        forwarded = await self._leader_only(request)
        if forwarded is not None:
            return forwarded
        await self._set_target(request, STOPPED)
        return web.Response(status=204)

    async def restart_connector(self, request: web.Request) -> web.StreamResponse:
        name = request.match_info["connector"]
        self._known(name)
        include_tasks = request.query.get("includeTasks", "false").lower() == "true"
        only_failed = request.query.get("onlyFailed", "false").lower() == "true"
        plan = include_tasks or only_failed
        if plan and not self.herder.has_status(name):
            # Kafka Connect builds its restart plan from the connector's status; none yet: 404,
            # and nothing is restarted.
            raise RestError(404, f"Status for connector {name} not found")
        await self.herder.request_restart(name, include_tasks, only_failed)
        if not plan:
            return web.Response(status=204)
        status = self.herder.connector_status(name) or {}
        status = json.loads(json.dumps(status))
        if not only_failed or status.get("connector", {}).get("state") == "FAILED":
            status["connector"]["state"] = "RESTARTING"
        for task in status.get("tasks", []):
            if include_tasks and (not only_failed or task["state"] == "FAILED"):
                task["state"] = "RESTARTING"
        return web.json_response(status, status=202)

    async def get_tasks(self, request: web.Request) -> web.Response:
        name = request.match_info["connector"]
        self._known(name)
        tasks = self.herder.task_configs(name)
        return web.json_response(
            [{"id": {"connector": name, "task": i}, "config": c} for i, c in enumerate(tasks)]
        )

    async def put_task_configs(self, request: web.Request) -> web.StreamResponse:
        """Kafka Connect's internal endpoint: the worker running a connector sends its task
        configs here, and the leader writes them (signed where requests between workers are)."""
        forwarded = await self._leader_only(request)
        if forwarded is not None:
            return forwarded
        name = request.match_info["connector"]
        body = await request.read()
        herder = self.herder
        if herder.signs_requests():
            key = herder.session_key()
            if key is None:
                raise RestError(503, "Request cannot be verified: the leader has no session key yet")
            now_ms = int(time.time() * 1000)
            problem = key.check(request.method, task_configs_path(name), body, request.headers, now_ms)
            if problem is not None:
                raise RestError(*problem)
            if not self._seen_signatures.first_use(request.headers, now_ms):
                raise RestError(403, "Internal request signature was already used: refused as a replay")
        try:
            configs = json.loads(body)
        except (json.JSONDecodeError, UnicodeDecodeError) as exc:
            raise RestError(400, f"Invalid JSON in the request body: {exc}") from exc
        if not isinstance(configs, list) or not all(isinstance(c, dict) for c in configs):
            raise RestError(400, "Task configs must be a JSON array of objects, one per task")
        self._known(name)
        await herder.put_task_configs(name, [{str(k): str(v) for k, v in c.items()} for c in configs])
        return web.Response(status=204)

    def _task(self, request: web.Request) -> tuple[str, int]:
        name = request.match_info["connector"]
        self._known(name)
        try:
            task = int(request.match_info["task"])
        except ValueError as exc:
            raise RestError(404, f"Task {request.match_info['task']} not found") from exc
        if not 0 <= task < len(self.herder.task_configs(name)):
            raise RestError(404, f"Task {name}-{task} not found")
        return name, task

    async def get_task_status(self, request: web.Request) -> web.Response:
        name, task = self._task(request)
        status = self.herder.connector_status(name) or {"tasks": []}
        return web.json_response(status["tasks"][task])

    async def restart_task(self, request: web.Request) -> web.Response:
        """Restart a task where it runs: here, or forwarded to the worker its status names."""
        name, task = self._task(request)
        if self.herder.runs((name, task)):
            await self.herder.restart((name, task))
            return web.Response(status=204)
        owner = (self.herder.connector_status(name) or {"tasks": []})["tasks"][task].get("worker_id")
        if not owner or owner == self.herder.config.worker_id or request.query.get("forward") == "false":
            raise RestError(
                409, f"Cannot restart task {name}-{task}: it is not running (rebalance in progress?)"
            )
        try:
            url = self.herder.worker_url(owner)
            return await self._forward(request, url, {**request.query, "forward": "false"})
        except (ClientError, TimeoutError) as exc:
            raise RestError(
                409, f"Cannot restart task {name}-{task}: worker {owner} did not answer ({exc})"
            ) from exc

    async def get_offsets(self, request: web.Request) -> web.Response:
        name = request.match_info["connector"]
        self._known(name)
        return web.json_response({"offsets": await self.herder.connector_offsets(name)})

    def _offsets_modifiable(self, name: str) -> None:
        """KIP-875's preconditions, with Kafka Connect's answers: the connector exists, is
        STOPPED (none of its tasks runs)."""
        self._known(name)
        if not self.herder.stopped(name):
            raise RestError(
                400,
                "Connectors must be in the STOPPED state before their offsets can be modified. This can be "
                "done for the specified connector by issuing a 'PUT' request to the "
                f"'/connectors/{name}/stop' endpoint",
            )

    async def alter_offsets(self, request: web.Request) -> web.StreamResponse:
        name = request.match_info["connector"]
        self._offsets_modifiable(name)
        body = await self._body(request)
        entries = body.get("offsets") if isinstance(body, dict) else None
        if not isinstance(entries, list) or not entries:
            raise RestError(400, "The offsets to be altered must be given as a non-empty 'offsets' array")
        changes = []
        for entry in entries:
            partition = entry.get("partition") if isinstance(entry, dict) else None
            offset = entry.get("offset") if isinstance(entry, dict) else None
            if not isinstance(partition, dict) or not (offset is None or isinstance(offset, dict)):
                raise RestError(400, 'Each offset must be {"partition": {...}, "offset": {...} or null}')
            changes.append((partition, offset))
        forwarded = await self._leader_only(request)
        if forwarded is not None:
            return forwarded
        try:
            await self.herder.alter_offsets(name, changes)
        except OffsetsRefused as exc:
            raise RestError(400, str(exc)) from exc
        return web.json_response({"message": "The offsets for this connector have been altered successfully"})

    async def reset_offsets(self, request: web.Request) -> web.StreamResponse:
        name = request.match_info["connector"]
        self._offsets_modifiable(name)
        forwarded = await self._leader_only(request)
        if forwarded is not None:
            return forwarded
        try:
            await self.herder.reset_offsets(name)
        except OffsetsRefused as exc:
            raise RestError(400, str(exc)) from exc
        return web.json_response({"message": "The offsets for this connector have been reset successfully"})

    async def list_plugins(self, request: web.Request) -> web.Response:
        found = [
            {"class": f"{p.__module__}.{p.__qualname__}", "type": p.type, "version": p.version}
            for p in plugins().values()
        ]
        return web.json_response(sorted(found, key=lambda p: p["class"]))

    def _plugin(self, request: web.Request) -> Any:
        plugin = find_plugin(request.match_info["pluginName"])
        if plugin is None:
            raise RestError(404, f"Unknown plugin {request.match_info['pluginName']}")
        return plugin

    async def plugin_config(self, request: web.Request) -> web.Response:
        return web.json_response([d.definition() for d in self._plugin(request).all_config_defs()])

    async def validate(self, request: web.Request) -> web.Response:
        plugin = self._plugin(request)
        body = await self._body(request)
        if not isinstance(body, dict):
            raise RestError(400, "The connector configuration must be a JSON object")
        named = find_plugin(str(body.get("connector.class", "")))
        if "connector.class" in body and named is not plugin:
            raise RestError(400, "Included connector type does not match request type")
        config = _string_values(body)
        config.setdefault("connector.class", request.match_info["pluginName"])
        problems = {p.name: p.message for p in self._problems(plugin, config)}
        definitions = plugin.all_config_defs()
        defined = {d.name for d in definitions}
        # Refused framework settings (transforms, converters...) are listed too, as Kafka lists its own.
        definitions = definitions + [ConfigDef(name) for name in problems if name not in defined]
        configs = [
            {"definition": d.definition(),
             "value": {"name": d.name, "value": config.get(d.name, d.default), "recommended_values": [],
                       "errors": [problems[d.name]] if d.name in problems else [], "visible": True}}
            for d in definitions
        ]  # fmt: skip
        return web.json_response(
            {"name": f"{plugin.__module__}.{plugin.__qualname__}", "error_count": len(problems),
             "groups": ["Common"], "configs": configs}
        )  # fmt: skip


def _string_values(config: dict[str, Any]) -> dict[str, str]:
    """A configuration's values as Kafka Connect reads a JSON object into its Map<String, String>:
    strings as they are, numbers and booleans as their JSON text, nulls left out; an object or
    an array is refused."""
    strings = {}
    for key, value in config.items():
        if isinstance(value, dict | list):
            kind = "Object" if isinstance(value, dict) else "Array"
            problem = f"Cannot deserialize value of type `java.lang.String` from {kind} value"
            raise RestError(400, f"{problem} (setting {key!r})")
        if value is not None:
            strings[key] = value if isinstance(value, str) else json.dumps(value)
    return strings


def _invalid(problems: list[ConfigProblem]) -> RestError:
    details = "\n".join(f"{p.name}: {p.message}" for p in problems)
    count = len(problems)
    return RestError(
        400, f"Connector configuration is invalid and contains the following {count} error(s):\n{details}"
    )


def _location(name: str) -> dict[str, str]:
    """The `Location` header of a created connector (its name percent-encoded, as a URI path)."""
    return {"Location": f"/connectors/{quote(name, safe='')}"}

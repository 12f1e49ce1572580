"""`/connectors`: connectors, their configs, states, statuses, restarts and topics, as Kafka
Connect's `ConnectorsResource` answers them.

Reads are answered from this worker's view. Writes are the leader's (`Forwarding`); a write
is checked here first (its JSON) and by the herder (its config), so a follower answers a bad
request itself, as the leader would.
"""

from __future__ import annotations

import json
from typing import Any
from urllib.parse import quote

from aiohttp import web

from workers.plugins.names import java_trim
from workers.rest.errors import RestError, json_body
from workers.rest.forwarding import LeaderWrites
from workers.rest.herder import known_config
from workers.storage.config_state import PAUSED, STARTED, STOPPED

INITIAL_STATES = {"RUNNING": STARTED, "PAUSED": PAUSED, "STOPPED": STOPPED}


class ConnectorsResource(LeaderWrites):
    def _info(self, name: str) -> dict[str, Any]:
        config = known_config(self.herder, name)
        tasks = [{"connector": name, "task": i} for i in range(len(self.herder.task_configs(name)))]
        return {"name": name, "config": config, "tasks": tasks, "type": self.herder.connector_type(name)}

    def _validated(self, name: str, config: Any) -> dict[str, str]:
        if not isinstance(config, dict):
            raise RestError(400, "The connector configuration must be a JSON object")
        return self.herder.validated_config(name, config)

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
        body = await json_body(request)
        if not isinstance(body, dict):
            raise RestError(400, "The request body must be a JSON object with name and config")
        name = java_trim(str(body.get("name") or ""))  # checked, with the config, by the herder
        config = body.get("config")
        if not isinstance(config, dict):
            raise RestError(400, "Connector config must be a JSON object")
        _same_name(config, name)
        initial = str(body.get("initial_state") or "RUNNING").upper()
        if initial not in INITIAL_STATES:
            raise RestError(
                400, f"Invalid initial state {body.get('initial_state')}; one of RUNNING, PAUSED, STOPPED"
            )
        validated = self._validated(name, config)
        if self.herder.connector_config(name) is not None:
            raise RestError(409, f"Connector {name} already exists")

        async def create() -> web.StreamResponse:
            await self.herder.create_connector(name, validated, INITIAL_STATES[initial])
            return web.json_response(self._info(name), status=201, headers=_location(name))

        return await self.forwarding.by_leader(request, create)

    async def get_connector(self, request: web.Request) -> web.Response:
        return web.json_response(self._info(request.match_info["connector"]))

    async def delete_connector(self, request: web.Request) -> web.StreamResponse:
        name = request.match_info["connector"]

        async def delete() -> web.StreamResponse:  # the leader knows: see stop()
            known_config(self.herder, name)
            await self.herder.delete_connector(name)
            return web.Response(status=204)

        return await self.forwarding.by_leader(request, delete)

    async def get_config(self, request: web.Request) -> web.Response:
        return web.json_response(known_config(self.herder, request.match_info["connector"]))

    async def put_config(self, request: web.Request) -> web.StreamResponse:
        name = request.match_info["connector"]
        body = await json_body(request)
        if isinstance(body, dict):
            _same_name(body, name)
        validated = self._validated(name, body)
        existed = self.herder.connector_config(name) is not None

        async def put() -> web.StreamResponse:
            await self.herder.put_connector_config(name, validated)
            headers = {} if existed else _location(name)
            return web.json_response(self._info(name), status=200 if existed else 201, headers=headers)

        return await self.forwarding.by_leader(request, put)

    async def patch_config(self, request: web.Request) -> web.StreamResponse:
        name = request.match_info["connector"]
        current = dict(known_config(self.herder, name))
        body = await json_body(request)
        if not isinstance(body, dict):
            raise RestError(400, "The patch must be a JSON object")
        for key, value in body.items():
            if value is None:
                current.pop(key, None)
            else:
                current[key] = str(value)
        validated = self._validated(name, current)

        async def patch() -> web.StreamResponse:
            await self.herder.put_connector_config(name, validated)
            return web.json_response(self._info(name))

        return await self.forwarding.by_leader(request, patch)

    async def get_status(self, request: web.Request) -> web.Response:
        name = request.match_info["connector"]
        status = self.herder.connector_status(name)
        if status is None:
            raise RestError(404, f"No status found for connector {name}")
        return web.json_response(status)

    async def _set_target(self, request: web.Request, state: str) -> None:
        name = request.match_info["connector"]
        known_config(self.herder, name)
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
        async def stop() -> web.StreamResponse:
            await self._set_target(request, STOPPED)
            return web.Response(status=204)

        return await self.forwarding.by_leader(request, stop)

    async def restart_connector(self, request: web.Request) -> web.StreamResponse:
        name = request.match_info["connector"]
        known_config(self.herder, name)
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
        return web.json_response({name: {"topics": self.herder.active_topics(name)}})

    async def reset_topics(self, request: web.Request) -> web.Response:
        self._topic_tracking(reset=True)
        await self.herder.reset_topics(request.match_info["connector"])
        return web.Response(status=202)


def _same_name(config: dict[str, Any], name: str) -> None:
    """A config's own `name`, if it has one, must be the connector's."""
    if config.get("name") not in (None, name):
        raise RestError(
            400,
            f"Connector name configuration ({config['name']}) doesn't match connector name in the URL "
            f"({name})",
        )


def _location(name: str) -> dict[str, str]:
    """The `Location` header of a created connector (its name percent-encoded, as a URI path)."""
    return {"Location": f"/connectors/{quote(name, safe='')}"}

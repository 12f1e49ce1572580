"""`/connector-plugins`: the plugins installed, each one's settings, and a config validated
against its plugin without creating anything, as Kafka Connect's `ConnectorPluginsResource`
answers them."""

from __future__ import annotations

from typing import Any

from aiohttp import web

from workers.config.connector_validation import string_values
from workers.plugins.api import ConfigDef, Connector
from workers.rest.errors import RestError, json_body
from workers.rest.herder import Herder


class PluginsResource:
    def __init__(self, herder: Herder) -> None:
        self.herder = herder

    async def list_plugins(self, request: web.Request) -> web.Response:
        found = [
            {"class": f"{p.__module__}.{p.__qualname__}", "type": p.type, "version": p.version}
            for p in self.herder.plugins().values()
        ]
        return web.json_response(sorted(found, key=lambda p: p["class"]))

    def _plugin(self, request: web.Request) -> type[Connector]:
        plugin = self.herder.find_plugin(request.match_info["pluginName"])
        if plugin is None:
            raise RestError(404, f"Unknown plugin {request.match_info['pluginName']}")
        return plugin

    async def plugin_config(self, request: web.Request) -> web.Response:
        return web.json_response([d.definition() for d in self._plugin(request).all_config_defs()])

    async def validate(self, request: web.Request) -> web.Response:
        plugin = self._plugin(request)
        body = await json_body(request)
        if not isinstance(body, dict):
            raise RestError(400, "The connector configuration must be a JSON object")
        named = self.herder.find_plugin(str(body.get("connector.class", "")))
        if "connector.class" in body and named is not plugin:
            raise RestError(400, "Included connector type does not match request type")
        config = string_values(body)
        config.setdefault("connector.class", request.match_info["pluginName"])
        problems = {p.name: p.message for p in self.herder.config_problems(plugin, config)}
        definitions = plugin.all_config_defs()
        defined = {d.name for d in definitions}
        # Refused framework settings (transforms, converters...) are listed too, as Kafka lists its own.
        definitions = definitions + [ConfigDef(name) for name in problems if name not in defined]
        configs: list[dict[str, Any]] = [
            {"definition": d.definition(),
             "value": {"name": d.name, "value": config.get(d.name, d.default), "recommended_values": [],
                       "errors": [problems[d.name]] if d.name in problems else [], "visible": True}}
            for d in definitions
        ]  # fmt: skip
        return web.json_response(
            {"name": f"{plugin.__module__}.{plugin.__qualname__}", "error_count": len(problems),
             "groups": ["Common"], "configs": configs}
        )  # fmt: skip

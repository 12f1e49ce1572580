"""The worker's REST API as an OpenAPI 3.0 document, served at `GET /openapi.json`.

The routes, parameters and bodies of Kafka Connect's REST API as this worker serves them
(rest.py), with the statuses each answers. Clients can be generated from it, and
property-based request generators (schemathesis, bench/fuzz.py and
tests/integration/test_rest_fuzz.py) drive the API from it: whatever they send, a route
answers a status listed here and never a 5xx for bad input.
"""

from __future__ import annotations

from typing import Any

from connect_rebalance import __version__

_ERROR = {
    "type": "object",
    "required": ["error_code", "message"],
    "properties": {"error_code": {"type": "integer"}, "message": {"type": "string"}},
}
_CONFIG = {"type": "object", "additionalProperties": {"type": "string"}}
_ANY = {"type": "object", "additionalProperties": True}
_NAME = {"name": "name", "in": "path", "required": True, "schema": {"type": "string"}}
_PLUGIN = {"name": "plugin", "in": "path", "required": True, "schema": {"type": "string"}}
_TASK = {"name": "task", "in": "path", "required": True, "schema": {"type": "integer"}}
_FORWARD = {"name": "forward", "in": "query", "required": False, "schema": {"type": "boolean"}}
_LOGGER = {"name": "logger", "in": "path", "required": True, "schema": {"type": "string"}}
_LEVEL = {
    "type": "object",
    "properties": {"level": {"type": "string"}, "last_modified": {"type": "integer", "nullable": True}},
}
_SCOPE = {
    "name": "scope",
    "in": "query",
    "required": False,
    "schema": {"type": "string", "enum": ["worker", "cluster"]},
}


def _answers(*statuses: int, body: dict[str, Any] | None = None) -> dict[str, Any]:
    """Each status with its body: `body` for 2xx (JSON), Kafka Connect's error for the others."""
    out: dict[str, Any] = {}
    for status in statuses:
        if status >= 400:
            schema = _ERROR
        elif status == 204 or body is None:
            out[str(status)] = {"description": "done"}
            continue
        else:
            schema = body
        out[str(status)] = {"description": "", "content": {"application/json": {"schema": schema}}}
    return out


def _json_body(schema: dict[str, Any]) -> dict[str, Any]:
    return {"required": True, "content": {"application/json": {"schema": schema}}}


def _operation(
    summary: str,
    answers: dict[str, Any],
    parameters: list[dict[str, Any]] | None = None,
    body: dict[str, Any] | None = None,
) -> dict[str, Any]:
    operation: dict[str, Any] = {"summary": summary, "parameters": parameters or [], "responses": answers}
    if body is not None:
        operation["requestBody"] = _json_body(body)
    return operation


# Statuses any route may answer besides its own: 401/403 (authentication, rest_security.py),
# 409 (a rebalance under way, or a follower asked not to forward), 503 (still starting).
_COMMON = (401, 403, 409, 503)


def document() -> dict[str, Any]:
    connector = {
        "type": "object",
        "properties": {
            "name": {"type": "string"},
            "config": _CONFIG,
            "tasks": {"type": "array"},
            "type": {"type": "string"},
        },
    }
    create = {
        "type": "object",
        "required": ["name", "config"],
        "properties": {
            "name": {"type": "string"},
            "config": _CONFIG,
            "initial_state": {"type": "string", "enum": ["RUNNING", "PAUSED", "STOPPED"]},
        },
    }
    patch = {"type": "object", "additionalProperties": {"type": "string", "nullable": True}}
    named = [_NAME, _FORWARD]
    paths = {
        "/": {"get": _operation("Worker version and Kafka cluster id", _answers(200, body=_ANY))},
        "/health": {"get": _operation("Whether the worker has started", _answers(200, 503, body=_ANY))},
        "/metrics": {"get": _operation("Prometheus text", {"200": {"description": "text/plain metrics"}})},
        "/openapi.json": {"get": _operation("This document", _answers(200, body=_ANY))},
        "/connectors": {
            "get": _operation(
                "Connector names, or their status and info with ?expand=",
                _answers(200, *_COMMON, body={}),
                [
                    {
                        "name": "expand",
                        "in": "query",
                        "required": False,
                        "explode": True,
                        "schema": {"type": "array", "items": {"type": "string", "enum": ["status", "info"]}},
                    }
                ],
            ),
            "post": _operation(
                "Create a connector", _answers(201, 400, 404, *_COMMON, body=connector), [_FORWARD], create
            ),
        },
        "/connectors/{name}": {
            "get": _operation(
                "A connector's config and tasks", _answers(200, 404, *_COMMON, body=connector), named
            ),
            "delete": _operation("Delete a connector", _answers(204, 404, *_COMMON), named),
        },
        "/connectors/{name}/config": {
            "get": _operation("A connector's config", _answers(200, 404, *_COMMON, body=_CONFIG), named),
            "put": _operation(
                "Create or replace a connector's config",
                _answers(200, 201, 400, 404, *_COMMON, body=connector),
                named,
                _CONFIG,
            ),
            "patch": _operation(
                "Change some of a connector's settings (null removes one)",
                _answers(200, 400, 404, *_COMMON, body=connector),
                named,
                patch,
            ),
        },
        "/connectors/{name}/status": {
            "get": _operation(
                "A connector's and its tasks' states", _answers(200, 404, *_COMMON, body=_ANY), named
            )
        },
        **{
            f"/connectors/{{name}}/{verb}": {
                "put": _operation(f"{verb.capitalize()} a connector", _answers(202, 404, *_COMMON), named)
            }
            for verb in ("pause", "resume", "stop")
        },
        "/connectors/{name}/restart": {
            "post": _operation(
                "Restart a connector (and its tasks)",
                _answers(200, 202, 204, 404, *_COMMON, body=_ANY),
                [
                    *named,
                    {"name": "includeTasks", "in": "query", "required": False, "schema": {"type": "boolean"}},
                    {"name": "onlyFailed", "in": "query", "required": False, "schema": {"type": "boolean"}},
                ],
            ),
        },
        "/connectors/{name}/tasks": {
            "get": _operation(
                "A connector's task configs", _answers(200, 404, *_COMMON, body={"type": "array"}), named
            ),
            "post": _operation(
                "Internal: the leader's task configs, signed (inter.worker.key)",
                _answers(204, 400, 404, *_COMMON),
                named,
                {"type": "array", "items": _CONFIG},
            ),
        },
        "/connectors/{name}/tasks/{task}/status": {
            "get": _operation("A task's state", _answers(200, 404, *_COMMON, body=_ANY), [_NAME, _TASK]),
        },
        "/connectors/{name}/tasks/{task}/restart": {
            "post": _operation("Restart a task", _answers(204, 404, *_COMMON), [_NAME, _TASK, _FORWARD]),
        },
        "/connectors/{name}/offsets": {
            "get": _operation(
                "A connector's committed offsets", _answers(200, 404, *_COMMON, body=_ANY), named
            ),
            "patch": _operation(
                "Alter a stopped connector's offsets (KIP-875)",
                _answers(200, 400, 404, *_COMMON, body=_ANY),
                named,
                {"type": "object", "required": ["offsets"], "properties": {"offsets": {"type": "array"}}},
            ),
            "delete": _operation(
                "Reset a stopped connector's offsets (KIP-875)",
                _answers(200, 400, 404, *_COMMON, body=_ANY),
                named,
            ),
        },
        "/connectors/{name}/topics": {
            "get": _operation(
                "The topics the connector used since its creation or the last reset",
                _answers(200, *_COMMON, body=_ANY),
                named,
            ),
        },
        "/connectors/{name}/topics/reset": {
            "put": _operation("Forget the connector's active topics", _answers(202, *_COMMON), named),
        },
        "/connector-plugins": {
            "get": _operation(
                "The connector plugins",
                _answers(200, *_COMMON, body={"type": "array"}),
                [{"name": "connectorsOnly", "in": "query", "required": False, "schema": {"type": "boolean"}}],
            ),
        },
        "/connector-plugins/{plugin}/config": {
            "get": _operation(
                "A plugin's settings", _answers(200, 404, *_COMMON, body={"type": "array"}), [_PLUGIN]
            ),
        },
        "/admin/loggers": {
            "get": _operation(
                "The loggers whose level is set, and root",
                _answers(200, *_COMMON, body={"type": "object", "additionalProperties": _LEVEL}),
            ),
        },
        "/admin/loggers/{logger}": {
            "get": _operation("A logger's level", _answers(200, 404, *_COMMON, body=_LEVEL), [_LOGGER]),
            "put": _operation(
                "Set the level of a logger and the loggers under it, on this worker or every worker",
                _answers(200, 204, 400, 404, *_COMMON, body={"type": "array", "items": {"type": "string"}}),
                [_LOGGER, _SCOPE],
                {"type": "object", "required": ["level"], "properties": {"level": {"type": "string"}}},
            ),
        },
        "/connector-plugins/{plugin}/config/validate": {
            "put": _operation(
                "Validate a config against a plugin",
                _answers(200, 400, 404, *_COMMON, body=_ANY),
                [_PLUGIN],
                _CONFIG,
            ),
        },
    }
    return {
        "openapi": "3.0.3",
        "info": {"title": "connect-rebalance worker REST API (Kafka Connect's)", "version": __version__},
        "paths": paths,
    }

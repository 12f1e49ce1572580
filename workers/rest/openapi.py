"""The worker's REST API as an OpenAPI 3.0 document, served at `GET /openapi.json`.

Where it describes Kafka Connect's REST API it says what Kafka Connect's own document says (the
one Kafka's build generates with swagger from its JAX-RS resources): the same paths and
path-parameter names, the same operationIds (Kafka's Java method names), summaries and query
parameters, and bodies shaped as Kafka's entity classes, under their names in
`components/schemas`. So a client generated from either document calls a worker with the same
methods and models, and tests/unit/test_openapi_matches_kafka.py compares the two operation by
operation (tests/fixtures/kafka-connect-openapi-operations.json holds Kafka's side).

What this document has that Kafka's lacks is marked as this worker's own:
- routes Kafka Connect does not serve (`/metrics`, `/openapi.json`) and Kafka's inter-worker
  endpoint, which its document hides, carry the tag `connect-rebalance`;
- a parameter or a property Kafka's document lacks carries `x-connect-rebalance`, saying why:
  `expand`, which Kafka Connect reads from the query without declaring it; the Spark runtime in
  `/`; a task's Spark progress in its status;
- every operation lists the statuses it answers, with Kafka Connect's ErrorMessage for the
  errors, where swagger writes a single `default` answer. Property-based request generators
  (schemathesis: bench/fuzz.py, tests/integration/test_rest_fuzz.py) check that whatever they
  send, a route answers a status listed here and never a 5xx for bad input.

Kafka hides the `forward` parameter (what one worker adds when it passes a request on to
another), and so does this document.
"""

from __future__ import annotations

import copy
from http import HTTPStatus
from typing import Any

from connect_rebalance import __version__

OURS = "connect-rebalance"  # the tag of the operations Kafka Connect's document does not have
EXTENSION = f"x-{OURS}"  # on a parameter or a property Kafka Connect's document does not have: why

# Statuses any route may answer besides its own: 401/403 (authentication, security.py),
# 409 (a rebalance under way, or a follower asked not to forward), 503 (still starting).
_COMMON = (401, 403, 409, 503)


def _ref(name: str) -> dict[str, Any]:
    return {"$ref": f"#/components/schemas/{name}"}


def _strings(nullable: bool = False) -> dict[str, Any]:
    """Java's Map<String, String> (a config): string values; `nullable` for a PATCH, where a null
    removes the setting."""
    return _map({"type": "string", "nullable": True} if nullable else {"type": "string"})


def _array(items: dict[str, Any]) -> dict[str, Any]:
    return {"type": "array", "items": items}


def _map(values: dict[str, Any]) -> dict[str, Any]:
    """A JSON object by name (Java's Map<String, ...>)."""
    return {"type": "object", "additionalProperties": values}


def _ours(schema: dict[str, Any], why: str) -> dict[str, Any]:
    return {**schema, EXTENSION: why}


_STRING = {"type": "string"}
_NULLABLE_STRING = {"type": "string", "nullable": True}
_INT = {"type": "integer", "format": "int32"}
_BOOLEAN_FALSE = {"type": "boolean", "default": False}
_ANY_OBJECT = {"type": "object", "additionalProperties": True}


def _path(name: str, schema: dict[str, Any] = _STRING) -> dict[str, Any]:
    return {"name": name, "in": "path", "required": True, "schema": schema}


def _query(name: str, description: str, schema: dict[str, Any]) -> dict[str, Any]:
    return {"name": name, "in": "query", "required": False, "description": description, "schema": schema}


CONNECTOR = _path("connector")
TASK = _path("task", _INT)
PLUGIN = _path("pluginName")
LOGGER = _path("logger")


def schemas() -> dict[str, Any]:
    """Kafka Connect's entity classes (connect/runtime/.../rest/entities), as their JSON is
    written: the names of their @JsonProperty fields, the lower-case enums."""
    connector_type = {"type": "string", "enum": ["source", "sink", "unknown"]}
    state = {
        "state": _STRING,
        "worker_id": _STRING,
        "trace": {**_STRING, "description": "The error's stack trace, for a FAILED connector or task"},
    }
    return {
        "ServerInfo": {
            "type": "object",
            "properties": {
                "version": _STRING,
                "commit": _STRING,
                "kafka_cluster_id": _STRING,
                "spark_runtime": _ours(
                    _ANY_OBJECT,
                    "The worker's Spark runtime: a task assigned while it starts waits for it",
                ),
            },
        },
        "WorkerStatus": {"type": "object", "properties": {"status": _STRING, "message": _STRING}},
        "ErrorMessage": {
            "type": "object",
            "required": ["error_code", "message"],
            "properties": {"error_code": _INT, "message": _STRING},
        },
        "ConnectorTaskId": {"type": "object", "properties": {"connector": _STRING, "task": _INT}},
        "ConnectorInfo": {
            "type": "object",
            "properties": {
                "name": _STRING,
                "config": _strings(),
                "tasks": _array(_ref("ConnectorTaskId")),
                "type": connector_type,
            },
        },
        "CreateConnectorRequest": {
            "type": "object",
            "required": ["name", "config"],
            "properties": {
                "name": _STRING,
                "config": _strings(),
                "initial_state": {"type": "string", "enum": ["RUNNING", "PAUSED", "STOPPED"]},
            },
        },
        "ConnectorState": {"type": "object", "properties": state},
        "TaskState": {
            "type": "object",
            "properties": {
                "id": _INT,
                **state,
                "progress": _ours(
                    _ANY_OBJECT, "The task's Spark streaming progress, on the worker running it"
                ),
            },
        },
        "ConnectorStateInfo": {
            "type": "object",
            "properties": {
                "name": _STRING,
                "connector": _ref("ConnectorState"),
                "tasks": _array(_ref("TaskState")),
                "type": connector_type,
            },
        },
        "TaskInfo": {"type": "object", "properties": {"id": _ref("ConnectorTaskId"), "config": _strings()}},
        "ConnectorOffset": {
            "type": "object",
            "properties": {
                "partition": _ANY_OBJECT,
                "offset": {**_ANY_OBJECT, "nullable": True, "description": "null resets the partition"},
            },
        },
        "ConnectorOffsets": {
            "type": "object",
            "required": ["offsets"],
            "properties": {"offsets": _array(_ref("ConnectorOffset"))},
        },
        "Message": {"type": "object", "properties": {"message": _STRING}},
        "ActiveTopicsInfo": {"type": "object", "properties": {"topics": _array(_STRING)}},
        "PluginInfo": {
            "type": "object",
            "properties": {"class": _STRING, "type": _STRING, "version": _STRING},
        },
        "ConfigKeyInfo": {
            "type": "object",
            "properties": {
                "name": _STRING,
                "type": _STRING,
                "required": {"type": "boolean"},
                "default_value": _NULLABLE_STRING,
                "importance": _STRING,
                "documentation": _NULLABLE_STRING,
                "group": _NULLABLE_STRING,
                "order": _INT,
                "width": _STRING,
                "display_name": _STRING,
                "dependents": _array(_STRING),
            },
        },
        "ConfigValueInfo": {
            "type": "object",
            "properties": {
                "name": _STRING,
                "value": _NULLABLE_STRING,
                "recommended_values": _array(_STRING),
                "errors": _array(_STRING),
                "visible": {"type": "boolean"},
            },
        },
        "ConfigInfo": {
            "type": "object",
            "properties": {"definition": _ref("ConfigKeyInfo"), "value": _ref("ConfigValueInfo")},
        },
        "ConfigInfos": {
            "type": "object",
            "properties": {
                "name": _STRING,
                "error_count": _INT,
                "groups": _array(_STRING),
                "configs": _array(_ref("ConfigInfo")),
            },
        },
        "LoggerLevel": {
            "type": "object",
            "properties": {
                "level": _STRING,
                "last_modified": {"type": "integer", "format": "int64", "nullable": True},
            },
        },
    }


def _answer(
    status: int, schema: dict[str, Any] | None, media_type: str = "application/json"
) -> dict[str, Any]:
    answer: dict[str, Any] = {"description": HTTPStatus(status).phrase}
    if schema is not None:
        answer["content"] = {media_type: {"schema": schema}}
    return answer


def _answers(*statuses: int, body: dict[str, Any] | None = None) -> dict[str, Any]:
    """Each status with its body: `body` for a 2xx other than 204, Kafka Connect's ErrorMessage
    for the errors."""
    out = {}
    for status in statuses:
        schema = _ref("ErrorMessage") if status >= 400 else None if status == 204 else body
        out[str(status)] = _answer(status, schema)
    return out


def _operation(
    operation_id: str,
    summary: str | None,
    answers: dict[str, Any],
    parameters: list[dict[str, Any]] | None = None,
    body: dict[str, Any] | None = None,
    description: str | None = None,
    ours: bool = False,
) -> dict[str, Any]:
    """`summary` None where Kafka's method has no @Operation (its document has none either)."""
    operation: dict[str, Any] = {"operationId": operation_id}
    if ours:
        operation["tags"] = [OURS]
    if summary is not None:
        operation["summary"] = summary
    if description is not None:
        operation["description"] = description
    operation["parameters"] = parameters or []
    if body is not None:
        operation["requestBody"] = {"required": True, "content": {"application/json": {"schema": body}}}
    operation["responses"] = answers
    return operation


def _state_change(verb: str, state: str, status: int) -> dict[str, Any]:
    """`PUT /connectors/{connector}/<verb>`: Kafka's stopConnector, pauseConnector and
    resumeConnector; `status` is Kafka Connect's answer: 204 to a stop, 202 to a pause or a resume."""
    return {
        "put": _operation(
            f"{verb}Connector",
            f"{verb.capitalize()} the specified connector",
            _answers(status, 404, *_COMMON),
            [CONNECTOR],
            description="This operation is idempotent and has no effects if the connector is already "
            + state,
        )
    }


def paths() -> dict[str, Any]:
    """Every route of server.py and loggers.py under the same path template, Kafka Connect's
    under its operationId and summary."""
    expand = _ours(
        {
            "name": "expand",
            "in": "query",
            "required": False,
            "explode": True,
            "description": "status and/or info: a map of the connectors' status and info, by name",
            "schema": _array({"type": "string", "enum": ["status", "info"]}),
        },
        "Kafka Connect reads it from the query string without declaring it: its document lacks it",
    )
    expanded = {
        "type": "object",
        "properties": {"status": _ref("ConnectorStateInfo"), "info": _ref("ConnectorInfo")},
    }
    listed = {"oneOf": [_array(_STRING), _map(expanded)]}
    connector = [CONNECTOR]
    return {
        "/": {
            "get": _operation(
                "serverInfo",
                "Get details about this Connect worker and the ID of the Kafka cluster it is connected to",
                _answers(200, body=_ref("ServerInfo")),
            )
        },
        "/health": {
            "get": _operation(
                "healthCheck",
                "Health check endpoint to verify worker readiness and liveness",
                {"200": _answer(200, _ref("WorkerStatus")), "503": _answer(503, _ref("WorkerStatus"))},
            )
        },
        "/metrics": {
            "get": _operation(
                "metrics",
                "The worker's metrics in Prometheus' text format",
                {"200": _answer(200, _STRING, "text/plain")},
                ours=True,
            )
        },
        "/openapi.json": {
            "get": _operation("openApiDocument", "This document", _answers(200, body=_ANY_OBJECT), ours=True)
        },
        "/ui": {
            "get": _operation(
                "webView",
                "The cluster's web view (an HTML page)",
                {"200": _answer(200, _STRING, "text/html")},
                ours=True,
            )
        },
        "/ui/state": {
            "get": _operation(
                "webViewState",
                "What the web view shows: the cluster, the group's timeline, rendered parts",
                _answers(200, body=_ANY_OBJECT),
                ours=True,
            )
        },
        "/ui/rates": {
            "get": _operation(
                "taskRowRates",
                "Rows per second of the tasks this worker runs",
                _answers(200, body=_ANY_OBJECT),
                ours=True,
            )
        },
        "/connectors": {
            "get": _operation(
                "listConnectors", "List all active connectors", _answers(200, *_COMMON, body=listed), [expand]
            ),
            "post": _operation(
                "createConnector",
                "Create a new connector",
                _answers(201, 400, 404, *_COMMON, body=_ref("ConnectorInfo")),
                body=_ref("CreateConnectorRequest"),
            ),
        },
        "/connectors/{connector}": {
            "get": _operation(
                "getConnector",
                "Get the details for the specified connector",
                _answers(200, 404, *_COMMON, body=_ref("ConnectorInfo")),
                connector,
            ),
            "delete": _operation(
                "destroyConnector", "Delete the specified connector", _answers(204, 404, *_COMMON), connector
            ),
        },
        "/connectors/{connector}/config": {
            "get": _operation(
                "getConnectorConfig",
                "Get the configuration for the specified connector",
                _answers(200, 404, *_COMMON, body=_strings()),
                connector,
            ),
            "put": _operation(
                "putConnectorConfig",
                "Create or reconfigure the specified connector",
                _answers(200, 201, 400, 404, *_COMMON, body=_ref("ConnectorInfo")),
                connector,
                _strings(),
            ),
            "patch": _operation(
                "patchConnectorConfig",
                None,
                _answers(200, 400, 404, *_COMMON, body=_ref("ConnectorInfo")),
                connector,
                _strings(nullable=True),
                description="Change some of a connector's settings: a null value removes the setting",
            ),
        },
        "/connectors/{connector}/status": {
            "get": _operation(
                "getConnectorStatus",
                "Get the status for the specified connector",
                _answers(200, 404, *_COMMON, body=_ref("ConnectorStateInfo")),
                connector,
            )
        },
        **{
            f"/connectors/{{connector}}/{verb}": _state_change(verb, state, status)
            for verb, state, status in (
                ("stop", "stopped", 204),
                ("pause", "paused", 202),
                ("resume", "running", 202),
            )
        },
        "/connectors/{connector}/restart": {
            "post": _operation(
                "restartConnector",
                "Restart the specified connector",
                _answers(202, 204, 404, *_COMMON, body=_ref("ConnectorStateInfo")),
                [
                    CONNECTOR,
                    _query("includeTasks", "Whether to also restart tasks", _BOOLEAN_FALSE),
                    _query(
                        "onlyFailed",
                        "Whether to only restart failed tasks/connectors",
                        _BOOLEAN_FALSE,
                    ),
                ],
            )
        },
        "/connectors/{connector}/tasks": {
            "get": _operation(
                "getTaskConfigs",
                "List all tasks and their configurations for the specified connector",
                _answers(200, 404, *_COMMON, body=_array(_ref("TaskInfo"))),
                connector,
            ),
            "post": _operation(
                "putTaskConfigs",
                "This operation is only for inter-worker communications",
                _answers(204, 400, 404, *_COMMON),
                connector,
                _array(_strings()),
                description=(
                    "The task configs the worker running a connector generated, sent to the leader, "
                    "signed where inter.worker.key is set. Kafka Connect's document hides it."
                ),
                ours=True,
            ),
        },
        "/connectors/{connector}/tasks/{task}/status": {
            "get": _operation(
                "getTaskStatus",
                "Get the state of the specified task for the specified connector",
                _answers(200, 404, *_COMMON, body=_ref("TaskState")),
                [CONNECTOR, TASK],
            )
        },
        "/connectors/{connector}/tasks/{task}/restart": {
            "post": _operation(
                "restartTask",
                "Restart the specified task for the specified connector",
                _answers(204, 404, *_COMMON),
                [CONNECTOR, TASK],
            )
        },
        "/connectors/{connector}/offsets": {
            "get": _operation(
                "getOffsets",
                "Get the current offsets for the specified connector",
                _answers(200, 404, *_COMMON, body=_ref("ConnectorOffsets")),
                connector,
            ),
            "patch": _operation(
                "alterConnectorOffsets",
                "Alter the offsets for the specified connector",
                _answers(200, 400, 404, *_COMMON, body=_ref("Message")),
                connector,
                _ref("ConnectorOffsets"),
            ),
            "delete": _operation(
                "resetConnectorOffsets",
                "Reset the offsets for the specified connector",
                _answers(200, 400, 404, *_COMMON, body=_ref("Message")),
                connector,
            ),
        },
        "/connectors/{connector}/topics": {
            "get": _operation(
                "getConnectorActiveTopics",
                "Get the list of topics actively used by the specified connector",
                _answers(200, *_COMMON, body=_map(_ref("ActiveTopicsInfo"))),
                connector,
            )
        },
        "/connectors/{connector}/topics/reset": {
            "put": _operation(
                "resetConnectorActiveTopics",
                "Reset the list of topics actively used by the specified connector",
                _answers(202, *_COMMON),
                connector,
            )
        },
        "/connector-plugins": {
            "get": _operation(
                "listConnectorPlugins",
                "List all connector plugins installed",
                _answers(200, *_COMMON, body=_array(_ref("PluginInfo"))),
                [
                    _query(
                        "connectorsOnly",
                        "Whether to list only connectors instead of all plugins",
                        {"type": "boolean", "default": True},
                    )
                ],
            )
        },
        "/connector-plugins/{pluginName}/config": {
            "get": _operation(
                "getConnectorConfigDef",
                "Get the configuration definition for the specified pluginName",
                _answers(200, 404, *_COMMON, body=_array(_ref("ConfigKeyInfo"))),
                [PLUGIN],
            )
        },
        "/connector-plugins/{pluginName}/config/validate": {
            "put": _operation(
                "validateConfigs",
                "Validate the provided configuration against the configuration definition for the "
                "specified pluginName",
                _answers(200, 400, 404, *_COMMON, body=_ref("ConfigInfos")),
                [PLUGIN],
                _strings(),
            )
        },
        "/admin/loggers": {
            "get": _operation(
                "listLoggers",
                "List the current loggers that have their levels explicitly set and their log levels",
                _answers(200, *_COMMON, body=_map(_ref("LoggerLevel"))),
            )
        },
        "/admin/loggers/{logger}": {
            "get": _operation(
                "getLogger",
                "Get the log level for the specified logger",
                _answers(200, 404, *_COMMON, body=_ref("LoggerLevel")),
                [LOGGER],
            ),
            "put": _operation(
                "setLevel",
                "Set the log level for the specified logger",
                _answers(200, 204, 400, 404, *_COMMON, body=_array(_STRING)),
                [
                    LOGGER,
                    _query(
                        "scope",
                        "The scope for the logging modification (single-worker, cluster-wide, etc.)",
                        {"type": "string", "default": "worker"},
                    ),
                ],
                {**_strings(), "required": ["level"], "properties": {"level": _STRING}},
            ),
        },
    }


def document() -> dict[str, Any]:
    """A new document each call: callers (the route, tests) may change theirs."""
    built = {
        "openapi": "3.0.3",
        "info": {
            "title": "Kafka Connect REST API",
            "description": "This is the documentation of the [Apache Kafka](https://kafka.apache.org) "
            "Connect REST API.",
            "license": {"name": "Apache 2.0", "url": "https://www.apache.org/licenses/LICENSE-2.0.html"},
            "version": __version__,
            EXTENSION: f"Served by a connect-rebalance {__version__} worker",
        },
        "tags": [
            {
                "name": OURS,
                "description": "Served by connect-rebalance workers, not in Kafka Connect's document",
            }
        ],
        "paths": paths(),
        "components": {"schemas": schemas()},
    }
    return copy.deepcopy(built)

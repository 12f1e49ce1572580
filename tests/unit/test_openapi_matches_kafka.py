"""The workers' OpenAPI document (workers/rest/openapi.py) says what Kafka Connect's says wherever both
describe the same API, so a client generated from Kafka's document calls a worker with the same
operations, parameters and models. Kafka's side is tests/fixtures/kafka-connect-openapi-operations.json:
the operations Kafka's build generates (swagger) from its JAX-RS resources, and the JSON fields of
its entity classes, read from the Kafka sources its `source` names. What a worker serves beyond
Kafka's document is marked as its own (workers/rest/openapi.py's docstring says what and why)."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
import schemathesis

from workers.rest import openapi

pytestmark = pytest.mark.unit
KAFKA = json.loads(
    (Path(__file__).resolve().parents[1] / "fixtures" / "kafka-connect-openapi-operations.json").read_text()
)
# Kafka Connect's operations a worker does not serve, and why.
NOT_SERVED = {
    "getTasksConfig": "deprecated by KIP-970 in Kafka 3.7 for removal in 4.0 (KAFKA-15387 removed it "
    "after the fixture's commit): GET /connectors/{connector}/tasks answers the same task configs",
}
ENTITY_REF = "#/components/schemas/"


def parameters(operation: dict[str, Any], kafkas: bool) -> dict[tuple[str, str], dict[str, Any]]:
    """An operation's parameters by (in, name): Kafka's (`kafkas`, from the fixture) or the
    document's that Kafka's document has too (those not marked as the worker's own)."""
    found = {}
    for p in operation["parameters"]:
        if not kafkas and openapi.EXTENSION in p:
            continue
        default = p.get("default") if kafkas else p["schema"].get("default")
        if kafkas and default in ("true", "false"):
            default = json.loads(default)  # @DefaultValue's text, as the boolean's schema has it
        found[(p["in"], p["name"])] = {
            "required": p["required"],
            "description": p.get("description"),
            "default": default,
        }
    return found


def test_every_kafka_connect_operation_has_kafkas_method_path_operation_id_summary_and_parameters() -> None:
    paths = openapi.document()["paths"]
    problems = []
    for kafka in KAFKA["operations"]:
        where = f"{kafka['method'].upper()} {kafka['path']} ({kafka['operationId']})"
        ours = paths.get(kafka["path"], {}).get(kafka["method"])
        if kafka["operationId"] in NOT_SERVED:
            assert ours is None and kafka.get("deprecated"), where
            continue
        if ours is None:
            problems.append(f"{where}: not in the document")
            continue
        for key in ("operationId", "summary", "deprecated"):
            if ours.get(key) != kafka.get(key):
                problems.append(f"{where}: {key} {ours.get(key)!r}, Kafka's {kafka.get(key)!r}")
        if "description" in kafka and ours.get("description") != kafka["description"]:
            problems.append(
                f"{where}: description {ours.get('description')!r}, Kafka's {kafka['description']!r}"
            )
        if parameters(ours, kafkas=False) != parameters(kafka, kafkas=True):
            problems.append(
                f"{where}: parameters {parameters(ours, False)}, Kafka's {parameters(kafka, True)}"
            )
        ours_only = {p["name"] for p in ours["parameters"] if openapi.EXTENSION in p}
        if ours_only & {p["name"] for p in kafka["parameters"]}:
            problems.append(f"{where}: {ours_only} marked as the worker's own, but Kafka's document has them")
    assert not problems, "\n".join(problems)


def test_the_document_has_kafkas_info_and_marks_what_kafkas_lacks_as_the_workers_own() -> None:
    document = openapi.document()
    assert {k: document["info"][k] for k in KAFKA["info"]} == KAFKA["info"]
    kafkas = {(o["method"], o["path"]) for o in KAFKA["operations"]}
    hidden = {(o["method"], o["path"]): o["operationId"] for o in KAFKA["hidden_operations"]}
    ids = []
    for path, item in document["paths"].items():
        for method, operation in item.items():
            ids.append(operation["operationId"])
            marked = openapi.OURS in operation.get("tags", [])
            assert marked != ((method, path) in kafkas), f"{method} {path}: tagged {openapi.OURS} is {marked}"
            if (method, path) in hidden:
                assert operation["operationId"] == hidden[(method, path)], "Kafka's name for its hidden one"
    assert len(ids) == len(set(ids)), "operationIds are unique"
    assert [t["name"] for t in document["tags"]] == [openapi.OURS]


def schema_of(java_type: str) -> dict[str, Any] | None:
    """The schema swagger writes for a Java type of Kafka's resources; None for those the fixture
    does not pin down (a JAX-RS Response, void, raw bytes, a map keyed by task id)."""
    if java_type == "Map<String, String>":
        return {"type": "object", "additionalProperties": {"type": "string"}}
    if java_type.startswith("List<"):
        items = schema_of(java_type[len("List<") : -1])
        return None if items is None else {"type": "array", "items": items}
    entity = java_type.rsplit(".", 1)[-1]
    return {"$ref": ENTITY_REF + entity} if entity in KAFKA["entities"] else None


def within(ours: Any, kafkas: Any) -> bool:
    """`ours` says at least what Kafka's schema says (it may say more: a null that removes a
    setting, a required field)."""
    if isinstance(kafkas, dict):
        return isinstance(ours, dict) and all(k in ours and within(ours[k], v) for k, v in kafkas.items())
    return bool(ours == kafkas)


def test_bodies_are_kafka_connects_entities_with_their_json_fields() -> None:
    document = openapi.document()
    components = document["components"]["schemas"]
    for entity, fields in KAFKA["entities"].items():
        assert entity in components, f"Kafka's entity {entity} is not in components/schemas"
        ours = sorted(n for n, s in components[entity]["properties"].items() if openapi.EXTENSION not in s)
        assert ours == fields, f"{entity}'s JSON fields: {ours}, Kafka's {fields}"
    connector_types = KAFKA["enums"]["ConnectorType"]
    assert components["ConnectorInfo"]["properties"]["type"]["enum"] == connector_types
    assert components["ConnectorStateInfo"]["properties"]["type"]["enum"] == connector_types
    initial_state = components["CreateConnectorRequest"]["properties"]["initial_state"]["enum"]
    assert initial_state == KAFKA["enums"]["CreateConnectorRequest.InitialState"]
    for kafka in KAFKA["operations"]:
        ours = document["paths"].get(kafka["path"], {}).get(kafka["method"])
        if ours is None:  # the first test names it
            continue
        where = f"{kafka['method'].upper()} {kafka['path']}"
        taken = schema_of(kafka.get("requestBody", "void"))
        if taken is not None:
            body = ours["requestBody"]["content"]["application/json"]["schema"]
            assert within(body, taken), f"{where} takes {kafka['requestBody']}"
        answered = schema_of(kafka["returns"])
        for status, answer in ours["responses"].items():
            if not status.startswith("2"):
                continue
            if kafka["returns"] == "void":
                assert "content" not in answer, f"{where} answers nothing"
            elif answered is not None and "content" in answer:
                body = answer["content"]["application/json"]["schema"]
                assert within(body, answered), f"{where} answers {kafka['returns']}"


def references(node: Any) -> list[str]:
    if isinstance(node, dict):
        here = [node["$ref"]] if "$ref" in node else []
        return here + [r for v in node.values() for r in references(v)]
    if isinstance(node, list):
        return [r for v in node for r in references(v)]
    return []


def test_the_document_is_valid_openapi_and_every_reference_resolves() -> None:
    document = openapi.document()
    schemathesis.openapi.from_dict(document).validate()  # OpenAPI 3.0's own schema
    names = {ENTITY_REF + name for name in document["components"]["schemas"]}
    assert set(references(document)) <= names

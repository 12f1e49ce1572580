"""A slice of bench/fuzz.py's REST run in CI: schemathesis drives a real worker process's REST
API from the OpenAPI document it serves, with requests valid by the schema and not. No answer
is a 5xx, every error is Kafka Connect's {"error_code", "message"}, and every status is one the
document lists for its route. The document itself is valid OpenAPI 3.0, and what a worker
running a connector answers has the shapes it documents (Kafka Connect's entities)."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from schemathesis.errors import FailureGroup

from connect_rebalance.processes import CoordinatorProcess, connect_timings
from tests.support.group_scenario import wait_until
from tests.support.rest_fuzz import fuzz_rest, served_schema
from tests.support.worker_cluster import WorkerCluster, rest
from workers.harness.process import WorkerProcess

pytestmark = pytest.mark.integration


@pytest.fixture
def worker(tmp_path: Path) -> Iterator[WorkerProcess]:
    coordinator = CoordinatorProcess(tmp_path / "data", connect_timings(3000)).start()
    cluster = WorkerCluster(tmp_path, coordinator)
    try:
        yield cluster.start("w1")
    finally:
        cluster.stop_all()
        coordinator.kill()


def test_generated_requests_to_every_route_get_kafka_connect_answers_and_never_a_5xx(
    worker: WorkerProcess,
) -> None:
    result = fuzz_rest(worker.url, examples=60, derandomize=True)
    summary = result.summary()
    assert result.requests >= 20 * 24, summary
    assert result.server_errors == [], summary["server_error_examples"]
    assert result.not_kafka_connect_errors == [], result.not_kafka_connect_errors[:5]
    assert result.undocumented == [], summary["undocumented_statuses"]
    assert "Traceback" not in worker.log_text()


ORDERS = {"connector": "orders"}
# Each (method, path) with its path parameters and query: every read of a running connector and
# of the worker, and a validation.
CALLS: list[tuple[str, str, dict[str, Any], dict[str, Any]]] = [
    ("GET", "/", {}, {}),
    ("GET", "/health", {}, {}),
    ("GET", "/connectors", {}, {}),
    ("GET", "/connectors", {}, {"expand": ["status", "info"]}),
    ("GET", "/connectors/{connector}", ORDERS, {}),
    ("GET", "/connectors/{connector}/config", ORDERS, {}),
    ("GET", "/connectors/{connector}/status", ORDERS, {}),
    ("GET", "/connectors/{connector}/tasks", ORDERS, {}),
    ("GET", "/connectors/{connector}/tasks/{task}/status", {**ORDERS, "task": 1}, {}),
    ("GET", "/connectors/{connector}/offsets", ORDERS, {}),
    ("GET", "/connectors/{connector}/topics", ORDERS, {}),
    ("GET", "/connector-plugins", {}, {}),
    ("GET", "/connector-plugins/{pluginName}/config", {"pluginName": "VerifiableSource"}, {}),
    ("GET", "/admin/loggers", {}, {}),
    ("GET", "/admin/loggers/{logger}", {"logger": "root"}, {}),
]


def test_the_served_document_is_valid_openapi_and_a_running_connectors_answers_have_its_shapes(
    worker: WorkerProcess,
) -> None:
    schema = served_schema(worker.url)  # validated against OpenAPI 3.0's schema
    config = {
        "connector.class": "VerifiableSource",
        "topic": "orders-out",
        "tasks.max": "2",
        "throughput": "1",
    }
    create = schema["/connectors"]["POST"]
    created = create.Case(body={"name": "orders", "config": config}).call(base_url=worker.url, timeout=60)
    assert created.status_code == 201, created.text
    create.validate_response(created)

    def running() -> bool:
        status = rest("GET", f"{worker.url}/connectors/orders/status")[1]
        states = [status["connector"]["state"], *(t["state"] for t in status["tasks"])]
        return states == ["RUNNING"] * 3

    wait_until(running, 60, "the connector and its 2 tasks RUNNING")
    validate = schema["/connector-plugins/{pluginName}/config/validate"]["PUT"]
    checked = [(validate, {"pluginName": "VerifiableSource"}, {}, {**config, "tasks.max": "none"})]
    checked += [(schema[path][method], params, query, None) for method, path, params, query in CALLS]
    problems = []
    for operation, params, query, body in checked:
        case = operation.Case(path_parameters=params, query=query, **({} if body is None else {"body": body}))
        answer = case.call(base_url=worker.url, timeout=60)
        where = f"{operation.method.upper()} {case.formatted_path}"
        if answer.status_code != 200:
            problems.append(f"{where}: {answer.status_code} {answer.text[:300]}")
            continue
        try:
            operation.validate_response(answer)
        except FailureGroup as failures:
            problems.append(f"{where}: {answer.text[:300]}\n  " + "\n  ".join(map(str, failures.exceptions)))
    assert not problems, "\n".join(problems)
    assert "Traceback" not in worker.log_text()

"""The REST API in process (pytest-aiohttp's `aiohttp_client`) against a real Herder on
in-memory topics: every route's status codes and Kafka Connect's `{"error_code", "message"}`
error bodies, as Kafka Connect's REST clients read them. The same routes are driven over
HTTP against worker processes in tests/integration (test_workers, test_worker_request_safety).
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from typing import Any

import pytest
from aiohttp import web
from aiohttp.test_utils import TestClient

from connect_rebalance.work import CONNECTOR
from tests.support.memory_log import MemoryLogs
from workers.config.worker import WorkerConfig
from workers.distributed.herder import Herder
from workers.distributed.herder_api import HerderApi
from workers.rest import openapi
from workers.rest.server import RestApi

pytestmark = pytest.mark.unit
SETTINGS = {"bootstrap.servers": "localhost:9092", "group.id": "connect-cluster",
            "config.storage.topic": "configs", "offset.storage.topic": "offsets",
            "status.storage.topic": "statuses", "listeners": "http://127.0.0.1:8083",
            "spark.session.warmup": "false"}  # fmt: skip
Client = TestClient[web.Request, web.Application]


def source(name: str = "orders", **config: str) -> dict[str, Any]:
    return {"name": name, "config": {"connector.class": "VerifiableSource", "topic": "out", "tasks.max": "2",
                                     **config}}  # fmt: skip


@pytest.fixture
def herder() -> Herder:
    return Herder(WorkerConfig.from_settings(SETTINGS), logs=MemoryLogs())


@pytest.fixture
async def client(herder: Herder, aiohttp_client: Callable[[web.Application], Awaitable[Client]]) -> Client:
    herder.ready.set()  # its topics are in memory: read to their end already
    return await aiohttp_client(RestApi(HerderApi(herder)).app)


async def answer(response: Any) -> tuple[int, Any]:
    body = await response.text()
    return response.status, (await response.json() if body else None)


async def error_of(response: Any, status: int) -> str:
    """The Kafka Connect error body of a refusal: its code, and its message."""
    code, body = await answer(response)
    assert code == status, (code, body)
    assert body["error_code"] == status and isinstance(body["message"], str), body
    return str(body["message"])


# -- the worker ---------------------------------------------------------------------------


async def test_root_health_and_metrics(client: Client, herder: Herder) -> None:
    code, body = await answer(await client.get("/"))
    assert code == 200 and set(body) == {"version", "commit", "kafka_cluster_id", "spark_runtime"}
    assert body["spark_runtime"]["state"] == "NOT_STARTED", "no Spark task ran, no warm-up: no session"
    assert await answer(await client.get("/health")) == (
        200, {"status": "healthy", "message": "Worker has completed startup and is ready to handle requests."}
    )  # fmt: skip
    metrics = await client.get("/metrics")
    assert metrics.status == 200 and "connect_worker_rebalances_total 0.0" in await metrics.text()
    herder.ready.clear()  # a worker still reading its topics
    assert (await client.get("/health")).status == 503
    assert (await client.get("/")).status == 200, "answered while starting"


def test_the_openapi_document_lists_every_route_as_it_is_routed(herder: Herder) -> None:
    """Generated clients and the fuzzers reach every route, and a path parameter has the name
    the handler reads it by (Kafka Connect's: `{connector}`, `{task}`, `{pluginName}`, `{logger}`)."""
    app = RestApi(HerderApi(herder)).app
    routed = {(r.method.lower(), r.resource.canonical) for r in app.router.routes() if r.method != "HEAD"}
    documented = {(method, path) for path, item in openapi.document()["paths"].items() for method in item}
    assert routed == documented


async def test_unknown_routes_and_methods_answer_json_errors(client: Client) -> None:
    assert "Not Found" in await error_of(await client.get("/nowhere"), 404)
    assert await error_of(await client.post("/connectors/x/config", json={}), 405)


# -- connectors ---------------------------------------------------------------------------


async def test_create_get_list_and_delete_a_connector(client: Client) -> None:
    created = await client.post("/connectors", json=source())
    code, body = await answer(created)
    assert code == 201 and created.headers["Location"] == "/connectors/orders"
    assert body["name"] == "orders" and body["type"] == "source" and body["tasks"] == []
    assert body["config"] == {**source()["config"], "name": "orders"}
    assert await answer(await client.get("/connectors")) == (200, ["orders"])
    code, expanded = await answer(await client.get("/connectors?expand=status&expand=info"))
    assert code == 200 and set(expanded["orders"]) == {"status", "info"}
    assert expanded["orders"]["status"]["connector"] == {"state": "UNASSIGNED", "worker_id": ""}
    assert (await answer(await client.get("/connectors/orders")))[0] == 200
    assert (await answer(await client.get("/connectors/orders/config")))[1]["topic"] == "out"
    assert "already exists" in await error_of(await client.post("/connectors", json=source()), 409)
    assert (await client.delete("/connectors/orders")).status == 204
    assert await error_of(await client.get("/connectors/orders"), 404) == "Connector orders not found"
    assert await error_of(await client.delete("/connectors/orders"), 404) == "Connector orders not found"


async def test_a_created_connector_is_named_in_the_location_percent_encoded(client: Client) -> None:
    created = await client.post("/connectors", json=source("a b/c"))
    assert created.status == 201 and created.headers["Location"] == "/connectors/a%20b%2Fc"


@pytest.mark.parametrize(
    ("body", "words"),
    [
        (b"{not json", "Invalid JSON"),
        (b"[1, 2]", "must be a JSON object"),
        (b'{"name": "x", "config": "text"}', "Connector config must be a JSON object"),
        (b'{"name": "x", "config": {"name": "y", "connector.class": "VerifiableSource"}}', "doesn't match"),
        (b'{"name": "x", "config": {"topic": "t"}}', "contains no connector type"),
        (b'{"name": "x", "config": {"connector.class": "Nope"}}', "matches Nope"),
        (
            b'{"name": "x", "initial_state": "DONE", "config": {"connector.class": "VerifiableSource"}}',
            "Invalid initial state",
        ),
        (b'{"name": "", "config": {"connector.class": "VerifiableSource", "topic": "t"}}', "name"),
        (b'{"name": "x", "config": {"connector.class": "VerifiableSource", "topic": {"a": 1}}}', "Object"),
    ],
)
async def test_a_bad_create_is_refused_with_400_naming_what_is_wrong(
    client: Client, body: bytes, words: str
) -> None:
    refused = await client.post("/connectors", data=body, headers={"Content-Type": "application/json"})
    assert words in await error_of(refused, 400)
    assert await answer(await client.get("/connectors")) == (200, []), "nothing was created"


async def test_every_invalid_setting_is_named_at_once(client: Client) -> None:
    bad = {"name": "x", "config": {"connector.class": "VerifiableSource", "tasks.max": "zero",
                                   "throughput": "-1", "transforms": "route"}}  # fmt: skip
    message = await error_of(await client.post("/connectors", json=bad), 400)
    assert "contains the following 4 error(s)" in message
    for setting in ("tasks.max", "throughput", "topic", "transforms"):
        assert setting in message


async def test_topic_creation_settings_are_checked_at_create_and_validate_naming_each(client: Client) -> None:
    asked = {"topic.creation.default.partitions": "3", "topic.creation.groups": "compacted",
             "topic.creation.compacted.include": "(open"}  # fmt: skip
    message = await error_of(await client.post("/connectors", json=source("made", **asked)), 400)
    assert message.startswith("Connector configuration is invalid and contains the following 2 error(s):")
    assert (
        'topic.creation.default.replication.factor: Missing required configuration "topic.creation.default.'
        'replication.factor" which has no default value.' in message
    )
    assert "topic.creation.compacted.include: Invalid value [(open] for configuration" in message
    validate = "/connector-plugins/VerifiableSource/config/validate"
    code, validated = await answer(
        await client.put(validate, json={**source("v", **asked)["config"], "name": "v"})
    )
    assert code == 200 and validated["error_count"] == 2
    errors = {c["value"]["name"]: c["value"]["errors"] for c in validated["configs"] if c["value"]["errors"]}
    assert set(errors) == {"topic.creation.default.replication.factor", "topic.creation.compacted.include"}
    good = {
        **asked,
        "topic.creation.default.replication.factor": "-1",
        "topic.creation.compacted.include": "c-.*",
    }
    assert (await client.post("/connectors", json=source("made", **good))).status == 201
    spark = {"connector.class": "FileIngest", "input.path": "/in", "output.path": "/out", **good}
    message = await error_of(await client.post("/connectors", json={"name": "files", "config": spark}), 400)
    assert "this connector's tasks write no records to Kafka, so there are no topics to create" in message


async def test_a_worker_without_topic_creation_or_overrides_says_so_at_create(
    aiohttp_client: Callable[[web.Application], Awaitable[Client]],
) -> None:
    settings = {
        **SETTINGS,
        "topic.creation.enable": "false",
        "connector.client.config.override.policy": "None",
    }
    herder = Herder(WorkerConfig.from_settings(settings), logs=MemoryLogs())
    herder.ready.set()
    client = await aiohttp_client(RestApi(HerderApi(herder)).app)
    unchecked = source("kept", **{"topic.creation.default.partitions": "none"})
    assert (await client.post("/connectors", json=unchecked)).status == 201, "not used here, so not read"
    overridden = source("tuned", **{"producer.override.linger.ms": "5"})
    assert await error_of(await client.post("/connectors", json=overridden), 400) == (
        "Connector configuration is invalid and contains the following 1 error(s):\n"
        "producer.override.linger.ms: The 'None' policy does not allow 'linger.ms' to be overridden in the "
        "connector configuration."
    )


async def test_initial_states(client: Client, herder: Herder) -> None:
    for state, target in (("PAUSED", "PAUSED"), ("STOPPED", "STOPPED"), ("RUNNING", "STARTED")):
        created = await client.post("/connectors", json={**source(state.lower()), "initial_state": state})
        assert created.status == 201
        assert herder.state.target_state(state.lower()) == target


async def test_put_and_patch_a_config(client: Client) -> None:
    put = await client.put("/connectors/orders/config", json=source()["config"])
    assert put.status == 201 and put.headers["Location"] == "/connectors/orders"
    replaced = await client.put("/connectors/orders/config", json={**source()["config"], "throughput": "5"})
    assert replaced.status == 200 and (await replaced.json())["config"]["throughput"] == "5"
    patched = await client.patch("/connectors/orders/config", json={"throughput": 7, "topic": "other"})
    code, body = await answer(patched)
    assert code == 200 and body["config"]["throughput"] == "7" and body["config"]["topic"] == "other"
    assert "doesn't match" in await error_of(
        await client.put("/connectors/orders/config", json={**source()["config"], "name": "other"}), 400
    )
    assert "must be a JSON object" in await error_of(
        await client.patch("/connectors/orders/config", json=[1]), 400
    )
    assert await error_of(await client.patch("/connectors/nope/config", json={}), 404)
    assert "topic" in await error_of(
        await client.patch("/connectors/orders/config", json={"topic": None}), 400
    )


async def test_pause_resume_and_stop(client: Client, herder: Herder) -> None:
    await client.post("/connectors", json=source())
    assert (await client.put("/connectors/orders/pause")).status == 202
    assert herder.state.target_state("orders") == "PAUSED"
    assert (await client.put("/connectors/orders/resume")).status == 202
    assert herder.state.target_state("orders") == "STARTED"
    assert (await client.put("/connectors/orders/stop")).status == 204
    assert herder.state.target_state("orders") == "STOPPED"
    for verb in ("pause", "resume", "stop"):
        assert await error_of(await client.put(f"/connectors/nope/{verb}"), 404) == "Connector nope not found"


async def test_status_and_restart(client: Client, herder: Herder) -> None:
    assert "No status found" in await error_of(await client.get("/connectors/orders/status"), 404)
    await client.post("/connectors", json=source())
    code, status = await answer(await client.get("/connectors/orders/status"))
    assert code == 200 and status["connector"] == {"state": "UNASSIGNED", "worker_id": ""}
    # Before any worker reported a status, a restart plan has nothing to go by, as in Kafka Connect.
    assert "Status for connector orders not found" in await error_of(
        await client.post("/connectors/orders/restart?includeTasks=true"), 404
    )
    assert (await client.post("/connectors/orders/restart")).status == 204
    herder.statuses.report(("orders", CONNECTOR), "RUNNING", None, 1)
    code, body = await answer(
        await client.post("/connectors/orders/restart?includeTasks=true&onlyFailed=false")
    )
    assert code == 202 and body["connector"]["state"] == "RESTARTING"
    code, body = await answer(await client.post("/connectors/orders/restart?onlyFailed=true"))
    assert code == 202 and body["connector"]["state"] == "RUNNING", "only what failed restarts"
    assert await error_of(await client.post("/connectors/nope/restart"), 404)


async def test_tasks_their_status_and_restart(client: Client, herder: Herder) -> None:
    await client.post("/connectors", json=source())
    assert await answer(await client.get("/connectors/orders/tasks")) == (200, [])
    await herder.put_task_configs("orders", [{"topic": "out"}, {"topic": "out"}])
    code, tasks = await answer(await client.get("/connectors/orders/tasks"))
    assert code == 200 and [t["id"] for t in tasks] == [{"connector": "orders", "task": i} for i in range(2)]
    code, status = await answer(await client.get("/connectors/orders/tasks/1/status"))
    assert code == 200 and status == {"id": 1, "state": "UNASSIGNED", "worker_id": ""}
    assert (
        await error_of(await client.get("/connectors/orders/tasks/2/status"), 404)
        == "Task orders-2 not found"
    )
    assert await error_of(await client.get("/connectors/orders/tasks/x/status"), 404) == "Task x not found"
    assert "not running" in await error_of(await client.post("/connectors/orders/tasks/0/restart"), 409)
    assert await error_of(await client.get("/connectors/nope/tasks"), 404)


async def test_task_configs_sent_to_the_leader_must_be_signed(client: Client) -> None:
    await client.post("/connectors", json=source())
    unsigned = await client.post("/connectors/orders/tasks", json=[{"topic": "elsewhere"}])
    # The leader has no session key yet: nothing can be checked, so nothing is taken.
    assert "no session key" in await error_of(unsigned, 503)


async def test_offsets(client: Client, herder: Herder) -> None:
    await client.post("/connectors", json=source())
    assert await answer(await client.get("/connectors/orders/offsets")) == (200, {"offsets": []})
    herder.offsets.stored("orders", {"task": 0}, {"seq": 12})
    code, body = await answer(await client.get("/connectors/orders/offsets"))
    assert code == 200 and body == {"offsets": [{"partition": {"task": 0}, "offset": {"seq": 12}}]}
    assert await error_of(await client.get("/connectors/nope/offsets"), 404)


# -- plugins ------------------------------------------------------------------------------


async def test_plugins_their_configs_and_validation(client: Client) -> None:
    code, found = await answer(await client.get("/connector-plugins"))
    assert code == 200 and "workers.connectors.verifiable.VerifiableSource" in [p["class"] for p in found]
    code, definitions = await answer(await client.get("/connector-plugins/VerifiableSource/config"))
    assert code == 200 and {"name", "connector.class", "tasks.max", "topic"} <= {
        d["name"] for d in definitions
    }
    assert "Unknown plugin" in await error_of(await client.get("/connector-plugins/Nope/config"), 404)
    validate = "/connector-plugins/VerifiableSource/config/validate"
    code, validated = await answer(await client.put(validate, json={"name": "v", "tasks.max": "2"}))
    assert code == 200 and validated["error_count"] == 1
    assert [c["value"]["name"] for c in validated["configs"] if c["value"]["errors"]] == ["topic"]
    mismatch = await client.put(validate, json={"connector.class": "FileIngest"})
    assert "does not match" in await error_of(mismatch, 400)
    assert "must be a JSON object" in await error_of(await client.put(validate, json=[]), 400)


async def test_admin_loggers_read_and_set_levels_as_kafka_connect_answers(client: Client) -> None:
    import logging

    logging.getLogger("workers.distributed.herder")  # made at import: a known logger
    code, levels = await answer(await client.get("/admin/loggers"))
    assert code == 200 and "root" in levels and set(levels["root"]) == {"level", "last_modified"}
    code, level = await answer(await client.get("/admin/loggers/workers.distributed.herder"))
    assert code == 200 and level["level"] in ("INFO", "WARN", "DEBUG") and level["last_modified"] is None
    assert (
        await error_of(await client.get("/admin/loggers/no.such.logger"), 404)
        == "Logger no.such.logger not found."
    )

    try:
        code, affected = await answer(await client.put("/admin/loggers/workers", json={"level": "debug"}))
        assert code == 200 and "workers" in affected and "workers.distributed.herder" in affected
        assert all(name == "workers" or name.startswith("workers.") for name in affected)
        code, level = await answer(await client.get("/admin/loggers/workers.distributed.herder"))
        assert level["level"] == "DEBUG" and isinstance(level["last_modified"], int)
        listed = (await answer(await client.get("/admin/loggers")))[1]
        assert listed["workers.distributed.herder"]["level"] == "DEBUG"
        assert await error_of(await client.put("/admin/loggers/workers", json={"level": "LOUD"}), 404) == (
            "invalid log level 'LOUD'."
        )
        assert await error_of(await client.put("/admin/loggers/workers", json={}), 400) == (
            "Desired 'level' parameter was not specified in request."
        )
    finally:
        for name in [
            n for n in logging.Logger.manager.loggerDict if n == "workers" or n.startswith("workers.")
        ]:
            logging.getLogger(name).setLevel(logging.NOTSET)

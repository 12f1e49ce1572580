"""Every operation of Kafka Connect 4.x's REST API, called on a worker process with curl and,
where it has the call, with a Kafka Connect REST client (kafka-connect-py), through one
connector's life: created, read, restarted, reconfigured, paused, resumed, stopped, its
offsets altered and reset, deleted; plus the plugins, the loggers, `/` and `/health`.

Kafka's operations are those of its resource classes (the fixture the OpenAPI test reads),
and the test checks it called every one of them with curl, so an operation Kafka adds is
missed here until it is served and called.
"""

from __future__ import annotations

import json
import time
from pathlib import Path
from typing import Any

import pytest
from kafka_connect import KafkaConnect

from connect_rebalance.processes import CoordinatorProcess, connect_timings
from tests.support.curl import curl
from tests.support.worker_cluster import WorkerCluster
from tests.unit.test_openapi_matches_kafka import NOT_SERVED

pytestmark = pytest.mark.integration
OPERATIONS = Path(__file__).parents[1] / "fixtures" / "kafka-connect-openapi-operations.json"
PLUGIN = "VerifiableSource"
# kafka-connect-py has no call for healthCheck, getConnectorConfigDef, patchConnectorConfig, the
# offsets (KIP-875) and the loggers: those are called with curl alone.


class Operations:
    """Calls Kafka Connect's operations by name, with curl, noting which were called."""

    def __init__(self, url: str) -> None:
        self.url = url
        found = json.loads(OPERATIONS.read_text())["operations"]
        self.kafka = {o["operationId"]: o for o in found if o["operationId"] not in NOT_SERVED}
        self.called: set[str] = set()

    def __call__(
        self, operation: str, body: object = None, query: str = "", **path: object
    ) -> tuple[int, Any]:
        spec = self.kafka[operation]
        self.called.add(operation)
        return curl(spec["method"].upper(), self.url + spec["path"].format(**path) + query, body)


def until(
    operation: Operations, wanted: Any, name: str, *args: Any, within_s: float = 30, **path: object
) -> Any:
    """Call `name` until it answers `wanted` (status, body-predicate) or the time is up."""
    deadline = time.monotonic() + within_s
    while True:
        status, body = operation(name, *args, **path)
        if (status == wanted[0] and wanted[1](body)) or time.monotonic() > deadline:
            return status, body
        time.sleep(0.2)


def test_every_kafka_connect_operation_with_curl_and_a_kafka_connect_client(tmp_path: Path) -> None:
    coordinator = CoordinatorProcess(tmp_path / "data", connect_timings(10000, 1000)).start()
    cluster = WorkerCluster(tmp_path, coordinator)
    try:
        url = cluster.start("w1").url
        call, client = Operations(url), KafkaConnect(url=url)
        config = {"connector.class": PLUGIN, "topic": "every-out", "tasks.max": "1", "throughput": "20"}

        status, info = call("serverInfo")
        assert status == 200 and {"version", "commit", "kafka_cluster_id"} <= set(info)
        assert client.get_cluster_info() == info
        assert call("healthCheck") == (
            200,
            {"status": "healthy", "message": "Worker has completed startup and is ready to handle requests."},
        )
        status, listed = call("listConnectorPlugins")
        assert status == 200 and any(p["class"].endswith(PLUGIN) for p in listed)
        assert client.list_connector_plugins() == listed
        status, definitions = call("getConnectorConfigDef", pluginName=PLUGIN)
        assert status == 200 and "topic" in {d["name"] for d in definitions}
        status, checked = call("validateConfigs", {**config, "name": "every"}, pluginName=PLUGIN)
        assert status == 200 and checked["error_count"] == 0
        assert client.validate_connector_config(PLUGIN, {**config, "name": "every"})["error_count"] == 0

        status, created = call("createConnector", {"name": "every", "config": config})
        assert status == 201 and created["name"] == "every"
        assert client.create_connector({"name": "other", "config": config})["name"] == "other"
        assert call("listConnectors") == (200, ["every", "other"]) and client.list_connectors() == [
            "every",
            "other",
        ]
        assert call("getConnector", connector="every")[1]["config"]["topic"] == "every-out"
        assert client.get_connector("every")["type"] == "source"
        assert call("getConnectorConfig", connector="every") == (200, {**config, "name": "every"})
        assert client.get_connector_config("every") == {**config, "name": "every"}

        def all_running(status: Any) -> bool:
            return status["connector"]["state"] == "RUNNING" and [t["state"] for t in status["tasks"]] == [
                "RUNNING"
            ]

        running = until(call, (200, all_running), "getConnectorStatus", connector="every")
        assert running[0] == 200 and client.get_connector_status("every")["name"] == "every"
        assert call("getTaskConfigs", connector="every")[1][0]["id"] == {"connector": "every", "task": 0}
        assert client.list_connector_tasks("every")[0]["id"]["task"] == 0
        assert call("getTaskStatus", connector="every", task=0)[1]["state"] == "RUNNING"
        assert client.get_connector_task_status("every", 0)["id"] == 0
        assert call("restartTask", connector="every", task=0)[0] == 204
        client.restart_connector_task("every", 0)
        assert call("restartConnector", connector="every")[0] == 204
        assert (
            call("restartConnector", query="?includeTasks=true&onlyFailed=false", connector="every")[0] == 202
        )
        client.restart_connector("every")
        written = (200, lambda b: b["every"]["topics"] == ["every-out"])
        topics = until(call, written, "getConnectorActiveTopics", connector="every")
        assert topics == (200, {"every": {"topics": ["every-out"]}})
        assert client.list_connector_topics("every") == topics[1]

        status, updated = call("putConnectorConfig", {**config, "throughput": "10"}, connector="every")
        assert status == 200 and updated["config"]["throughput"] == "10"
        assert client.update_connector("other", {**config, "throughput": "5"})["config"]["throughput"] == "5"
        status, patched = call("patchConnectorConfig", {"throughput": "30"}, connector="every")
        assert status == 200 and patched["config"]["throughput"] == "30"
        assert call("pauseConnector", connector="every")[0] == 202
        client.pause_connector("other")
        assert call("resumeConnector", connector="every")[0] == 202
        client.resume_connector("other")

        assert call("stopConnector", connector="every")[0] == 204
        client.stop_connector("other")
        stopped = until(call, (200, lambda b: b["connector"]["state"] == "STOPPED" and not b["tasks"]),
                        "getConnectorStatus", connector="every")  # fmt: skip
        assert stopped[0] == 200, stopped
        assert call("resetConnectorActiveTopics", connector="every")[0] == 202
        client.reset_connector_topics("other")
        status, offsets = call("getOffsets", connector="every")
        assert status == 200 and offsets["offsets"][0]["partition"] == {"task": 0}
        moved = {"offsets": [{"partition": {"task": 0}, "offset": {"seq": 3}}]}
        assert call("alterConnectorOffsets", moved, connector="every") == (
            200, {"message": "The offsets for this connector have been altered successfully"})  # fmt: skip
        assert call("resetConnectorOffsets", connector="every") == (
            200, {"message": "The offsets for this connector have been reset successfully"})  # fmt: skip

        status, levels = call("listLoggers")
        assert status == 200 and "root" in levels
        assert call("setLevel", {"level": "DEBUG"}, logger="workers.distributed.herder")[0] == 200
        assert call("getLogger", logger="workers.distributed.herder")[1]["level"] == "DEBUG"

        assert call("destroyConnector", connector="every")[0] == 204
        client.delete_connector("other")
        assert until(call, (200, lambda b: b == []), "listConnectors") == (200, [])
        assert call.called == set(call.kafka), f"not called: {sorted(set(call.kafka) - call.called)}"
    finally:
        cluster.stop_all()
        coordinator.kill()

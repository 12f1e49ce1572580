"""Source connectors' topic creation (KIP-158) and their client overrides under the worker's
policy (KIP-458), against a real coordinator and real worker processes: the topics a
VerifiableSource's task writes to are created before its first record with the settings of
the group that matches them, as confluent-kafka's admin client describes them; a replication
factor the one-node coordinator cannot give fails the task, saying why; and each policy
refuses or takes overrides over Kafka Connect's REST API as Kafka Connect answers."""

from __future__ import annotations

from collections.abc import Iterator
from functools import partial
from pathlib import Path
from typing import Any

import pytest
from confluent_kafka.admin import AdminClient, ConfigResource

from connect_rebalance.processes import CoordinatorProcess, connect_timings
from tests.support.group_scenario import wait_until
from tests.support.verifiable_records import read_records
from tests.support.worker_cluster import WorkerCluster, rest

pytestmark = pytest.mark.integration
CREATION = {
    "topic.creation.default.partitions": "3",
    "topic.creation.default.replication.factor": "-1",
    "topic.creation.default.retention.ms": "3600000",
    "topic.creation.groups": "compacted",
    "topic.creation.compacted.include": "compact-.*",
    "topic.creation.compacted.cleanup.policy": "compact",
    "topic.creation.compacted.segment.bytes": "1048576",
}


@pytest.fixture
def coordinator(tmp_path: Path) -> Iterator[CoordinatorProcess]:
    started = CoordinatorProcess(tmp_path / "data", connect_timings(10000, 1000)).start()
    try:
        yield started
    finally:
        started.kill()


def source(topic: str, **settings: str) -> dict[str, str]:
    return {"connector.class": "VerifiableSource", "topic": topic, "tasks.max": "1", "throughput": "20",
            "keys.per.task": "20", **CREATION, **settings}  # fmt: skip


def task_state(cluster: WorkerCluster, connector: str) -> dict[str, Any]:
    tasks = cluster.status(connector)["tasks"]
    return tasks[0] if tasks else {"state": "UNASSIGNED"}


def written(bootstrap: str, topic: str) -> bool:
    """Whether the task has written records to the topic (read back, whatever their batches' codec)."""
    return len(read_records(bootstrap, topic)) >= 10


def topic_configs(admin: AdminClient, topic: str) -> dict[str, str]:
    resource = ConfigResource("topic", topic)
    described = admin.describe_configs([resource])[resource].result(30)
    return {name: entry.value for name, entry in described.items()}


def test_a_source_task_creates_its_topics_with_the_settings_of_the_group_matching_them(
    tmp_path: Path, coordinator: CoordinatorProcess
) -> None:
    cluster = WorkerCluster(tmp_path, coordinator)
    try:
        url = cluster.start("w1").url
        connectors = {"events": "events-out", "compacted": "compact-events"}
        for name, topic in connectors.items():
            compressed = {"producer.override.compression.type": "gzip"} if name == "compacted" else {}
            code, body = rest(
                "POST", f"{url}/connectors", {"name": name, "config": source(topic, **compressed)}
            )
            assert code == 201, body
        replicated = source("replicated-out", **{"topic.creation.default.replication.factor": "3"})
        code, body = rest("POST", f"{url}/connectors", {"name": "replicated", "config": replicated})
        assert code == 201, body

        # Metadata for every topic (none named): nothing is created by looking.
        admin = AdminClient({"bootstrap.servers": coordinator.bootstrap})
        created = set(connectors.values())
        wait_until(lambda: created <= set(admin.list_topics(timeout=30).topics), 60, "the topics", 0.2)
        for topic in connectors.values():
            wait_until(partial(written, coordinator.bootstrap, topic), 60, f"records in {topic}", 0.5)
        assert {task_state(cluster, name)["state"] for name in connectors} == {"RUNNING"}
        listed = admin.list_topics(timeout=30).topics
        partitions = {topic: len(listed[topic].partitions) for topic in connectors.values()}
        assert partitions == {"events-out": 3, "compact-events": 3}, (
            "the default group's partitions, which the compacted group takes as its own"
        )
        events, compacted = (topic_configs(admin, topic) for topic in connectors.values())
        assert (events["cleanup.policy"], events["retention.ms"]) == ("delete", "3600000")
        assert (compacted["cleanup.policy"], compacted["segment.bytes"]) == ("compact", "1048576")
        assert compacted["retention.ms"] != "3600000", (
            "a group does not take the default group's topic configs"
        )

        def settled() -> bool:  # failed, or (were the failure not the task's) written to
            return task_state(cluster, "replicated")["state"] == "FAILED" or (
                "replicated-out" in admin.list_topics(timeout=30).topics
            )

        wait_until(settled, 60, "the replicated connector's task failing", 0.2)
        failed = task_state(cluster, "replicated")
        assert failed["state"] == "FAILED", failed
        trace = failed["trace"]
        assert (
            "Error while attempting to create/find topic(s) 'replicated-out': INVALID_REPLICATION_FACTOR"
            in trace
        )
        assert "replication factor 3 is larger than the 1 available broker" in trace
        assert "replicated-out" not in admin.list_topics(timeout=30).topics, "nothing was written to it"
    finally:
        cluster.stop_all()


def test_each_override_policy_refuses_or_takes_overrides_as_kafka_connect_does(
    tmp_path: Path, coordinator: CoordinatorProcess
) -> None:
    groups = {"none": "None", "all": "All"}
    clusters = {name: WorkerCluster(tmp_path / name, coordinator, **{
        "connector.client.config.override.policy": policy, "group.id": name,
        "config.storage.topic": f"{name}-configs", "offset.storage.topic": f"{name}-offsets",
        "status.storage.topic": f"{name}-status",
    }) for name, policy in groups.items()}  # fmt: skip
    try:
        none, every = (clusters[name].start(f"w-{name}").url for name in groups)
        tuned = {"name": "tuned", "config": {"connector.class": "VerifiableSource", "topic": "tuned-out",
                                             "producer.override.linger.ms": "5"}}  # fmt: skip
        code, body = rest("POST", f"{none}/connectors", tuned)
        message = (
            "Connector configuration is invalid and contains the following 1 error(s):\n"
            "producer.override.linger.ms: The 'None' policy does not allow 'linger.ms' to be overridden "
            "in the connector configuration."
        )
        assert (code, body) == (400, {"error_code": 400, "message": message})
        code, validated = rest("PUT", f"{none}/connector-plugins/VerifiableSource/config/validate",
                               {**tuned["config"], "name": "tuned"})  # fmt: skip
        assert code == 200 and validated["error_count"] == 1
        [refused] = [c["value"] for c in validated["configs"] if c["value"]["errors"]]
        assert refused["name"] == "producer.override.linger.ms" and refused["errors"] == [
            "The 'None' policy does not allow 'linger.ms' to be overridden in the connector configuration."
        ]

        code, body = rest("POST", f"{every}/connectors", tuned)
        assert code == 400 and "producer.override.linger.ms: Invalid value 5" in body["message"], body
        assert (
            "only the producer's security settings, client.id, compression.type apply here" in body["message"]
        )
        ingest = {
            "connector.class": "TopicIngest",
            "topics": "tuned-out",
            "output.path": str(tmp_path / "out"),
            "consumer.override.fetch.max.bytes": "1048576",
            "consumer.override.client.id": "ingest",
        }
        code, body = rest("POST", f"{every}/connectors", {"name": "ingest", "config": ingest,
                                                          "initial_state": "STOPPED"})  # fmt: skip
        assert code == 201 and body["config"]["consumer.override.fetch.max.bytes"] == "1048576", body
        code, body = rest("POST", f"{none}/connectors", {"name": "ingest", "config": ingest,
                                                         "initial_state": "STOPPED"})  # fmt: skip
        assert code == 400 and "The 'None' policy does not allow 'fetch.max.bytes'" in body["message"], body
    finally:
        for cluster in clusters.values():
            cluster.stop_all()

"""A connector's active topics (KIP-558) through a real Kafka Connect REST client
(kafka-connect-py): the topic a VerifiableSource writes to is listed by every worker, a
reset of the stopped connector forgets it, and the next run records it again; a worker with
`topic.tracking.enable=false` answers 403 as Kafka Connect does."""

from __future__ import annotations

import time
from pathlib import Path

import pytest
import requests
from kafka_connect import KafkaConnect

from connect_rebalance.processes import CoordinatorProcess, connect_timings
from tests.support.group_scenario import wait_until
from tests.support.worker_cluster import WorkerCluster, rest

pytestmark = pytest.mark.integration
USED = {"seq": {"topics": ["tracked-out"]}}


def listed(client: KafkaConnect, wanted: dict[str, object], within_s: float) -> object:
    """What the client lists for `seq`, polled until it is `wanted` or the time is up."""
    deadline = time.monotonic() + within_s
    while (found := client.list_connector_topics("seq")) != wanted and time.monotonic() < deadline:
        time.sleep(0.2)
    return found


def test_the_topics_a_connector_used_are_listed_everywhere_and_reset(tmp_path: Path) -> None:
    coordinator = CoordinatorProcess(tmp_path / "data", connect_timings(10000, 1000)).start()
    cluster = WorkerCluster(tmp_path, coordinator)
    untracked = WorkerCluster(tmp_path / "untracked", coordinator, **{
        "topic.tracking.enable": "false", "group.id": "untracked",
        "config.storage.topic": "untracked-configs", "offset.storage.topic": "untracked-offsets",
        "status.storage.topic": "untracked-status"})  # fmt: skip
    try:
        w1, w2 = cluster.start("w1"), cluster.start("w2")
        one, other = KafkaConnect(url=w1.url), KafkaConnect(url=w2.url)
        config = {
            "connector.class": "VerifiableSource",
            "topic": "tracked-out",
            "tasks.max": "2",
            "throughput": "5",
        }
        one.create_connector({"name": "seq", "config": config})
        assert listed(other, USED, 60) == USED, "the other worker does not list the topic the tasks write to"
        assert one.list_connector_topics("seq") == USED

        assert rest("PUT", f"{w1.url}/connectors/seq/stop")[0] == 204
        wait_until(
            lambda: cluster.status("seq")["connector"]["state"] == "STOPPED", 30, "the connector stopped"
        )
        assert one.reset_connector_topics("seq") is None  # 202, no body
        assert listed(other, {"seq": {"topics": []}}, 30) == {"seq": {"topics": []}}
        assert rest("PUT", f"{w2.url}/connectors/seq/resume")[0] == 202
        assert listed(one, USED, 60) == USED, "the resumed tasks did not record their topic again"

        off = untracked.start("off")
        with pytest.raises(requests.HTTPError) as refused:
            KafkaConnect(url=off.url).list_connector_topics("seq")
        assert refused.value.response.status_code == 403
        assert refused.value.response.json() == {"error_code": 403, "message": "Topic tracking is disabled."}
    finally:
        cluster.stop_all()
        untracked.stop_all()
        coordinator.kill()

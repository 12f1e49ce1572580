"""TopicIngest against a coordinator that only speaks SASL_SSL, with real PySpark: the worker's
`consumer.*` settings reach every consumer of the task (the partition lookup, Spark's
planner and its Python workers, as `kafka.*` source options), and every record is read."""

from __future__ import annotations

from pathlib import Path

import pytest
from kafka import KafkaAdminClient, KafkaProducer
from kafka.admin import NewTopic

from connect_rebalance.client_security import ClientSecurity
from tests.integration.test_secure_worker_cluster import WORKER, WORKER_PASSWORD, kafka_settings
from tests.support.certificates import make_pki
from tests.support.group_scenario import wait_until
from tests.support.secure_coordinator import secure_coordinator
from tests.support.spark_cluster import WORKER_SPARK
from tests.support.worker_cluster import WorkerCluster, rest
from workers.spark.parquet_output import committed_column

pytestmark = pytest.mark.e2e
RECORDS = 300


@pytest.mark.timeout(400)
def test_topic_ingest_reads_a_sasl_ssl_topic_with_the_workers_consumer_settings(tmp_path: Path) -> None:
    pki = make_pki(tmp_path / "pki")
    coordinator = secure_coordinator(pki, tmp_path / "data", {WORKER: WORKER_PASSWORD})
    bootstrap = coordinator.bootstrap_for("SASL_SSL")
    client = ClientSecurity.parse(kafka_settings(pki)).kafka_python()
    settings = {"bootstrap.servers": bootstrap, **kafka_settings(pki), **kafka_settings(pki, "consumer."),
                **WORKER_SPARK, "checkpoint.dir": str(tmp_path / "checkpoints")}  # fmt: skip
    cluster = WorkerCluster(tmp_path, coordinator, **settings)
    try:
        admin = KafkaAdminClient(bootstrap_servers=bootstrap, **client)
        admin.create_topics([NewTopic("clicks", 2, 1)])
        admin.close()
        producer = KafkaProducer(bootstrap_servers=bootstrap, **client)
        for i in range(RECORDS):
            producer.send("clicks", value=str(i).encode(), partition=i % 2)
        producer.flush()
        producer.close()
        w1 = cluster.start("w1")
        out = tmp_path / "out"
        config = {"connector.class": "TopicIngest", "topics": "clicks", "tasks.max": "1",
                  "output.path": str(out), "trigger.interval.ms": "500"}  # fmt: skip
        assert rest("POST", f"{w1.url}/connectors", {"name": "ingest", "config": config})[0] == 201

        def committed() -> list[object]:
            try:
                return committed_column(str(out), "value")
            except (OSError, ValueError):  # a batch being committed
                return []

        wait_until(lambda: len(committed()) >= RECORDS, 240, f"{RECORDS} records committed")
        assert sorted(int(v) for v in committed()) == list(range(RECORDS))  # type: ignore[call-overload]
        assert cluster.status("ingest")["tasks"][0]["state"] == "RUNNING"
    finally:
        cluster.stop_all()
        coordinator.kill()

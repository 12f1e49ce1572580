"""A worker cluster secured end to end, against a real coordinator and real worker processes:
the workers reach the coordinator over SASL_SSL with SCRAM-SHA-512 (group membership, on the
connect group protocol or the classic one, through the project's protocol client; the
config, status and offset topics and the connectors' producers through kafka-python), serve
their REST API over HTTPS with basic authentication, and ACLs give `connect-configs` to the
workers' principal only. Connectors are created, run and rebalance as on an open cluster;
another principal cannot read the session key; a REST request without credentials gets
401. The project's protocol client authenticates with SCRAM and PLAIN, and a wrong
password is an authentication failure with the coordinator's message."""

from __future__ import annotations

import asyncio
import ssl
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
import requests
from confluent_kafka.admin import (
    AclOperation,
    AdminClient,
    ResourcePatternType,
    ResourceType,
)
from kafka import KafkaConsumer, TopicPartition
from kafka_connect import KafkaConnect

from connect_rebalance.client_security import ClientSecurity
from connect_rebalance.errors import ErrorCode
from connect_rebalance.processes import CoordinatorProcess, connect_timings
from connect_rebalance.protocol.client import ProtocolClient
from connect_rebalance.sasl_client import AuthenticationFailed
from tests.integration.test_worker_rest_security import basic_auth_settings, https_settings
from tests.support.certificates import Pki, make_pki
from tests.support.group_scenario import wait_until
from tests.support.secure_coordinator import (
    ADMIN,
    ADMIN_PASSWORD,
    allow,
    create_acls,
    scram512,
    secure_coordinator,
)
from tests.support.worker_cluster import WorkerCluster

pytestmark = pytest.mark.integration
WORKER, WORKER_PASSWORD = "connect-worker", "worker-secret"
INTRUDER, INTRUDER_PASSWORD = "intruder", "intruder-secret"
REST_USERS = {"operator": "operator-secret"}
SCRAM = "org.apache.kafka.common.security.scram.ScramLoginModule"


@pytest.fixture
def pki(tmp_path: Path) -> Pki:
    return make_pki(tmp_path / "pki")


@pytest.fixture
def coordinator(pki: Pki, tmp_path: Path) -> Iterator[CoordinatorProcess]:
    users = {WORKER: WORKER_PASSWORD, INTRUDER: INTRUDER_PASSWORD}
    process = secure_coordinator(pki, tmp_path / "data", users, authorizer=True, **connect_timings(3000))
    try:
        yield process
    finally:
        process.kill()


def kafka_settings(
    pki: Pki, prefix: str = "", user: str = WORKER, password: str = WORKER_PASSWORD
) -> dict[str, str]:
    """A worker's Kafka client settings, by Kafka Connect's names."""
    return {
        f"{prefix}security.protocol": "SASL_SSL", f"{prefix}sasl.mechanism": "SCRAM-SHA-512",
        f"{prefix}sasl.jaas.config": f'{SCRAM} required username="{user}" password="{password}";',
        f"{prefix}ssl.truststore.type": "PEM", f"{prefix}ssl.truststore.location": str(pki.ca_certificate),
    }  # fmt: skip


def worker_acls(admin: AdminClient) -> None:
    """What docs/security.md lists for a worker: its group, its three topics (here all named
    `connect-*`), and the topics its connectors write. Nobody else gets anything on them."""
    worker, literal, prefixed = f"User:{WORKER}", ResourcePatternType.LITERAL, ResourcePatternType.PREFIXED
    create_acls(
        admin,
        allow(ResourceType.GROUP, "connect-cluster", worker, AclOperation.READ, literal),
        allow(ResourceType.TOPIC, "connect-", worker, AclOperation.ALL, prefixed),
        allow(ResourceType.TOPIC, "out-", worker, AclOperation.ALL, prefixed),
        # each task run's fence
        allow(ResourceType.TRANSACTIONAL_ID, "connect-cluster-", worker, AclOperation.WRITE, prefixed),
        allow(ResourceType.TOPIC, "public", f"User:{INTRUDER}", AclOperation.READ, literal),
    )


def source(name: str, tasks: int) -> dict[str, object]:
    return {"name": name, "config": {"connector.class": "VerifiableSource", "topic": f"out-{name}",
                                     "tasks.max": str(tasks), "throughput": "5"}}  # fmt: skip


@pytest.mark.parametrize("group_protocol", ["connect", "classic"])
def test_a_worker_cluster_over_sasl_ssl_https_and_acls(
    tmp_path: Path, pki: Pki, coordinator: CoordinatorProcess, group_protocol: str
) -> None:
    bootstrap = coordinator.bootstrap_for("SASL_SSL")
    worker_acls(
        AdminClient({"bootstrap.servers": bootstrap, **scram512(pki, ADMIN, ADMIN_PASSWORD).confluent()})
    )
    ca = str(pki.ca_certificate)
    settings = {
        "bootstrap.servers": bootstrap, **kafka_settings(pki), **kafka_settings(pki, "producer."),
        **https_settings(pki), **basic_auth_settings(tmp_path, REST_USERS), "group.protocol": group_protocol,
    }  # fmt: skip
    operator = ("operator", REST_USERS["operator"])
    rest_options = {"auth": operator, "context": ssl.create_default_context(cafile=ca)}
    cluster = WorkerCluster(tmp_path, coordinator, rest_options, **settings)
    try:
        w1, w2 = cluster.start("w1"), cluster.start("w2")
        client = KafkaConnect(url=w2.url, auth=":".join(operator), ssl_verify=ca)
        for name in ("orders", "clicks"):
            assert client.create_connector(source(name, 4))["name"] == name

        def everything_runs_on(workers: set[str]) -> bool:
            placed = [cluster.placement(name) for name in ("orders", "clicks")]
            used = {worker for where in placed for worker in where.values()}
            return all(len(where) == 5 for where in placed) and used == workers

        wait_until(lambda: everything_runs_on({w1.worker_id, w2.worker_id}), 60, "10 items on 2 workers")
        w3 = cluster.start("w3")  # a join rebalances onto it
        wait_until(lambda: everything_runs_on({w1.worker_id, w2.worker_id, w3.worker_id}), 60, "a join")
        w1.stop()  # a graceful leave moves its work at once
        wait_until(lambda: everything_runs_on({w2.worker_id, w3.worker_id}), 60, "a graceful leave")

        # The connectors' records reach their topics through the producers' own settings.
        reader = KafkaConsumer(
            bootstrap_servers=bootstrap, **ClientSecurity.parse(kafka_settings(pki)).kafka_python()
        )
        try:
            assert "out-orders" in reader.topics() and "connect-configs" in reader.topics()
        finally:
            reader.close()

        # Another principal may not read the config topic, so not the session key: it is not
        # listed, a consumer gets nothing from it, and asking for it is refused.
        intruder = ClientSecurity.parse(kafka_settings(pki, user=INTRUDER, password=INTRUDER_PASSWORD))
        spy = KafkaConsumer(bootstrap_servers=bootstrap, enable_auto_commit=False, **intruder.kafka_python())
        try:
            assert "connect-configs" not in spy.topics()
            spy.assign([TopicPartition("connect-configs", 0)])
            spy.seek(TopicPartition("connect-configs", 0), 0)
            assert not [r for _ in range(10) for rs in spy.poll(timeout_ms=300).values() for r in rs]
        finally:
            spy.close()
        asked = asyncio.run(metadata(bootstrap, intruder, ["connect-configs"]))
        assert [t["error_code"] for t in asked["topics"]] == [ErrorCode.TOPIC_AUTHORIZATION_FAILED]

        # REST: HTTPS only, and credentials or 401.
        answer = requests.get(f"{w3.url}/connectors", verify=ca, timeout=30)
        assert answer.status_code == 401 and answer.json()["error_code"] == 401
        assert requests.get(f"{w3.url}/connectors", verify=ca, auth=operator, timeout=30).json() == [
            "clicks", "orders"
        ]  # fmt: skip
    finally:
        cluster.stop_all()


async def metadata(
    bootstrap: str, security: ClientSecurity, topics: list[str] | None = None
) -> dict[str, Any]:
    """Metadata asked with the project's protocol client, authenticated as `security` says."""
    client = await ProtocolClient.connect(bootstrap, "probe", security)
    try:
        wanted = None if topics is None else [{"name": name, "topic_id": None} for name in topics]
        return await client.request(3, 12, {"topics": wanted})
    finally:
        await client.close()


def test_the_protocol_client_authenticates_with_scram_and_plain_and_reports_a_wrong_password(
    pki: Pki, coordinator: CoordinatorProcess
) -> None:
    async def session(bootstrap: str, settings: dict[str, str]) -> dict[str, Any]:
        return await metadata(bootstrap, ClientSecurity.parse(settings))

    scram = kafka_settings(pki)
    assert asyncio.run(session(coordinator.bootstrap_for("SASL_SSL"), scram))["brokers"]
    plain = {"security.protocol": "SASL_PLAINTEXT", "sasl.mechanism": "PLAIN",
             "sasl.username": WORKER, "sasl.password": WORKER_PASSWORD}  # fmt: skip
    assert asyncio.run(session(coordinator.bootstrap_for("SASL_PLAINTEXT"), plain))["brokers"]
    wrong = kafka_settings(pki, password="guess")
    with pytest.raises(AuthenticationFailed, match="invalid credentials"):
        asyncio.run(session(coordinator.bootstrap_for("SASL_SSL"), wrong))

"""The workers' REST API over HTTPS with authentication, against real worker processes and
real HTTP clients (kafka-connect-py, requests, curl): no or wrong credentials get 401, a
principal that may not gets 403, and an authorized one manages connectors on any worker
(a follower forwards the request, credentials included, to the leader over HTTPS; the
workers' signed internal requests need no credentials). Mutual TLS: the client
certificate's subject is the principal."""

from __future__ import annotations

import json
import ssl
import subprocess
from collections.abc import Iterator
from pathlib import Path

import pytest
import requests
from kafka_connect import KafkaConnect

from connect_rebalance.processes import CoordinatorProcess, connect_timings
from tests.support.certificates import Pki, make_pki
from tests.support.group_scenario import wait_until
from tests.support.worker_cluster import WorkerCluster
from workers.config.worker import BASIC_AUTH_EXTENSION

pytestmark = pytest.mark.integration
USERS = {"admin": "admin-secret", "reader": "reader-secret", "mallory": "mallory-secret"}


def basic_auth_settings(directory: Path, users: dict[str, str]) -> dict[str, str]:
    """Kafka Connect's basic authentication: a JAAS file naming a credentials file."""
    credentials = directory / "rest-credentials.properties"
    credentials.write_text("".join(f"{user}: {password}\n" for user, password in users.items()))
    jaas = directory / "connect-jaas.conf"
    module = "org.apache.kafka.connect.rest.basic.auth.extension.PropertyFileLoginModule"
    jaas.write_text(f'KafkaConnect {{\n  {module} required\n  file="{credentials}";\n}};\n')
    return {"rest.extension.classes": BASIC_AUTH_EXTENSION, "java.security.auth.login.config": str(jaas)}


def https_settings(pki: Pki, prefix: str = "listeners.https.") -> dict[str, str]:
    return {
        "listeners": "https://127.0.0.1:0",
        f"{prefix}ssl.keystore.type": "PEM", f"{prefix}ssl.keystore.location": str(pki.server.combined),
        f"{prefix}ssl.truststore.type": "PEM", f"{prefix}ssl.truststore.location": str(pki.ca_certificate),
    }  # fmt: skip


@pytest.fixture
def coordinator(tmp_path: Path) -> Iterator[CoordinatorProcess]:
    process = CoordinatorProcess(tmp_path / "data", connect_timings(3000)).start()
    try:
        yield process
    finally:
        process.kill()


def source(name: str, tasks: int) -> dict[str, object]:
    return {"name": name, "config": {"connector.class": "VerifiableSource", "topic": f"{name}-out",
                                     "tasks.max": str(tasks)}}  # fmt: skip


def test_https_with_basic_authentication_401_403_and_forwarding(
    tmp_path: Path, coordinator: CoordinatorProcess
) -> None:
    pki = make_pki(tmp_path / "pki")
    ca = str(pki.ca_certificate)
    who = {"rest.authorized.principals": "User:admin", "rest.read.only.principals": "User:reader"}
    settings = {**https_settings(pki), **basic_auth_settings(tmp_path, USERS), **who}
    trust = ssl.create_default_context(cafile=ca)
    cluster = WorkerCluster(
        tmp_path, coordinator, {"auth": ("admin", USERS["admin"]), "context": trust}, **settings
    )
    try:
        w1, w2 = cluster.start("w1"), cluster.start("w2")
        assert w1.url.startswith("https://127.0.0.1:") and w2.url.startswith("https://")
        url = f"{w2.url}/connectors"

        nobody = requests.get(url, verify=ca, timeout=30)
        assert nobody.status_code == 401 and nobody.json()["error_code"] == 401
        assert nobody.headers["WWW-Authenticate"].startswith("Basic")
        wrong = requests.get(url, verify=ca, auth=("admin", "guess"), timeout=30)
        assert wrong.status_code == 401 and "invalid username or password" in wrong.json()["message"]
        assert requests.get(url, verify=ca, auth=("mallory", USERS["mallory"]), timeout=30).status_code == 403
        assert requests.get(url, verify=ca, auth=("reader", USERS["reader"]), timeout=30).json() == []
        refused = requests.post(url, json=source("sneaky", 1), verify=ca, auth=("reader", USERS["reader"]),
                                timeout=30)  # fmt: skip
        assert refused.status_code == 403 and "may only read" in refused.json()["message"]
        with pytest.raises(requests.HTTPError) as anonymous:
            KafkaConnect(url=w2.url, ssl_verify=ca).list_connectors()
        assert anonymous.value.response.status_code == 401
        with pytest.raises(requests.exceptions.SSLError):  # a client that does not trust the CA
            requests.get(url, auth=("admin", USERS["admin"]), timeout=30)

        # The admin creates connectors through either worker with the Kafka Connect REST
        # client; the follower forwards to the leader, and tasks spread over both workers
        # (their task configs reach the leader as signed internal requests over HTTPS).
        for worker, name in ((w1, "orders"), (w2, "clicks")):
            client = KafkaConnect(url=worker.url, auth=f"admin:{USERS['admin']}", ssl_verify=ca)
            assert client.create_connector(source(name, 3))["name"] == name

        def running_on_both() -> bool:
            placed = [cluster.placement(name) for name in ("orders", "clicks")]
            workers = {worker for where in placed for worker in where.values()}
            return all(len(where) == 4 for where in placed) and workers == {w1.worker_id, w2.worker_id}

        wait_until(running_on_both, 40, "both connectors' tasks to run, spread over both workers")
        listed = subprocess.run(
            ["curl", "-s", "--cacert", ca, "-u", f"admin:{USERS['admin']}", url],
            capture_output=True, text=True, timeout=60, check=True,
        ).stdout  # fmt: skip
        assert json.loads(listed) == ["clicks", "orders"]
        assert requests.get(url, verify=ca, auth=("reader", USERS["reader"]), timeout=30).json() == [
            "clicks",
            "orders",
        ]
        # The internal endpoint takes no credentials, and still wants its signature.
        unsigned = requests.post(f"{url}/orders/tasks", json=[{}], verify=ca, timeout=30)
        assert unsigned.status_code == 400 and "missing required signature" in unsigned.json()["message"]
    finally:
        cluster.stop_all()


def test_mutual_tls_the_certificates_subject_is_the_principal(
    tmp_path: Path, coordinator: CoordinatorProcess
) -> None:
    pki = make_pki(tmp_path / "pki")
    ca = str(pki.ca_certificate)
    ops, intruder = pki.client("ops"), pki.client("intruder")
    settings = {**https_settings(pki, prefix=""), "ssl.client.auth": "required",
                "rest.authorized.principals": "User:CN=ops,O=Example"}  # fmt: skip
    cluster = WorkerCluster(tmp_path, coordinator, **settings)
    try:
        url = f"{cluster.start('w1').url}/connectors"
        as_ops = {"verify": ca, "cert": (str(ops.certificate), str(ops.key)), "timeout": 30}
        assert requests.post(url, json=source("orders", 1), **as_ops).status_code == 201  # type: ignore[arg-type]
        assert requests.get(url, **as_ops).json() == ["orders"]  # type: ignore[arg-type]
        other = requests.get(url, verify=ca, cert=(str(intruder.certificate), str(intruder.key)), timeout=30)
        assert other.status_code == 403 and "User:CN=intruder,O=Example" in other.json()["message"]
        with pytest.raises((requests.exceptions.SSLError, requests.exceptions.ConnectionError)):
            requests.get(url, verify=ca, timeout=30)  # no certificate: the handshake fails
    finally:
        cluster.stop_all()

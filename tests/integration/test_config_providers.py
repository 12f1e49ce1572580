"""Kafka Connect's config providers on a real worker: a worker file with
`config.providers=file,env` takes its group from an environment variable and its config
topic's name from a secrets file, and a source connector whose topic is `${file:...}` writes
to the topic the file names, while `GET /connectors/{name}/config`, its task configs and the
config topic itself keep the `${file:...}` text (no value a provider read is written). A
variable whose file is not there is refused when the connector is created, and fails a
connector that starts after its file went, with a trace naming the variable. A
worker file with a provider that cannot work does not start, naming each setting at fault."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from connect_rebalance.processes import CoordinatorProcess
from tests.support.group_scenario import create_topic, wait_until
from tests.support.verifiable_records import read_raw
from tests.support.worker_cluster import metrics, rest
from tests.support.worker_files import refused_start
from workers.harness.process import WorkerProcess

pytestmark = pytest.mark.integration
GROUP_VARIABLE = "CONNECT_REBALANCE_TEST_GROUP"


@pytest.fixture
def secrets(tmp_path: Path) -> Path:
    """The secrets directory an operator mounts: the worker may read nothing outside it."""
    directory = tmp_path / "secrets"
    directory.mkdir()
    (directory / "connect.properties").write_text(
        "config.topic=configs-from-secrets\ntopic=orders-from-secrets\n"
    )
    return directory


@pytest.fixture
def worker(
    tmp_path: Path, group_coordinator: CoordinatorProcess, secrets: Path, monkeypatch: pytest.MonkeyPatch
) -> Iterator[WorkerProcess]:
    monkeypatch.setenv(GROUP_VARIABLE, "group-from-env")  # the worker process inherits it
    settings = {
        "config.providers": "file,env",
        "config.providers.file.class": "org.apache.kafka.common.config.provider.FileConfigProvider",
        "config.providers.file.param.allowed.paths": str(secrets),
        "config.providers.env.class": "org.apache.kafka.common.config.provider.EnvVarConfigProvider",
        "config.providers.env.param.allowlist.pattern": "CONNECT_REBALANCE_TEST_.*",
        "bootstrap.servers": group_coordinator.bootstrap,
        "group.id": f"${{env:{GROUP_VARIABLE}}}",
        "config.storage.topic": f"${{file:{secrets}/connect.properties:config.topic}}",
        "offset.storage.topic": "offsets", "status.storage.topic": "statuses",
        "checkpoint.dir": str(tmp_path / "checkpoints"), "spark.session.warmup": "false",
    }  # fmt: skip
    process = WorkerProcess(settings, tmp_path / "worker", "providers")
    try:
        yield process.start()
    finally:
        process.kill()


def task_status(url: str, name: str) -> dict[str, Any]:
    """The connector's first task's status, or {} before it has one."""
    code, status = rest("GET", f"{url}/connectors/{name}/status")
    return status["tasks"][0] if code == 200 and status["tasks"] else {}


def test_a_connector_runs_with_its_variables_resolved_while_its_config_keeps_them(
    group_coordinator: CoordinatorProcess, worker: WorkerProcess, secrets: Path
) -> None:
    coordinator = group_coordinator
    create_topic(coordinator.bootstrap, "orders-from-secrets", 1)
    variable = f"${{file:{secrets}/connect.properties:topic}}"
    config = {"connector.class": "VerifiableSource", "topic": variable, "tasks.max": "1", "throughput": "50"}
    assert rest("POST", f"{worker.url}/connectors", {"name": "secret-topic", "config": config})[0] == 201

    # Ends either way: the task has written records, or it failed.
    wait_until(lambda: task_status(worker.url, "secret-topic").get("state") == "FAILED"
               or task_status(worker.url, "secret-topic").get("progress", {}).get("sent", 0) >= 3,
               60, "the task to write records or fail")  # fmt: skip
    status = task_status(worker.url, "secret-topic")
    assert status["state"] == "RUNNING", status.get("trace")
    written = read_raw(coordinator.bootstrap, "orders-from-secrets")
    assert len(written) >= 3 and written[0][2] == b"secret-topic-0"

    assert rest("GET", f"{worker.url}/connectors/secret-topic/config") == (
        200,
        {**config, "name": "secret-topic"},
    )
    assert rest("GET", f"{worker.url}/connectors/secret-topic/tasks")[1][0]["config"]["topic"] == variable
    # The worker's own settings were resolved: its config topic is the one the file names, and
    # it holds the variable's text, never the value read.
    records = [value for _, _, _, value in read_raw(coordinator.bootstrap, "configs-from-secrets") if value]
    assert any(variable.encode() in value for value in records)
    assert not any(b"orders-from-secrets" in value for value in records)
    # ... and its group is the one the environment names.
    assert 'connect_rebalance_group_epoch{group="group-from-env",type="connect"}' in metrics(
        coordinator.admin_url
    )


def test_a_variable_that_cannot_be_read_is_refused_at_creation_and_fails_its_connector_at_start(
    worker: WorkerProcess, secrets: Path
) -> None:
    """Refused with 400 while the file is not there (Kafka Connect validates the config as
    resolved); created while it is, then gone when the connector starts: FAILED, naming it."""
    file = secrets / "rotating.properties"
    variable = f"${{file:{file}:topic}}"
    config = {"connector.class": "VerifiableSource", "topic": variable, "tasks.max": "1"}
    code, refused = rest("POST", f"{worker.url}/connectors", {"name": "broken", "config": config})
    assert code == 400 and f"setting 'topic': {variable} could not be resolved" in refused["message"]

    file.write_text("topic=rotated\n")
    created = {"name": "broken", "config": config, "initial_state": "STOPPED"}
    assert rest("POST", f"{worker.url}/connectors", created)[0] == 201
    file.unlink()
    assert rest("PUT", f"{worker.url}/connectors/broken/resume")[0] == 202

    def connector() -> dict[str, Any]:
        code, status = rest("GET", f"{worker.url}/connectors/broken/status")
        return status["connector"] if code == 200 else {}

    wait_until(
        lambda: connector().get("state") in ("RUNNING", "FAILED"), 60, "the connector to start or fail"
    )
    assert connector()["state"] == "FAILED"
    assert (
        f"setting 'topic': {variable} could not be resolved: could not read properties from file"
        in (connector()["trace"])
    )
    assert rest("GET", f"{worker.url}/connectors/broken/tasks") == (200, [])


def test_a_worker_file_whose_providers_cannot_work_does_not_start_naming_each_setting(tmp_path: Path) -> None:
    worker_file = tmp_path / "worker.properties"
    worker_file.write_text(
        "bootstrap.servers=127.0.0.1:9\ngroup.id=${file:/nowhere/secrets.properties:group}\n"
        "config.storage.topic=c\noffset.storage.topic=o\nstatus.storage.topic=s\n"
        "config.providers=file,vault\n"
        "config.providers.file.class=org.apache.kafka.common.config.provider.FileConfigProvider\n"
        "config.providers.vault.class=com.example.VaultConfigProvider\n"
    )
    assert refused_start(worker_file) == [
        "error: 2 problems with the settings:",
        "  - setting 'config.providers.vault.class': 'com.example.VaultConfigProvider' is not supported: the "
        "config providers are Kafka's FileConfigProvider, DirectoryConfigProvider, EnvVarConfigProvider "
        "(org.apache.kafka.common.config.provider.*)",
        "  - setting 'group.id': ${file:/nowhere/secrets.properties:group} could not be resolved: could not "
        "read properties from file /nowhere/secrets.properties: [Errno 2] No such file or directory: "
        "'/nowhere/secrets.properties'",
    ]

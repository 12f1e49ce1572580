"""Dynamic broker configs through confluent-kafka's AdminClient and `connect-rebalance
configs --entity-type brokers` (kafka-configs' options, which the cluster-wide default needs:
confluent-kafka cannot name it) against a coordinator process: a topic default set on the broker
acts on every topic without its own value (retention deletes by it) and on topics created
later, the broker's own level wins over the cluster-wide default, DescribeConfigs names each
level as the source, a Kafka setting with no meaning here is kept with a warning in the log,
everything outlives a kill -9, and what cannot change here is refused with INVALID_CONFIG
and a message, changing nothing."""

from __future__ import annotations

import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path

import pytest
from confluent_kafka import KafkaException
from confluent_kafka.admin import AdminClient, AlterConfigOpType, ConfigEntry, ConfigResource, ConfigSource
from confluent_kafka.admin import ResourceType as Rt

from connect_rebalance.errors import ErrorCode
from connect_rebalance.processes import CoordinatorProcess
from tests.integration.test_admin_configs_and_records import make_topic, produce, refusal, watermarks

pytestmark = pytest.mark.integration
HOUR_AGO_MS = int(time.time() * 1000) - 3_600_000
SET, APPEND, DELETE = AlterConfigOpType.SET, AlterConfigOpType.APPEND, AlterConfigOpType.DELETE


def alter_broker(admin: AdminClient, level: str, *changes: tuple[str, AlterConfigOpType, str | None]) -> None:
    entries = [ConfigEntry(name, value, incremental_operation=op) for name, op, value in changes]
    resource = ConfigResource(Rt.BROKER, level, incremental_configs=entries)
    admin.incremental_alter_configs([resource])[resource].result(30)


def configs_cli(bootstrap: str, *args: str) -> subprocess.CompletedProcess[str]:
    command = [sys.executable, "-m", "connect_rebalance_cli.cli", "configs", "--bootstrap-server", bootstrap]
    return subprocess.run(
        [*command, "--entity-type", "brokers", *args], capture_output=True, text=True, timeout=60
    )


def describe(admin: AdminClient, kind: Rt, name: str) -> dict[str, tuple[str | None, ConfigSource]]:
    resource = ConfigResource(kind, name)
    described = admin.describe_configs([resource])[resource].result(30)
    return {key: (entry.value, ConfigSource(entry.source)) for key, entry in described.items()}


def test_a_topic_default_set_on_the_broker_acts_on_every_topic_without_its_own_and_outlives_a_kill9(
    tmp_path: Path,
) -> None:
    coordinator = CoordinatorProcess(tmp_path / "data", {"log.retention.check.interval.ms": "200"}).start()
    try:
        b = coordinator.bootstrap
        admin = AdminClient({"bootstrap.servers": b})
        node = str(admin.describe_cluster().result(30).nodes[0].id)
        make_topic(admin, "aging")
        make_topic(admin, "pinned", **{"retention.ms": "604800000"})
        for topic in ("aging", "pinned"):
            produce(b, topic, 50, timestamp=HOUR_AGO_MS)
            assert watermarks(b, topic) == (0, 50)

        alter_broker(admin, node, ("log.retention.ms", SET, "60000"), ("background.threads", SET, "9"))
        deadline = time.monotonic() + 30
        while watermarks(b, "aging") != (50, 50) and time.monotonic() < deadline:
            time.sleep(0.2)  # polling until the deadline: retention runs every 200 ms
        assert watermarks(b, "aging") == (50, 50), "retention did not act on the broker's log.retention.ms"
        assert watermarks(b, "pinned") == (0, 50), "a topic's own retention.ms gave way to the broker's"
        assert describe(admin, Rt.TOPIC, "aging")["retention.ms"] == (
            "60000",
            ConfigSource.DYNAMIC_BROKER_CONFIG,
        )
        assert "background.threads=9 has no effect here" in coordinator.log_text()

        default = ("--entity-default", "--alter", "--add-config")
        added = configs_cli(b, *default, "log.cleanup.policy=[delete,compact],log.retention.ms=7200000")
        assert (added.returncode, added.stdout) == (
            0, "Completed updating default config for brokers in the cluster.\n"
        )  # fmt: skip
        broker = describe(admin, Rt.BROKER, node)
        assert broker["log.retention.ms"] == ("60000", ConfigSource.DYNAMIC_BROKER_CONFIG), "own level wins"
        assert broker["background.threads"] == ("9", ConfigSource.DYNAMIC_BROKER_CONFIG)
        assert broker["log.cleanup.policy"] == ("delete,compact", ConfigSource.DYNAMIC_DEFAULT_BROKER_CONFIG)
        assert broker["node.id"] == (node, ConfigSource.STATIC_BROKER_CONFIG)
        assert configs_cli(b, "--entity-default", "--describe").stdout.splitlines() == [
            "Default configs for brokers in the cluster are:",
            "  log.cleanup.policy=delete,compact sensitive=false "
            "synonyms={DYNAMIC_DEFAULT_BROKER_CONFIG:log.cleanup.policy=delete,compact}",
            "  log.retention.ms=7200000 sensitive=false "
            "synonyms={DYNAMIC_DEFAULT_BROKER_CONFIG:log.retention.ms=7200000}",
        ]
        assert configs_cli(b, "--entity-name", node, "--describe").stdout.splitlines() == [
            f"Dynamic configs for broker {node} are:",
            "  background.threads=9 sensitive=false synonyms={DYNAMIC_BROKER_CONFIG:background.threads=9}",
            "  log.retention.ms=60000 sensitive=false "
            "synonyms={DYNAMIC_BROKER_CONFIG:log.retention.ms=60000, "
            "DYNAMIC_DEFAULT_BROKER_CONFIG:log.retention.ms=7200000, "
            "STATIC_BROKER_CONFIG:log.retention.ms=604800000}",
        ]

        coordinator.kill()
        coordinator.start()
        admin = AdminClient({"bootstrap.servers": coordinator.bootstrap})
        make_topic(admin, "fresh")
        fresh = describe(admin, Rt.TOPIC, "fresh")
        assert fresh["retention.ms"] == ("60000", ConfigSource.DYNAMIC_BROKER_CONFIG)
        assert fresh["cleanup.policy"] == ("delete,compact", ConfigSource.DYNAMIC_DEFAULT_BROKER_CONFIG)
        alter_broker(admin, node, ("log.retention.ms", DELETE, None))
        assert describe(admin, Rt.TOPIC, "fresh")["retention.ms"] == (
            "7200000", ConfigSource.DYNAMIC_DEFAULT_BROKER_CONFIG
        ), "DELETE on the broker's own level falls back to the cluster-wide default"  # fmt: skip
    finally:
        coordinator.kill()


@pytest.fixture
def coordinator(tmp_path: Path) -> Iterator[CoordinatorProcess]:
    process = CoordinatorProcess(tmp_path / "data").start()
    try:
        yield process
    finally:
        process.kill()


def test_broker_configs_that_cannot_change_here_are_refused_and_change_nothing(
    coordinator: CoordinatorProcess,
) -> None:
    admin = AdminClient({"bootstrap.servers": coordinator.bootstrap})
    node = str(admin.describe_cluster().result(30).nodes[0].id)
    before = describe(admin, Rt.BROKER, node)

    def change(level: str, *changes: tuple[str, AlterConfigOpType, str | None]) -> tuple[int, str]:
        return refusal(lambda: alter_broker(admin, level, *changes))

    assert change(node, ("log.retention.ms", SET, "1"), ("listeners", SET, "PLAINTEXT://:9093")) == (
        ErrorCode.INVALID_CONFIG,
        "broker config 'listeners' is read from the coordinator's properties file at start: "
        "change it there and restart",
    )
    assert change(node, ("log.dirs", SET, "/tmp/elsewhere"))[1].startswith(
        "broker config 'log.dirs' cannot be changed while the broker runs"
    )
    assert change(node, ("log.retension.ms", SET, "1")) == (
        ErrorCode.INVALID_CONFIG,
        "unknown broker config 'log.retension.ms' (did you mean 'log.retention.ms'?)",
    )
    per_broker = configs_cli(
        coordinator.bootstrap, "--entity-default", "--alter", "--add-config",
        "sasl.kerberos.min.time.before.relogin=1",
    )  # fmt: skip
    assert per_broker.returncode == 1, per_broker.stderr
    assert "'sasl.kerberos.min.time.before.relogin' cannot be set as the cluster-wide default" in (
        per_broker.stderr
    )
    assert change(node, ("log.cleanup.policy", SET, "forever")) == (
        ErrorCode.INVALID_CONFIG,
        "invalid value 'forever' for broker config 'log.cleanup.policy': "
        "'forever' is not one of compact, delete",
    )
    # confluent-kafka sends a broker's configs to that broker, so another node id goes by the CLI.
    elsewhere = configs_cli(
        coordinator.bootstrap, "--entity-name", "7", "--alter", "--add-config", "num.io.threads=2"
    )
    assert elsewhere.returncode == 1 and "no broker '7'; this is node 1" in elsewhere.stderr
    assert describe(admin, Rt.BROKER, node) == before, "a refused change was applied"
    assert configs_cli(coordinator.bootstrap, "--entity-default", "--describe").stdout.splitlines() == [
        "Default configs for brokers in the cluster are:"
    ]


def test_validate_only_checks_a_broker_change_without_making_it(coordinator: CoordinatorProcess) -> None:
    admin = AdminClient({"bootstrap.servers": coordinator.bootstrap})
    entry = ConfigEntry("log.segment.bytes", "1048576", incremental_operation=SET)
    resource = ConfigResource(Rt.BROKER, "1", incremental_configs=[entry])
    admin.incremental_alter_configs([resource], validate_only=True)[resource].result(30)
    assert describe(admin, Rt.BROKER, "1")["log.segment.bytes"][1] == ConfigSource.STATIC_BROKER_CONFIG
    with pytest.raises(KafkaException):
        bad = ConfigResource(Rt.BROKER, "1", incremental_configs=[ConfigEntry(
            "log.segment.bytes", "1", incremental_operation=SET)])  # fmt: skip
        admin.incremental_alter_configs([bad], validate_only=True)[bad].result(30)

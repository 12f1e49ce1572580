"""KIP-848's dynamic group configuration from confluent-kafka's AdminClient, over TCP against a
coordinator process: IncrementalAlterConfigs on a GROUP resource sets a consumer group's
heartbeat interval, which a member's next ConsumerGroupHeartbeat answer carries (raw wire,
so the interval field shows) without an epoch bump; DescribeConfigs reports it as a dynamic
group config beside the defaults; a value outside the coordinator's bounds is INVALID_CONFIG
with a message and changes nothing, nor does validate_only; and the configuration outlives
the group's deletion and a kill -9 of the coordinator. AlterConfigs (the legacy API)
replaces a group's whole configuration, as Kafka 4.x does, and `connect-rebalance configs
--entity-type groups` sets, deletes and describes a connect group's configs as kafka-configs."""

from __future__ import annotations

import subprocess
import sys
import time
import uuid
from pathlib import Path
from typing import Any

import pytest
from confluent_kafka import KafkaError, KafkaException
from confluent_kafka.admin import AdminClient, AlterConfigOpType, ConfigEntry, ConfigResource, ConfigSource
from confluent_kafka.admin import ResourceType as Rt

from connect_rebalance.errors import ErrorCode
from connect_rebalance.processes import CoordinatorProcess
from connect_rebalance.protocol.api_keys import ApiKey
from tests.support.group_scenario import create_topic
from tests.support.wire import RawConnection

pytestmark = [pytest.mark.integration, pytest.mark.filterwarnings("ignore:alter_configs has been deprecated")]

HEARTBEAT, SESSION = "consumer.heartbeat.interval.ms", "consumer.session.timeout.ms"
CONNECT_SESSION = "connect.session.timeout.ms"
GROUP = "cg"
PENDING_INTERVAL_MS = 500  # group.consumer.pending.heartbeat.interval.ms


def set_config(admin: AdminClient, name: str, value: str, validate_only: bool = False) -> KafkaError | None:
    """IncrementalAlterConfigs SET on the group: None, or the error it was refused with."""
    entry = ConfigEntry(name, value, incremental_operation=AlterConfigOpType.SET)
    resource = ConfigResource(Rt.GROUP, GROUP, incremental_configs=[entry])
    try:
        admin.incremental_alter_configs([resource], validate_only=validate_only)[resource].result(30)
    except KafkaException as exc:
        return exc.args[0]  # type: ignore[no-any-return]
    return None


def replace_configs(admin: AdminClient, configs: dict[str, str]) -> KafkaError | None:
    """AlterConfigs (the legacy API) on the group: None, or the error it was refused with."""
    resource = ConfigResource(Rt.GROUP, GROUP, set_config=configs)
    try:
        admin.alter_configs([resource])[resource].result(30)
    except KafkaException as exc:
        return exc.args[0]  # type: ignore[no-any-return]
    return None


def described(admin: AdminClient, group: str = GROUP) -> dict[str, tuple[str, ConfigSource]]:
    resource = ConfigResource(Rt.GROUP, group)
    entries = admin.describe_configs([resource])[resource].result(30)
    return {name: (entry.value, ConfigSource(entry.source)) for name, entry in entries.items()}


def heartbeat(connection: RawConnection, member_id: str, epoch: int, owned: Any = None) -> Any:
    """A ConsumerGroupHeartbeat v1, as librdkafka sends one (a join at epoch 0)."""
    joining = epoch == 0
    return connection.request(ApiKey.CONSUMER_GROUP_HEARTBEAT, 1, {
        "group_id": GROUP, "member_id": member_id, "member_epoch": epoch, "instance_id": None,
        "rack_id": None, "rebalance_timeout_ms": 30000 if joining else -1,
        "subscribed_topic_names": ["orders"] if joining else None, "subscribed_topic_regex": None,
        "server_assignor": None, "topic_partitions": [] if joining else owned,
    })  # fmt: skip


def settled(connection: RawConnection, member_id: str) -> Any:
    """Join, then heartbeat owning what each answer assigns until the member is settled (its
    target reached, the target computed off the event loop): the answer that says so. A
    member with reconciliation pending is asked back at the short pending interval."""
    answer = heartbeat(connection, member_id, 0)
    owned: list[dict[str, Any]] = []
    deadline = time.monotonic() + 30
    while answer.heartbeat_interval_ms == PENDING_INTERVAL_MS:
        assert answer.error_code == 0 and time.monotonic() < deadline, "not settled within 30 s"
        if answer.assignment is not None:
            owned = [
                {"topic_id": t.topic_id, "partitions": t.partitions}
                for t in answer.assignment.topic_partitions
            ]
        answer = heartbeat(connection, member_id, answer.member_epoch, owned)
    return answer


def test_a_groups_heartbeat_interval_is_set_described_bounded_and_kept(tmp_path: Path) -> None:
    # Adaptive heartbeats off: members get the group's interval itself, not less (it is their ceiling).
    coordinator = CoordinatorProcess(tmp_path / "data", {"group.heartbeat.adaptive.enable": "false"}).start()
    admin = AdminClient({"bootstrap.servers": coordinator.bootstrap})
    connection = RawConnection(coordinator.bootstrap)
    try:
        create_topic(coordinator.bootstrap, "orders", 2)
        member = str(uuid.uuid4())
        joined = settled(connection, member)
        assert (joined.error_code, joined.heartbeat_interval_ms) == (0, 5000), "the coordinator's default"
        assert described(admin)[HEARTBEAT] == ("5000", ConfigSource.DEFAULT_CONFIG)

        assert set_config(admin, HEARTBEAT, "7000") is None
        answer = heartbeat(connection, member, joined.member_epoch)
        assert (answer.error_code, answer.heartbeat_interval_ms) == (0, 7000), "the next answer carries it"
        assert answer.member_epoch == joined.member_epoch, "a config change is not a rebalance"
        configs = described(admin)
        assert configs[HEARTBEAT] == ("7000", ConfigSource.GROUP_CONFIG)
        assert configs[SESSION] == ("45000", ConfigSource.DEFAULT_CONFIG)

        error = set_config(admin, HEARTBEAT, "20000")
        assert error is not None and error.code() == ErrorCode.INVALID_CONFIG
        assert "consumer.heartbeat.interval.ms is 20000" in error.str()
        assert "group.consumer.max.heartbeat.interval.ms" in error.str() and "15000" in error.str()
        assert set_config(admin, HEARTBEAT, "9000", validate_only=True) is None
        assert described(admin)[HEARTBEAT] == ("7000", ConfigSource.GROUP_CONFIG), "nothing changed"
        assert heartbeat(connection, member, joined.member_epoch).heartbeat_interval_ms == 7000

        assert heartbeat(connection, member, -1).error_code == 0  # the member leaves
        admin.delete_consumer_groups([GROUP])[GROUP].result(30)
        assert described(admin)[HEARTBEAT] == ("7000", ConfigSource.GROUP_CONFIG), "kept by the deletion"

        connection.close()
        coordinator.kill()
        coordinator.start()
        connection = RawConnection(coordinator.bootstrap)
        assert described(admin)[HEARTBEAT] == ("7000", ConfigSource.GROUP_CONFIG), "kept through a kill -9"
        again = settled(connection, str(uuid.uuid4()))
        assert (again.error_code, again.heartbeat_interval_ms) == (0, 7000), (
            "the group created again follows it"
        )
    finally:
        connection.close()
        coordinator.kill()


@pytest.fixture
def coordinator(tmp_path: Path) -> Any:
    process = CoordinatorProcess(tmp_path / "data").start()
    yield process
    process.kill()


def test_legacy_alter_configs_replaces_a_groups_whole_configuration(coordinator: CoordinatorProcess) -> None:
    admin = AdminClient({"bootstrap.servers": coordinator.bootstrap})
    assert set_config(admin, HEARTBEAT, "7000") is None
    assert set_config(admin, CONNECT_SESSION, "60000") is None
    assert replace_configs(admin, {CONNECT_SESSION: "30000"}) is None
    configs = described(admin)
    assert configs[CONNECT_SESSION] == ("30000", ConfigSource.GROUP_CONFIG)
    assert configs[HEARTBEAT] == ("5000", ConfigSource.DEFAULT_CONFIG), "not sent: back to the default"

    refused = replace_configs(admin, {CONNECT_SESSION: "10"})
    assert refused is not None and refused.code() == ErrorCode.INVALID_CONFIG
    assert "group.connect.min.session.timeout.ms" in refused.str()
    assert described(admin)[CONNECT_SESSION] == ("30000", ConfigSource.GROUP_CONFIG), "nothing changed"


def configs_cli(bootstrap: str, *args: str) -> subprocess.CompletedProcess[str]:
    command = [sys.executable, "-m", "connect_rebalance_cli.cli", "configs", "--bootstrap-server", bootstrap]
    return subprocess.run(
        [*command, "--entity-type", "groups", *args], capture_output=True, text=True, timeout=60
    )


def own_line(name: str, value: str) -> str:
    """kafka-configs' line for a config the group sets itself."""
    return f"  {name}={value} sensitive=false synonyms={{DYNAMIC_GROUP_CONFIG:{name}={value}}}"


def test_the_configs_command_alters_and_describes_a_groups_configs_as_kafka_configs(
    coordinator: CoordinatorProcess,
) -> None:
    bootstrap, admin = coordinator.bootstrap, AdminClient({"bootstrap.servers": coordinator.bootstrap})
    workers = ("--entity-name", "my-workers")
    added = configs_cli(
        bootstrap, *workers, "--alter", "--add-config", f"{CONNECT_SESSION}=60000,{HEARTBEAT}=7000"
    )
    assert (added.returncode, added.stdout) == (0, "Completed updating config for group my-workers.\n")
    assert described(admin, "my-workers")[CONNECT_SESSION] == ("60000", ConfigSource.GROUP_CONFIG)

    shown = configs_cli(bootstrap, *workers, "--describe")
    assert shown.stdout.splitlines() == [
        "Dynamic configs for group my-workers are:",
        own_line(CONNECT_SESSION, "60000"),
        own_line(HEARTBEAT, "7000"),
    ]
    every = configs_cli(bootstrap, *workers, "--describe", "--all").stdout
    assert f"  {SESSION}=45000 sensitive=false synonyms={{DEFAULT_CONFIG:{SESSION}=45000}}" in every

    outside = configs_cli(bootstrap, *workers, "--alter", "--add-config", f"{CONNECT_SESSION}=10")
    assert outside.returncode == 1 and "[6000, 1800000]" in outside.stderr
    missing = configs_cli(bootstrap, *workers, "--alter", "--delete-config", "connect.heartbeat.interval.ms")
    assert (missing.returncode, missing.stderr) == (
        1,
        "error: Invalid config(s): connect.heartbeat.interval.ms\n",
    )
    deleted = configs_cli(bootstrap, *workers, "--alter", "--delete-config", HEARTBEAT)
    assert deleted.returncode == 0
    assert described(admin, "my-workers")[HEARTBEAT] == ("5000", ConfigSource.DEFAULT_CONFIG)
    assert described(admin, "my-workers")[CONNECT_SESSION] == ("60000", ConfigSource.GROUP_CONFIG)


def test_a_groups_assignment_interval_is_set_and_described_by_a_real_admin_client(
    coordinator: CoordinatorProcess,
) -> None:
    admin = AdminClient({"bootstrap.servers": coordinator.bootstrap})
    interval = "consumer.assignment.interval.ms"
    assert described(admin)[interval] == ("100", ConfigSource.DEFAULT_CONFIG), "the coordinator's default"
    assert set_config(admin, interval, "2000") is None
    assert described(admin)[interval] == ("2000", ConfigSource.GROUP_CONFIG)
    refused = set_config(admin, interval, "60000")
    assert refused is not None and refused.code() == ErrorCode.INVALID_CONFIG
    assert "group.consumer.max.assignment.interval.ms" in refused.str()

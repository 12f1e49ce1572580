"""The command line as a user types it: topic administration, configuration errors that
name the setting, and the quickstart ending with its summary."""

from __future__ import annotations

import json
import subprocess
import sys

import pytest

pytestmark = pytest.mark.integration


def cli(*args: str, timeout: float = 120) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "connect_rebalance_cli.cli", *args],
        capture_output=True,
        text=True,
        timeout=timeout,
    )


def test_topics_create_list_describe_delete(coordinator) -> None:
    b = ["topics", "--bootstrap-server", coordinator.bootstrap]
    created = cli(*b, "create", "orders", "--partitions", "3", "--config", "retention.ms=3600000")
    assert created.returncode == 0, created.stderr
    assert cli(*b, "list").stdout.split() == ["__consumer_offsets", "orders"]
    assert cli(*b, "list", "--exclude-internal").stdout.split() == ["orders"]
    described = cli(*b, "describe", "orders")
    assert "PartitionCount: 3" in described.stdout and "retention.ms=3600000" in described.stdout
    assert described.stdout.count("Leader: 1") == 3
    again = cli(*b, "create", "orders")
    assert again.returncode == 1 and "already exists" in again.stderr
    bad = cli(*b, "create", "no spaces allowed")
    assert bad.returncode == 1 and "no spaces allowed" in bad.stderr
    bad_config = cli(*b, "create", "t2", "--config", "retention.ms=tomorrow")
    assert bad_config.returncode == 1 and "retention.ms" in bad_config.stderr
    assert cli(*b, "delete", "orders").returncode == 0
    missing = cli(*b, "delete", "orders")
    assert missing.returncode == 1 and "does not exist" in missing.stderr
    assert cli(*b, "list", "--exclude-internal").stdout.split() == []


def test_topics_alter_and_create_if_not_exists_with_options_after_the_action(coordinator) -> None:
    """kafka-topics' way: `--bootstrap-server` before or after the action, `--if-not-exists`,
    and `alter` for more partitions and for configs (set, and back to the default)."""
    b = coordinator.bootstrap
    assert cli("--version").stdout.strip() == "connect-rebalance 0.1.0"
    created = cli("topics", "create", "events", "--partitions", "2", "--bootstrap-server", b)
    assert created.returncode == 0, created.stderr
    again = cli("topics", "create", "events", "--if-not-exists", "--bootstrap-server", b)
    assert (again.returncode, again.stdout.strip()) == (0, "Topic events exists already.")
    altered = cli("topics", "alter", "events", "--partitions", "4", "--config", "retention.ms=3600000",
                  "--config", "segment.ms=600000", "--bootstrap-server", b)  # fmt: skip
    assert altered.returncode == 0, altered.stderr
    described = cli("topics", "describe", "events", "--bootstrap-server", b).stdout
    assert "PartitionCount: 4" in described and "retention.ms=3600000,segment.ms=600000" in described
    assert (
        cli("topics", "--bootstrap-server", b, "alter", "events", "--delete-config", "segment.ms").returncode
        == 0
    )
    described = cli("topics", "describe", "events", "--bootstrap-server", b).stdout
    assert "Configs: retention.ms=3600000" in described and "segment.ms" not in described
    fewer = cli("topics", "alter", "events", "--partitions", "2", "--bootstrap-server", b)
    assert fewer.returncode == 1 and "cannot add partitions" in fewer.stderr
    bad = cli("topics", "alter", "events", "--config", "retention.ms=soon", "--bootstrap-server", b)
    assert bad.returncode == 1 and "invalid value 'soon' for topic config 'retention.ms'" in bad.stderr
    nothing = cli("topics", "alter", "events", "--bootstrap-server", b)
    assert nothing.returncode == 1 and "nothing to alter" in nothing.stderr


@pytest.mark.parametrize(
    ("args", "named"),
    [
        (["-o", "log.retention.ms=soon"], "log.retention.ms"),
        (["-o", "retention.ms=5"], "retention.ms"),
        (["-o", "num.partitions=0"], "num.partitions"),
        (["--listen", "nowhere"], "listeners"),
        (["-o", "no-equals-sign"], "no-equals-sign"),
        (["-o", "log.dirs="], "log.dirs must name the data directory"),  # not the working directory
        (["-o", "log.dirs=/var/a,/var/b"], "log.dirs must name one directory"),  # not a directory 'a,b'
        # Session and heartbeat settings outside their bounds, or a heartbeat not below the session.
        (["-o", "group.consumer.session.timeout.ms=3000"], "group.consumer.min.session.timeout.ms"),
        (["-o", "group.consumer.heartbeat.interval.ms=20000"], "group.consumer.max.heartbeat.interval.ms"),
        (["-o", "group.connect.session.timeout.ms=2000"], "group.connect.min.session.timeout.ms"),
        (["-o", "group.connect.heartbeat.interval.ms=12000"], "group.connect.session.timeout.ms (10000)"),
    ],
)
def test_bad_coordinator_settings_fail_at_start_naming_the_setting(tmp_path, args, named) -> None:
    result = cli("coordinator", "--data-dir", str(tmp_path / "d"), *args, timeout=30)
    assert result.returncode == 2
    assert named in result.stderr


def test_coordinator_reads_a_properties_file(tmp_path) -> None:
    properties = tmp_path / "server.properties"
    properties.write_text("# a comment\nnum.partitions = 4\nlog.retention.hours.typo=1\n")
    result = cli("coordinator", "-c", str(properties), "--data-dir", str(tmp_path / "d"), timeout=30)
    assert result.returncode == 2 and "log.retention.hours.typo" in result.stderr


def test_a_second_coordinator_cannot_open_the_same_data_directory(coordinator) -> None:
    result = cli(
        "coordinator", "--listen", "127.0.0.1:0", "--data-dir", str(coordinator.data_dir), timeout=30
    )
    assert result.returncode == 1 and "in use by another coordinator" in result.stderr
    assert "Traceback" not in result.stderr


def test_quickstart_runs_and_ends_with_its_summary() -> None:
    result = cli("quickstart", "--coordinator-only", "--records", "500", timeout=180)
    assert result.returncode == 0, result.stdout + result.stderr
    assert "Nothing lost, nothing duplicated." in result.stdout
    assert "[ok] after kill -9 and restart: 500, distinct ids: 500" in result.stdout
    assert "[ok] group offsets committed: 500, after the restart: 500" in result.stdout


def test_groups_list_describe_reset_offsets_and_delete(tmp_path) -> None:
    from connect_rebalance.processes import CoordinatorProcess
    from tests.support.clients import produce_kcat
    from tests.support.group_scenario import MemberFleet, create_topic, wait_until

    process = CoordinatorProcess(tmp_path / "data", {"group.initial.rebalance.delay.ms": "0"}).start()
    fleet = MemberFleet(tmp_path, process.bootstrap, "cli-group", "orders", "confluent-kafka", "range")
    try:
        b = ["groups", "--bootstrap-server", process.bootstrap]
        create_topic(process.bootstrap, "orders", 3)
        produce_kcat(process.bootstrap, "orders", [(f"k{i}".encode(), f"v{i}".encode()) for i in range(60)])
        fleet.start("reader")
        wait_until(lambda: fleet.consumed_at_least(60), 60, "the member to consume everything")
        listed = cli(*b, "list").stdout
        assert "cli-group" in listed and "Stable" in listed and "classic" in listed
        described = cli(*b, "describe", "cli-group").stdout
        assert "STATE Stable" in described and "PROTOCOL consumer/range" in described
        assert "orders:0,1,2" in described and described.count("  0    ") >= 3  # every partition at lag 0
        busy = cli(*b, "delete", "cli-group")
        assert busy.returncode == 1 and "active members" in busy.stderr
        refused = cli(*b, "reset-offsets", "cli-group", "--topic", "orders", "--to-earliest", "--execute")
        assert refused.returncode == 1 and "no active members" in refused.stderr
        fleet.stop("reader")
        dry = cli(*b, "reset-offsets", "cli-group", "--topic", "orders", "--to-earliest")
        assert "dry run" in dry.stdout
        assert cli(*b, "describe", "cli-group").stdout.count("LAG") == 1
        applied = cli(*b, "reset-offsets", "cli-group", "--topic", "orders", "--to-earliest", "--execute")
        assert applied.returncode == 0, applied.stderr
        lags = cli(*b, "describe", "cli-group").stdout
        assert "STATE Empty" in lags and sum(int(line.split()[4]) for line in lags.splitlines()
                                              if line.startswith("orders")) == 60  # fmt: skip

        # kafka-consumer-groups' other ways, with the options after the action: some
        # partitions, a time, a duration, the current offsets, a plan exported and applied.
        server = ["--bootstrap-server", process.bootstrap]

        def plan(*args: str) -> dict[tuple[str, int], int]:
            result = cli("groups", "reset-offsets", "cli-group", *args, *server, "--output", "json")
            assert result.returncode == 0, result.stderr
            return {(row["topic"], row["partition"]): row["offset"] for row in json.loads(result.stdout)}

        ends = plan("--topic", "orders", "--to-latest")
        assert plan("--topic", "orders:0,2", "--to-offset", "1") == {("orders", 0): 1, ("orders", 2): 1}
        assert plan("--all-topics", "--to-current") == {tp: 0 for tp in ends}
        assert plan("--topic", "orders", "--to-datetime", "2000-01-01T00:00:00.000") == {tp: 0 for tp in ends}
        assert plan("--topic", "orders", "--to-datetime", "2999-01-01T00:00:00.000Z") == ends
        assert plan("--topic", "orders", "--by-duration", "P1D") == {tp: 0 for tp in ends}
        assert plan("--topic", "orders", "--by-duration", "PT0S") == ends
        exported = cli("groups", "reset-offsets", "cli-group", "--topic", "orders:1", "--shift-by", "5",
                       "--export", *server)  # fmt: skip
        assert exported.stdout.splitlines() == ["orders,1,5"]
        (tmp_path / "plan.csv").write_text(exported.stdout)
        applied = cli("groups", "reset-offsets", "cli-group", "--from-file", str(tmp_path / "plan.csv"),
                      "--execute", *server)  # fmt: skip
        assert applied.returncode == 0, applied.stderr
        assert plan("--all-topics", "--to-current")[("orders", 1)] == 5
        bad = cli("groups", "reset-offsets", "cli-group", "--topic", "orders:7", "--to-earliest", *server)
        assert bad.returncode == 1 and "topic 'orders' has no partition 7" in bad.stderr
        listed = json.loads(cli("groups", "list", *server, "--output", "json").stdout)
        assert listed == [{"group": "cli-group", "type": "classic", "protocol": "consumer", "state": "Empty"}]
        assert cli(*b, "delete", "cli-group").returncode == 0
        assert "cli-group" not in cli(*b, "list").stdout
    finally:
        fleet.kill_all()
        process.kill()

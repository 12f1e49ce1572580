"""The command line as a user types it: topic administration, configuration errors that
name the setting, and the quickstart ending with its summary."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

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
        [state] = rows_of(cli(*b, "describe", "cli-group", "--state"))
        assert (state["STATE"], state["ASSIGNMENT-STRATEGY"]) == ("Stable", "range")
        [member] = rows_of(cli(*b, "describe", "cli-group", "--members", "--verbose"))
        assert member["CURRENT-ASSIGNMENT"] == "orders:0,1,2"
        assert [row["LAG"] for row in rows_of(cli(*b, "describe", "cli-group"))] == ["0", "0", "0"]
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
        lags = cli(*b, "describe", "cli-group")
        assert "Consumer group 'cli-group' has no active members." in lags.stderr
        assert sum(int(row["LAG"]) for row in rows_of(lags)) == 60

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


# -- kafka-consumer-groups' views, --all-groups and JSON ------------------------------------------

OFFSETS_HEADER = ["GROUP", "TOPIC", "PARTITION", "CURRENT-OFFSET", "LOG-END-OFFSET", "LAG", "CONSUMER-ID",
                  "HOST", "CLIENT-ID"]  # fmt: skip
MEMBERS_HEADER = ["GROUP", "CONSUMER-ID", "HOST", "CLIENT-ID", "#PARTITIONS"]
STATE_HEADER = ["GROUP", "COORDINATOR", "(ID)", "ASSIGNMENT-STRATEGY", "STATE", "#MEMBERS"]
RECORDS = 60


def tables(stdout: str) -> list[tuple[list[str], list[dict[str, str]]]]:
    """Each table a command printed (one per group, a blank line apart) as a script reads it:
    the header and every row split on blanks, rows by column name."""
    found = []
    for block in stdout.strip().split("\n\n"):
        header, *lines = block.splitlines()
        found.append(
            (header.split(), [dict(zip(header.split(), line.split(), strict=True)) for line in lines])
        )
    return found


def rows_of(result: subprocess.CompletedProcess[str]) -> list[dict[str, str]]:
    assert result.returncode == 0, result.stderr
    assert not {"─", "│", "┃", "━"} & set(result.stdout), "plain columns when stdout is no terminal"
    return [row for _, rows in tables(result.stdout) for row in rows]


def json_of(result: subprocess.CompletedProcess[str]) -> list[dict]:
    assert result.returncode == 0, result.stderr
    return json.loads(result.stdout)


def join_connect_worker(bootstrap: str, group: str, url: str) -> None:
    """One worker joins a connect group, as a worker's first heartbeat does (over TCP)."""
    import asyncio

    from connect_rebalance.protocol.client import ProtocolClient
    from connect_rebalance.protocol.connect_group import ConnectGroupApi
    from tests.support.connect_driver import INCREMENTAL

    async def join() -> dict:
        client = await ProtocolClient.connect(bootstrap)
        try:
            return await ConnectGroupApi(client).heartbeat(
                group, "w1", 0, url=url, rebalance_timeout_ms=60000, assignors=[INCREMENTAL], owned=[]
            )
        finally:
            await client.close()

    assert asyncio.run(join())["error_code"] == 0


@pytest.fixture
def three_groups(tmp_path):  # type: ignore[no-untyped-def]
    """A classic group (c1), a KIP-848 consumer group (m1, m2), both having read and committed
    all of `orders` (3 partitions, 60 records), and a connect group with one worker."""
    from connect_rebalance.processes import CoordinatorProcess
    from tests.support.clients import produce_kcat
    from tests.support.group_scenario import MemberFleet, create_topic, wait_until

    settings = {"group.initial.rebalance.delay.ms": "0", "group.connect.session.timeout.ms": "120000"}
    process = CoordinatorProcess(tmp_path / "data", settings).start()
    b = process.bootstrap
    classic = MemberFleet(tmp_path, b, "classic-app", "orders", "confluent-kafka", "range")
    modern = MemberFleet(tmp_path, b, "kip848-app", "orders", "confluent-kafka-consumer", "uniform")
    try:
        create_topic(b, "orders", 3)
        produce_kcat(b, "orders", [(f"k{i}".encode(), f"v{i}".encode()) for i in range(RECORDS)])
        classic.start("c1")
        modern.start("m1")
        modern.start("m2")
        wait_until(lambda: classic.consumed_at_least(RECORDS) and modern.consumed_at_least(RECORDS), 90,
                   "both groups to read and commit everything")  # fmt: skip

        def settled() -> bool:
            members = json.loads(cli("groups", "describe", "kip848-app", "--members", "--output", "json",
                                     "--bootstrap-server", b).stdout or "[]")  # fmt: skip
            held = sorted(m["partition_count"] for m in members)
            return held == [1, 2] and all(m["current_assignment"] == m["target_assignment"] for m in members)

        wait_until(settled, 60, "m1 and m2 to hold their targets, 1 and 2 partitions", interval=0.5)
        join_connect_worker(b, "connect-cluster", "http://127.0.0.1:8083")
        yield process, classic, modern
    finally:
        classic.kill_all()
        modern.kill_all()
        process.kill()


def test_groups_describe_offsets_members_and_state_views_of_all_groups(three_groups) -> None:
    """kafka-consumer-groups' three views over a classic and a KIP-848 group, in plain columns a
    script splits and as JSON, with the options before and after the action; `--all-groups`
    leaves out the connect group, which `describe` still shows by name, with its workers."""
    process, _, _ = three_groups
    b = process.bootstrap

    # The offsets view (the default), options before the action: one table per group.
    shown = cli("groups", "--bootstrap-server", b, "describe", "--all-groups")
    assert [header for header, _ in tables(shown.stdout)] == [OFFSETS_HEADER, OFFSETS_HEADER]
    offsets = rows_of(shown)
    assert sorted({r["GROUP"] for r in offsets}) == ["classic-app", "kip848-app"], "no connect group"
    for group, clients in (("classic-app", {"c1"}), ("kip848-app", {"m1", "m2"})):
        rows = [r for r in offsets if r["GROUP"] == group]
        assert sorted((r["TOPIC"], r["PARTITION"]) for r in rows) == [
            ("orders", "0"),
            ("orders", "1"),
            ("orders", "2"),
        ]
        assert sum(int(r["CURRENT-OFFSET"]) for r in rows) == RECORDS and {r["LAG"] for r in rows} == {"0"}
        assert all(r["CURRENT-OFFSET"] == r["LOG-END-OFFSET"] for r in rows)
        assert {r["CLIENT-ID"] for r in rows} == clients and {r["HOST"] for r in rows} == {"127.0.0.1"}
    verbose = cli(
        "groups", "describe", "classic-app", "--offsets", "--verbose", "--bootstrap-server", b
    ).stdout
    assert verbose.split()[:4] == ["GROUP", "TOPIC", "PARTITION", "LEADER-EPOCH"]

    # The members view, options after the action.
    members = cli("groups", "describe", "--all-groups", "--members", "--bootstrap-server", b)
    assert [header for header, _ in tables(members.stdout)] == [MEMBERS_HEADER, MEMBERS_HEADER]
    counts = {(r["GROUP"], r["CLIENT-ID"]): r["#PARTITIONS"] for r in rows_of(members)}
    assert counts.pop(("classic-app", "c1")) == "3" and sorted(counts.values()) == ["1", "2"]
    detailed = rows_of(cli("groups", "describe", "kip848-app", "classic-app", "--members", "--verbose",
                           "--bootstrap-server", b))  # fmt: skip
    assert [r["GROUP"] for r in detailed] == ["kip848-app", "kip848-app", "classic-app"], "as named"
    for row in detailed[:2]:  # Kafka 4's current and target epoch and assignment
        assert row["CURRENT-ASSIGNMENT"] == row["TARGET-ASSIGNMENT"] and row["CURRENT-ASSIGNMENT"] != "-"
        assert int(row["CURRENT-EPOCH"]) >= 1 and int(row["TARGET-EPOCH"]) >= 1
        assert len(row["CURRENT-ASSIGNMENT"].split(":")[1].split(",")) == int(row["#PARTITIONS"])
    classic_member = detailed[2]
    assert (classic_member["CURRENT-ASSIGNMENT"], classic_member["CURRENT-EPOCH"]) == ("orders:0,1,2", "-")
    assert (classic_member["TARGET-EPOCH"], classic_member["TARGET-ASSIGNMENT"]) == ("-", "-")

    # The state view, with the epochs a consumer-protocol group has and a classic one has not.
    state = cli("groups", "--output", "table", "describe", "--all-groups", "--state", "--verbose",
                "--bootstrap-server", b)  # fmt: skip
    headers = [header for header, _ in tables(state.stdout)]
    assert headers == [STATE_HEADER[:5] + ["GROUP-EPOCH", "TARGET-ASSIGNMENT-EPOCH", "#MEMBERS"]] * 2
    by_group = {r["GROUP"]: r for r in rows_of(state)}
    assert {g: (r["COORDINATOR"], r["(ID)"]) for g, r in by_group.items()} == {
        "classic-app": (b, "(1)"), "kip848-app": (b, "(1)")}  # fmt: skip
    classic_state, modern_state = by_group["classic-app"], by_group["kip848-app"]
    assert [classic_state[k] for k in ("ASSIGNMENT-STRATEGY", "STATE", "GROUP-EPOCH", "#MEMBERS")] == [
        "range", "Stable", "-", "1"]  # fmt: skip
    assert [modern_state[k] for k in ("ASSIGNMENT-STRATEGY", "STATE", "#MEMBERS")] == [
        "uniform",
        "Stable",
        "2",
    ]
    assert int(modern_state["GROUP-EPOCH"]) >= int(modern_state["TARGET-ASSIGNMENT-EPOCH"]) >= 1
    plain_state = cli("groups", "describe", "kip848-app", "--state", "--bootstrap-server", b).stdout
    assert plain_state.split("\n")[0].split() == STATE_HEADER

    # Every view as JSON: one object per row, snake_case keys.
    def described(*view: str) -> list[dict]:
        return json_of(
            cli("groups", "--bootstrap-server", b, "--output", "json", "describe", "--all-groups", *view)
        )

    offsets_json = described()
    assert {(r["group"], r["partition"]): r["lag"] for r in offsets_json} == {
        (g, p): 0 for g in ("classic-app", "kip848-app") for p in range(3)}  # fmt: skip
    assert {r["group"]: r["current_offset"] for r in offsets_json if r["partition"] == 0}.keys() == {
        "classic-app", "kip848-app"}  # fmt: skip
    members_json = described("--members")
    assert sorted((r["group"], r["client_id"], r["partition_count"]) for r in members_json)[0] == (
        "classic-app", "c1", 3)  # fmt: skip
    classic_assignment = next(r for r in members_json if r["group"] == "classic-app")["current_assignment"]
    assert classic_assignment == [{"topic": "orders", "partitions": [0, 1, 2]}]
    states = {r["group"]: r for r in described("--state")}
    assert {g: (r["type"], r["assignment_strategy"], r["members"]) for g, r in states.items()} == {
        "classic-app": ("classic", "range", 1), "kip848-app": ("consumer", "uniform", 2)}  # fmt: skip
    assert states["classic-app"]["group_epoch"] is None and states["kip848-app"]["group_epoch"] >= 1

    # A connect group, by name: its epochs and workers as before; its state as a consumer group's.
    connect = cli("groups", "describe", "connect-cluster", "--bootstrap-server", b)
    heading, table = connect.stdout.split("\n\n")
    assert heading.startswith("GROUP connect-cluster  TYPE connect") and "COMPUTING-WORKER w1" in heading
    [[header, [worker]]] = [list(t) for t in tables(table)]
    assert header[:2] == ["MEMBER-ID", "URL"] and worker["URL"] == "http://127.0.0.1:8083"
    [connect_state] = json_of(cli("groups", "describe", "connect-cluster", "--state", "--output", "json",
                                  "--bootstrap-server", b))  # fmt: skip
    assert (connect_state["type"], connect_state["assignment_strategy"], connect_state["members"]) == (
        "connect", "incremental", 1)  # fmt: skip


def test_groups_all_groups_reset_offsets_and_delete(three_groups) -> None:
    """`--all-groups` resets and deletes only the consumer groups without active members, as
    kafka-consumer-groups does, and names the others; a plan for several groups names each
    line's group. A group with no members says so on stderr and still shows its offsets."""
    from tests.support.group_scenario import wait_until

    process, classic, modern = three_groups
    b = process.bootstrap
    server = ["--bootstrap-server", b]
    classic.stop("c1")
    empty = cli("groups", "describe", "classic-app", *server)
    assert "Consumer group 'classic-app' has no active members." in empty.stderr
    assert {r["LAG"] for r in rows_of(empty)} == {"0"} and {r["CONSUMER-ID"] for r in rows_of(empty)} == {"-"}
    assert cli("groups", "describe", "classic-app", "--members", *server).stdout == "", "no members"

    # Only the group without active members is reset; the other is named, and the exit says so.
    partly = cli("groups", "reset-offsets", "--all-groups", "--all-topics", "--to-earliest", *server)
    assert partly.returncode == 1
    assert "'kip848-app': it is Stable, and only a group with no active members can be reset" in partly.stderr
    header, planned = tables(partly.stdout.split("\n\n(dry run")[0])[0]
    assert header == ["GROUP", "TOPIC", "PARTITION", "NEW-OFFSET"]
    assert {(r["GROUP"], r["PARTITION"], r["NEW-OFFSET"]) for r in planned} == {
        ("classic-app", str(p), "0") for p in range(3)}  # fmt: skip

    modern.stop("m1")
    modern.stop("m2")

    def states() -> dict[str, str]:
        return {g["group"]: g["state"] for g in json_of(cli("groups", "list", "--output", "json", *server))}

    wait_until(lambda: states()["kip848-app"] == "Empty", 30, "kip848-app empty once m1 and m2 left")
    exported = cli(
        "groups", "reset-offsets", "--all-groups", "--all-topics", "--to-earliest", "--export", *server
    )
    assert exported.returncode == 0, exported.stderr
    assert sorted(exported.stdout.splitlines()) == [
        f"{g},orders,{p},0" for g in ("classic-app", "kip848-app") for p in range(3)]  # fmt: skip
    plan = Path(process.data_dir).parent / "plan.csv"
    plan.write_text(exported.stdout)
    applied = cli("groups", "--bootstrap-server", b, "reset-offsets", "--all-groups", "--from-file",
                  str(plan), "--execute")  # fmt: skip
    assert applied.returncode == 0, applied.stderr
    assert "Reset 6 partition(s) of groups classic-app, kip848-app." in applied.stdout
    rows = json_of(cli("groups", "--output", "json", "describe", "--all-groups", *server))
    assert {(r["group"], r["partition"]): r["current_offset"] for r in rows} == {
        (g, p): 0 for g in ("classic-app", "kip848-app") for p in range(3)}  # fmt: skip
    assert {g: sum(r["lag"] for r in rows if r["group"] == g) for g in ("classic-app", "kip848-app")} == {
        "classic-app": RECORDS, "kip848-app": RECORDS}  # fmt: skip

    deleted = cli("groups", "--bootstrap-server", b, "delete", "--all-groups")
    assert deleted.returncode == 0, deleted.stderr
    assert deleted.stdout.splitlines() == ["Deleted group classic-app.", "Deleted group kip848-app."]
    assert list(states()) == ["connect-cluster"], "a connect group is no consumer group"

    neither = cli("groups", "describe", *server)
    assert neither.returncode == 2 and "name a group, or give --all-groups" in neither.stderr
    both = cli("groups", "delete", "connect-cluster", "--all-groups", *server)
    assert both.returncode == 2 and "not both" in both.stderr


def test_topics_list_and_describe_as_json(coordinator) -> None:
    """`--output json` for `topics list` and `describe`, before or after the action."""
    from tests.support.clients import produce_kcat

    b = coordinator.bootstrap
    created = cli("topics", "create", "events", "--partitions", "2", "--config", "retention.ms=3600000",
                  "--bootstrap-server", b)  # fmt: skip
    assert created.returncode == 0, created.stderr
    produce_kcat(b, "events", [(f"k{i}".encode(), b"v") for i in range(10)])
    listed = json_of(cli("topics", "--output", "json", "list", "--bootstrap-server", b))
    assert listed == [
        {"topic": "__consumer_offsets", "internal": True},
        {"topic": "events", "internal": False},
    ]
    without = cli("topics", "list", "--exclude-internal", "--bootstrap-server", b, "--output", "json")
    assert json_of(without) == [{"topic": "events", "internal": False}]
    [topic] = json_of(cli("topics", "--bootstrap-server", b, "describe", "events", "--output", "json"))
    assert (topic["topic"], topic["partition_count"], topic["configs"]) == (
        "events",
        2,
        {"retention.ms": "3600000"},
    )
    assert [p["partition"] for p in topic["partitions"]] == [0, 1]
    assert sum(p["latest_offset"] - p["earliest_offset"] for p in topic["partitions"]) == 10
    assert all((p["leader"], p["replicas"], p["isr"]) == (1, [1], [1]) for p in topic["partitions"])
    assert len(topic["topic_id"]) == 22, "Kafka's base64 topic id"


def test_help_names_defaults_and_gives_examples() -> None:
    described = cli("groups", "describe", "--help", timeout=30).stdout
    assert "(default: 127.0.0.1:9092)" in described and "(default: table)" in described
    assert "--all-groups" in described and "--members" in described and "--state" in described
    groups = cli("groups", "--help", timeout=30).stdout
    assert "examples:\n  groups list --output json\n" in groups, "examples as written, not re-wrapped"
    topics = cli("topics", "--help", timeout=30).stdout
    assert "examples:" in topics and "  topics describe orders --output json\n" in topics
    create = cli("topics", "create", "--help", timeout=30).stdout
    assert "how many partitions (default: 1)" in " ".join(create.split())
    assert "(default: False)" not in create, "a flag's default is not worth a word"

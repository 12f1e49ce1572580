"""The coordinator's admin port and `groups describe`, as an operator uses them: Prometheus
`/metrics` scraped over HTTP after a real consumer group (librdkafka, group.protocol=consumer)
and a real connect group (worker processes) rebalance, and the CLI's view of each group's
epochs, assignor and every member's current versus target assignment."""

from __future__ import annotations

import subprocess
import sys
import urllib.request
from pathlib import Path

import pytest
from prometheus_client.parser import text_string_to_metric_families

from connect_rebalance.processes import CoordinatorProcess, connect_timings
from tests.support.group_scenario import MemberFleet, create_topic, groups_describe, wait_until
from tests.support.worker_cluster import WorkerCluster, metrics, rest

pytestmark = pytest.mark.integration

PARTITIONS = 12


def scrape(coordinator: CoordinatorProcess) -> dict[str, float]:
    return metrics(coordinator.admin_url)


def of_group(samples: dict[str, float], metric: str, group: str, kind: str) -> float:
    return samples[f'connect_rebalance_group_{metric}{{group="{group}",type="{kind}"}}']


def connect_figures(coordinator: CoordinatorProcess) -> tuple[float, ...]:
    """members, moved, rebalances, epoch and reconciled rebalances of the connect group."""
    samples = scrape(coordinator)
    return (
        *(of_group(samples, m, "connect-cluster", "connect")
          for m in ("members", "moved_total", "rebalances_total", "epoch", "reconcile_seconds_count")),
    )  # fmt: skip


def described_rows(shown: str) -> list[dict[str, str]]:
    """The rows of a consumer group's `groups describe` table, by column name (no cell has a blank)."""
    header, *rows = (line.split() for line in shown.splitlines() if line.strip())
    return [dict(zip(header, row, strict=True)) for row in rows]


def column(header: str, row: str, name: str) -> str:
    """A cell of `groups describe`'s table, by its column's position in the header."""
    start = header.index(name)
    following = [header.index(n, start + 1) for n in header[start:].split()[1:2]]
    return row[start : following[0] if following else None].strip()


def test_a_consumer_groups_rebalances_reconcile_time_and_moved_partitions(
    group_coordinator: CoordinatorProcess, fleets: list[MemberFleet], tmp_path: Path
) -> None:
    b = group_coordinator.bootstrap
    create_topic(b, "events", PARTITIONS)
    fleet = MemberFleet(tmp_path, b, "kip848", "events", "confluent-kafka-consumer", "uniform")
    fleets.append(fleet)

    def holding(counts: list[int]) -> None:
        members = [f"m{i + 1}" for i in range(len(counts))]
        wait_until(lambda: sorted(len(fleet.holding(m)) for m in members) == counts, 60, f"{counts} held")

    fleet.start("m1")
    holding([12])
    wait_until(lambda: scrape(group_coordinator).get(
        'connect_rebalance_group_reconcile_seconds_count{group="kip848",type="consumer"}', 0) >= 1, 30,
        "the first epoch reconciled")  # fmt: skip
    fleet.start("m2")
    holding([6, 6])
    wait_until(lambda: of_group(scrape(group_coordinator), "moved_total", "kip848", "consumer") == 6, 30,
               "the 6 partitions m2 took counted as moved")  # fmt: skip

    [state] = described_rows(groups_describe(group_coordinator.bootstrap, "kip848", "--state"))
    assert (state["ASSIGNMENT-STRATEGY"], state["#MEMBERS"]) == ("uniform", "2"), state
    members = described_rows(groups_describe(group_coordinator.bootstrap, "kip848", "--members", "--verbose"))
    assert len(members) == 2
    for member in members:
        assert member["CURRENT-ASSIGNMENT"] == member["TARGET-ASSIGNMENT"], f"a settled member: {member}"
    offsets = described_rows(groups_describe(group_coordinator.bootstrap, "kip848"))
    assert sorted(int(row["PARTITION"]) for row in offsets) == list(range(PARTITIONS)), "offsets and lag"

    fleet.stop("m2")
    holding([12])
    wait_until(lambda: of_group(scrape(group_coordinator), "moved_total", "kip848", "consumer") == 12, 30,
               "the 6 partitions m2 left counted as moved back")  # fmt: skip
    samples = scrape(group_coordinator)
    epoch = of_group(samples, "epoch", "kip848", "consumer")
    assert epoch >= 3, "m1 joined, m2 joined, m2 left"
    assert of_group(samples, "rebalances_total", "kip848", "consumer") == epoch
    # Each computation is for a newer epoch than the last, and every epoch here needed one.
    assert 1 <= of_group(samples, "target_computations_total", "kip848", "consumer") <= epoch
    assert of_group(samples, "members", "kip848", "consumer") == 1
    reconciled = samples['connect_rebalance_group_reconcile_seconds_count{group="kip848",type="consumer"}']
    assert reconciled >= 3
    assert samples['connect_rebalance_groups{type="consumer"}'] == 1


def test_a_connect_groups_metrics_and_its_describe_show_workers_and_their_work(tmp_path: Path) -> None:
    coordinator = CoordinatorProcess(tmp_path / "data", connect_timings(3000)).start()
    cluster = WorkerCluster(tmp_path, coordinator)
    try:
        w1 = cluster.start("w1")
        config = {"connector.class": "VerifiableSource", "topic": "out", "tasks.max": "4", "throughput": "2"}
        assert rest("POST", f"{w1.url}/connectors", {"name": "orders", "config": config})[0] == 201
        wait_until(lambda: cluster.balanced("orders", 5), 30, "the connector and 4 tasks on w1")
        w2 = cluster.start("w2")
        wait_until(lambda: cluster.balanced("orders", 5), 30, "the work spread over two workers")
        taken = sum(1 for worker in cluster.placement("orders").values() if worker == w2.worker_id)
        wait_until(lambda: connect_figures(coordinator)[:2] == (2, taken), 30,
                   f"two workers, and the {taken} items w2 took counted as moved")  # fmt: skip
        assert scrape(coordinator)['connect_rebalance_groups{type="connect"}'] == 1

        shown = groups_describe(coordinator.bootstrap, "connect-cluster")
        assert "TYPE connect" in shown and "COMPUTING-WORKER" in shown and "MEMBERS 2" in shown
        lines = shown.splitlines()
        header = next(line for line in lines if line.startswith("MEMBER-ID"))
        for worker in (w1, w2):
            [row] = [line for line in lines if worker.url in line]
            current, target, revoking = (
                column(header, row, name) for name in ("CURRENT", "TARGET", "REVOKING")
            )
            assert "orders" in current and current == target and revoking == "-", (
                f"{worker.name} settled: {row}"
            )

        w2.stop()  # SIGTERM: a graceful leave; its work goes back to w1 at once
        wait_until(lambda: cluster.balanced("orders", 5), 30, "everything back on w1")
        wait_until(lambda: connect_figures(coordinator)[:2] == (1, 2 * taken), 30,
                   "one worker, and w2's items counted as moved back")  # fmt: skip
        members, moved, rebalances, epoch, reconciled = connect_figures(coordinator)
        assert rebalances == epoch >= 3, "w1 joined, w2 joined, w2 left: each a new group epoch"
        assert reconciled >= 3, "each of them reconciled"
        missing = subprocess.run(
            [sys.executable, "-m", "connect_rebalance_cli.cli", "groups", "--bootstrap-server",
             coordinator.bootstrap, "describe", "nope"], capture_output=True, text=True, timeout=60,
        )  # fmt: skip
        assert missing.returncode == 1 and "does not exist" in missing.stderr

        # Both /metrics answers as Prometheus reads them: prometheus_client's own parser.
        def kinds(url: str) -> dict[str, str]:
            with urllib.request.urlopen(f"{url}/metrics", timeout=30) as response:
                assert response.headers["Content-Type"].startswith("text/plain")
                return {f.name: f.type for f in text_string_to_metric_families(response.read().decode())}

        coordinator_kinds, worker_kinds = kinds(coordinator.admin_url), kinds(w1.url)
        assert {name: coordinator_kinds.get(name) for name in (
            "connect_rebalance_group_rebalances", "connect_rebalance_group_members",
            "connect_rebalance_group_reconcile_seconds")} == {
            "connect_rebalance_group_rebalances": "counter", "connect_rebalance_group_members": "gauge",
            "connect_rebalance_group_reconcile_seconds": "summary"}  # fmt: skip
        worker_wanted = ("connect_worker_work_started", "connect_worker_running")
        assert {name: worker_kinds.get(name) for name in worker_wanted} == {
            "connect_worker_work_started": "counter", "connect_worker_running": "gauge"}  # fmt: skip
    finally:
        cluster.stop_all()
        coordinator.kill()

"""Workers on the classic group protocol (JoinGroup/SyncGroup with Kafka Connect's embedded
protocol) against a coordinator process, with `connect.protocol=eager` and with incremental
cooperative rebalancing (`sessioned`): tasks spread evenly over three workers; a joining
worker stops everything (eager) or only what balance needs (cooperative); a graceful leave;
a kill -9, whose work moves after the session (eager) or after the scheduled delay, with a
bounce within it getting its work back (cooperative); workers cut off from the coordinator stop
their work within the session; one eager worker makes the whole group eager. Stops are
counted from the workers' /metrics."""

from __future__ import annotations

import asyncio
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from connect_rebalance.processes import CoordinatorProcess
from connect_rebalance.protocol.api_keys import ApiKey
from connect_rebalance.protocol.client import ProtocolClient
from tests.integration.test_workers import converged, crash_bounce_and_crash_for_good, source
from tests.support.group_scenario import wait_until
from tests.support.worker_cluster import WorkerCluster, metrics, rest, stops

pytestmark = pytest.mark.integration
SESSION_MS, HEARTBEAT_MS, DELAY_MS = 3000, 500, 10000
LEAVE_SESSION_MS = 20000  # a handover well inside it; one that waited for the session well outside
# The coordinator answered the workers' last heartbeats at most a heartbeat interval before it
# was stopped, so their sessions can expire from CUT_OFF_SESSION_MS - HEARTBEAT_MS after.
CUT_OFF_SESSION_MS = 6000


def classic_cluster(
    tmp_path: Path, connect_protocol: str, session_ms: int = SESSION_MS
) -> Iterator[WorkerCluster]:
    coordinator = CoordinatorProcess(
        tmp_path / "data",
        {"group.min.session.timeout.ms": "1000", "group.initial.rebalance.delay.ms": "300"},
    ).start()
    workers = WorkerCluster(
        tmp_path, coordinator, **{
            "group.protocol": "classic", "connect.protocol": connect_protocol,
            "session.timeout.ms": str(session_ms), "heartbeat.interval.ms": str(HEARTBEAT_MS),
            "rebalance.timeout.ms": "10000", "scheduled.rebalance.max.delay.ms": str(DELAY_MS),
        },
    )  # fmt: skip
    try:
        yield workers
    finally:
        workers.stop_all()
        coordinator.kill()


@pytest.fixture
def eager(tmp_path: Path) -> Iterator[WorkerCluster]:
    yield from classic_cluster(tmp_path, "eager")


@pytest.fixture
def cooperative(tmp_path: Path) -> Iterator[WorkerCluster]:
    yield from classic_cluster(tmp_path, "sessioned")


@pytest.fixture
def cooperative_long_session(tmp_path: Path) -> Iterator[WorkerCluster]:
    yield from classic_cluster(tmp_path, "sessioned", LEAVE_SESSION_MS)


@pytest.fixture
def cooperative_cut_off(tmp_path: Path) -> Iterator[WorkerCluster]:
    yield from classic_cluster(tmp_path, "sessioned", CUT_OFF_SESSION_MS)


def total_stops(cluster: WorkerCluster, connector: str) -> int:
    return sum(stops(w.url, connector) for w in cluster.running())


def test_eager_workers_stop_everything_on_every_rebalance(eager: WorkerCluster) -> None:
    cluster = eager
    w1, w2, w3 = (cluster.start(n) for n in ("w1", "w2", "w3"))
    code, body = rest("POST", f"{w2.url}/connectors", source("orders", 8))
    assert code == 201, body
    wait_until(lambda: cluster.balanced("orders", 9), 30, "9 items over 3 workers")
    assert metrics(w1.url)["connect_worker_member_epoch"] >= 1

    before = total_stops(cluster, "orders")
    w4 = cluster.start("w4")
    wait_until(lambda: cluster.balanced("orders", 9), 30, "9 items over 4 workers")
    wait_until(lambda: total_stops(cluster, "orders") - before >= 9, 10, "every item to have stopped")
    assert total_stops(cluster, "orders") - before - stops(w4.url, "orders") == 9, "each item stopped once"

    before = total_stops(cluster, "orders") - stops(w4.url, "orders")
    held_by_others = sum(1 for worker in cluster.placement("orders").values() if worker != w4.worker_id)
    left_at = time.monotonic()
    w4.stop()
    wait_until(lambda: cluster.balanced("orders", 9), 3 * LEAVE_SESSION_MS / 1000, "w4's items to move")
    handed_over = time.monotonic() - left_at
    assert handed_over < LEAVE_SESSION_MS / 1000, (
        f"a leave does not wait for the session: w4's work ran elsewhere after {handed_over:.1f} s"
    )
    assert total_stops(cluster, "orders") - before == held_by_others, "everything on w1-w3 stopped again"

    w3.kill()
    wait_until(lambda: cluster.balanced("orders", 9), 30, "w3's items to move after its session")


def test_cooperative_workers_stop_only_what_moves_on_a_join_and_a_graceful_leave(
    cooperative_long_session: WorkerCluster,
) -> None:
    cluster = cooperative_long_session
    w1, w2, w3 = (cluster.start(n) for n in ("w1", "w2", "w3"))
    code, body = rest("POST", f"{w1.url}/connectors", source("orders", 8))
    assert code == 201, body
    wait_until(lambda: cluster.balanced("orders", 9), 30, "9 items over 3 workers")
    before_placement = cluster.placement("orders")
    before = total_stops(cluster, "orders")

    w4 = cluster.start("w4")
    wait_until(lambda: cluster.balanced("orders", 9), 30, "9 items over 4 workers")
    after = cluster.placement("orders")
    moved = {item for item in after if after[item] != before_placement[item]}
    assert {after[i] for i in moved} == {w4.worker_id}, "only items that went to the new worker moved"
    assert len(moved) == 2, after
    assert total_stops(cluster, "orders") - before - stops(w4.url, "orders") == len(moved)
    converged(w4)

    before = total_stops(cluster, "orders") - stops(w4.url, "orders")
    left_at = time.monotonic()
    w4.stop()
    wait_until(lambda: cluster.balanced("orders", 9), 3 * LEAVE_SESSION_MS / 1000, "w4's items to move")
    handed_over = time.monotonic() - left_at
    assert handed_over < LEAVE_SESSION_MS / 1000, (
        f"a leave does not wait for the session: w4's work ran elsewhere after {handed_over:.1f} s"
    )
    assert total_stops(cluster, "orders") == before, "nothing else stopped"


def test_cooperative_workers_hold_a_crashed_workers_work_for_the_delay_and_a_bounce_gets_it_back(
    cooperative: WorkerCluster, tmp_path: Path
) -> None:
    """Kafka Connect's scheduled.rebalance.max.delay.ms on the classic protocol: the leader holds
    a crashed worker's work and every member rejoins when the delay ends; a worker back within
    it (same worker.id; a new REST port) gets exactly its work back at once."""
    crash_bounce_and_crash_for_good(cooperative, tmp_path, SESSION_MS, DELAY_MS)


def test_workers_cut_off_from_the_coordinator_stop_their_work_within_the_session(
    cooperative_cut_off: WorkerCluster,
) -> None:
    cluster = cooperative_cut_off
    workers = [cluster.start(n) for n in ("w1", "w2")]
    rest("POST", f"{workers[0].url}/connectors", source("orders", 3))
    wait_until(lambda: cluster.balanced("orders", 4), 30, "4 items over 2 workers")
    cluster.coordinator.pause()  # SIGSTOP: no heartbeat is answered
    paused_at = time.monotonic()
    try:

        def everything_stopped() -> bool:
            return all(
                metrics(w.url).get("connect_worker_zombie_stops_total", 0) >= 1
                and metrics(w.url).get('connect_worker_running{connector="orders"}', 0) == 0
                for w in workers
            )

        # Waited for past the session, so that a late stop is measured, not timed out on.
        wait_until(everything_stopped, 3 * CUT_OFF_SESSION_MS / 1000, "every worker to stop its work")
        stopped_after = time.monotonic() - paused_at
    finally:
        cluster.coordinator.resume()
    assert stopped_after < (CUT_OFF_SESSION_MS - HEARTBEAT_MS) / 1000, (
        f"work stopped {stopped_after:.1f} s after the coordinator stopped answering"
    )
    wait_until(lambda: cluster.balanced("orders", 4), 60, "the workers to rejoin and run everything again")


def describe_group(bootstrap: str, group_id: str) -> dict[str, Any]:
    async def describe() -> dict[str, Any]:
        client = await ProtocolClient.connect(bootstrap)
        try:
            answer = await client.request(ApiKey.DESCRIBE_GROUPS, 5, {"groups": [group_id]})
        finally:
            await client.close()
        return dict(answer["groups"][0])

    return asyncio.run(describe())


def test_one_eager_worker_makes_the_whole_group_eager(cooperative: WorkerCluster) -> None:
    cluster = cooperative
    w1 = cluster.start("w1")
    cluster.start("w2")
    rest("POST", f"{w1.url}/connectors", source("orders", 4))
    wait_until(lambda: cluster.balanced("orders", 5), 30, "5 items over 2 workers")
    group = describe_group(cluster.coordinator.bootstrap, "connect-cluster")
    assert (group["protocol_type"], group["protocol_data"], len(group["members"])) == (
        "connect",
        "sessioned",
        2,
    )

    cluster.properties["connect.protocol"] = "eager"  # the only protocol every worker offers: default
    before = total_stops(cluster, "orders")
    cluster.start("w3")
    wait_until(lambda: cluster.balanced("orders", 5), 30, "5 items over 3 workers")
    group = describe_group(cluster.coordinator.bootstrap, "connect-cluster")
    assert (group["protocol_data"], len(group["members"])) == ("default", 3)
    wait_until(lambda: total_stops(cluster, "orders") - before >= 5, 10, "every item to have stopped")
    for worker in cluster.running():  # each worker's /metrics names the protocol in use
        assert metrics(worker.url).get('connect_worker_assignor{assignor="default"}') == 1, worker.name

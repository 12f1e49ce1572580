"""A rolling upgrade of a Kafka Connect cluster from the classic protocol to the connect group
protocol and back, with real worker processes against a coordinator process: two classic
workers (`connect.protocol=sessioned`) run a VerifiableSource; a `group.protocol=connect`
worker joins and the group turns `connect`, with the work balanced over all three; a classic
worker leaves and another connect worker joins; the coordinator is killed with SIGKILL and
restarted and rebuilds the mixed group from its log; then the connect workers are replaced one by
one by classic workers, and once the last one has left the group is classic again. At every
settled point every task runs and the work is balanced, and no task ever ran on two workers
at once (read back from what the source wrote)."""

from __future__ import annotations

import asyncio
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from connect_rebalance.processes import CoordinatorProcess, connect_timings
from connect_rebalance.protocol.api_keys import ApiKey
from connect_rebalance.protocol.client import ProtocolClient
from tests.integration.test_workers import records_by_task, source
from tests.support.group_scenario import wait_until
from tests.support.worker_cluster import WorkerCluster, rest
from workers.process import WorkerProcess

pytestmark = pytest.mark.integration
SESSION_MS, HEARTBEAT_MS = 3000, 500
TASKS, ITEMS = 6, 7  # the connector instance and its six tasks
GAP_MS = 1000  # a runner writes every 200 ms; a longer silence is a stop


@pytest.fixture
def cluster(tmp_path: Path) -> Iterator[WorkerCluster]:
    coordinator = CoordinatorProcess(
        tmp_path / "data",
        {**connect_timings(SESSION_MS), "group.min.session.timeout.ms": "1000",
         "group.initial.rebalance.delay.ms": "300"},
    ).start()  # fmt: skip
    workers = WorkerCluster(
        tmp_path, coordinator, **{
            "connect.protocol": "sessioned", "session.timeout.ms": str(SESSION_MS),
            "heartbeat.interval.ms": str(HEARTBEAT_MS), "rebalance.timeout.ms": "10000",
            "scheduled.rebalance.max.delay.ms": "10000",
        },
    )  # fmt: skip
    try:
        yield workers
    finally:
        workers.stop_all()
        coordinator.kill()


def start(cluster: WorkerCluster, name: str, protocol: str) -> WorkerProcess:
    """A worker on `group.protocol=protocol` in the cluster."""
    worker = WorkerProcess({**cluster.properties, "group.protocol": protocol}, cluster.tmp / "workers", name)
    cluster.workers[name] = worker.start()
    return worker


def call(bootstrap: str, api_key: int, version: int, fields: dict[str, Any]) -> dict[str, Any]:
    async def request() -> dict[str, Any]:
        client = await ProtocolClient.connect(bootstrap)
        try:
            return dict(await client.request(api_key, version, fields))
        finally:
            await client.close()

    return asyncio.run(request())


def group_type(cluster: WorkerCluster) -> tuple[str, str]:
    """(type, protocol type) of the workers' group, as ListGroups v5 reports it."""
    answer = call(
        cluster.coordinator.bootstrap, ApiKey.LIST_GROUPS, 5, {"states_filter": [], "types_filter": []}
    )
    group = next(g for g in answer["groups"] if g["group_id"] == "connect-cluster")
    return group["group_type"], group["protocol_type"]


def connect_members(cluster: WorkerCluster) -> set[str]:
    """The workers' urls as ConnectGroupDescribe lists them."""
    answer = call(
        cluster.coordinator.bootstrap, ApiKey.CONNECT_GROUP_DESCRIBE, 0, {"group_ids": ["connect-cluster"]}
    )
    return {m["url"] for m in answer["groups"][0]["members"]}


def settled(cluster: WorkerCluster, what: str, kind: str | None = None) -> None:
    """Every item RUNNING, balanced over exactly the running workers (and the group of `kind`)."""
    wait_until(
        lambda: cluster.balanced("orders", ITEMS) and (kind is None or group_type(cluster)[0] == kind),
        45,
        what,
        interval=0.2,
    )


def stints(records: list[tuple[int, int, str]]) -> list[tuple[str, int, int]]:
    """(worker, first ms, last ms) of each uninterrupted run of a task on one worker: its records
    with consecutive sequence numbers and no silence longer than GAP_MS."""
    out: list[tuple[str, int, int]] = []
    for worker in {w for _, _, w in records}:
        mine = sorted((ts, seq) for ts, seq, w in records if w == worker)
        first, (last_ts, last_seq) = mine[0][0], mine[0]
        for ts, seq in mine[1:]:
            if seq != last_seq + 1 or ts - last_ts > GAP_MS:
                out.append((worker, first, last_ts))
                first = ts
            last_ts, last_seq = ts, seq
        out.append((worker, first, last_ts))
    return out


def assert_never_on_two_workers_at_once(bootstrap: str) -> None:
    """Each task's runs on different workers never overlap in time; and tasks did move."""
    by_task = records_by_task(bootstrap, "orders-out")
    assert len(by_task) == TASKS, sorted(by_task)
    moves = 0
    for task, records in by_task.items():
        runs = stints(records)
        moves += len({w for w, _, _ in runs}) - 1
        for i, (a, a_first, a_last) in enumerate(runs):
            for b, b_first, b_last in runs[i + 1 :]:
                overlap = a != b and a_first <= b_last and b_first <= a_last
                assert not overlap, (
                    f"task {task} ran on {a} ({a_first}-{a_last}) and {b} ({b_first}-{b_last})"
                )


def test_a_rolling_upgrade_to_the_connect_protocol_and_back(cluster: WorkerCluster) -> None:
    w1, w2 = start(cluster, "w1", "classic"), start(cluster, "w2", "classic")
    code, body = rest("POST", f"{w1.url}/connectors", source("orders", TASKS, throughput=5))
    assert code == 201, body
    settled(cluster, "the classic group to run everything", "classic")
    assert group_type(cluster) == ("classic", "connect")

    # Upgrade: a connect-protocol worker converts the group; the work spreads over three workers.
    c1 = start(cluster, "c1", "connect")
    settled(cluster, "the connect group to balance over w1, w2, c1", "connect")
    assert group_type(cluster) == ("connect", "connect")
    assert connect_members(cluster) == {w1.url, w2.url, c1.url}

    # A classic worker leaves, another connect worker joins.
    w1.stop()
    settled(cluster, "w1's work to move to w2 and c1", "connect")
    c2 = start(cluster, "c2", "connect")
    settled(cluster, "the work to balance over w2, c1, c2", "connect")
    assert connect_members(cluster) == {w2.url, c1.url, c2.url}

    # kill -9 of the coordinator: it rebuilds the mixed group, classic worker included, from its log.
    cluster.coordinator.kill()
    cluster.coordinator.start()
    assert group_type(cluster) == ("connect", "connect")
    assert connect_members(cluster) == {w2.url, c1.url, c2.url}
    settled(cluster, "the workers to carry on with the restarted coordinator", "connect")

    # Downgrade: each connect worker is replaced by a classic one.
    w3 = start(cluster, "w3", "classic")
    settled(cluster, "w3 to join the connect group as a classic worker", "connect")
    c1.stop()
    settled(cluster, "c1's work to move", "connect")
    w4 = start(cluster, "w4", "classic")
    settled(cluster, "w4 to join", "connect")
    c2.stop()
    settled(cluster, "the group to be classic again, balanced over w2, w3, w4", "classic")
    assert group_type(cluster) == ("classic", "connect")
    assert {w.worker_id for w in cluster.running()} == {w2.worker_id, w3.worker_id, w4.worker_id}

    assert_never_on_two_workers_at_once(cluster.coordinator.bootstrap)

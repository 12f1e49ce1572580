"""The eager assignor on the connect group protocol, with worker processes against a coordinator
process: three eager workers (`connect.protocol=eager`) stop and restart every task on every
join, leave and crash, and a crashed worker's work is not held back; an eager-only worker
joining two incremental workers turns the group eager, and it is incremental again once that
worker has left; a worker sharing no assignor with the group is refused and exits saying why.
Each settled point has every task running (balanced, and writing again); what the
VerifiableSource wrote shows no task's runs ever overlapped in time; `groups describe` and
every worker's /metrics name the assignor in use."""

from __future__ import annotations

import re
import threading
import time
from collections.abc import Iterator
from pathlib import Path

import pytest

from connect_rebalance.protocol.connect_group import ClientAssignor
from tests.integration.test_workers import source, worker_cluster
from tests.support.connect_driver import ConnectDriver, TcpTransport
from tests.support.group_scenario import groups_describe, wait_until
from tests.support.verifiable_records import (
    assert_no_task_ran_twice_at_once,
    runs_by_task,
    started_since,
    written_since,
)
from tests.support.worker_cluster import WorkerCluster, metrics, rest, stops
from workers.harness.process import WorkerProcess

pytestmark = pytest.mark.integration
SESSION_MS = 3000
DELAY_MS = 120000  # held work would wait this long: far beyond any settling below
TASKS, ITEMS = 6, 7  # the connector instance and its six tasks
EVERY_TASK = set(range(TASKS))


@pytest.fixture
def cluster(tmp_path: Path) -> Iterator[WorkerCluster]:
    settings = {
        "group.protocol": "connect", "session.timeout.ms": str(SESSION_MS),
        "rebalance.timeout.ms": "10000", "scheduled.rebalance.max.delay.ms": str(DELAY_MS),
    }  # fmt: skip
    with worker_cluster(tmp_path, SESSION_MS, **settings) as workers:
        yield workers


def now_ms() -> float:
    return time.time() * 1000  # the clock the VerifiableSource stamps its records with


def settled(cluster: WorkerCluster, what: str) -> None:
    """Every item RUNNING, balanced over exactly the running workers, and every task writing."""
    wait_until(lambda: cluster.balanced("orders", ITEMS), 45, what, interval=0.2)
    since, bootstrap = now_ms(), cluster.coordinator.bootstrap
    wait_until(lambda: written_since(runs_by_task(bootstrap, "orders-out"), since) == EVERY_TASK, 30,
               f"every task writing once {what}", interval=0.2)  # fmt: skip


def assignor_in_use(cluster: WorkerCluster) -> str:
    """The assignor `groups describe` names, checked against every running worker's /metrics."""
    shown = re.search(r"ASSIGNOR (\S+)", groups_describe(cluster.coordinator.bootstrap, "connect-cluster"))
    assert shown is not None
    for worker in cluster.running():
        assert metrics(worker.url).get(f'connect_worker_assignor{{assignor="{shown[1]}"}}') == 1, (
            f"{worker.name} reports the assignor in use"
        )
    return shown[1]


def restarted_since(cluster: WorkerCluster, since_ms: float) -> set[int]:
    return started_since(runs_by_task(cluster.coordinator.bootstrap, "orders-out"), since_ms)


def start(cluster: WorkerCluster, name: str, **settings: str) -> WorkerProcess:
    worker = WorkerProcess({**cluster.properties, **settings}, cluster.tmp / "workers", name)
    cluster.workers[name] = worker.start()
    return worker


def test_eager_workers_stop_and_restart_every_task_on_every_join_leave_and_crash(
    cluster: WorkerCluster,
) -> None:
    cluster.properties["connect.protocol"] = "eager"
    w1, w2, w3 = (cluster.start(n) for n in ("w1", "w2", "w3"))
    code, body = rest("POST", f"{w1.url}/connectors", source("orders", TASKS, throughput=5))
    assert code == 201, body
    settled(cluster, "the work is spread over w1-w3")
    assert assignor_in_use(cluster) == "eager"

    def stopped(*workers: WorkerProcess) -> int:
        return sum(stops(w.url, "orders") for w in workers)

    before, since = stopped(w1, w2, w3), now_ms()
    w4 = cluster.start("w4")
    settled(cluster, "w4 has joined")
    assert restarted_since(cluster, since) == EVERY_TASK, "a join restarts every task"
    assert stopped(w1, w2, w3) - before == ITEMS, "each item stopped once, on the worker that ran it"

    on_w4 = sum(1 for worker in cluster.placement("orders").values() if worker == w4.worker_id)
    before, since = stopped(w1, w2, w3), now_ms()
    w4.stop()
    settled(cluster, "w4 has left")
    assert restarted_since(cluster, since) == EVERY_TASK, "a leave restarts every task"
    assert stopped(w1, w2, w3) - before == ITEMS - on_w4, "w1-w3 stopped everything they ran"

    since = now_ms()
    w3.kill()
    settled(cluster, "w3's work is dealt out after its session, not held for the scheduled delay")
    assert restarted_since(cluster, since) == EVERY_TASK, "a crash restarts every task"
    assert assignor_in_use(cluster) == "eager"
    assert_no_task_ran_twice_at_once(runs_by_task(cluster.coordinator.bootstrap, "orders-out"))


def test_an_eager_only_worker_turns_the_group_eager_and_back_when_it_leaves(cluster: WorkerCluster) -> None:
    w1 = cluster.start("w1")  # connect.protocol=sessioned: sessioned, then eager
    cluster.start("w2")
    code, body = rest("POST", f"{w1.url}/connectors", source("orders", TASKS, throughput=5))
    assert code == 201, body
    settled(cluster, "the work is spread over w1 and w2")
    assert assignor_in_use(cluster) == "sessioned"

    since = now_ms()
    eager = start(cluster, "eager", **{"connect.protocol": "eager"})
    settled(cluster, "the eager-only worker has joined")
    assert assignor_in_use(cluster) == "eager"
    assert restarted_since(cluster, since) == EVERY_TASK, "the group turned eager: every task restarted"

    placed = cluster.placement("orders")
    its_tasks = {int(item) for item, worker in placed.items() if worker == eager.worker_id and item != "C"}
    since = now_ms()
    eager.stop()
    settled(cluster, "the eager-only worker has left")
    assert assignor_in_use(cluster) == "sessioned"
    assert restarted_since(cluster, since) == its_tasks, "incremental again: only its tasks moved"
    assert_no_task_ran_twice_at_once(runs_by_task(cluster.coordinator.bootstrap, "orders-out"))


def test_a_worker_sharing_no_assignor_with_the_group_is_refused_and_exits_saying_why(
    cluster: WorkerCluster,
) -> None:
    transport = TcpTransport(cluster.coordinator.bootstrap)
    older = ConnectDriver(transport)  # a worker that knows the incremental assignor only
    joined = older.join("older-worker", assignors=[ClientAssignor("sessioned", 1, 1, 1, b"{}")])
    assert joined["error_code"] == 0
    done = threading.Event()

    def heartbeats() -> None:  # it stays in the group while the other worker starts
        while not done.wait(joined["heartbeat_interval_ms"] / 1000):
            assert older.beat("older-worker")["error_code"] == 0

    beating = threading.Thread(target=heartbeats, daemon=True)
    beating.start()
    try:
        refused = start(cluster, "eager", **{"connect.protocol": "eager"})
        process = refused.process
        assert process is not None
        wait_until(lambda: process.poll() is not None, 30, "the refused worker to exit")
        log = refused.log_text()
        assert process.returncode == 1, log[-3000:]
        for said in ("UNSUPPORTED_ASSIGNOR", "[eager v1-1]", "[sessioned v1-1]"):
            assert said in log, log[-3000:]
        assert beating.is_alive(), "the older worker stayed in the group throughout"
    finally:
        done.set()
        beating.join(10)
        transport.close()

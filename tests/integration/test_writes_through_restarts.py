"""Config writes sent during a rolling restart, to the workers that stay up, all succeed on
their first try, on both group protocols: a follower whose leader is gone or shutting down
sends the write to the group's next leader (workers/rest/forwarding.py), and a worker that is
shutting down refuses writes with 503 instead of failing them with a 500.

Real worker processes on a real coordinator, each stopped with SIGTERM and started again in
turn while a client PUTs connector configs to the others.
"""

from __future__ import annotations

import threading
from pathlib import Path
from typing import Any

import pytest

from connect_rebalance.processes import CoordinatorProcess, connect_timings
from tests.support.group_scenario import wait_until
from tests.support.worker_cluster import WorkerCluster, rest

pytestmark = pytest.mark.integration
CONNECTORS = [f"c{i}" for i in range(4)]
WORKERS = ("w1", "w2", "w3")


def config(throughput: int) -> dict[str, str]:
    return {"connector.class": "VerifiableSource", "topic": "out", "tasks.max": "1",
            "throughput": str(throughput)}  # fmt: skip


class Writer(threading.Thread):
    """PUTs connector configs, one after another, to the workers not being restarted; keeps
    every answer. `restarting` is changed only under `lock`, which a request holds from
    choosing its worker to its answer: no request is sent to a worker about to stop."""

    def __init__(self, cluster: WorkerCluster) -> None:
        super().__init__(name="writer", daemon=True)
        self.cluster = cluster
        self.lock = threading.Lock()
        self.restarting: set[str] = set()
        self.done = threading.Event()
        self.answers: list[tuple[str, int, Any]] = []

    def run(self) -> None:
        sent = 0
        while not self.done.is_set():
            with self.lock:
                up = [w for n, w in self.cluster.workers.items() if n not in self.restarting]
                worker = up[sent % len(up)]
                name = CONNECTORS[sent % len(CONNECTORS)]
                code, body = rest("PUT", f"{worker.url}/connectors/{name}/config", config(1 + sent % 3))
            self.answers.append((worker.name, code, body))
            sent += 1


@pytest.mark.parametrize("protocol", ["connect", "classic"])
def test_config_writes_sent_during_a_rolling_restart_all_succeed_on_their_first_try(
    tmp_path: Path, protocol: str
) -> None:
    settings = {"group.protocol": protocol, "scheduled.rebalance.max.delay.ms": "2000"}
    if protocol == "classic":
        settings |= {"session.timeout.ms": "6000", "heartbeat.interval.ms": "1000"}
    coordinator = CoordinatorProcess(tmp_path / "data", connect_timings(6000)).start()
    cluster = WorkerCluster(tmp_path, coordinator, **settings)
    writer = Writer(cluster)
    try:
        for name in WORKERS:
            cluster.start(name)
        first = cluster.workers["w1"]
        for name in CONNECTORS:
            assert rest("POST", f"{first.url}/connectors", {"name": name, "config": config(1)})[0] == 201

        def settled(restarted: str | None = None) -> bool:
            live = {w.worker_id for w in cluster.running()}
            placed = [cluster.placement(c) for c in CONNECTORS]
            held = {worker for where in placed for worker in where.values()}
            return all(len(where) == 2 and set(where.values()) <= live for where in placed) and (
                restarted is None or cluster.workers[restarted].worker_id in held
            )

        wait_until(settled, 60, "every connector and task running")
        writer.start()
        for name in WORKERS:
            with writer.lock:
                writer.restarting.add(name)
            cluster.workers[name].stop()  # SIGTERM, and its exit awaited
            cluster.start(name)
            wait_until(lambda n=name: settled(n), 90, f"{name} back in the group with work")
            with writer.lock:
                writer.restarting.discard(name)
        writer.done.set()
        writer.join(120)
    finally:
        writer.done.set()
        cluster.stop_all()
        coordinator.kill()

    failed = [answer for answer in writer.answers if not 200 <= answer[1] < 300]
    assert len(writer.answers) >= 20, f"only {len(writer.answers)} writes were sent"
    assert failed == [], f"{len(failed)} of {len(writer.answers)} writes failed: {failed[:5]}"

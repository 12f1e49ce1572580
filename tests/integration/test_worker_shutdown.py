"""SIGTERM always stops a worker, within `task.shutdown.graceful.timeout.ms` and a margin,
whether or not its coordinator answers, and leaves nothing it started running.

Seen before: with the coordinator killed, a worker sent SIGTERM was still running 90 s later,
logging "No node available for metadata refresh" every few milliseconds; only SIGKILL ended it.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from connect_rebalance.processes import CoordinatorProcess, connect_timings
from tests.integration.test_workers import source
from tests.support.group_scenario import wait_until
from tests.support.spark_cluster import descendants, sigterm_and_time
from tests.support.worker_cluster import WorkerCluster, rest

pytestmark = pytest.mark.integration
GRACEFUL_MS = 3000
# What a stop may take beyond the tasks' graceful timeout: leaving the group and closing the
# clients, each bounded by its own timeout on a loaded machine.
MARGIN_S = 7.0


@pytest.mark.parametrize("coordinator_state", ["killed", "frozen", "up"])
def test_sigterm_stops_a_worker_within_the_graceful_timeout_and_leaves_nothing_running(
    tmp_path: Path, coordinator_state: str
) -> None:
    """Killed: every connection is refused. Frozen (SIGSTOP, as a hung host or a partition
    looks): every request waits for its timeout, and their sum is beyond the bound."""
    state = coordinator_state
    coordinator = CoordinatorProcess(tmp_path / "data", connect_timings(3000)).start()
    cluster = WorkerCluster(tmp_path, coordinator, **{"task.shutdown.graceful.timeout.ms": str(GRACEFUL_MS)})
    try:
        worker = cluster.start("w1")
        assert rest("POST", f"{worker.url}/connectors", source("busy", 2, throughput=50))[0] == 201
        wait_until(lambda: len(cluster.placement("busy")) == 3, 30, "the connector and its tasks running")
        assert worker.process is not None
        started = descendants(worker.process.pid)
        if state == "killed":
            coordinator.kill()
        elif state == "frozen":
            coordinator.pause()
        bound = GRACEFUL_MS / 1000 + MARGIN_S
        took = sigterm_and_time(worker, bound + 30)
        assert worker.process.poll() is not None, f"still running {took:.0f} s after SIGTERM"
        assert took <= bound, f"SIGTERM took {took:.1f} s to stop the worker"
        assert worker.process.returncode == 0, "a requested stop is a clean exit"
        assert "did not stop within" not in worker.log_text(), "the stop hung: only the bound ended it"
        left = {pid for pid in started if Path(f"/proc/{pid}").exists()}
        assert not left, f"processes the worker started outlived it: {left}"
    finally:
        cluster.stop_all()
        coordinator.kill()

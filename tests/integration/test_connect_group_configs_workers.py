"""A connect group's own session timeout, on real worker processes: raised with
confluent-kafka's AdminClient (IncrementalAlterConfigs on the GROUP resource) while the group
runs, it lets a worker frozen (SIGSTOP) for longer than the coordinator's default session,
but shorter than the group's, keep its work. Its tasks are not moved while it is frozen (no
rebalance), and after SIGCONT the same runs of its tasks carry on writing at the same member
epoch: the heartbeat answers told the worker the group's session timeout, so its own
no-zombie deadline did not stop its work on thaw either."""

from __future__ import annotations

import time
from collections.abc import Iterator
from pathlib import Path

import pytest
from confluent_kafka.admin import AdminClient, AlterConfigOpType, ConfigEntry, ConfigResource
from confluent_kafka.admin import ResourceType as Rt

from tests.integration.test_workers import source, worker_cluster
from tests.support.group_scenario import group_epoch, wait_until
from tests.support.polling import settle
from tests.support.verifiable_records import read_values
from tests.support.worker_cluster import WorkerCluster, metrics, rest

pytestmark = pytest.mark.integration

DEFAULT_SESSION_MS = 3000  # the coordinator's group.connect.session.timeout.ms
GROUP_SESSION_MS = 15000  # the group's own: a frozen worker stops its work after 10 s of it
FROZEN_S = 2 * DEFAULT_SESSION_MS / 1000
GROUP, TASKS = "connect-cluster", 4


@pytest.fixture
def cluster(tmp_path: Path) -> Iterator[WorkerCluster]:
    # No delay: a worker whose session expires has its tasks moved at once.
    with worker_cluster(tmp_path, DEFAULT_SESSION_MS, **{"scheduled.rebalance.max.delay.ms": "0"}) as workers:
        yield workers


def runs_writing(
    bootstrap: str, after_ms: float, until_ms: float = float("inf"), worker: str | None = None
) -> dict[int, set[str]]:
    """Each task's runs (one start of the task each) that wrote a record within the span (on
    `worker`, if named)."""
    runs: dict[int, set[str]] = {}
    for _, value in read_values(bootstrap, "slow-out"):
        if after_ms < value["at"] <= until_ms and worker in (None, value["worker"]):
            runs.setdefault(value["task"], set()).add(value["run"])
    return runs


def test_a_worker_frozen_past_the_default_session_but_within_its_groups_keeps_its_work(
    cluster: WorkerCluster,
) -> None:
    w1, w2 = cluster.start("w1"), cluster.start("w2")
    assert rest("POST", f"{w1.url}/connectors", source("slow", TASKS, throughput=10))[0] == 201
    wait_until(lambda: cluster.balanced("slow", TASKS + 1), 60, "the connector's tasks on both workers")

    admin = AdminClient({"bootstrap.servers": cluster.coordinator.bootstrap})
    entry = ConfigEntry("connect.session.timeout.ms", str(GROUP_SESSION_MS),
                        incremental_operation=AlterConfigOpType.SET)  # fmt: skip
    resource = ConfigResource(Rt.GROUP, GROUP, incremental_configs=[entry])
    admin.incremental_alter_configs([resource])[resource].result(30)
    told = f"the coordinator measures this worker's session with {GROUP_SESSION_MS} ms"
    # Told at its next heartbeat; asserted at the end (the thaw below is what depends on it).
    settle(w2.log_text, lambda text: told in text, 10)

    before = cluster.placement("slow")
    mine = {int(item) for item, worker in before.items() if item != "C" and worker == w2.worker_id}
    assert mine, f"w2 runs no task: {before}"
    epoch, figures = group_epoch(cluster.coordinator, GROUP, "connect"), metrics(w2.url)
    paused_ms = time.time() * 1000
    w2.pause()  # SIGSTOP
    try:
        # Twice the default session: the statuses (read from w1) must not move w2's tasks.
        during = settle(lambda: cluster.placement("slow"), lambda placed: placed != before, FROZEN_S)
    finally:
        w2.resume()  # SIGCONT
    thawed_ms = time.time() * 1000
    assert during == before, "w2's tasks moved while it was frozen within its group's session"
    assert group_epoch(cluster.coordinator, GROUP, "connect") == epoch, "no rebalance"

    def each_task_of_w2_wrote_since_the_thaw() -> bool:
        return mine <= set(runs_writing(cluster.coordinator.bootstrap, thawed_ms))

    wait_until(each_task_of_w2_wrote_since_the_thaw, 30, "w2's tasks to write again after the thaw")
    after = metrics(w2.url)
    assert after["connect_worker_zombie_stops_total"] == 0, "w2 stopped its own work on thaw"
    assert after["connect_worker_member_epoch"] == figures["connect_worker_member_epoch"]
    assert after.get('connect_worker_work_stopped_total{connector="slow"}', 0) == figures.get(
        'connect_worker_work_stopped_total{connector="slow"}', 0
    ), "w2 stopped some of its work"
    # w2's runs writing in the second before the freeze are the ones writing after the thaw.
    before_freeze = runs_writing(cluster.coordinator.bootstrap, paused_ms - 1000, paused_ms, w2.worker_id)
    since_thaw = runs_writing(cluster.coordinator.bootstrap, thawed_ms)
    assert {t: since_thaw[t] for t in mine} == {t: before_freeze[t] for t in mine}, "tasks started again"
    assert cluster.placement("slow") == before
    assert told in w2.log_text(), "w2 was not told its group's session timeout"

"""A rolling upgrade of a Kafka Connect cluster from the classic protocol to the connect group
protocol and back, with real worker processes against a coordinator process: two classic
workers (`connect.protocol=sessioned`) run a VerifiableSource; a `group.protocol=connect`
worker joins and the group turns `connect`, with the work balanced over all three; a classic
worker leaves and another connect worker joins; the coordinator is killed with SIGKILL and
restarted and rebuilds the mixed group from its log; then the connect workers are replaced one by
one by classic workers, and once the last one has left the group is classic again. At every
settled point every task runs and the work is balanced, and only what balance needs moved: a
joining worker's share, to it; a leaving worker's work, from it; nothing at the coordinator's
restart. Every record the source wrote names its writer and carries the task's sequence
number, so read back in log order a task's writers change exactly where the task moved: two
workers running it at once, even for one record's interval, would interleave."""

from __future__ import annotations

import asyncio
import contextlib
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from connect_rebalance.processes import CoordinatorProcess, connect_timings
from connect_rebalance.protocol.api_keys import ApiKey
from connect_rebalance.protocol.client import ProtocolClient
from tests.integration.test_workers import records_by_task, source
from tests.support.group_scenario import wait_until
from tests.support.worker_cluster import WorkerCluster, metrics, rest
from workers.harness.process import WorkerProcess

pytestmark = pytest.mark.integration
SESSION_MS, HEARTBEAT_MS = 3000, 500
TASKS, ITEMS = 6, 7  # the connector instance and its six tasks
PER_SECOND = 10  # records per task: two runners at once for 100 ms interleave
REWRITTEN_AT_MOST = 5  # records after the last stored offset a new owner writes again (at least once)


@contextlib.contextmanager
def cluster_of(tmp_path: Path, session_ms: int) -> Iterator[WorkerCluster]:
    """A coordinator process and a worker cluster on it whose sessions last `session_ms`."""
    coordinator = CoordinatorProcess(
        tmp_path / "data",
        {**connect_timings(session_ms), "group.min.session.timeout.ms": "1000",
         "group.initial.rebalance.delay.ms": "300"},
    ).start()  # fmt: skip
    workers = WorkerCluster(
        tmp_path, coordinator, **{
            "connect.protocol": "sessioned", "session.timeout.ms": str(session_ms),
            "heartbeat.interval.ms": str(HEARTBEAT_MS), "rebalance.timeout.ms": "10000",
            "scheduled.rebalance.max.delay.ms": "10000",
        },
    )  # fmt: skip
    try:
        yield workers
    finally:
        workers.stop_all()
        coordinator.kill()


@pytest.fixture
def cluster(tmp_path: Path) -> Iterator[WorkerCluster]:
    with cluster_of(tmp_path, SESSION_MS) as workers:
        yield workers


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


def listed(cluster: WorkerCluster) -> dict[str, Any]:
    """The workers' group as ListGroups v5 reports it."""
    answer = call(
        cluster.coordinator.bootstrap, ApiKey.LIST_GROUPS, 5, {"states_filter": [], "types_filter": []}
    )
    return next(g for g in answer["groups"] if g["group_id"] == "connect-cluster")


def group_type(cluster: WorkerCluster) -> tuple[str, str]:
    """(type, protocol type) of the workers' group."""
    group = listed(cluster)
    return group["group_type"], group["protocol_type"]


def connect_members(cluster: WorkerCluster) -> set[str]:
    """The workers' urls as ConnectGroupDescribe lists them."""
    answer = call(
        cluster.coordinator.bootstrap, ApiKey.CONNECT_GROUP_DESCRIBE, 0, {"group_ids": ["connect-cluster"]}
    )
    return {m["url"] for m in answer["groups"][0]["members"]}


def settled(cluster: WorkerCluster, what: str, kind: str | None = None) -> dict[str, str]:
    """Every item RUNNING, balanced over exactly the running workers (and the group of `kind`);
    returns where each item runs."""
    wait_until(
        # Settled on the coordinator too: a worker leaving while a member is still catching up
        # with the last epoch is a different event from a leave after a rebalance.
        lambda: (
            cluster.balanced("orders", ITEMS)
            and listed(cluster)["group_state"] == "Stable"
            and (kind is None or group_type(cluster)[0] == kind)
        ),
        45,
        what,
        interval=0.2,
    )
    return cluster.placement("orders")


class Moves:
    """The placement at each settled point, and the checks that each step moved only what it must."""

    def __init__(self, first: dict[str, str]) -> None:
        self.history = [first]

    def _next(self, now: dict[str, str]) -> set[str]:
        before = self.history[-1]
        self.history.append(now)
        return {item for item in now if now[item] != before.get(item)}

    def joined(self, worker: WorkerProcess, now: dict[str, str]) -> None:
        moved = self._next(now)
        share = sum(1 for owner in now.values() if owner == worker.worker_id)
        assert share and {now[i] for i in moved} == {worker.worker_id} and len(moved) == share, (
            f"a join moves the newcomer's share to it and nothing else: moved {sorted(moved)}, now {now}"
        )

    def left(self, worker: WorkerProcess, now: dict[str, str]) -> None:
        before = self.history[-1]
        moved = self._next(now)
        had = {item for item, owner in before.items() if owner == worker.worker_id}
        assert had and moved == had, (
            f"a leave moves the leaver's work and nothing else: moved {sorted(moved)}"
        )

    def stayed(self, now: dict[str, str]) -> None:
        moved = self._next(now)
        assert not moved, f"nothing moves: {sorted(moved)} did"

    def owners(self, task: str) -> list[str]:
        """The task's successive owners over the settled points."""
        owners: list[str] = []
        for placement in self.history:
            if not owners or owners[-1] != placement[task]:
                owners.append(placement[task])
        return owners


def writers(records: list[tuple[int, int, str]]) -> list[tuple[str, int, int]]:
    """(writer, first seq, last seq) of each stretch of a task's records by one worker, in log order."""
    out: list[tuple[str, int, int]] = []
    for _, seq, worker in records:
        if out and out[-1][0] == worker:
            out[-1] = (worker, out[-1][1], seq)
        else:
            out.append((worker, seq, seq))
    return out


def assert_never_on_two_workers_at_once(bootstrap: str, moves: Moves) -> None:
    """Each task's writers, in log order, are its owners at the settled points: one change per
    move, none back and forth (two runners interleave); each new owner goes on from where the
    last one stopped (at most the records after its last stored offset again, none skipped)."""
    tasks = [str(t) for t in range(TASKS)]
    final = {f"orders-{t}": moves.history[-1][t] for t in tasks}

    def final_owners_wrote() -> bool:
        by_task = records_by_task(bootstrap, "orders-out")
        return all(by_task.get(key, [(0, 0, "")])[-1][2] == owner for key, owner in final.items())

    wait_until(final_owners_wrote, 30, "every task's last owner to write")
    by_task = records_by_task(bootstrap, "orders-out")
    assert sorted(by_task) == sorted(final), sorted(by_task)
    for task in tasks:
        stretches = writers(by_task[f"orders-{task}"])
        assert [w for w, _, _ in stretches] == moves.owners(task), (
            f"task {task} was written by {stretches}, owned by {moves.owners(task)} in turn"
        )
        for (_, _, last), (worker, first, _) in zip(stretches, stretches[1:], strict=False):
            assert last - REWRITTEN_AT_MOST < first <= last + 1, (
                f"task {task} went on on {worker} at {first} after {last}"
            )


def test_a_rolling_upgrade_to_the_connect_protocol_and_back(cluster: WorkerCluster) -> None:
    w1, w2 = start(cluster, "w1", "classic"), start(cluster, "w2", "classic")
    code, body = rest("POST", f"{w1.url}/connectors", source("orders", TASKS, throughput=PER_SECOND))
    assert code == 201, body
    moves = Moves(settled(cluster, "the classic group to run everything", "classic"))
    assert group_type(cluster) == ("classic", "connect")

    # Upgrade: a connect-protocol worker converts the group; the work spreads over three workers.
    c1 = start(cluster, "c1", "connect")
    moves.joined(c1, settled(cluster, "the connect group to balance over w1, w2, c1", "connect"))
    assert group_type(cluster) == ("connect", "connect")
    assert connect_members(cluster) == {w1.url, w2.url, c1.url}

    # A classic worker leaves, another connect worker joins.
    w1.stop()
    moves.left(w1, settled(cluster, "w1's work to move to w2 and c1", "connect"))
    c2 = start(cluster, "c2", "connect")
    moves.joined(c2, settled(cluster, "the work to balance over w2, c1, c2", "connect"))
    assert connect_members(cluster) == {w2.url, c1.url, c2.url}
    # c1 handed c2 part of its work: no task has run on two workers so far.
    assert_never_on_two_workers_at_once(cluster.coordinator.bootstrap, moves)

    # kill -9 of the coordinator: it rebuilds the mixed group, classic worker included, from its log.
    cluster.coordinator.kill()
    cluster.coordinator.start()
    assert group_type(cluster) == ("connect", "connect")
    assert connect_members(cluster) == {w2.url, c1.url, c2.url}
    moves.stayed(settled(cluster, "the workers to carry on with the restarted coordinator", "connect"))

    # Downgrade: each connect worker is replaced by a classic one.
    w3 = start(cluster, "w3", "classic")
    moves.joined(w3, settled(cluster, "w3 to join the connect group as a classic worker", "connect"))
    c1.stop()
    moves.left(c1, settled(cluster, "c1's work to move", "connect"))
    w4 = start(cluster, "w4", "classic")
    moves.joined(w4, settled(cluster, "w4 to join", "connect"))
    c2.stop()
    moves.left(c2, settled(cluster, "the group to be classic again, balanced over w2, w3, w4", "classic"))
    assert group_type(cluster) == ("classic", "connect")
    assert {w.worker_id for w in cluster.running()} == {w2.worker_id, w3.worker_id, w4.worker_id}

    assert_never_on_two_workers_at_once(cluster.coordinator.bootstrap, moves)


def described(cluster: WorkerCluster) -> dict[str, Any]:
    answer = call(
        cluster.coordinator.bootstrap, ApiKey.CONNECT_GROUP_DESCRIBE, 0, {"group_ids": ["connect-cluster"]}
    )
    return answer["groups"][0]  # type: ignore[no-any-return]


def work_counts(worker: WorkerProcess) -> tuple[int, int]:
    """(started, stopped): connectors and tasks of "orders" this worker has started and stopped."""
    values = metrics(worker.url)
    return tuple(  # type: ignore[return-value]
        int(values.get(f'connect_worker_work_{what}_total{{connector="orders"}}', 0))
        for what in ("started", "stopped")
    )


@pytest.fixture
def long_sessions(tmp_path: Path) -> Iterator[WorkerCluster]:
    """The cluster of `cluster`, with sessions long enough to hold a worker still for a while."""
    with cluster_of(tmp_path, 20_000) as workers:
        yield workers


def test_a_classic_worker_a_generation_behind_at_a_downgrade_keeps_its_work(
    long_sessions: WorkerCluster,
) -> None:
    """A connect group turns classic at the highest epoch its classic members reached; a classic
    worker still at an older generation then has its heartbeat answered ILLEGAL_GENERATION. It
    is still a member and the coordinator carried its work over, so (as Kafka Connect's workers
    do) it rejoins reporting what it runs: only what balance moves is stopped or started."""
    cluster = long_sessions
    w1, w2 = start(cluster, "w1", "classic"), start(cluster, "w2", "classic")
    code, body = rest("POST", f"{w1.url}/connectors", source("orders", TASKS, throughput=PER_SECOND))
    assert code == 201, body
    settled(cluster, "the classic group to run everything", "classic")
    c1 = start(cluster, "c1", "connect")
    before = settled(cluster, "the connect group to balance over w1, w2, c1", "connect")
    counts_before = work_counts(w1)
    w1_url = w1.url

    w1.pause()  # w1 misses the next epochs: its heartbeats stop, its session (20 s) runs on
    try:
        c2 = start(cluster, "c2", "connect")

        def w2_caught_up() -> bool:
            group = described(cluster)
            epochs = {m["url"]: m["member_epoch"] for m in group["members"]}
            return c2.url in epochs and epochs[w2.url] == group["group_epoch"] > epochs[w1_url]

        wait_until(w2_caught_up, 30, "w2 to reach the epoch c2's join started, w1 to lag")
        c1.stop()
        c2.stop()
        wait_until(lambda: group_type(cluster) == ("classic", "connect"), 30, "the group to turn classic")
    finally:
        w1.resume()

    after = settled(cluster, "the classic group to balance over w1 and w2", "classic")
    kept = {item for item, owner in before.items() if owner == w1.worker_id == after[item]}
    gained = {item for item, owner in after.items() if owner == w1.worker_id != before.get(item)}
    lost = {item for item, owner in before.items() if owner == w1.worker_id != after[item]}
    assert kept, f"w1 kept nothing of {before} in {after}: the check below would prove nothing"
    started, stopped = (now - then for now, then in zip(work_counts(w1), counts_before, strict=True))
    assert (started, stopped) == (len(gained), len(lost)), (
        f"w1 started {started} and stopped {stopped}, where balance moved {sorted(gained)} to it and "
        f"{sorted(lost)} from it: it stopped and restarted work it kept ({sorted(kept)})"
    )

"""Task output fenced by epoch, against frozen worker processes (SIGSTOP, then SIGCONT).

A worker frozen past its session loses its tasks to the other workers; whatever it had in
flight or was about to write when it froze must not land once another worker has started
the task. Before the fence, 8 of 10 such freezes left records of the frozen worker after its
successor's, with sequence numbers written twice. Every record carries its task, its
sequence number, the worker and the run (one start of the task) that wrote it, and each
task writes over many keys at random, so over many partitions, as a real source does: a
partition only refuses an old epoch once the new run has written to it, so it is the fence
that keeps a frozen run out of partitions its successor has not reached yet. Read back,
each task's runs must follow one another in every partition without interleaving, and its
sequence numbers must run 0, 1, 2, ... with no number twice and none missing.
"""

from __future__ import annotations

import asyncio
import time
from collections import Counter
from pathlib import Path

import pytest

from connect_rebalance.errors import ErrorCode
from connect_rebalance.protocol.api_keys import ApiKey
from connect_rebalance.protocol.client import ProtocolClient
from tests.integration.test_workers import source, worker_cluster
from tests.support.batches import make_batch
from tests.support.group_scenario import create_topic, wait_until
from tests.support.verifiable_records import read_records, read_values
from tests.support.worker_cluster import WorkerCluster, rest

pytestmark = pytest.mark.integration
SESSION_MS = 3000
FREEZES = 20
TASKS = 4
PARTITIONS = 16


def frozen_until_its_tasks_moved(cluster: WorkerCluster, victim_id: str, what: str) -> None:
    """Every task runs again, none of them on the frozen worker, as the statuses say."""

    def moved() -> bool:
        placed = cluster.placement("fenced")
        tasks = {item: worker for item, worker in placed.items() if item != "C"}
        return len(tasks) == TASKS and victim_id not in tasks.values()

    wait_until(moved, 30, f"{what}: {victim_id}'s tasks to run on the other workers")


def every_worker_runs_a_task(cluster: WorkerCluster) -> bool:
    placed = cluster.placement("fenced")
    tasks = [worker for item, worker in placed.items() if item != "C"]
    return len(tasks) == TASKS and len(set(tasks)) == len(cluster.running())


def test_a_worker_frozen_past_its_session_never_writes_after_another_worker_started_its_task(
    tmp_path: Path,
) -> None:
    # No delay: a frozen worker's tasks move as soon as its session expires.
    with worker_cluster(tmp_path, SESSION_MS, **{"scheduled.rebalance.max.delay.ms": "0"}) as cluster:
        workers = [cluster.start(n) for n in ("w1", "w2", "w3")]
        create_topic(cluster.coordinator.bootstrap, "fenced-out", PARTITIONS)
        connector = source("fenced", TASKS, throughput=20)
        connector["config"]["keys.per.task"] = str(4 * PARTITIONS)  # type: ignore[index]
        assert rest("POST", f"{workers[0].url}/connectors", connector)[0] == 201
        wait_until(lambda: every_worker_runs_a_task(cluster), 60, "every worker running a task")
        by_id = {w.worker_id: w for w in workers}
        moves = 0
        for n in range(FREEZES):
            placed = cluster.placement("fenced")
            running = Counter(worker for item, worker in placed.items() if item != "C")
            busiest = sorted(w for w in running if running[w] == max(running.values()))
            victim = by_id[busiest[n % len(busiest)]]
            moves += running[victim.worker_id]
            victim.pause()  # SIGSTOP: mid-write, mid-sleep, wherever it is
            try:
                frozen_until_its_tasks_moved(cluster, victim.worker_id, f"freeze {n}")
            finally:
                victim.resume()  # SIGCONT: the first thing it may do is write again
            wait_until(lambda: every_worker_runs_a_task(cluster), 60, f"freeze {n}: the group to settle")
        bootstrap = cluster.coordinator.bootstrap
        last = time.time() * 1000

        def every_task_wrote_since_the_last_freeze() -> bool:
            latest: dict[int, float] = {}
            for _, value in read_values(bootstrap, "fenced-out"):
                latest[value["task"]] = max(latest.get(value["task"], 0), value["at"])
            return len(latest) == TASKS and min(latest.values()) > last

        wait_until(every_task_wrote_since_the_last_freeze, 30, "every task writing after the last freeze")
        records = read_records(bootstrap, "fenced-out")
        fenced = sum(w.log_text().count("a newer run of the task has begun") for w in workers)

    assert moves >= FREEZES, "each freeze moved at least one task"
    by_task: dict[int, list[tuple[int, dict]]] = {}
    for partition, _, value in records:  # partition by partition, each in log order
        by_task.setdefault(value["task"], []).append((partition, value))
    late, twice, missing = 0, 0, 0
    for task, written in sorted(by_task.items()):
        # Each run, numbered in the order it began: its records' smallest sequence number.
        began = {}
        for _, value in written:
            began[value["run"]] = min(began.get(value["run"], value["seq"]), value["seq"])
        order = {run: n for n, run in enumerate(sorted(began, key=began.__getitem__))}
        newest: dict[int, int] = {}
        for partition, value in written:
            # In a partition, a run's record after a later run's: written after its task moved on.
            number = order[value["run"]]
            late += number < newest.get(partition, 0)
            newest[partition] = max(newest.get(partition, 0), number)
        seqs = [value["seq"] for _, value in written]
        twice += len(seqs) - len(set(seqs))
        missing += len(set(range(max(seqs) + 1)) - set(seqs))
        assert len(order) > 1, f"task {task} never moved"
        assert len({p for p, _ in written}) > 1, f"task {task} wrote to one partition only"
    assert (late, twice, missing) == (0, 0, 0), (
        f"{late} records written by a worker after another started the task, {twice} sequence numbers "
        f"written twice, {missing} missing"
    )
    assert fenced >= 1, "no frozen worker ever tried to write after its task moved: the fence was not tested"


def test_a_new_run_refuses_older_runs_on_every_partition_even_after_a_kill9(coordinator) -> None:  # type: ignore[no-untyped-def]
    """Over TCP with the project's client: a run's batches land until a newer run of the same
    fence begins; from then on they are refused on every partition, including ones the new
    run has not written to, and still after the coordinator is killed and restarted."""
    create_topic(coordinator.bootstrap, "spread", 3)

    async def scenario() -> tuple[list[int], list[int], list[int]]:
        client = await ProtocolClient.connect(coordinator.bootstrap)
        try:
            old = await client.request(ApiKey.INIT_FENCED_PRODUCER, 0, {"fence_id": "g-orders-0"})
            landed = await produce(client, old, sequence=0)
            new = await client.request(ApiKey.INIT_FENCED_PRODUCER, 0, {"fence_id": "g-orders-0"})
            assert (new["producer_id"], new["producer_epoch"]) == (
                old["producer_id"],
                old["producer_epoch"] + 1,
            )
            after_new = await produce(client, old, sequence=1)
        finally:
            await client.close()
        coordinator.kill()
        coordinator.start()
        client = await ProtocolClient.connect(coordinator.bootstrap)
        try:
            after_restart = await produce(client, old, sequence=1)
        finally:
            await client.close()
        return landed, after_new, after_restart

    landed, after_new, after_restart = asyncio.run(scenario())
    assert landed == [ErrorCode.NONE] * 3
    assert after_new == [ErrorCode.INVALID_PRODUCER_EPOCH] * 3, (
        "the older run wrote on after the new one began"
    )
    assert after_restart == [ErrorCode.INVALID_PRODUCER_EPOCH] * 3, "the fence was lost with the coordinator"


async def produce(client: ProtocolClient, run: dict[str, object], sequence: int) -> list[int]:
    """One batch of `run` to each partition of `spread`; each partition's error code."""
    batch = make_batch([b"x"], producer_id=run["producer_id"], producer_epoch=run["producer_epoch"],  # type: ignore[arg-type]
                       base_sequence=sequence)  # fmt: skip
    partitions = [{"index": p, "records": batch} for p in range(3)]
    answer = await client.request(ApiKey.PRODUCE, 9, {
        "transactional_id": None, "acks": -1, "timeout_ms": 5000,
        "topic_data": [{"name": "spread", "partition_data": partitions}],
    })  # fmt: skip
    return [p["error_code"] for p in answer["responses"][0]["partition_responses"]]

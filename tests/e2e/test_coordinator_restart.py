"""A coordinator restart that running work never notices, on a coordinator with a long history.

Three workers run a VerifiableSource (3 tasks) and a FileIngest connector (2 Spark tasks) while
files keep landing, and a KIP-848 consumer group (librdkafka, `group.protocol=consumer`, two
members) consumes a topic produced to all along, on a coordinator whose
`__consumer_offsets` has taken a million offset commits. The coordinator is killed with
SIGKILL and started again at once. A user checks afterwards: no worker stopped anything (the
workers' `/metrics` stop counters did not move, no watchdog stop), no consumer had a
partition revoked, every VerifiableSource task went on with one run and no sequence number
missing or twice, every landed row is in the FileIngest output once, and every record
produced was consumed once.
"""

from __future__ import annotations

import asyncio
import time
from pathlib import Path
from typing import Any

import pytest

from connect_rebalance_cli import sample_data
from tests.e2e.test_file_ingest import Lander
from tests.support.group_scenario import (
    ContinuousProducer,
    MemberFleet,
    assert_exactly_once,
    create_topic,
    wait_until,
)
from tests.support.offset_history import offsets_read_back_wrong, write_history
from tests.support.spark_cluster import CHURN_TRIGGER_MS, spark_worker_cluster
from tests.support.verifiable_records import read_values
from tests.support.worker_cluster import WorkerCluster, metrics, rest
from workers.spark.parquet_output import committed_column, read_output

pytestmark = pytest.mark.e2e
HISTORY = 1_000_000
# The workers' session (Kafka Connect's default is 10 s): the restart must fit in it.
SESSION_MS = 10000
EVENT_PARTITIONS = 6
LOADED = "group coordinator loaded"  # the coordinator's log line once group state is loaded
EVENTS_AT_MOST = 100_000  # produced at 100/s until the scenario is over (`finish`)


def stops(cluster: WorkerCluster) -> dict[str, float]:
    """Each worker's stops of connectors and tasks, and its watchdog's stops, from /metrics."""
    found = {}
    for worker in cluster.running():
        figures = metrics(worker.url)
        stopped = sum(v for k, v in figures.items() if k.startswith("connect_worker_work_stopped_total"))
        found[worker.worker_id] = stopped + figures.get("connect_worker_zombie_stops_total", 0)
    return found


def revocations(fleet: MemberFleet, members: list[str]) -> int:
    """Partitions taken from the members by their rebalance callbacks so far."""
    return sum(len(e["ps"]) for m in members for e in fleet.held_events(m) if e["e"] == "revoked")


@pytest.mark.timeout(900)
def test_a_coordinator_killed_and_restarted_under_a_long_history_stops_no_task_and_revokes_no_partition(
    spark: Any, tmp_path: Path
) -> None:
    data, out = tmp_path / "in", tmp_path / "out"
    first = sample_data.write_files(data, 0, 1)
    with spark_worker_cluster(tmp_path, session_ms=SESSION_MS) as cluster:
        coordinator = cluster.coordinator
        # A coordinator runs on a host of its own: here it shares two cores with three Spark
        # JVMs, which starve a restarting coordinator's start (7 s to its first log line at
        # equal priority, 1.2 s alone), so the workers run at a lower CPU priority.
        cluster.niceness = 10
        asyncio.run(write_history(coordinator.bootstrap, HISTORY))
        w1, _, _ = (cluster.start(n) for n in ("w1", "w2", "w3"))
        source = {
            "connector.class": "VerifiableSource",
            "topic": "seq-out",
            "tasks.max": "3",
            "throughput": "20",
        }
        files = {"connector.class": "FileIngest", "tasks.max": "2", "input.path": str(data), "format": "json",
                 "schema": sample_data.SCHEMA, "output.path": str(out), "max.files.per.trigger": "4",
                 # Three Spark sessions batching twice a second would take the coordinator's
                 # share of two cores, and a restarting process needs it.
                 "trigger.interval.ms": CHURN_TRIGGER_MS}  # fmt: skip
        assert rest("POST", f"{w1.url}/connectors", {"name": "seq", "config": source})[0] == 201
        assert rest("POST", f"{w1.url}/connectors", {"name": "files", "config": files})[0] == 201
        b = coordinator.bootstrap
        create_topic(b, "events", EVENT_PARTITIONS)
        fleet = MemberFleet(tmp_path, b, "readers", "events", "confluent-kafka-consumer", "uniform")
        members = ["m1", "m2"]
        producer = ContinuousProducer(b, "events", EVENTS_AT_MOST, per_second=100).start()
        try:
            for name in members:
                fleet.start(name)

            def committed() -> int:
                try:
                    return len(committed_column(str(out), "id"))
                except (OSError, ValueError):  # a batch being committed
                    return 0

            def settled() -> bool:
                held = [fleet.holding(m) for m in members]
                return (
                    cluster.balanced("seq", 4)
                    and cluster.balanced("files", 3)
                    and all(held)
                    and sorted(held[0] | held[1]) == list(range(EVENT_PARTITIONS))
                    and committed() > 0
                )

            wait_until(settled, 300, "every task running, both consumers holding partitions, rows committed")
            lander = Lander(data, first)
            lander.start()
            before, revoked_before, rows_before = stops(cluster), revocations(fleet, members), committed()
            consumed_before = len(fleet.consumed())

            loads = coordinator.log_text().count(LOADED)
            coordinator.kill()
            killed = time.monotonic()
            coordinator.start()  # at once
            wait_until(lambda: coordinator.log_text().count(LOADED) > loads, 120, "group state loaded")
            outage = time.monotonic() - killed

            wait_until(
                lambda: committed() > rows_before, 120, "FileIngest batches committed after the restart"
            )
            wait_until(lambda: len(fleet.consumed()) > consumed_before, 120, "consumers consuming after it")
            lander.join(120)
            assert not lander.errors and not lander.is_alive(), lander.errors
            total = lander.next_id
            wait_until(lambda: committed() >= total, 180, f"all {total} rows committed")
            events = producer.finish()
            wait_until(lambda: fleet.consumed_at_least(events), 120, "every event consumed")
            after, revoked_after = stops(cluster), revocations(fleet, members)
            wrong = asyncio.run(offsets_read_back_wrong(b, HISTORY))
            fleet.stop_all()
        finally:
            if producer._thread.is_alive():  # a failure above: production ends with the test
                producer._finishing.set()
            fleet.kill_all()
        sequences = read_values(b, "seq-out")

    assert after == before, (
        f"work stopped across a {outage:.1f} s restart: stops before {before}, after {after}"
    )
    assert revoked_after == revoked_before, (
        f"{revoked_after - revoked_before} partitions revoked from consumers"
    )
    assert wrong == 0, f"{wrong} committed offsets of the history read back wrong"
    by_task: dict[int, list[dict[str, Any]]] = {}
    for _, value in sequences:
        by_task.setdefault(value["task"], []).append(value)
    assert sorted(by_task) == [0, 1, 2]
    for task, values in by_task.items():
        seqs = sorted(v["seq"] for v in values)
        assert seqs == list(range(len(seqs))), f"task {task}: sequence numbers missing or written twice"
        assert len({v["run"] for v in values}) == 1, f"task {task} was restarted"
    ids = [row.id for row in read_output(spark, str(out)).select("id").collect()]
    assert sorted(ids) == list(range(total)), f"{len(ids)} rows out for {total} in, or not each once"
    assert_exactly_once(fleet.consumed(), events)

"""FileIngest end to end on worker processes with real PySpark: JSON files keep landing in
sharded directories while 4 tasks run on 3 workers and a worker leaves gracefully, another
joins and one is killed with SIGKILL (its JVM with it). Reading the output through Spark
gives every row exactly once, and no task's query was active on two workers at once."""

from __future__ import annotations

import threading
from pathlib import Path
from typing import Any

import pytest

from connect_rebalance_cli import sample_data
from tests.support.group_scenario import wait_until
from tests.support.spark_cluster import kill_with_jvm, overlaps, runs, spark_worker_cluster
from tests.support.worker_cluster import rest
from workers.spark.parquet_output import committed_column, read_output

pytestmark = pytest.mark.e2e

ROUNDS = 8  # each round lands a file of 250 rows in each of the 6 shards


class Lander(threading.Thread):
    """Lands a round of files every `every` seconds: `rounds` rounds, or, with none given, until
    `finish()`. A test whose churn steps each wait for new batches lands until its churn is
    over: a fixed number of rounds can run out (and the tasks drain the backlog) before the
    last step, which then waits for batches that no file will bring."""

    def __init__(self, root: Path, first_id: int, every: float = 1.5, rounds: int | None = ROUNDS) -> None:
        super().__init__(daemon=True)
        self.root, self.next_id, self.every, self.rounds = root, first_id, every, rounds
        self.done = threading.Event()
        self.errors: list[BaseException] = []

    def run(self) -> None:
        try:
            landed = 0
            while self.rounds is None or landed < self.rounds:
                self.next_id = sample_data.write_files(self.root, self.next_id, 1)
                landed += 1
                if self.done.wait(self.every):
                    return
        except BaseException as exc:  # noqa: BLE001 - reported by the test
            self.errors.append(exc)

    def finish(self) -> int:
        """Stop landing; checks that every round landed cleanly. Returns the rows landed."""
        self.done.set()
        self.join(120)
        assert not self.errors and not self.is_alive(), self.errors
        return self.next_id


@pytest.mark.timeout(600)
def test_file_ingest_reads_every_row_once_while_workers_leave_join_and_crash(
    spark: Any, tmp_path: Path
) -> None:
    data, out = tmp_path / "in", tmp_path / "out"
    first = sample_data.write_files(data, 0, 1)  # the shards exist before the tasks start
    with spark_worker_cluster(tmp_path) as cluster:
        w1, w2, _ = (cluster.start(n) for n in ("w1", "w2", "w3"))
        config = {"connector.class": "FileIngest", "tasks.max": "4", "input.path": str(data),
                  "format": "json", "schema": sample_data.SCHEMA, "output.path": str(out),
                  "max.files.per.trigger": "2", "trigger.interval.ms": "500"}  # fmt: skip
        assert rest("POST", f"{w1.url}/connectors", {"name": "files", "config": config})[0] == 201
        lander = Lander(data, first)

        def committed() -> int:
            try:
                return len(committed_column(str(out), "id"))
            except (OSError, ValueError):  # a batch being committed
                return 0

        def moves_on(what: str) -> None:
            wait_until(lambda: cluster.balanced("files", 5), 120, f"{what}: tasks spread over the workers")
            if lander.is_alive():
                before = committed()
                wait_until(lambda: committed() > before, 120, f"{what}: new batches committed")

        moves_on("start")
        lander.start()
        w1.stop()  # leaves gracefully: its tasks move at once
        moves_on("after a graceful leave")
        cluster.start("w4")  # joins: a task moves to it
        moves_on("after a join")
        died_at = kill_with_jvm(w2)  # crashes: its tasks move once its session expires
        moves_on("after a crash")
        lander.join(120)
        assert not lander.errors and not lander.is_alive(), lander.errors
        total = lander.next_id
        wait_until(lambda: committed() >= total, 180, f"all {total} rows committed")
        task_runs = runs(list(cluster.workers.values()), {w2.worker_id: died_at})

    ids = [row.id for row in read_output(spark, str(out)).select("id").collect()]
    assert len(ids) == total, f"{len(ids)} rows for {total}"
    assert sorted(ids) == list(range(total)), "every row exactly once"
    assert (
        len(task_runs) == 4 and sum(len({r.worker for r in found}) - 1 for found in task_runs.values()) >= 2
    )
    assert not overlaps(task_runs), "a task's query was active on two workers at once"

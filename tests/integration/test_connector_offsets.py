"""KIP-875 on a source connector whose offsets live in the offset topic (VerifiableSource),
as an operator drives it with curl: altering or resetting a running connector's offsets is
refused (400, Kafka Connect's message); once it is stopped, PATCH sets its task's position
and DELETE forgets it, and the resumed task writes from exactly there (read back from the
topic: the next run's first sequence number). Requests a Spark connector cannot take are
refused as Kafka Connect refuses them."""

from __future__ import annotations

import time
from pathlib import Path

import pytest

from connect_rebalance.processes import CoordinatorProcess, connect_timings
from tests.support.curl import curl
from tests.support.group_scenario import wait_until
from tests.support.polling import settle
from tests.support.verifiable_records import read_values
from tests.support.worker_cluster import WorkerCluster

pytestmark = pytest.mark.integration
SOURCE = {"connector.class": "VerifiableSource", "tasks.max": "1", "throughput": "20"}
TO_FIVE = {"offsets": [{"partition": {"task": 0}, "offset": {"seq": 5}}]}


def written(bootstrap: str) -> list[dict[str, object]]:
    """What the connector wrote so far."""
    return [value for _, value in read_values(bootstrap, "rewound")]


def first_seq_of_latest_run(bootstrap: str) -> int | None:
    """The first sequence number the newest run of task 0 wrote (None before it wrote one)."""
    values = written(bootstrap)
    if not values:
        return None
    latest = max(values, key=lambda v: v["at"])["run"]
    return min(v["seq"] for v in values if v["run"] == latest)


def test_a_stopped_source_connectors_offsets_are_altered_and_reset(tmp_path: Path) -> None:
    coordinator = CoordinatorProcess(tmp_path / "data", connect_timings(10000, 1000)).start()
    cluster = WorkerCluster(tmp_path, coordinator)
    try:
        w1 = cluster.start("w1")
        url, b = f"{w1.url}/connectors/seq", coordinator.bootstrap
        config = {**SOURCE, "topic": "rewound"}
        assert curl("POST", f"{w1.url}/connectors", {"name": "seq", "config": config})[0] == 201
        wait_until(lambda: len(written(b)) >= 20, 60, "20 records written")

        status, refused = curl("DELETE", f"{url}/offsets")
        assert status == 400 and "must be in the STOPPED state" in refused["message"]  # type: ignore[index]
        assert (
            curl("PATCH", f"{url}/offsets", {"offsets": [{"partition": {"task": 0}, "offset": {"seq": 5}}]})[
                0
            ]
            == 400
        )

        def stopped_at_once() -> None:
            assert curl("PUT", f"{url}/stop")[0] == 204
            wait_until(lambda: cluster.status("seq")["connector"]["state"] == "STOPPED" and not
                       cluster.status("seq")["tasks"], 30, "the connector stopped")  # fmt: skip

        stopped_at_once()
        status, stored = curl("GET", f"{url}/offsets")
        [only] = stored["offsets"]  # type: ignore[index]
        assert status == 200 and only["partition"] == {"task": 0} and only["offset"]["seq"] >= 20
        assert curl("PATCH", f"{url}/offsets", TO_FIVE) == (
            200, {"message": "The offsets for this connector have been altered successfully"}
        )  # fmt: skip
        assert curl("GET", f"{url}/offsets") == (
            200,
            {"offsets": [{"partition": {"task": 0}, "offset": {"seq": 5}}]},
        )
        runs_before = len({v["run"] for v in written(b)})
        assert curl("PUT", f"{url}/resume")[0] == 202
        deadline = time.monotonic() + 60
        while len({v["run"] for v in written(b)}) == runs_before and time.monotonic() < deadline:
            time.sleep(0.2)
        assert first_seq_of_latest_run(b) == 5, "the resumed task did not write from the altered offset"

        stopped_at_once()
        assert curl("DELETE", f"{url}/offsets") == (
            200, {"message": "The offsets for this connector have been reset successfully"}
        )  # fmt: skip
        assert curl("GET", f"{url}/offsets") == (200, {"offsets": []})
        runs_before = len({v["run"] for v in written(b)})
        assert curl("PUT", f"{url}/resume")[0] == 202
        deadline = time.monotonic() + 60
        while len({v["run"] for v in written(b)}) == runs_before and time.monotonic() < deadline:
            time.sleep(0.2)
        assert first_seq_of_latest_run(b) == 0, "the resumed task did not start afresh after the reset"

        assert curl("DELETE", f"{w1.url}/connectors/nope/offsets") == (
            404, {"error_code": 404, "message": "Connector nope not found"}
        )  # fmt: skip
        # Spark connectors' offsets are their checkpoints' (tests/e2e/test_spark_connector_offsets.py
        # alters and resets them); the requests are checked as Kafka Connect checks them.
        files = {"connector.class": "FileIngest", "input.path": str(tmp_path / "in"), "format": "json",
                 "schema": "id long", "output.path": str(tmp_path / "out")}  # fmt: skip
        (tmp_path / "in").mkdir()
        created = curl(
            "POST", f"{w1.url}/connectors", {"name": "files", "config": files, "initial_state": "STOPPED"}
        )
        assert created[0] == 201
        status, refused = curl("PATCH", f"{w1.url}/connectors/files/offsets", TO_FIVE)
        assert status == 400 and refused["message"] == (  # type: ignore[index]
            "Failed to modify offsets for connector files because it doesn't support external "
            "modification of offsets (it can be reset with DELETE)"
        )
        topics = {
            "connector.class": "TopicIngest",
            "topics": "rewound",
            "output.path": str(tmp_path / "out2"),
        }
        created = curl(
            "POST", f"{w1.url}/connectors", {"name": "topics", "config": topics, "initial_state": "STOPPED"}
        )
        assert created[0] == 201
        for partition, message in [
            ({"topic": "rewound"}, "must contain the keys 'kafka_topic' and 'kafka_partition'"),
            (
                {"kafka_topic": "rewound", "kafka_partition": "one"},
                "Partition values for sink connectors need",
            ),
            ({"kafka_topic": None, "kafka_partition": 0}, "Kafka topic names must be valid strings"),
        ]:
            entry = {"partition": partition, "offset": {"kafka_offset": 1}}
            status, refused = curl("PATCH", f"{w1.url}/connectors/topics/offsets", {"offsets": [entry]})
            assert status == 400 and message in refused["message"], refused  # type: ignore[index]
        assert curl("GET", f"{w1.url}/connectors/topics/offsets") == (200, {"offsets": []})
    finally:
        cluster.stop_all()
        coordinator.kill()


def test_offsets_are_not_changed_while_a_task_of_the_stopped_connector_still_runs(tmp_path: Path) -> None:
    """A task on a frozen worker cannot stop when its connector does: until it has, an alter or
    reset could be undone by an offset it still writes, and is refused with Kafka's message."""
    coordinator = CoordinatorProcess(tmp_path / "data", connect_timings(10000, 1000)).start()
    cluster = WorkerCluster(tmp_path, coordinator)
    try:
        leader = cluster.start("w1")  # the first member: config writes go through it
        others = [cluster.start("w2"), cluster.start("w3")]
        config = {**SOURCE, "topic": "zombie", "tasks.max": "4"}
        assert curl("POST", f"{leader.url}/connectors", {"name": "seq", "config": config})[0] == 201
        wait_until(lambda: cluster.balanced("seq", 5), 60, "the connector and its tasks on the three workers")
        # A worker with tasks but not the connector (which empties the task configs as it stops).
        owner = cluster.status("seq")["connector"]["worker_id"]
        other = next(w for w in others if w.worker_id != owner)
        other.pause()  # holds two of the tasks or more, which cannot stop now
        try:
            assert curl("PUT", f"{leader.url}/connectors/seq/stop")[0] == 204
            deadline = time.monotonic() + 30
            while cluster.status("seq")["connector"]["state"] != "STOPPED" and time.monotonic() < deadline:
                time.sleep(0.2)

            # Once the stop has taken, the status shows what still runs: the frozen worker's tasks.
            def still_running() -> set[tuple[str, str]]:
                return {(t["state"], t["worker_id"]) for t in cluster.status("seq")["tasks"]}

            shown = settle(still_running, lambda shown: shown == {("RUNNING", other.worker_id)}, 30)
            assert shown == {("RUNNING", other.worker_id)}
            for method, body in (("DELETE", None), ("PATCH", TO_FIVE)):
                status, refused = curl(method, f"{leader.url}/connectors/seq/offsets", body)
                assert status == 400, refused
                assert "either because its tasks haven't stopped completely yet" in refused["message"]  # type: ignore[index]
        finally:
            other.resume()
        # Thawed, its tasks stop: the status shows none, and the reset is taken.
        assert settle(lambda: cluster.status("seq")["tasks"], lambda tasks: not tasks, 60) == []
        assert curl("DELETE", f"{leader.url}/connectors/seq/offsets")[0] == 200
    finally:
        cluster.stop_all()
        coordinator.kill()

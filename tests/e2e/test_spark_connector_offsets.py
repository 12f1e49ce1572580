"""KIP-875 on connectors whose offsets are their Spark checkpoints, on a worker with real PySpark.

An operator stops the connector (kafka-connect-py, a Kafka Connect REST client), changes its
offsets with curl, resumes it, and reads the output through Spark:

- FileIngest shows, per sub-directory, the files its tasks have read. A reset reads every
  file again (every row is then in the output twice); an alter is refused, saying why.
- TopicIngest shows each partition's committed offset. An alter moves one partition back:
  its records from there are read again and nothing else is; a reset reads every partition
  from its first record again.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from kafka import KafkaProducer
from kafka.admin import KafkaAdminClient, NewTopic
from kafka_connect import KafkaConnect

from connect_rebalance_cli import sample_data
from tests.support.curl import curl
from tests.support.polling import settle
from tests.support.spark_cluster import spark_worker_cluster
from tests.support.worker_cluster import WorkerCluster
from workers.spark.parquet_output import committed_column, read_output

pytestmark = pytest.mark.e2e
ALTERED = {"message": "The offsets for this connector have been altered successfully"}
RESET = {"message": "The offsets for this connector have been reset successfully"}


def committed(out: Path, column: str) -> list[Any]:
    try:
        return committed_column(str(out), column)
    except FileNotFoundError:  # a Parquet file listed by a sink log an instant before it is read
        return []


class Operator:
    """Stops and resumes a connector as an operator would, with a Kafka Connect REST client."""

    def __init__(self, cluster: WorkerCluster, url: str, name: str) -> None:
        self.cluster, self.client, self.name = cluster, KafkaConnect(url=url), name
        self.offsets_url = f"{url}/connectors/{name}/offsets"

    def stop(self) -> None:
        self.client.stop_connector(self.name)
        status = settle(lambda: self.cluster.status(self.name),
                        lambda s: s["connector"]["state"] == "STOPPED" and not s["tasks"], 60)  # fmt: skip
        assert status["connector"]["state"] == "STOPPED" and not status["tasks"], status

    def resume(self) -> None:
        self.client.resume_connector(self.name)

    def offsets(self) -> list[dict[str, Any]]:
        status, body = curl("GET", self.offsets_url)
        assert status == 200, body
        return body["offsets"]  # type: ignore[index, no-any-return]


@pytest.fixture(scope="module")
def worker(tmp_path_factory: pytest.TempPathFactory) -> Iterator[tuple[WorkerCluster, str, Path]]:
    """One Spark worker (both connectors run on it, one after the other) and its directory."""
    base = tmp_path_factory.mktemp("offsets")
    with spark_worker_cluster(base) as cluster:
        yield cluster, cluster.start("w1").url, base


@pytest.mark.timeout(600)
def test_a_stopped_file_ingest_shows_its_files_and_a_reset_reads_them_all_again(
    spark: Any, worker: tuple[WorkerCluster, str, Path]
) -> None:
    cluster, url, base = worker
    data, out = base / "files-in", base / "files-out"
    total = sample_data.write_files(data, 0, 1)  # one file in each of 6 shards
    config = {"connector.class": "FileIngest", "tasks.max": "2", "input.path": str(data),
              "format": "json", "schema": sample_data.SCHEMA, "output.path": str(out),
              "trigger.interval.ms": "500"}  # fmt: skip
    operator = Operator(cluster, url, "files")
    operator.client.create_connector({"name": "files", "config": config})
    ids = settle(lambda: sorted(committed(out, "id")), lambda found: len(found) >= total, 180)
    assert ids == list(range(total))

    # Each shard's file, read by a committed batch.
    expected = [
        {"partition": {"directory": shard.name},
         "offset": {"files": 1, "last_file": next(f.name for f in shard.iterdir() if f.suffix == ".json")}}
        for shard in sorted(data.iterdir())
    ]  # fmt: skip
    # A batch's rows are in the sink before its checkpoint commit, which the offsets are read
    # from: poll until the last batch's commit is there too.
    assert settle(operator.offsets, lambda shown: shown == expected, 60) == expected
    operator.stop()
    assert operator.offsets() == expected

    status, refused = curl("PATCH", operator.offsets_url, {"offsets": [{"partition": {"directory": "shard-0"},
                                                                      "offset": None}]})  # fmt: skip
    assert status == 400 and "doesn't support external modification of offsets" in refused["message"]  # type: ignore[index]
    assert curl("DELETE", operator.offsets_url) == (200, RESET)
    assert operator.offsets() == []

    operator.resume()
    twice = settle(lambda: committed(out, "id"), lambda found: len(found) >= 2 * total, 180)
    assert len(twice) == 2 * total
    # Read through Spark: every row again, in the new generation's directories.
    counts = Counter(r.id for r in read_output(spark, str(out)).select("id").collect())
    assert counts == {i: 2 for i in range(total)}
    assert sorted(d.name for d in out.iterdir()) == ["task-0", "task-0-g1", "task-1", "task-1-g1"]
    assert operator.offsets() == expected
    operator.client.delete_connector("files")


def produce(bootstrap: str, topic: str, ids: range) -> None:
    """Record `i` to partition `i % 2`, its value the id as text."""
    producer = KafkaProducer(bootstrap_servers=bootstrap, linger_ms=5)
    try:
        for i in ids:
            producer.send(topic, value=str(i).encode(), partition=i % 2)
        producer.flush(30)
    finally:
        producer.close()


def sink_offsets(first: int, second: int) -> list[dict[str, Any]]:
    return [
        {"partition": {"kafka_topic": "ledger", "kafka_partition": p}, "offset": {"kafka_offset": o}}
        for p, o in ((0, first), (1, second))
    ]


@pytest.mark.timeout(600)
def test_a_stopped_topic_ingest_rereads_from_altered_offsets_and_from_the_start_after_a_reset(
    spark: Any, worker: tuple[WorkerCluster, str, Path]
) -> None:
    cluster, url, base = worker
    bootstrap, out = cluster.coordinator.bootstrap, base / "topic-out"
    admin = KafkaAdminClient(bootstrap_servers=bootstrap)
    try:
        admin.create_topics([NewTopic("ledger", 2, 1)])
    finally:
        admin.close()
    produce(bootstrap, "ledger", range(100))  # offsets 0-49 in each partition
    config = {"connector.class": "TopicIngest", "topics": "ledger", "tasks.max": "2",
              "output.path": str(out), "trigger.interval.ms": "500"}  # fmt: skip
    operator = Operator(cluster, url, "ledger")
    operator.client.create_connector({"name": "ledger", "config": config})

    def rows() -> list[int]:
        return committed(out, "offset")

    assert len(settle(rows, lambda found: len(found) >= 100, 180)) == 100
    operator.stop()
    assert operator.offsets() == sink_offsets(50, 50)

    # Partition 0 back to offset 40: its records 40-49 are read again, partition 1 goes on.
    moved = {"offsets": [{"partition": {"kafka_topic": "ledger", "kafka_partition": 0},
                          "offset": {"kafka_offset": 40}}]}  # fmt: skip
    assert curl("PATCH", operator.offsets_url, moved) == (200, ALTERED)
    assert operator.offsets() == sink_offsets(40, 50)
    operator.resume()
    produce(bootstrap, "ledger", range(100, 120))  # offsets 50-59 in each partition
    assert len(settle(rows, lambda found: len(found) >= 130, 180)) == 130

    def read_through_spark() -> Counter[tuple[int, int]]:
        frame = read_output(spark, str(out)).select("partition", "offset")
        return Counter((r.partition, r.offset) for r in frame.collect())

    once = {(p, o): 1 for p in (0, 1) for o in range(60)}
    assert read_through_spark() == {**once, **{(0, o): 2 for o in range(40, 50)}}
    operator.stop()
    assert operator.offsets() == sink_offsets(60, 60)

    # A reset: every partition from its first record again.
    assert curl("DELETE", operator.offsets_url) == (200, RESET)
    assert operator.offsets() == []
    operator.resume()
    assert len(settle(rows, lambda found: len(found) >= 250, 180)) == 250
    assert read_through_spark() == {**{(p, o): 2 for p in (0, 1) for o in range(60)},
                                    **{(0, o): 3 for o in range(40, 50)}}  # fmt: skip
    operator.stop()
    assert operator.offsets() == sink_offsets(60, 60)

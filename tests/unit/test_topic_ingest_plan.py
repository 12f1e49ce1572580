"""TopicIngest's pure parts: option parsing, read limits, the partition split, task configs,
validation, and offsets read back from a Spark checkpoint's files."""

from __future__ import annotations

import socket
from pathlib import Path

import pytest

from workers.connectors.topic_ingest import TopicIngest, current_offsets, sink_offsets
from workers.spark.partition_split import partitions_of_task
from workers.spark.share_handoff import committed_offsets
from workers.spark.start_gate import Gate
from workers.spark.topic_source import (
    PartitionRange,
    TopicStreamReader,
    fair_share,
    parse_assignment,
)

pytestmark = pytest.mark.unit


def test_assignment_text_parses_sorted_and_rejects_what_is_not_topic_colon_partition() -> None:
    assert parse_assignment("b:1, a.x:0,b:1,") == [("a.x", 0), ("b", 1)]
    with pytest.raises(ValueError, match="'b' is not topic:partition"):
        parse_assignment("a:0,b")


def test_a_read_limit_is_shared_fairly_and_what_a_small_backlog_leaves_goes_to_the_rest() -> None:
    start = {("t", 0): 0, ("t", 1): 100, ("t", 2): 5}
    latest = {("t", 0): 1000, ("t", 1): 110, ("t", 2): 5}
    # 10 for partition 1 (all it has), the other 290 to partition 0; partition 2 has nothing.
    assert fair_share(start, latest, 300) == {("t", 0): 290, ("t", 1): 110, ("t", 2): 5}
    assert fair_share(start, latest, 10_000) == latest


def test_the_reader_needs_a_cluster_and_exactly_one_of_assign_and_subscribe() -> None:
    with pytest.raises(ValueError, match="bootstrap.servers"):
        TopicStreamReader({"assign": "t:0"})
    with pytest.raises(ValueError, match="exactly one"):
        TopicStreamReader({"bootstrap.servers": "h:1", "assign": "t:0", "subscribe": "t"})


def test_a_reader_made_after_its_gate_was_granted_neither_waits_nor_connects(tmp_path: Path) -> None:
    """Spark makes the reader again for a batch's read function, in a Python worker of its own:
    with the gate granted by then, that one goes on at once, without a planner's consumer (a
    prepared run's first batch spent 0.3-0.4 s there connecting one it never used)."""
    gate = Gate(tmp_path / "gate", 5.0)
    gate.grant()
    with socket.create_server(("127.0.0.1", 0)) as cluster:  # sees whether anyone connects
        options = {"assign": "t:0", "bootstrap.servers": f"127.0.0.1:{cluster.getsockname()[1]}",
                   "startGate": str(gate.path), "startGateTimeoutMs": "100"}  # fmt: skip
        TopicStreamReader(options)
        cluster.setblocking(False)
        try:
            cluster.accept()[0].close()
            connected = True
        except BlockingIOError:
            connected = False
    assert not connected, "the reader connected a planner's consumer after the grant"


def test_the_reader_plans_one_range_per_partition_with_new_records() -> None:
    reader = TopicStreamReader({"bootstrap.servers": "h:1", "assign": "t:0,t:1,u:0"})
    start = {"t": {"0": 5, "1": 7}}
    # u:0 enters the query in this batch at offset 3 (where its former task left it): it is
    # read from the next batch on, so a batch's ranges follow from its offsets alone.
    end = {"t": {"0": 9, "1": 7}, "u": {"0": 3}}
    assert reader.partitions(start, end) == [PartitionRange("t", 0, 5, 9)]
    assert reader.partitions(end, {"t": {"0": 9, "1": 7}, "u": {"0": 8}}) == [PartitionRange("u", 0, 3, 8)]


def test_tasks_split_each_topic_evenly_and_adding_partitions_moves_none() -> None:
    before = [("orders", p) for p in range(6)] + [("refunds", p) for p in range(3)]
    after = before + [("orders", p) for p in range(6, 12)]
    split_before = [partitions_of_task(before, i, 4) for i in range(4)]
    split_after = [partitions_of_task(after, i, 4) for i in range(4)]
    assert sorted(tp for share in split_before for tp in share) == sorted(before)
    # Each topic's partitions are spread evenly (round robin from a place the topic's name picks).
    orders = [len([tp for tp in share if tp[0] == "orders"]) for share in split_before]
    assert sorted(orders) == [1, 1, 2, 2]
    assert all(set(b) <= set(a) for b, a in zip(split_before, split_after, strict=True))


def test_task_configs_carry_the_settings_and_each_tasks_place_in_the_split() -> None:
    config = {"name": "ingest", "connector.class": "TopicIngest", "topics": "b, a", "output.path": "/o"}
    assert TopicIngest.validate(config) == []
    configs = TopicIngest().task_configs(config, 3)
    assert [c["task.index"] for c in configs] == ["0", "1", "2"]
    assert {c["task.count"] for c in configs} == {"3"}
    assert configs[0]["topics"] == "a,b"
    assert configs[0]["trigger.interval.ms"] == "1000"


def test_bad_settings_are_named() -> None:
    config = {"name": "i", "connector.class": "TopicIngest", "topics": "a b", "output.path": "/o",
              "starting.offsets": "middle", "bootstrap.servers": "nohost"}  # fmt: skip
    problems = {p.name: p.message for p in TopicIngest.validate(config)}
    assert set(problems) == {"topics", "starting.offsets", "bootstrap.servers"}
    assert "'a b' is not a valid topic name" in problems["topics"]


def write_batch(checkpoint: Path, batch: int, offsets: str, committed: bool) -> None:
    (checkpoint / "offsets").mkdir(parents=True, exist_ok=True)
    (checkpoint / "commits").mkdir(parents=True, exist_ok=True)
    (checkpoint / "offsets" / str(batch)).write_text(f'v1\n{{"batchWatermarkMs":0}}\n{offsets}')
    if committed:
        (checkpoint / "commits" / str(batch)).write_text('v1\n{"nextBatchWatermarkMs":0}')


def test_offsets_are_those_of_the_last_committed_batch(tmp_path: Path) -> None:
    assert committed_offsets(str(tmp_path / "0")) is None
    write_batch(tmp_path / "0", 0, '{"t":{"0":10}}', committed=True)
    write_batch(tmp_path / "0", 1, '{"t":{"0":20}}', committed=True)
    write_batch(tmp_path / "0", 2, '{"t":{"0":30}}', committed=False)  # in flight: re-run on restart
    assert committed_offsets(str(tmp_path / "0")) == {"t": {"0": 20}}
    write_batch(tmp_path / "1", 0, '{"u":{"1":4,"0":2}}', committed=True)
    assert sink_offsets(current_offsets(tmp_path)) == [
        {"partition": {"kafka_topic": "t", "kafka_partition": 0}, "offset": {"kafka_offset": 20}},
        {"partition": {"kafka_topic": "u", "kafka_partition": 0}, "offset": {"kafka_offset": 2}},
        {"partition": {"kafka_topic": "u", "kafka_partition": 1}, "offset": {"kafka_offset": 4}},
    ]

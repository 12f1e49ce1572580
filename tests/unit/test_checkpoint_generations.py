"""KIP-875 on Spark connectors (spark/checkpoint_generations.py), on checkpoints written to disk: a
reset or alter begins a new generation (its own output directories, the old checkpoints
gone), an alter keeps the partitions it does not name where they were, and the topic source
starts a fresh checkpoint's partitions where the generation says."""

from __future__ import annotations

import json
from pathlib import Path
from types import SimpleNamespace

import pytest

from tests.unit.test_topic_ingest_plan import write_batch
from workers.connectors.file_ingest import FileIngest, files_read
from workers.connectors.topic_ingest import TopicIngest, current_offsets
from workers.spark.checkpoint_generations import (
    GENERATION,
    OffsetsRefused,
    begin_generation,
    generation,
    starting_offsets,
)
from workers.spark.parquet_output import output_dir
from workers.spark.share_handoff import mark
from workers.spark.topic_source import TopicStreamReader

pytestmark = pytest.mark.unit


def test_a_new_generation_deletes_the_checkpoints_and_writes_to_new_output_directories(
    tmp_path: Path,
) -> None:
    root = tmp_path / "ingest"
    write_batch(root / "0", 0, '{"t":{"0":10}}', committed=True)
    write_batch(root / "3", 0, '{"t":{"1":5}}', committed=True)  # a task tasks.max dropped since
    assert generation(root) == 0
    assert begin_generation(root, {("t", 0): 4}) == 1
    assert sorted(p.name for p in root.iterdir()) == [GENERATION]
    assert (generation(root), starting_offsets(root)) == (1, {("t", 0): 4})
    assert begin_generation(root) == 2 and starting_offsets(root) == {}
    config = {"output.path": "/out"}
    assert [output_dir(config, 1, g) for g in (0, 2)] == ["/out/task-1", "/out/task-1-g2"]


def test_an_alter_moves_the_named_partitions_and_keeps_the_others_where_they_were(tmp_path: Path) -> None:
    worker = SimpleNamespace(checkpoint_dir=str(tmp_path))
    root = tmp_path / "ingest"
    write_batch(root / "0", 0, '{"t":{"0":20}}', committed=True)
    write_batch(root / "0", 1, '{"t":{"0":30}}', committed=False)  # planned, not committed
    write_batch(root / "1", 0, '{"u":{"0":2,"1":4}}', committed=True)
    TopicIngest.alter_offsets(worker, "ingest", [
        ({"kafka_topic": "u", "kafka_partition": "1"}, {"kafka_offset": "1"}),  # text, as Kafka takes it
        ({"kafka_topic": "t", "kafka_partition": 0}, None),  # back to starting.offsets
    ])  # fmt: skip
    assert current_offsets(root) == {("u", 0): 2, ("u", 1): 1}
    assert not (root / "0").exists() and not (root / "1").exists()
    # Once a new checkpoint commits a partition, its offset is the checkpoint's.
    write_batch(root / "0", 0, '{"u":{"1":9}}', committed=True)
    assert current_offsets(root) == {("u", 0): 2, ("u", 1): 9}


@pytest.mark.parametrize(
    ("partition", "offset", "message"),
    [
        (
            {"kafka_topic": "t"},
            {"kafka_offset": 1},
            "must contain the keys 'kafka_topic' and 'kafka_partition'",
        ),
        ({"kafka_topic": "t", "kafka_partition": 0}, {"offset": 1}, "should either be null or contain"),
        (
            {"kafka_topic": "t", "kafka_partition": 0},
            {"kafka_offset": "x"},
            "Offset values for sink connectors",
        ),
        ({"kafka_topic": "t", "kafka_partition": -1}, {"kafka_offset": 1}, "cannot be negative"),
        (
            {"kafka_topic": "t", "kafka_partition": 0},
            {"kafka_offset": 1.9},
            "Offset values for sink connectors",
        ),
        ({"kafka_topic": "t", "kafka_partition": "1_0"}, {"kafka_offset": 1}, "Partition values for sink"),
    ],
)
def test_a_bad_alter_is_refused_with_kafka_connects_message_and_changes_nothing(
    tmp_path: Path, partition: dict[str, object], offset: dict[str, object], message: str
) -> None:
    write_batch(tmp_path / "ingest" / "0", 0, '{"t":{"0":20}}', committed=True)
    with pytest.raises(OffsetsRefused, match=message):
        TopicIngest.alter_offsets(
            SimpleNamespace(checkpoint_dir=str(tmp_path)), "ingest", [(partition, offset)]
        )
    assert current_offsets(tmp_path / "ingest") == {("t", 0): 20}
    with pytest.raises(OffsetsRefused, match="doesn't support external modification"):
        FileIngest.alter_offsets(
            SimpleNamespace(checkpoint_dir=str(tmp_path)), "files", [(partition, offset)]
        )


def test_a_fresh_checkpoint_starts_where_its_generation_says_unless_another_task_has_read_further(
    tmp_path: Path,
) -> None:
    begin_generation(tmp_path, {("t", 0): 7, ("t", 1): 3})
    options = {"bootstrap.servers": "127.0.0.1:9", "subscribe": "t", "share": "0/2",
               "handoffCheckpoints": str(tmp_path),
               "startingOffsetsFile": str(tmp_path / GENERATION)}  # fmt: skip
    reader = TopicStreamReader(options)
    reader._bounds = lambda earliest: {tp: 0 if earliest else 100 for tp in [("t", 0), ("t", 1), ("t", 2)]}  # type: ignore[method-assign]
    assert json.loads(json.dumps(reader._initial_offset())) == {"t": {"0": 7, "1": 3, "2": 0}}
    begin_generation(tmp_path, {("t", 0): 700, ("t", 1): 3})  # past the end: from the end
    assert reader._initial_offset() == {"t": {"0": 100, "1": 3, "2": 0}}
    begin_generation(tmp_path, {("t", 0): 7, ("t", 1): 3})
    write_batch(tmp_path / "1", 0, '{"t":{"1":12}}', committed=True)  # this generation's task 1 read on
    mark(tmp_path / "1", 2, stopped=False)
    assert reader._initial_offset() == {"t": {"0": 7, "1": 12, "2": 0}}


def test_a_file_source_has_read_what_its_committed_batches_listed(tmp_path: Path) -> None:
    log = tmp_path / "sources" / "0"
    log.mkdir(parents=True)
    (log / "1.compact").write_text(  # batches 0 and 1, compacted
        'v1\n{"path":"file:///in/a/x%201.json","timestamp":1,"batchId":0}\n'
        '{"path":"file:///in/b/y.json","timestamp":1,"batchId":1}\n'
    )
    (log / "0").write_text('v1\n{"path":"file:///in/a/old.json","timestamp":1,"batchId":0}\n')  # superseded
    (log / "2").write_text('v1\n{"path":"file:///in/a/z.json","timestamp":1,"batchId":2}\n')
    (tmp_path / "commits").mkdir()
    (tmp_path / "commits" / "1").write_text("v1\n{}")
    assert files_read(tmp_path) == ["/in/a/x 1.json", "/in/b/y.json"]  # batch 2 is not committed
    (tmp_path / "commits" / "2").write_text("v1\n{}")
    assert files_read(tmp_path)[-1] == "/in/a/z.json"

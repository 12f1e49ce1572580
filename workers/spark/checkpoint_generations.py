"""KIP-875's reset and alter for connectors whose offsets are their tasks' Spark checkpoints.

A Spark task's position is its query's checkpoint (`<checkpoint.dir>/<connector>/<task>`);
Spark has no way to move a checkpoint to other offsets. So a reset or an alter begins a new
*generation* of the connector: the tasks' checkpoints are deleted, and each task's next query
starts a new one, from the generation's starting offsets (TopicIngest: those the alter named,
the rest where the old checkpoints had committed; a reset: where `starting.offsets` says) or
from the beginning of its input (FileIngest, Datagen).

A new checkpoint numbers its batches from 0 again, and a file sink skips the batches its log
(`_spark_metadata`) already holds, so a generation writes its own output directories:
`task-<n>` for generation 0, `task-<n>-g<generation>` after (parquet_output.output_dir).
Reading the output (`read_output`) reads every generation, so rows read again after a reset
are there again, as a Kafka sink's records are after its connector's offsets are reset.

The generation and its starting offsets are one file in the connector's checkpoint
directory, shared by every worker as the checkpoints are. It is written before the
checkpoints are deleted: if the worker dies in between, the old checkpoints run on into the
new generation's (empty) output directories, and nothing is skipped.
"""

from __future__ import annotations

import json
import shutil
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from workers.plugins.api import Connector, OffsetChanges, OffsetsRefused
from workers.spark.runtime import checkpoint_path
from workers.spark.share_handoff import Partition, flatten, task_checkpoints, write_atomically

GENERATION = "generation.json"


def connector_root(checkpoint_dir: str | Path, connector: str) -> Path:
    """The directory holding the connector's task checkpoints (its name encoded)."""
    return Path(checkpoint_path(checkpoint_dir, connector, 0)).parent


def _read(root: Path) -> dict[str, Any]:
    try:
        return json.loads((root / GENERATION).read_text())  # type: ignore[no-any-return]
    except FileNotFoundError:
        return {"generation": 0, "offsets": {}}


def generation(root: Path) -> int:
    """The connector's current generation: 0 until its offsets are first reset or altered."""
    return int(_read(root)["generation"])


def starting_offsets(root: Path) -> dict[Partition, int]:
    """Where the current generation's checkpoints start the partitions it names."""
    return flatten(_read(root)["offsets"])


def begin_generation(root: Path, offsets: Mapping[Partition, int] | None = None) -> int:
    """Start the next generation (with `offsets` as its starting offsets) and delete the
    tasks' checkpoints; the connector must be stopped. Returns the new generation."""
    nested: dict[str, dict[str, int]] = {}
    for (topic, partition), offset in sorted((offsets or {}).items()):
        nested.setdefault(topic, {})[str(partition)] = offset
    following = generation(root) + 1
    root.mkdir(parents=True, exist_ok=True)
    write_atomically(root / GENERATION, {"generation": following, "offsets": nested})
    for task in task_checkpoints(root):
        shutil.rmtree(root / str(task))
    return following


class CheckpointedConnector(Connector):
    """A connector whose tasks are Spark queries: its offsets are their checkpoints'."""

    kafka_clients = frozenset()  # Parquet output, written by Spark: no records go to Kafka
    keeps_own_offsets = True  # in its tasks' checkpoints

    @classmethod
    def offsets(cls, worker: Any, connector: str) -> list[dict[str, Any]]:
        """`GET /connectors/{name}/offsets`, in Kafka Connect's shape (none shown: [])."""
        return []

    @classmethod
    def reset_offsets(cls, worker: Any, connector: str) -> None:
        """KIP-875's reset: the next generation's tasks read their input from its start."""
        begin_generation(connector_root(worker.checkpoint_dir, connector))

    @classmethod
    def alter_offsets(cls, worker: Any, connector: str, changes: OffsetChanges) -> None:
        """KIP-875's alter: refused unless the connector says what its offsets mean."""
        raise OffsetsRefused(
            f"Failed to modify offsets for connector {connector} because it doesn't support external "
            "modification of offsets (it can be reset with DELETE)"
        )

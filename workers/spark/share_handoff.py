"""A partition that changes TopicIngest task when `tasks.max` changes: read on from where its
previous task stopped, never twice and never skipped.

Each task's query keeps its own checkpoint, and a partition new to a query would otherwise
be read from its first record. When the task count changes from m to n, a partition's owner
changes from task k (of m) to task j (of n), and j may start before k's run under m has
stopped. So every run of a task leaves a marker in its checkpoint (`share.json`):

- when it starts (its previous run has stopped: a task runs on one worker at a time), the
  task count it reads under: from then on it reads no further of partitions it no longer
  holds than its checkpoint has planned (Spark re-runs a planned batch with no commit);
- when it stops, that it stopped.

Task j reads a partition p new to its query from the highest offset any settled checkpoint
(its own included) has for p: planned batches count for a task that exists under n (it
re-runs them), committed ones only for a task n dropped (it never runs again). Another
task's checkpoint is settled once its marker says it runs under n or has stopped; while one
that holds p is not, p waits; a dropped task that left no stop (its worker was killed) is
taken as settled once overdue. A run that has not planned a batch yet holds the partitions
its query starts from (`INITIAL_OFFSETS`, kept as it starts): it reads them from there at
its first batch, which may come seconds later, so another task that meets them meanwhile
waits too. A partition no checkpoint holds is new to the topic and is read from its first
record.
"""

from __future__ import annotations

import json
import os
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

MARKER = "share.json"
# Where a TopicIngest query keeps the offsets its first batch starts from (topic_source's
# `initialOffsetsFile`), in its checkpoint.
INITIAL_OFFSETS = "topic-initial-offsets.json"
Partition = tuple[str, int]


def committed_offsets(checkpoint: str | Path) -> dict[str, dict[str, int]] | None:
    """The source offsets of the last batch a query's checkpoint records as committed.

    Spark writes `offsets/<batch>` before running a batch and `commits/<batch>` after it; a
    batch without a commit is re-run on restart, so only committed batches count.
    """
    root = Path(checkpoint)
    if not (root / "commits").is_dir():
        return None
    batches = sorted((int(p.name) for p in (root / "commits").iterdir() if p.name.isdigit()), reverse=True)
    for batch in batches:
        offsets = batch_offsets(root / "offsets" / str(batch))
        if offsets is not None:
            return offsets
    return None


def highest_offsets(checkpoint: str | Path, *, committed: bool) -> dict[Partition, int]:
    """Each partition's highest offset in any batch the checkpoint has (committed, or also
    planned): where the query left each partition, also one it stopped reading long ago."""
    root = Path(checkpoint)
    offsets_dir, commits_dir = root / "offsets", root / "commits"
    if not offsets_dir.is_dir():
        return {}
    highest: dict[Partition, int] = {}
    for entry in offsets_dir.iterdir():
        if not entry.name.isdigit() or (committed and not (commits_dir / entry.name).is_file()):
            continue
        for partition, offset in flatten(batch_offsets(entry)).items():
            highest[partition] = max(highest.get(partition, 0), offset)
    return highest


def initial_offsets(checkpoint: str | Path) -> dict[Partition, int]:
    """The offsets a query's first batch starts from, as it keeps them (none before it starts)."""
    try:
        return flatten(json.loads((Path(checkpoint) / INITIAL_OFFSETS).read_text()))
    except (OSError, ValueError):
        return {}


def batch_offsets(offsets_file: Path) -> dict[str, dict[str, int]] | None:
    """One batch's source offsets from its `offsets/<batch>` file: a version line, a metadata
    line, then one line per source (this project's queries have one)."""
    if not offsets_file.is_file():
        return None
    lines = offsets_file.read_text().splitlines()
    return json.loads(lines[2]) if len(lines) >= 3 else None  # type: ignore[no-any-return]


def mark(checkpoint: str | Path, count: int, *, stopped: bool) -> None:
    """Leave this run's marker (see the module's docstring); atomic, so readers see all or nothing."""
    root = Path(checkpoint)
    root.mkdir(parents=True, exist_ok=True)
    write_atomically(root / MARKER, {"count": count, "stopped": stopped})


def write_atomically(path: Path, value: Any) -> None:
    temporary = path.with_name(f".{path.name}.{os.getpid()}")
    temporary.write_text(json.dumps(value))
    os.replace(temporary, path)


def read_marker(checkpoint: str | Path) -> dict[str, Any] | None:
    try:
        return json.loads((Path(checkpoint) / MARKER).read_text())  # type: ignore[no-any-return]
    except (OSError, ValueError):
        return None


@dataclass(frozen=True)
class Handoff:
    """Where partitions new to a query start (`starts`), and which must wait (`waiting`)."""

    starts: dict[Partition, int]
    waiting: frozenset[Partition]


def flatten(offsets: Mapping[str, Mapping[str, int]] | None) -> dict[Partition, int]:
    """Spark's offsets shape, `{"<topic>": {"<partition>": <offset>}}`, by partition."""
    return {(t, int(p)): int(o) for t, parts in (offsets or {}).items() for p, o in parts.items()}


def handoff(root: str | Path, index: int, count: int, new: set[Partition], overdue: set[int]) -> Handoff:
    """For task `index` of `count`, whose query meets the partitions `new`: where each starts.
    `overdue`: tasks no longer in the layout, with no marker, waited for long enough."""
    starts: dict[Partition, int] = {}
    waiting: set[Partition] = set()
    base = Path(root)
    for other in task_checkpoints(base):
        checkpoint = base / str(other)
        marker = read_marker(checkpoint)
        exists = other < count
        # This task's own earlier runs have stopped; so has another's once it runs under
        # this count, or said it stopped, or is gone and overdue.
        settled = other == index or let_go(marker, count) or (not exists and other in overdue)
        # A task of the layout re-runs its planned batch; a dropped one never runs again.
        held = highest_offsets(checkpoint, committed=not exists)
        if settled:
            for partition in new & set(held):
                starts[partition] = max(starts.get(partition, 0), held[partition])
        else:  # what it has planned, or starts from once it plans its first batch
            waiting |= new & (set(held) | set(initial_offsets(checkpoint)))
    return Handoff({p: o for p, o in starts.items() if p not in waiting}, frozenset(waiting))


def unmarked_gone(root: str | Path, count: int) -> set[int]:
    """Tasks no longer in the layout whose checkpoint says nothing of a stop."""
    found = set()
    for task in task_checkpoints(Path(root)):
        marker = read_marker(Path(root) / str(task))
        if task >= count and not let_go(marker, count):
            found.add(task)
    return found


def let_go(marker: Mapping[str, Any] | None, count: int) -> bool:
    """Whether the run a marker speaks of reads no further than its checkpoint says of the
    partitions it does not hold under `count`: it runs under that count, or has stopped."""
    return marker is not None and (marker["count"] == count or bool(marker["stopped"]))


def task_checkpoints(root: Path) -> list[int]:
    """The tasks that have a checkpoint under the connector's `root` (one directory each)."""
    if not root.is_dir():
        return []
    return sorted(int(d.name) for d in root.iterdir() if d.name.isdigit() and d.is_dir())

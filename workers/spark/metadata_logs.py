"""Spark's compactible metadata logs, read without Spark: a file sink's `_spark_metadata` (the
files it committed) and a file source's `sources/<n>` (the files it read).

A log is one file per batch, `<batch>`, and every few batches a `<batch>.compact` that holds
the entries of every batch up to it (the batch files before it may then be deleted). Each
file is a version line, then one JSON entry per line.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any


def log_entries(log_dir: Path, last_batch: int | None = None) -> list[dict[str, Any]]:
    """The entries of every batch up to `last_batch` (every batch: None), in batch order."""
    if not log_dir.is_dir():
        return []
    batches = {}
    for entry in log_dir.iterdir():
        stem = entry.name.removesuffix(".compact")
        if stem.isdigit() and (last_batch is None or int(stem) <= last_batch):
            batches[int(stem)] = entry
    start = max((n for n, entry in batches.items() if entry.name.endswith(".compact")), default=-1)
    found = []
    for number in sorted(n for n in batches if n >= start):
        found += [json.loads(line) for line in batches[number].read_text().splitlines()[1:] if line.strip()]
    return found

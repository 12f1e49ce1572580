"""The quickstart's sample data: JSON-lines order events with unique ids, sharded in directories.

`examples/data/` ships the first files (made by `write_files`); the quickstart lands more
while it runs, with ids that continue where the shipped ones stop, so its summary can prove
every row arrived once.
"""

from __future__ import annotations

import json
import os
from collections.abc import Iterable
from pathlib import Path

SCHEMA = "id long, customer string, country string, amount double, ts string"
SHARDS = 6
ROWS_PER_FILE = 250
COUNTRIES = ("DE", "FR", "GB", "IN", "JP", "NL", "US", "BR")


def rows(ids: Iterable[int]) -> list[dict[str, object]]:
    return [
        {"id": i, "customer": f"customer-{i * 7919 % 1000:03d}", "country": COUNTRIES[i % len(COUNTRIES)],
         "amount": round((i * 37 % 10000) / 100, 2), "ts": f"2026-11-{1 + i % 28:02d}T{i % 24:02d}:00:00Z"}
        for i in ids
    ]  # fmt: skip


def shard_name(shard: int) -> str:
    return f"shard-{shard}"


def write_files(
    root: Path, first_id: int, files_per_shard: int, rows_per_file: int = ROWS_PER_FILE, shards: int = SHARDS
) -> int:
    """Files of `rows_per_file` rows into each of `shards` shards, ids from `first_id`; returns
    the next id.

    Each file is written under a hidden name and renamed into place, so a streaming file
    source never sees half of it.
    """
    next_id = first_id
    for _ in range(files_per_shard):
        for shard in range(shards):
            directory = root / shard_name(shard)
            directory.mkdir(parents=True, exist_ok=True)
            name = f"orders-{next_id:07d}.json"
            hidden = directory / f".{name}.tmp"
            hidden.write_text(
                "".join(json.dumps(r) + "\n" for r in rows(range(next_id, next_id + rows_per_file)))
            )
            os.replace(hidden, directory / name)
            next_id += rows_per_file
    return next_id


if __name__ == "__main__":  # regenerate examples/data
    print(write_files(Path(__file__).resolve().parent.parent / "examples" / "data", 0, 2))

"""FileIngest's split and settings, without Spark: every sub-directory is read by exactly
one task, and bad settings are named."""

from __future__ import annotations

from pathlib import Path

import pytest

from workers.connectors.file_ingest import FileIngest, directories_of_task, input_glob

pytestmark = pytest.mark.unit


def test_every_sub_directory_is_read_by_exactly_one_task(tmp_path: Path) -> None:
    names = [f"shard-{i:02d}" for i in range(20)] + ["2026-11-23", "clicks"]
    for name in names:
        (tmp_path / name).mkdir()
    (tmp_path / ".staging").mkdir()  # hidden: never read
    (tmp_path / "loose.json").write_text("{}")  # not in a sub-directory: never read
    for count in (1, 3, 4, 7):
        shares = [directories_of_task(str(tmp_path), i, count) for i in range(count)]
        assert sorted(d for share in shares for d in share) == sorted(names)
        if count <= 4:
            assert all(shares), f"with {count} tasks every task has something to read"
    assert input_glob("/in/", ["a", "b"]) == "/in/{a,b}"


def test_task_configs_name_each_tasks_place_in_the_split(tmp_path: Path) -> None:
    config = {"name": "files", "connector.class": "FileIngest", "tasks.max": "3", "input.path": str(tmp_path),
              "output.path": str(tmp_path / "out"), "schema": "id long"}  # fmt: skip
    configs = FileIngest().task_configs(config, 3)
    assert [(c["task.index"], c["task.count"]) for c in configs] == [("0", "3"), ("1", "3"), ("2", "3")]
    assert all(c["format"] == "json" and c["schema"] == "id long" for c in configs)


@pytest.mark.parametrize(
    ("change", "named"),
    [
        ({"format": "xml"}, "format"),
        ({"schema": ""}, "schema"),
        ({"schema": "id"}, "schema"),
        ({"input.path": "/no/such/dir"}, "input.path"),
        ({"max.files.per.trigger": "0"}, "max.files.per.trigger"),
        ({"output.path": ""}, "output.path"),
    ],
)
def test_bad_settings_are_named(tmp_path: Path, change: dict[str, str], named: str) -> None:
    config = {"name": "files", "connector.class": "FileIngest", "input.path": str(tmp_path),
              "output.path": str(tmp_path / "out"), "schema": "id long, name string", **change}  # fmt: skip
    assert [p.name for p in FileIngest.validate(config)] == [named]


def test_parquet_needs_no_schema(tmp_path: Path) -> None:
    config = {"name": "files", "connector.class": "FileIngest", "input.path": str(tmp_path),
              "output.path": str(tmp_path / "out"), "format": "parquet"}  # fmt: skip
    assert FileIngest.validate(config) == []

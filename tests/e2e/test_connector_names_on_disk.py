"""Connector names never become paths outside `checkpoint.dir`, with real Spark tasks: FileIngest
connectors named `../../escape-fi`, an absolute path, `victim/../victim%2F..` beside
`victim` each checkpoint in their own directory inside `checkpoint.dir`, and nothing is
written anywhere else on the file system."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from connect_rebalance_cli import sample_data
from tests.support.group_scenario import wait_until
from tests.support.spark_cluster import spark_worker_cluster
from tests.support.worker_cluster import rest
from workers.plugins.names import path_segment
from workers.spark.runtime import checkpoint_path

pytestmark = pytest.mark.e2e


@pytest.mark.timeout(400)
def test_hostile_names_checkpoint_inside_checkpoint_dir_and_nowhere_else(tmp_path: Path) -> None:
    base = tmp_path / "cluster"
    data, checkpoints = base / "in", base / "checkpoints"
    sample_data.write_files(data, 0, 1)
    absolute = str(base / "abs-escape")
    names = ["../../escape-fi", absolute, "victim/../victim%2F..", "victim"]
    outside_before = set(os.listdir(tmp_path.parent))
    with spark_worker_cluster(base) as cluster:
        w1 = cluster.start("w1")
        for i, name in enumerate(names):
            config = {"connector.class": "FileIngest", "tasks.max": "1", "input.path": str(data),
                      "format": "json", "schema": sample_data.SCHEMA, "output.path": str(base / f"out-{i}"),
                      "trigger.interval.ms": "500"}  # fmt: skip
            assert rest("POST", f"{w1.url}/connectors", {"name": name, "config": config})[0] == 201

        def committed(name: str) -> bool:
            return (Path(checkpoint_path(checkpoints, name, 0)) / "commits" / "0").exists()

        for name in names:
            wait_until(lambda name=name: committed(name), 240, f"{name!r}'s first batch to commit")
        statuses = {name: cluster.status(name)["tasks"][0]["state"] for name in names}
        assert set(statuses.values()) == {"RUNNING"}, statuses

    # Each connector has its own directory, directly inside checkpoint.dir.
    assert sorted(os.listdir(checkpoints)) == sorted(path_segment(n) for n in names)
    for name in names:
        where = Path(os.path.realpath(checkpoint_path(checkpoints, name, 0)))
        assert where.parent.parent == checkpoints.resolve(), (name, where)
    # Nothing anywhere else: the test's directory holds only what the test put there ...
    expected = {"in", "checkpoints", "workers", "data", "data-coordinator.log"}
    expected |= {f"out-{i}" for i in range(4)}
    assert set(os.listdir(base)) == expected
    assert not (base / "abs-escape").exists()
    # ... and nothing appeared beside it (`../../escape-fi` from checkpoint.dir is here).
    assert not (tmp_path.parent / "escape-fi").exists() and not (tmp_path / "escape-fi").exists()
    assert {n for n in os.listdir(tmp_path.parent) if "escape" in n} <= outside_before

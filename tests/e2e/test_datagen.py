"""Datagen on a worker with real PySpark: two tasks generate ids unique across tasks, and
with rows.total the output holds exactly ids 0 .. rows.total - 1; bad settings are named."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from tests.support.group_scenario import wait_until
from tests.support.spark_cluster import spark_worker_cluster
from tests.support.worker_cluster import rest
from workers.connectors.datagen import Datagen
from workers.spark.parquet_output import committed_column, read_output

pytestmark = pytest.mark.e2e

TOTAL = 600


def test_bad_settings_are_named(tmp_path: Path) -> None:
    config = {
        "name": "gen",
        "connector.class": "Datagen",
        "output.path": str(tmp_path),
        "rows.per.second": "0",
    }
    assert [p.name for p in Datagen.validate(config)] == ["rows.per.second"]
    assert [p.name for p in Datagen.validate({"name": "gen", "connector.class": "Datagen"})] == [
        "output.path"
    ]


@pytest.mark.timeout(300)
def test_two_tasks_generate_unique_ids_up_to_the_total(spark: Any, tmp_path: Path) -> None:
    out = tmp_path / "out"
    with spark_worker_cluster(tmp_path) as cluster:
        worker = cluster.start("w1")
        config = {"connector.class": "Datagen", "tasks.max": "2", "output.path": str(out),
                  "rows.per.second": "200", "rows.total": str(TOTAL),
                  "trigger.interval.ms": "500"}  # fmt: skip
        assert rest("POST", f"{worker.url}/connectors", {"name": "gen", "config": config})[0] == 201

        def committed() -> int:
            try:
                return len(committed_column(str(out), "id"))
            except (OSError, ValueError):
                return 0

        wait_until(lambda: committed() >= TOTAL, 180, f"{TOTAL} generated rows committed")
    ids = sorted(row.id for row in read_output(spark, str(out)).select("id").collect())
    assert ids == list(range(TOTAL))

"""End-to-end fixtures: a local SparkSession to read outputs, and clusters of Spark workers.

`spark` is one small session per test module (reading Parquet through Spark honours each
sink's `_spark_metadata` log, so what it reads is what was committed). `spark_cluster` is a
coordinator with short connect sessions (a crash is noticed in seconds) and a
`WorkerCluster` whose workers run Spark tasks in small sessions with a shared
`checkpoint.dir`; every process it starts is killed at the end.
"""

from __future__ import annotations

import os
import subprocess
import sys
import warnings
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from tests.support.spark_cluster import CLASS_ARCHIVE, spark_worker_cluster
from tests.support.worker_cluster import WorkerCluster
from workers.harness.spark_jvm import build_class_archive, driver_options


@pytest.fixture(scope="session", autouse=True)
def spark_class_archive() -> Path:
    """The class archive every test's Spark driver maps, built once (about 30 s) if missing.
    Without one, the tests run as well, on more CPU: a failed build is a warning."""
    try:
        build_class_archive(CLASS_ARCHIVE)
    except (OSError, RuntimeError, subprocess.SubprocessError) as exc:
        warnings.warn(f"Spark drivers start without a class archive: {exc}", stacklevel=1)
    return CLASS_ARCHIVE


@pytest.fixture(scope="module")
def spark() -> Iterator[Any]:
    """A small local session; Spark's Python workers use this interpreter (and its packages).

    One per module, not per run: a process has one SparkContext, which every session in it
    shares, and test_spark_runtime.py runs SparkRuntimes in this process whose close stops it."""
    os.environ.setdefault("PYSPARK_PYTHON", sys.executable)
    from pyspark.sql import SparkSession

    session = (
        SparkSession.builder.master("local[1]")
        .appName("e2e-tests")
        .config("spark.ui.enabled", "false")
        .config("spark.ui.showConsoleProgress", "false")
        .config("spark.sql.shuffle.partitions", "1")
        .config("spark.sql.streaming.stopTimeout", "30s")
        .config("spark.driver.extraJavaOptions", driver_options(CLASS_ARCHIVE))
        .getOrCreate()
    )
    try:
        yield session
    finally:
        session.stop()


@pytest.fixture
def spark_cluster(tmp_path: Path) -> Iterator[WorkerCluster]:
    """Spark workers (start them with `spark_cluster.start(name)`) on their own coordinator."""
    with spark_worker_cluster(tmp_path) as cluster:
        yield cluster

"""What a Spark task's batch makes its worker's JVM run: no `readlink` for its logs.

Hadoop's local file system, without the native library the pyspark wheel lacks, resolves a
path through its FileContext API by running `readlink` in a new process, and Spark's default
checkpoint manager goes through FileContext: a small batch forked the JVM 36 times, 25 of them
for `readlink`, about half of its time on 2 cores. The worker's sessions write checkpoints and
the file sink's metadata logs through the FileSystem API (workers/spark/runtime.py,
`DEFAULTS`). Seen here the way a user would see it with strace, but without ptrace: shims of
`readlink` and `chmod` first on the worker's PATH log every run and then run the real
command. `chmod` (Hadoop sets each new file's permissions so) shows the shims are in use.
"""

from __future__ import annotations

import os
import shutil
from pathlib import Path

import pytest

from tests.e2e.test_spark_planners import ingest, ready_worker, rows
from tests.e2e.test_topic_ingest import create_topic, produce
from tests.support.group_scenario import wait_until
from tests.support.spark_cluster import spark_worker_cluster
from workers.spark.parquet_output import committed_column

pytestmark = pytest.mark.e2e


def shims(folder: Path, log: Path, commands: tuple[str, ...]) -> None:
    """In `folder`, a script per command that appends its name and arguments to `log` and
    runs the real command."""
    folder.mkdir()
    for command in commands:
        real = shutil.which(command)
        assert real, f"{command} is not installed"
        script = folder / command
        script.write_text(f'#!/bin/sh\necho "{command} $*" >> "{log}"\nexec "{real}" "$@"\n')
        script.chmod(0o755)


@pytest.mark.timeout(400)
def test_a_spark_tasks_batches_make_its_jvm_run_no_readlink(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    runs = tmp_path / "runs.log"
    shims(tmp_path / "shims", runs, ("readlink", "chmod"))
    monkeypatch.setenv("PATH", f"{tmp_path / 'shims'}{os.pathsep}{os.environ['PATH']}")  # the worker's JVM's
    with spark_worker_cluster(tmp_path) as cluster:
        worker = ready_worker(cluster)
        bootstrap = cluster.coordinator.bootstrap
        create_topic(bootstrap, "clicks", 1)
        output = tmp_path / "out"
        ingest(cluster, worker, "clicks-ingest", "clicks", output)
        for first in range(0, 600, 100):  # several batches, each with its commit and its part file
            produce(bootstrap, "clicks", range(first, first + 100), 1)
            wait_until(lambda first=first: rows(output) >= first + 100, 120, f"records up to {first + 100}")
        assert sorted(int(v) for v in committed_column(str(output), "value")) == list(range(600))
    lines = runs.read_text().splitlines() if runs.exists() else []
    assert any(line.startswith("chmod ") and str(output) in line for line in lines), (
        "the shims were not on the JVM's PATH: no chmod of the output was seen"
    )
    readlinks = [line for line in lines if line.startswith("readlink ")]
    assert readlinks == [], f"the JVM ran readlink {len(readlinks)} times, e.g. {readlinks[:3]}"

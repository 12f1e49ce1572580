"""Connectors installed on `plugin.path`, as an operator installs them, run by a worker process.

One connector package is installed into a directory of its own with `pip install --target`,
another is built into a wheel that lies in the plugin directory as it is, and a third
package beside them cannot be imported. A worker started with `plugin.path` naming that
directory warns about the third, naming it, lists the other two at `GET /connector-plugins`,
and runs connectors of theirs created over REST: their records, written by the plugins' own
code, land in their topics. A worker whose `plugin.path` names a relative and a missing
directory does not start, and says so for both.
"""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest

from connect_rebalance.processes import CoordinatorProcess
from tests.support.group_scenario import wait_until
from tests.support.plugin_layouts import pip, write_installed, write_source
from tests.support.verifiable_records import read_values
from tests.support.worker_cluster import rest
from tests.support.worker_files import refused_start
from workers.harness.process import WorkerProcess

pytestmark = pytest.mark.integration
REQUIRED = {"group.id": "plugged", "config.storage.topic": "plugged-configs",
            "offset.storage.topic": "plugged-offsets", "status.storage.topic": "plugged-status",
            "spark.session.warmup": "false"}  # fmt: skip
# A source whose task is VerifiableSource's, each run named after a greeting of its package's own
# module: a record shows which plugin's code wrote it.
SOURCE = """from workers.connectors.verifiable import VerifiableSource, VerifiableSourceTask

from {package}.greeting import GREETING


class {name}Task(VerifiableSourceTask):
    def __init__(self) -> None:
        super().__init__()
        self.run = f"{{GREETING}}-{{self.run}}"


class {name}(VerifiableSource):
    version = "{version}"
    task_class = {name}Task
"""


def connector_package(directory: Path, package: str, name: str, version: str, greeting: str) -> Path:
    return write_source(
        directory, f"{package.replace('_', '-')}", version, {name: f"{package}.source:{name}"},
        {f"{package}/__init__.py": "", f"{package}/greeting.py": f"GREETING = {greeting!r}\n",
         f"{package}/source.py": SOURCE.format(package=package, name=name, version=version)},
    )  # fmt: skip


@pytest.fixture(scope="module")
def plugin_dir(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """The plugin directory: a `pip install --target` directory, a wheel, and a plugin that cannot
    be imported."""
    root = tmp_path_factory.mktemp("plugins")
    plugins = root / "connect-plugins"
    acme = connector_package(root / "src" / "acme", "acme_connect", "AcmeSource", "1.2.0", "acme")
    pip("install", "--target", str(plugins / "acme"), str(acme))
    zipped = connector_package(root / "src" / "zipped", "zipped_connect", "ZippedSource", "0.3.0", "zipped")
    pip("wheel", "--wheel-dir", str(plugins), str(zipped))
    broken = {"BrokenSource": "broken_connect:BrokenSource"}
    write_installed(plugins / "broken", "broken-connect", "0.1.0", broken,
                    {"broken_connect.py": "import libacme_native  # not installed\n"})  # fmt: skip
    return plugins


@pytest.fixture
def worker(tmp_path: Path, coordinator: CoordinatorProcess, plugin_dir: Path) -> Iterator[WorkerProcess]:
    settings = {**REQUIRED, "bootstrap.servers": coordinator.bootstrap, "plugin.path": str(plugin_dir),
                "checkpoint.dir": str(tmp_path / "checkpoints")}  # fmt: skip
    process = WorkerProcess(settings, tmp_path / "worker", "plugged")
    try:
        yield process.start()
    finally:
        process.stop()


def test_plugins_on_the_plugin_path_are_listed_and_run_and_one_that_fails_to_import_is_named(
    worker: WorkerProcess, coordinator: CoordinatorProcess, plugin_dir: Path
) -> None:
    status, listed = rest("GET", f"{worker.url}/connector-plugins")
    assert status == 200
    assert [p for p in listed if not p["class"].startswith("workers.")] == [
        {"class": "acme_connect.source.AcmeSource", "type": "source", "version": "1.2.0"},
        {"class": "zipped_connect.source.ZippedSource", "type": "source", "version": "0.3.0"},
    ]
    warnings = [line.split("WARNING", 1)[1] for line in worker.log_text().splitlines() if "WARNING" in line]
    assert [w for w in warnings if "BrokenSource" in w] == [
        f" workers.main: plugin.path: connector plugin 'BrokenSource' (broken_connect:BrokenSource) in "
        f"{plugin_dir / 'broken'} was skipped: it failed to import: ModuleNotFoundError: No module named "
        "'libacme_native'"
    ]

    # By entry-point name, and by class name (the wheel's).
    for name, plugin in (("acme", "AcmeSource"), ("zipped", "zipped_connect.source.ZippedSource")):
        config = {"connector.class": plugin, "topic": f"{name}-out", "tasks.max": "1", "throughput": "20"}
        assert rest("POST", f"{worker.url}/connectors", {"name": name, "config": config})[0] == 201

    for name in ("acme", "zipped"):
        wait_until(
            lambda n=name: len(read_values(coordinator.bootstrap, f"{n}-out")) >= 3, 60, f"{name}'s records"
        )
        values = [value for _, value in read_values(coordinator.bootstrap, f"{name}-out")]
        assert {value["run"].split("-")[0] for value in values} == {name}
        assert [value["seq"] for value in values[:3]] == [0, 1, 2]


def test_a_worker_whose_plugin_path_is_relative_or_missing_does_not_start_and_names_both(
    tmp_path: Path,
) -> None:
    worker_file = tmp_path / "worker.properties"
    missing = tmp_path / "no-such-plugins"
    settings = {**REQUIRED, "bootstrap.servers": "127.0.0.1:9", "plugin.path": f"plugins, {missing}"}
    worker_file.write_text("".join(f"{k}={v}\n" for k, v in settings.items()))

    assert refused_start(worker_file) == [
        "error: 2 problems with the settings:",
        "  - setting 'plugin.path': 'plugins' is a relative path: give it absolute, as Spark's Python "
        "processes import from it in working directories of their own",
        f"  - setting 'plugin.path': '{missing}' does not exist",
    ]

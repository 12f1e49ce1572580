"""`plugin.path`: which directories and wheels hold plugins, what is refused at start, and what the
scan finds there (workers/plugins/path.py, workers/plugins/scan.py, workers/plugins/registry.py)."""

from __future__ import annotations

import os
import sys
import sysconfig
from collections.abc import Iterator
from pathlib import Path

import pytest

from connect_rebalance.properties import ConfigError
from tests.support.plugin_layouts import write_installed, write_wheel
from workers.config.worker import WorkerConfig
from workers.plugins import api
from workers.plugins.path import read_plugin_path
from workers.plugins.registry import Plugins
from workers.spark.runtime import python_environment

pytestmark = pytest.mark.unit
REQUIRED = {"bootstrap.servers": "h:9092", "group.id": "g", "config.storage.topic": "c",
            "offset.storage.topic": "o", "status.storage.topic": "s"}  # fmt: skip
GREETER = (
    "from workers.connectors.verifiable import VerifiableSource\n\n\n"
    "class Greeter(VerifiableSource):\n    version = '{version}'\n\n\n"
    "def helper():\n    return None\n"
)
MODULES = ("pp_first", "pp_second", "pp_broken", "pp_compiled")


@pytest.fixture
def import_state(monkeypatch: pytest.MonkeyPatch) -> Iterator[None]:
    """The import path and the modules imported are this process's own again after the test."""
    monkeypatch.setattr(sys, "path", list(sys.path))
    yield
    for name in [m for m in sys.modules if m.split(".")[0] in MODULES]:
        del sys.modules[name]


def test_a_pip_target_directory_a_directory_per_plugin_and_wheels_are_each_a_location(tmp_path: Path) -> None:
    target = write_installed(tmp_path / "target", "pp-first", "1.0", {"Greeter": "pp_first:Greeter"},
                             {"pp_first.py": GREETER.format(version="1.0")})  # fmt: skip
    shelf = tmp_path / "shelf"
    per_plugin = write_installed(shelf / "acme", "pp-second", "2.0", {"Zipped": "pp_second:Greeter"},
                                 {"pp_second/__init__.py": GREETER.format(version="2.0")})  # fmt: skip
    bundled = write_wheel(shelf / "bundle", "pp-third", "3.0", {}, {})
    loose = write_wheel(shelf, "pp-fourth", "4.0", {}, {})
    (shelf / "notes").mkdir()  # holds no distribution: not a plugin
    (shelf / "README.txt").write_text("not a plugin either")
    named = write_wheel(tmp_path / "wheels", "pp-fifth", "5.0", {}, {})

    read = read_plugin_path(f" {target} ,{shelf},, {named}")

    assert read.problems == ()
    assert [(location.path, location.entry) for location in read.locations] == [
        (target, str(target)), (per_plugin, str(shelf)), (bundled, str(shelf)), (loose, str(shelf)),
        (named, str(named)),
    ]  # fmt: skip
    assert read.entries == (str(target), str(shelf), str(named))
    assert read_plugin_path(" , ") == read_plugin_path("")
    assert read_plugin_path("").locations == ()


def test_every_bad_entry_is_refused_at_once_naming_the_setting_and_the_entry(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    (tmp_path / "notes.txt").write_text("x")
    good = write_installed(tmp_path / "good", "pp-first", "1.0", {}, {})
    value = f"plugins,{tmp_path / 'missing'}, {good},{tmp_path / 'notes.txt'}"

    with pytest.raises(ConfigError) as refused:
        WorkerConfig.from_settings({**REQUIRED, "plugin.path": value})

    assert refused.value.problems == [
        "setting 'plugin.path': 'plugins' is a relative path: give it absolute, as Spark's Python processes "
        "import from it in working directories of their own",
        f"setting 'plugin.path': '{tmp_path / 'missing'}' does not exist",
        f"setting 'plugin.path': '{tmp_path / 'notes.txt'}' is neither a directory nor a wheel (.whl)",
    ]
    assert WorkerConfig.from_settings(
        {**REQUIRED, "plugin.path": f"{good}, "}
    ).plugin_locations().entries == (str(good),)
    # A value a config provider read is not shown.
    monkeypatch.setenv("PP_PLUGINS", f"{good},{tmp_path / 'secret-name'}")
    with pytest.raises(ConfigError) as hidden:
        WorkerConfig.from_settings({**REQUIRED, "config.providers": "env",
                                    "config.providers.env.class": "EnvVarConfigProvider",
                                    "plugin.path": "${env:PP_PLUGINS}"})  # fmt: skip
    assert hidden.value.problems == [
        "setting 'plugin.path': entry 2 (read from a config provider) does not exist"
    ]
    # A variable that cannot be read is that one problem, not its text read as a path too.
    variable = f"${{file:{tmp_path / 'none.properties'}:plugins}}"
    with pytest.raises(ConfigError) as unread:
        WorkerConfig.from_settings({**REQUIRED, "config.providers": "file",
                                    "config.providers.file.class": "FileConfigProvider",
                                    "plugin.path": variable})  # fmt: skip
    assert [p.split(" could not be resolved")[0] for p in unread.value.problems] == [
        f"setting 'plugin.path': {variable}"
    ]


@pytest.mark.usefixtures("import_state")
def test_the_scan_finds_plugins_on_the_path_after_the_workers_own_and_skips_each_it_cannot_use(
    tmp_path: Path,
) -> None:
    first = write_installed(
        tmp_path / "shelf" / "first", "pp-first", "1.0",
        {"Greeter": "pp_first:Greeter", "Broken": "pp_broken:Broken", "NotOne": "pp_first:helper",
         "VerifiableSource": "pp_first:Greeter"},
        {"pp_first.py": GREETER.format(version="1.0"),
         "pp_broken.py": "raise ImportError('needs libacme, which is not installed')\n"},
    )  # fmt: skip
    second = write_wheel(tmp_path / "wheels", "pp-second", "2.0",
                         {"Greeter": "pp_second:Greeter", "Zipped": "pp_second:Greeter"},
                         {"pp_second/__init__.py": GREETER.format(version="2.0")})  # fmt: skip
    compiled = write_wheel(tmp_path / "wheels", "pp-compiled", "1.0", {"Fast": "pp_compiled:Fast"},
                           {"pp_compiled.cpython-311-x86_64-linux-gnu.so": "\x7fELF"})  # fmt: skip
    empty = tmp_path / "empty"
    write_installed(empty, "pp-nothing", "1.0", {}, {})
    worker_path = list(sys.path)

    plugins, warnings = Plugins.load(read_plugin_path(f"{tmp_path / 'shelf'},{tmp_path / 'wheels'},{empty}"))

    assert warnings == [
        f"plugin.path: {compiled} was skipped: it holds compiled extension modules, which Python cannot "
        "import from a wheel; install it into a directory with pip install --target",
        f"plugin.path: connector plugin 'Broken' (pp_broken:Broken) in {first} was skipped: it failed to "
        "import: ImportError: needs libacme, which is not installed",
        f"plugin.path: connector plugin 'NotOne' (pp_first:helper) in {first} was skipped: it is not a "
        "Connector subclass",
        f"plugin.path: connector plugin 'VerifiableSource' (pp_first:Greeter) in {first} was skipped: a "
        "plugin of that name is installed beside the worker, and that one is used",
        f"plugin.path: connector plugin 'Greeter' (pp_second:Greeter) in {second} was skipped: a plugin of "
        f"that name is in {first}, earlier on plugin.path, and that one is used",
        f"plugin.path: {str(empty)!r} holds no connector plugin (no distribution with "
        "connect_rebalance.connectors entry points)",
    ]
    found = plugins.all()
    assert {name: f"{p.__module__}.{p.__qualname__}" for name, p in found.items()} == {
        "Datagen": "workers.connectors.datagen.Datagen",
        "FileIngest": "workers.connectors.file_ingest.FileIngest",
        "TopicIngest": "workers.connectors.topic_ingest.TopicIngest",
        "VerifiableSource": "workers.connectors.verifiable.VerifiableSource",
        "Greeter": "pp_first.Greeter",
        "Zipped": "pp_second.Greeter",
    }
    assert found["Zipped"].version == "2.0"  # imported from the wheel
    assert plugins.find("pp_first.Greeter") is found["Greeter"]
    # After the worker's own import path, in plugin.path's order; the compiled wheel is not on it.
    assert sys.path == [*worker_path, str(first), str(second), str(empty)]
    assert plugins.import_paths == [str(first), str(second), str(empty)]


def test_spark_python_processes_import_plugins_after_the_interpreters_own_packages(tmp_path: Path) -> None:
    site_packages = sysconfig.get_paths()["purelib"]
    plugin_dirs = [str(tmp_path / "first"), str(tmp_path / "second.whl")]

    path = python_environment({"PYTHONPATH": "/opt/extra"}, plugin_dirs)["PYTHONPATH"].split(os.pathsep)

    assert path[:2] == [str(Path(api.__file__).resolve().parents[2]), "/opt/extra"]
    assert path[-2:] == plugin_dirs
    # The interpreter's own packages come first, as in the worker: a plugin's copy of one is not used.
    assert site_packages in path[2:-2]
    assert python_environment({"PYTHONPATH": "/opt/extra"})["PYTHONPATH"].split(os.pathsep) == path[:2]

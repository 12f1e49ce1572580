"""Connector packages as tests put them on `plugin.path`: written out as installed distributions
(a package beside its `*.dist-info`, as `pip install --target` leaves it), as source directories
pip builds and installs, or as wheels."""

from __future__ import annotations

import subprocess
import sys
import zipfile
from pathlib import Path

GROUP = "connect_rebalance.connectors"


def entry_points_text(entry_points: dict[str, str]) -> str:
    """`entry_points.txt` of a distribution whose connectors are `entry_points` (name -> module:attr)."""
    return f"[{GROUP}]\n" + "".join(f"{name} = {target}\n" for name, target in entry_points.items())


def installed_files(name: str, version: str, entry_points: dict[str, str],
                    modules: dict[str, str]) -> dict[str, str]:  # fmt: skip
    """The files of an installed distribution, by path relative to where it is installed: the
    `modules` (relative path -> source) and the metadata pip writes that the scan reads."""
    dist_info = f"{name.replace('-', '_')}-{version}.dist-info"
    return {
        **modules,
        f"{dist_info}/METADATA": f"Metadata-Version: 2.1\nName: {name}\nVersion: {version}\n",
        f"{dist_info}/entry_points.txt": entry_points_text(entry_points),
    }


def write_installed(target: Path, name: str, version: str, entry_points: dict[str, str],
                    modules: dict[str, str]) -> Path:  # fmt: skip
    """A distribution installed into `target`, as `pip install --target target` leaves it."""
    for relative, text in installed_files(name, version, entry_points, modules).items():
        (target / relative).parent.mkdir(parents=True, exist_ok=True)
        (target / relative).write_text(text)
    return target


def write_wheel(directory: Path, name: str, version: str, entry_points: dict[str, str],
                modules: dict[str, str]) -> Path:  # fmt: skip
    """A wheel of the distribution (a zip of what it installs, metadata included)."""
    directory.mkdir(parents=True, exist_ok=True)
    wheel = directory / f"{name.replace('-', '_')}-{version}-py3-none-any.whl"
    with zipfile.ZipFile(wheel, "w") as archive:
        for relative, text in installed_files(name, version, entry_points, modules).items():
            archive.writestr(relative, text)
    return wheel


def write_source(directory: Path, name: str, version: str, entry_points: dict[str, str],
                 modules: dict[str, str]) -> Path:  # fmt: skip
    """A package's source directory, as its author keeps it: a pyproject.toml declaring the
    connectors' entry points, and the modules."""
    pyproject = (
        '[build-system]\nrequires = ["setuptools>=70.1"]\nbuild-backend = "setuptools.build_meta"\n\n'
        f'[project]\nname = "{name}"\nversion = "{version}"\n\n'
        f'[project.entry-points."{GROUP}"]\n'
        + "".join(f'{entry} = "{target}"\n' for entry, target in entry_points.items())
    )
    for relative, text in {"pyproject.toml": pyproject, **modules}.items():
        (directory / relative).parent.mkdir(parents=True, exist_ok=True)
        (directory / relative).write_text(text)
    return directory


def pip(*arguments: str) -> None:
    """pip of the interpreter running the tests, offline: the package is built from its local
    source with the setuptools installed beside it, and nothing else is installed."""
    command = [sys.executable, "-m", "pip", *arguments, "--no-deps", "--no-build-isolation", "--no-index",
               "--quiet", "--disable-pip-version-check"]  # fmt: skip
    result = subprocess.run(command, capture_output=True, text=True, timeout=300)
    assert result.returncode == 0, f"{' '.join(command)} failed:\n{result.stdout}{result.stderr}"

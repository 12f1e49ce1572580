"""`plugin.path`: the directories connector plugins are installed in, apart from the worker's own.

Kafka Connect's setting, read the Python way. It is a comma-separated list of absolute paths;
each one is a *plugin location* itself, or holds plugin locations:

- a directory of installed distributions, as `pip install --target <dir> ...` makes it (the
  packages beside their `*.dist-info` or `*.egg-info` metadata): the directory itself;
- a directory holding one such directory per plugin: each of them (not searched deeper);
- a wheel (`*.whl`), named directly or lying in one of those directories: the wheel, which
  Python imports from as the zip archive it is (pure-Python wheels only: a compiled
  extension module cannot be imported from a zip, `scan` skips such a wheel).

A plugin location goes on the worker's import path (and Spark's Python processes'), and its
distributions' `connect_rebalance.connectors` entry points are the connectors found there.

A path that is relative, does not exist, or is a file but not a wheel is refused at start:
Kafka Connect resolves a relative one against the worker's working directory and logs an
error for a missing one and carries on, but here a relative path would mean another directory
in each Spark Python process (they run elsewhere), and a worker that starts without the
plugins it was told about fails every connector of theirs later, on whichever worker runs it,
far from the cause.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

SETTING = "plugin.path"
WHEEL = ".whl"
METADATA_SUFFIXES = (".dist-info", ".egg-info")


@dataclass(frozen=True)
class PluginLocation:
    """One place plugins are imported from: a directory of installed distributions, or a wheel."""

    path: Path
    entry: str  # the plugin.path entry it was found under, as written

    @property
    def is_wheel(self) -> bool:
        return self.path.suffix == WHEEL and self.path.is_file()


@dataclass(frozen=True)
class PluginPath:
    """A `plugin.path` value read: its plugin locations in order, and what is wrong with it."""

    locations: tuple[PluginLocation, ...]
    problems: tuple[str, ...]
    entries: tuple[str, ...]  # the entries read, each of which should hold a plugin


def entries(value: str) -> list[str]:
    """The paths of a `plugin.path` value: comma-separated, blanks around them and empty ones ignored
    (as Kafka reads a LIST setting)."""
    return [entry.strip() for entry in value.split(",") if entry.strip()]


def read_plugin_path(value: str, show_values: bool = True) -> PluginPath:
    """The plugin locations `value` names, in its order, and a problem for each entry that is
    relative, missing, unreadable, or a file other than a wheel. With `show_values` off (the value
    came from a config provider), a problem names the entry by its place instead of its text."""
    locations: list[PluginLocation] = []
    problems: list[str] = []
    read: list[str] = []
    for number, entry in enumerate(entries(value), 1):
        shown = repr(entry) if show_values else f"entry {number} (read from a config provider)"
        path = Path(entry)
        if not path.is_absolute():
            problems.append(f"{shown} is a relative path: give it absolute, as Spark's Python "
                            f"processes import from it in working directories of their own")  # fmt: skip
        elif not path.exists():
            problems.append(f"{shown} does not exist")
        elif path.is_file() and path.suffix != WHEEL:
            problems.append(f"{shown} is neither a directory nor a wheel ({WHEEL})")
        else:
            try:
                found = [PluginLocation(p, entry) for p in _locations_in(path)]
            except OSError as exc:
                problems.append(f"{shown} cannot be read: {exc.strerror or exc}")
                continue
            locations += found
            read.append(entry)
    return PluginPath(tuple(locations), tuple(problems), tuple(read))


def _locations_in(path: Path) -> list[Path]:
    """The plugin locations a `plugin.path` entry holds (links followed, names in sorted order)."""
    if path.is_file():
        return [path]
    own = [path] if _holds_distributions(path) else []
    found = []
    for child in sorted(path.iterdir()):
        if child.suffix == WHEEL and child.is_file():
            found.append(child)
        elif not own and child.is_dir() and not child.name.startswith("."):
            # One directory per plugin: its distributions, or its wheels.
            if _holds_distributions(child):
                found.append(child)
            found += sorted(w for w in child.glob(f"*{WHEEL}") if w.is_file())
    return own + found


def _holds_distributions(directory: Path) -> bool:
    return any(child.name.endswith(METADATA_SUFFIXES) for child in directory.iterdir())

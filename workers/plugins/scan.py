"""Finding connector plugins: the entry points of the distributions beside the worker and on `plugin.path`.

A scan reads distributions' metadata (`*.dist-info/entry_points.txt`) and imports the module
of each entry point in the group, and nothing else: no setup script, no `.pth` file and no
other module of a plugin location is run. As Kafka Connect logs a plugin it cannot load and
carries on with the others, an entry point that fails to import, or names something other
than a connector, is skipped with a warning naming it.

Names are entry-point names, and the first plugin found under a name is the one used: the
worker's own (installed beside it) before those on `plugin.path`, then `plugin.path` in its
order. That is the order of the import path too (`plugin.path` locations come after the
worker's own), so the plugin a name finds is the one whose modules are imported; the others
of that name are skipped with a warning saying which one is used.
"""

from __future__ import annotations

import zipfile
from collections.abc import Iterator, Sequence
from dataclasses import dataclass, field
from importlib.metadata import Distribution, EntryPoint, distributions
from typing import Any

from workers.plugins.path import SETTING, PluginLocation

BESIDE_THE_WORKER = "beside the worker"
# Compiled extension modules, which Python's zip importer cannot load from a wheel.
EXTENSION_SUFFIXES = (".so", ".pyd")


@dataclass
class PluginScan:
    """The plugins found, by entry-point name, with where each came from, and the warnings."""

    found: dict[str, Any] = field(default_factory=dict)
    where: dict[str, str] = field(default_factory=dict)
    warnings: list[str] = field(default_factory=list)


def importable(locations: Sequence[PluginLocation]) -> tuple[list[PluginLocation], list[str]]:
    """The locations Python can import from, and a warning for each wheel it cannot: one holding
    compiled extension modules (install that plugin with `pip install --target` instead)."""
    usable, warnings = [], []
    for location in locations:
        if location.is_wheel and _compiled(location):
            warnings.append(
                f"{SETTING}: {location.path} was skipped: it holds compiled extension modules, which "
                "Python cannot import from a wheel; install it into a directory with pip install --target"
            )
        else:
            usable.append(location)
    return usable, warnings


def scan(group: str, kind: type, installed: Sequence[str], locations: Sequence[PluginLocation],
         entries: Sequence[str] = ()) -> PluginScan:  # fmt: skip
    """The `group` entry points naming a subclass of `kind`: those of the distributions on the
    import path `installed` (the worker's own), then those of each of `locations` (on the import
    path already), and a warning for each of the `plugin.path` `entries` where none was found."""
    result = PluginScan()
    for entry in _group_entry_points(group, installed):
        _add(result, entry, BESIDE_THE_WORKER, kind)
    holding = set()
    for location in locations:
        for entry in _group_entry_points(group, [str(location.path)]):
            holding.add(location.entry)
            _add(result, entry, str(location.path), kind)
    for entry in entries:
        if entry not in holding:
            result.warnings.append(
                f"{SETTING}: {entry!r} holds no connector plugin (no distribution with {group} entry points)"
            )
    return result


def _add(result: PluginScan, entry: EntryPoint, where: str, kind: type) -> None:
    if entry.name in result.found:
        result.warnings.append(
            f"{SETTING}: connector plugin {entry.name!r} ({entry.value}) in {where} was skipped: a plugin "
            f"of that name is {_placed(result.where[entry.name])}, and that one is used"
        )
        return
    try:
        plugin = entry.load()
    except Exception as exc:  # noqa: BLE001 - any failure to import skips the plugin, named
        result.warnings.append(f"{_skipped(entry, where)}: it failed to import: {type(exc).__name__}: {exc}")
        return
    if not (isinstance(plugin, type) and issubclass(plugin, kind)):
        result.warnings.append(f"{_skipped(entry, where)}: it is not a {kind.__name__} subclass")
        return
    result.found[entry.name] = plugin
    result.where[entry.name] = where


def _group_entry_points(group: str, path: Sequence[str]) -> Iterator[EntryPoint]:
    """The group's entry points of the distributions on `path`; of distributions of one name, the
    first on the path only, as `importlib.metadata.entry_points` has it (it is the one imported)."""
    seen: set[str] = set()
    for distribution in distributions(path=list(path)):
        name = _normalized(distribution)
        if name in seen:
            continue
        seen.add(name)
        yield from distribution.entry_points.select(group=group)


def _normalized(distribution: Distribution) -> str:
    return (distribution.metadata["Name"] or "").lower().replace("-", "_").replace(".", "_")


def _skipped(entry: EntryPoint, where: str) -> str:
    return f"{SETTING}: connector plugin {entry.name!r} ({entry.value}) in {where} was skipped"


def _placed(where: str) -> str:
    return (
        "installed beside the worker" if where == BESIDE_THE_WORKER else f"in {where}, earlier on {SETTING}"
    )


def _compiled(location: PluginLocation) -> bool:
    try:
        with zipfile.ZipFile(location.path) as wheel:
            return any(name.endswith(EXTENSION_SUFFIXES) for name in wheel.namelist())
    except (OSError, zipfile.BadZipFile):
        return False  # not a readable zip: the scan finds no distribution in it

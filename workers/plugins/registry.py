"""The connector plugins one worker found: a `Plugins` instance, made once when the worker
starts and handed to whoever looks a plugin up (the herder, the task runner, the leader's
planning, the REST API through the herder).

Kafka Connect's `Plugins`: the worker scans its plugin path once at start, as a scan reads
every distribution's metadata (far too slow to repeat per task), and `connector.class` may
name a plugin by its entry-point name, its class name, or its dotted path. No module state:
two instances (a test's, a worker's) never see each other's plugins.
"""

from __future__ import annotations

import importlib
import sys
from collections.abc import Mapping

from workers.plugins.api import ENTRY_POINT_GROUP, Connector
from workers.plugins.path import PluginPath
from workers.plugins.scan import PluginScan, importable, scan


class Plugins:
    def __init__(self, found: PluginScan, import_paths: list[str]) -> None:
        self._scan = found
        self.import_paths = import_paths  # the plugin.path locations this worker put on the import path

    @classmethod
    def installed(cls) -> Plugins:
        """The plugins installed beside this process, without a `plugin.path`."""
        return cls(scan(ENTRY_POINT_GROUP, Connector, sys.path, ()), [])

    @classmethod
    def load(cls, plugin_path: PluginPath) -> tuple[Plugins, list[str]]:
        """Put `plugin.path`'s plugin locations on the import path, after the worker's own, and
        scan for plugins there and beside the worker: once, when a worker starts. The locations
        are appended, never run as site directories (their `.pth` files are not read), so a
        plugin's copy of a package the worker has does not replace the worker's.
        Returns the plugins, and the scan's warnings: the plugins skipped, each named, and why."""
        usable, warnings = importable(plugin_path.locations)
        locations = {str(location.path) for location in usable}
        installed = [p for p in sys.path if p not in locations]
        added = []
        for location in usable:
            if str(location.path) not in sys.path:
                sys.path.append(str(location.path))
                added.append(str(location.path))
        found = scan(ENTRY_POINT_GROUP, Connector, installed, usable, plugin_path.entries)
        return cls(found, added), warnings + found.warnings

    def all(self) -> dict[str, type[Connector]]:
        """Every connector plugin found, by entry-point name."""
        return dict(self._scan.found)

    def find(self, name: str) -> type[Connector] | None:
        """The plugin `connector.class` names: entry-point name, class name, or dotted path."""
        found = self._scan.found
        if name in found:
            return found[name]
        for plugin in found.values():
            if name in (plugin.__name__, f"{plugin.__module__}.{plugin.__qualname__}"):
                return plugin
        module_name, _, class_name = name.rpartition(".")
        if module_name:
            try:
                candidate = getattr(importlib.import_module(module_name), class_name, None)
            except ImportError:
                return None
            if isinstance(candidate, type) and issubclass(candidate, Connector):
                return candidate
        return None

    def named_by(self, config: Mapping[str, str] | None) -> type[Connector] | None:
        """The plugin a connector's config names in `connector.class`; None without a config
        or without such a plugin."""
        return self.find(config.get("connector.class", "")) if config else None

    def of(self, config: Mapping[str, str]) -> type[Connector]:
        """The plugin a connector's config names (ValueError: none)."""
        plugin = self.find(config["connector.class"])
        if plugin is None:
            raise ValueError(f"no connector plugin named {config['connector.class']!r}")
        return plugin

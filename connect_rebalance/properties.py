"""Settings as every process reads them: Java properties files, and the error that names a bad
setting. Shared by the coordinator's and the workers' configuration and by the command line."""

from __future__ import annotations

from pathlib import Path


class ConfigError(ValueError):
    """A setting is unknown or invalid; the message names it."""


def read_properties(path: Path) -> dict[str, str]:
    """A Java properties file: `name=value` or `name: value` lines, `#` and `!` comments."""
    settings: dict[str, str] = {}
    for number, raw in enumerate(path.read_text().splitlines(), start=1):
        line = raw.strip()
        if not line or line[0] in "#!":
            continue
        for sep in ("=", ":"):
            if sep in line:
                name, value = line.split(sep, 1)
                settings[name.strip()] = value.strip()
                break
        else:
            raise ConfigError(f"{path}:{number}: expected name=value, got {raw!r}")
    return settings

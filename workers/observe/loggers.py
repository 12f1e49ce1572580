"""A worker's log levels, changed at run time: Kafka Connect's `/admin/loggers`, on Python's
logging.

Levels are named as log4j names them, the names Kafka Connect's API takes and answers
(TRACE, DEBUG, INFO, WARN, ERROR, FATAL, OFF), each mapped to a Python level. Listing shows
the loggers whose level is set (and `root`); a logger's own level is its effective one
when it has none set. Setting a namespace sets it and every known logger under it (a
logger named `a.b` is under `a`, `a.bc` is not), making the namespace's logger if it does
not exist yet, and answers their names; a logger whose level changes gets the time.
"""

from __future__ import annotations

import logging
import time
from collections.abc import Callable
from typing import Any

ROOT = "root"
LEVELS = {"TRACE": 5, "DEBUG": logging.DEBUG, "INFO": logging.INFO, "WARN": logging.WARNING,
          "ERROR": logging.ERROR, "FATAL": logging.CRITICAL, "OFF": logging.CRITICAL + 10}  # fmt: skip
_NAMES = {number: name for name, number in LEVELS.items()}
logging.addLevelName(LEVELS["TRACE"], "TRACE")


def level_number(level: str) -> int | None:
    """The Python level a log4j level name means (any case), or None for no level."""
    return LEVELS.get(level.strip().upper())


def _name(number: int) -> str:
    """The log4j name of a Python level (a level between two named ones: the lower name)."""
    return _NAMES.get(number) or _NAMES[max([n for n in _NAMES if n <= number], default=LEVELS["TRACE"])]


class Loggers:
    def __init__(self, clock: Callable[[], float] = time.time) -> None:
        self._clock = clock
        self.last_modified: dict[str, int] = {}

    @staticmethod
    def _known() -> dict[str, logging.Logger]:
        """Every logger made so far, by name (placeholders for unmade parents are not loggers)."""
        made = dict(logging.Logger.manager.loggerDict)
        return {name: logger for name, logger in made.items() if isinstance(logger, logging.Logger)}

    def _level_of(self, name: str, logger: logging.Logger) -> dict[str, Any]:
        level = logger.level or logger.getEffectiveLevel()
        return {"level": _name(level), "last_modified": self.last_modified.get(name)}

    def all_levels(self) -> dict[str, dict[str, Any]]:
        """The loggers with a level of their own, and root, by name."""
        found = {name: self._level_of(name, logger) for name, logger in sorted(self._known().items())
                 if logger.level != logging.NOTSET}  # fmt: skip
        return {**found, ROOT: self._level_of(ROOT, logging.getLogger())}

    def level(self, name: str) -> dict[str, Any] | None:
        """One logger's level (its effective one if it has none), or None if there is no such logger."""
        if name.lower() == ROOT:
            return self._level_of(ROOT, logging.getLogger())
        logger = self._known().get(name)
        return None if logger is None else self._level_of(name, logger)

    def set_level(self, namespace: str, level: str) -> list[str]:
        """Set `namespace` and every logger under it to `level` (a log4j name, checked by the
        caller); the names of the loggers set, sorted."""
        number = LEVELS[level.strip().upper()]
        known = self._known()
        if namespace.lower() == ROOT:
            targets = {**known, ROOT: logging.getLogger()}
        else:
            targets = {name: logger for name, logger in known.items()
                       if name == namespace or name.startswith(namespace + ".")}  # fmt: skip
            targets.setdefault(namespace, logging.getLogger(namespace))
        now = int(self._clock() * 1000)
        for name, logger in targets.items():
            if (logger.level or logger.getEffectiveLevel()) != number:
                logger.setLevel(number)
                self.last_modified[name] = now
        return sorted(targets)

"""Settings as every process reads them: Java properties files, and the error that names a bad
setting. Shared by the coordinator's and the workers' configuration and by the command line."""

from __future__ import annotations

import difflib
from collections.abc import Collection, Iterable
from pathlib import Path
from typing import Any

import javaproperties


class ConfigError(ValueError):
    """Settings are unknown or invalid; the message names each one, all of them at once, so
    a file is mended in one pass rather than one start per mistake."""

    def __init__(self, *problems: str) -> None:
        self.problems = list(problems)
        if len(problems) == 1:
            super().__init__(problems[0])
        else:
            super().__init__(
                f"{len(problems)} problems with the settings:\n" + "\n".join(f"  - {p}" for p in problems)
            )


def did_you_mean(name: str, known: Iterable[str]) -> str:
    """A " (did you mean 'x'?)" naming the closest known name, or "" when none is near."""
    close = difflib.get_close_matches(name, list(known), n=1, cutoff=0.8)
    return f" (did you mean {close[0]!r}?)" if close else ""


def unknown_setting(name: str, known: Iterable[str]) -> str:
    """An "unknown setting 'x'", with the closest known name when one is near."""
    return f"unknown setting {name!r}{did_you_mean(name, known)}"


def validation_problems(errors: list[Any], hidden: Collection[str] = ()) -> list[str]:
    """pydantic's errors in our words: the setting's name, the value given (unless the name
    says it is a secret, or it is one of `hidden`: a value a config provider read) and what
    is wrong with it."""
    problems = []
    for error in errors:
        name = ".".join(str(p) for p in error["loc"])
        message = str(error["msg"]).removeprefix("Value error, ")
        given = error.get("input")
        if not name:  # a rule across settings: its message names them
            problems.append(message)
        elif (
            isinstance(given, str | int | float)
            and not any(w in name for w in _SECRET_WORDS)
            and name not in hidden
        ):
            problems.append(f"invalid value {str(given)!r} for {name!r}: {message}")
        else:
            problems.append(f"invalid value for {name!r}: {message}")
    return problems


_SECRET_WORDS = ("password", "secret", "jaas", "token", "key")


def read_properties(path: Path) -> dict[str, str]:
    """A Java properties file, in all of Java's syntax (javaproperties): `name=value`,
    `name: value` and `name value`, `#` and `!` comments, lines continued with a backslash,
    and `\\uXXXX` escapes. Read as UTF-8; a name given twice keeps its last value, as Java's
    `Properties.load` does."""
    with path.open(encoding="utf-8") as handle:
        return dict(javaproperties.load(handle))

"""Kafka Connect's config providers: `${provider:[path:]key}` in a setting's value, replaced by
what a provider reads (KIP-297, KIP-421, KIP-887, KIP-993).

So that a secret is kept in a file or the environment, never in a worker file or the config
topic: the config topic and `GET /connectors/{name}/config` keep the `${...}` text, and only
the running connector or task sees the value. The worker's own settings are resolved once,
at start, as Kafka resolves a worker config's values.

The worker names its providers as Kafka Connect does:
`config.providers=file,dir,env`, `config.providers.<alias>.class=<class>` and
`config.providers.<alias>.param.<name>=<value>`. The three providers Apache Kafka ships are
the ones there are (by their class name, simple name, or the simple name without
`ConfigProvider`, as Connect's plugin aliases go):
- FileConfigProvider: `${file:/path/app.properties:key}`, a key of a Java properties file;
- DirectoryConfigProvider: `${dir:/path/dir:name}`, the whole text of a file in a directory
  (as it is, nothing trimmed);
- EnvVarConfigProvider: `${env:NAME}`, an environment variable (as the worker started with).
File and directory take `allowed.paths` (absolute paths that exist, comma separated): a path
outside them is not read. The environment takes `allowlist.pattern` (a regular expression a
variable's whole name must match).

Kafka's rules, kept: a variable naming a provider that is not configured is left as it is
(the text may mean something else to the connector); so is one whose provider has no value
for it (a key not in the file, a path outside `allowed.paths`), which is reported
(`Resolution.unresolved`); a provider that cannot read (a file that is not there, a path
given to the environment) is an error naming the setting and the variable. A replaced value
is not read again for variables. Paths are normalised by their text (`..` taken out), as
Kafka's are, not by following links.

Pure but for the providers' `get` (the files and the environment they read).
"""

from __future__ import annotations

import os
import posixpath
import re
from abc import ABC, abstractmethod
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import ClassVar

from connect_rebalance.properties import read_properties

PROVIDERS = "config.providers"
PACKAGE = "org.apache.kafka.common.config.provider."
# ${provider:[path:]key}: the provider is up to the first colon, the path (if any) up to the
# next one, the key the rest, none holding a `}` (Kafka's ConfigTransformer.DEFAULT_PATTERN).
VARIABLE = re.compile(r"\$\{([^}]*?):(?:([^}]*?):)?([^}]*?)\}")
ALLOWED_PATHS = "allowed.paths"
ALLOWLIST_PATTERN = "allowlist.pattern"


class ProviderError(Exception):
    """A provider could not read what a variable asks for (Kafka's ConfigException)."""


@dataclass(frozen=True)
class Unresolved:
    """A variable not replaced, in the setting that has it, and why. As such: left as it is,
    its provider configured but with no value for it (Kafka's rule: the text stays, and the
    worker warns); a `Failure` is one its provider could not read."""

    setting: str
    variable: str
    reason: str
    outcome: ClassVar[str] = "is left as it is"

    def __str__(self) -> str:
        return f"setting {self.setting!r}: {self.variable} {self.outcome}: {self.reason}"


class Failure(Unresolved):
    """A variable its provider could not read: an error, where it stands."""

    outcome: ClassVar[str] = "could not be resolved"


class VariableError(ProviderError):
    """Variables whose providers could not read them: each names the setting and the variable
    (never a value), so the failure says where to look."""

    def __init__(self, failures: list[Failure]) -> None:
        self.failures = failures
        self.problems = [str(f) for f in failures]
        super().__init__("; ".join(self.problems))


@dataclass(frozen=True)
class Found:
    """What a provider read at a path; `note` says why keys asked for may be missing from it
    (a path outside `allowed.paths`, which Kafka does not read but does not fail on; a name
    `allowlist.pattern` does not allow)."""

    values: dict[str, str]
    note: str = ""


class ConfigProvider(ABC):
    """One of Kafka's ConfigProviders: `get` is the only place a variable's value is read."""

    name: ClassVar[str]  # the simple class name, as Kafka names it
    params: ClassVar[tuple[str, ...]]  # the `param.<name>` settings it takes

    @abstractmethod
    def get(self, path: str, keys: set[str]) -> Found:
        """The values of `keys` at `path` that there are; raises ProviderError if it cannot read."""


@dataclass(frozen=True)
class AllowedPaths:
    """KIP-993's `allowed.paths`: the directories (or files) a provider may read below.
    None: every path may be read."""

    roots: tuple[str, ...] | None

    @classmethod
    def parse(cls, value: str | None) -> AllowedPaths:
        """Comma-separated absolute paths that exist; ValueError names the first that is not."""
        if value is None or not value.strip():
            return cls(None)
        roots = []
        for given in (p.strip() for p in value.split(",")):
            if not given:
                continue
            root = posixpath.normpath(given)
            if not posixpath.isabs(root):
                raise ValueError(f"path {given!r} is not absolute")
            if not os.path.exists(root):
                raise ValueError(f"path {given!r} does not exist")
            roots.append(root)
        return cls(tuple(roots))

    def check(self, path: str) -> str | None:
        """The path to read, or None when it is outside every allowed path. A path with `..` is
        judged where its text leads (`/allowed/../etc` is `/etc`), component by component."""
        if self.roots is None:
            return path
        normal = posixpath.normpath(path)
        if not posixpath.isabs(normal):
            return None
        inside = any(Path(normal).is_relative_to(root) for root in self.roots)
        return normal if inside else None


@dataclass(frozen=True)
class PathConfigProvider(ConfigProvider):
    """A provider of files, which reads only below `allowed.paths` (KIP-993)."""

    allowed: AllowedPaths = AllowedPaths(None)
    params: ClassVar[tuple[str, ...]] = (ALLOWED_PATHS,)

    def get(self, path: str, keys: set[str]) -> Found:
        if not path:
            return Found({})
        checked = self.allowed.check(path)
        if checked is None:  # not read, and no error: Kafka's rule
            return Found({}, f"the path is outside {ALLOWED_PATHS}, so it is not read")
        return self.read(checked, path, keys)

    @abstractmethod
    def read(self, checked: str, path: str, keys: set[str]) -> Found:
        """The values of `keys` at `checked` (an allowed path; `path` as the variable gave it)."""


@dataclass(frozen=True)
class FileConfigProvider(PathConfigProvider):
    """Keys of a Java properties file (read as UTF-8, in all of Java's syntax)."""

    name: ClassVar[str] = "FileConfigProvider"

    def read(self, checked: str, path: str, keys: set[str]) -> Found:
        try:
            properties = read_properties(Path(checked))
        except (OSError, ValueError) as exc:
            raise ProviderError(f"could not read properties from file {path}: {exc}") from exc
        return Found({key: properties[key] for key in keys if key in properties})


@dataclass(frozen=True)
class DirectoryConfigProvider(PathConfigProvider):
    """The whole text of regular files in a directory (a file per key, named by it), as Kafka
    reads them: UTF-8, nothing trimmed. Only the directory's own entries are keys, so a key
    cannot lead out of it (`../x` names no entry)."""

    name: ClassVar[str] = "DirectoryConfigProvider"

    def read(self, checked: str, path: str, keys: set[str]) -> Found:
        if not os.path.isdir(checked):
            return Found({}, f"{path} is not a directory")
        try:
            wanted = [entry for entry in os.scandir(checked) if entry.name in keys and entry.is_file()]
        except OSError as exc:
            raise ProviderError(f"could not list directory {path}: {exc}") from exc
        values = {}
        for entry in wanted:
            try:
                with open(entry.path, "rb") as handle:
                    values[entry.name] = handle.read().decode("utf-8", errors="replace")
            except OSError as exc:
                raise ProviderError(f"could not read file {entry.path}: {exc}") from exc
        return Found(values)


@dataclass(frozen=True)
class EnvVarConfigProvider(ConfigProvider):
    """Environment variables whose whole name matches `allowlist.pattern` (any, without one).
    They take no path: `${env:a:b}` is an error, as in Kafka."""

    variables: Mapping[str, str] = field(default_factory=dict, repr=False)  # secrets: never shown
    pattern: str | None = None
    name: ClassVar[str] = "EnvVarConfigProvider"
    params: ClassVar[tuple[str, ...]] = (ALLOWLIST_PATTERN,)

    @classmethod
    def allowing(cls, environ: Mapping[str, str], pattern: str | None) -> EnvVarConfigProvider:
        """The variables of `environ` that `pattern` allows; re.error for a pattern that is not one."""
        allowed = re.compile(pattern if pattern is not None else ".*")
        return cls({name: value for name, value in environ.items() if allowed.fullmatch(name)}, pattern)

    def get(self, path: str, keys: set[str]) -> Found:
        if path:
            raise ProviderError(f"EnvVarConfigProvider takes no path, and was given {path!r}")
        note = (
            ""
            if self.pattern is None
            else f"only variables matching {ALLOWLIST_PATTERN} {self.pattern!r} are read"
        )
        return Found({key: self.variables[key] for key in keys if key in self.variables}, note)


PROVIDER_CLASSES: tuple[type[ConfigProvider], ...] = (
    FileConfigProvider, DirectoryConfigProvider, EnvVarConfigProvider,
)  # fmt: skip
# Kafka's class name, the simple name, and the simple name without `ConfigProvider`.
_BY_NAME: dict[str, type[ConfigProvider]] = {
    alias: kind
    for kind in PROVIDER_CLASSES
    for alias in (PACKAGE + kind.name, kind.name, kind.name.removesuffix("ConfigProvider"))
}


def is_provider_setting(name: str) -> bool:
    return name == PROVIDERS or name.startswith(PROVIDERS + ".")


def _configured(
    kind: type[ConfigProvider], params: Mapping[str, str], environ: Mapping[str, str]
) -> ConfigProvider:
    """A provider of `kind` with its parameters (checked to be its own); ValueError or re.error
    for a value it cannot take."""
    if issubclass(kind, PathConfigProvider):
        return kind(AllowedPaths.parse(params.get(ALLOWED_PATHS)))
    return EnvVarConfigProvider.allowing(environ, params.get(ALLOWLIST_PATTERN))


def parse_providers(
    settings: Mapping[str, str], environ: Mapping[str, str] | None = None
) -> tuple[dict[str, ConfigProvider], list[tuple[str, str]]]:
    """The providers the `config.providers*` settings among `settings` configure, by alias, and
    every (setting, problem) found: a class that is not one of Kafka's three, an alias with no
    class, a parameter its provider does not take, a setting of an alias not listed. Kafka
    would ignore the last three; here a setting that would do nothing is refused, so a typo
    is not found later as a secret never read. `environ`: what EnvVarConfigProvider sees
    (the process's environment, as it is now, unless given)."""
    environ = dict(os.environ if environ is None else environ)
    listed = settings.get(PROVIDERS, "")
    aliases = list(dict.fromkeys(a.strip() for a in listed.split(",") if a.strip()))
    problems: list[tuple[str, str]] = []
    own: dict[str, dict[str, str]] = {alias: {} for alias in aliases}  # alias -> rest of name -> value
    for name, value in sorted(settings.items()):
        if name == PROVIDERS or not is_provider_setting(name):
            continue
        rest = name[len(PROVIDERS) + 1 :]
        alias = max((a for a in aliases if rest.startswith(a + ".")), key=len, default=None)
        if alias is None:
            problems.append((name, f"{value!r} is not used: it names no provider of {PROVIDERS}={listed!r}"))
        else:
            own[alias][rest[len(alias) + 1 :]] = value
    providers: dict[str, ConfigProvider] = {}
    for alias, given in own.items():
        prefix = f"{PROVIDERS}.{alias}."
        class_name = given.pop("class", None)
        if class_name is None:
            problems.append((PROVIDERS, f"{listed!r} names {alias!r}, which has no {prefix}class"))
        kind = _BY_NAME.get(class_name.strip()) if class_name is not None else None
        if class_name is not None and kind is None:
            known = ", ".join(k.name for k in PROVIDER_CLASSES)
            problems.append((f"{prefix}class", f"{class_name!r} is not supported: the config providers are "
                                               f"Kafka's {known} ({PACKAGE}*)"))  # fmt: skip
        params = {}
        for rest, value in sorted(given.items()):
            param = rest.removeprefix("param.")
            if param == rest:
                problems.append((prefix + rest, f"{value!r} is not used: a provider takes {prefix}class "
                                                f"and {prefix}param.<name>"))  # fmt: skip
            elif kind is not None and param not in kind.params:
                problems.append((prefix + rest, f"{value!r} is not supported: {kind.name} takes "
                                                f"{', '.join(kind.params)} only"))  # fmt: skip
            else:
                params[param] = value
        if kind is None:
            continue
        try:
            providers[alias] = _configured(kind, params, environ)
        except (ValueError, re.error) as exc:  # each provider has one parameter: it is the one
            param = kind.params[0]
            problems.append((f"{prefix}param.{param}", f"{params.get(param, '')!r}: {exc}"))
    return providers, problems


HIDDEN = "[hidden]"
MIN_HIDDEN_PART = 3  # shorter parts of a list (a partition number, a flag) are no secret


@dataclass(frozen=True)
class Resolution:
    """Settings with their variables replaced; `unresolved`: those a configured provider had
    no value for; `resolved`: the settings whose value now holds something a provider read
    (never to be shown, as it may be a secret)."""

    values: dict[str, str]
    unresolved: list[Unresolved]
    resolved: frozenset[str]

    def hidden(self, message: str, raw: Mapping[str, str]) -> str:
        """`message` with every value a provider read shown as its setting's `raw` text, and
        any comma-separated part of it (a topic or server of a list) as `[hidden]`: a problem
        found in a resolved config must not show a secret, whatever its wording."""
        for name in sorted(self.resolved, key=lambda n: -len(self.values.get(n, ""))):
            value = self.values.get(name, "")
            if value and value != raw.get(name):
                message = message.replace(value, raw.get(name, HIDDEN))
            for part in sorted((p.strip() for p in value.split(",")), key=len, reverse=True):
                if len(part) >= MIN_HIDDEN_PART:
                    message = message.replace(part, HIDDEN)
        return message


def resolve(configs: Mapping[str, str], providers: Mapping[str, ConfigProvider]) -> Resolution:
    """`configs` with each variable of a configured provider replaced by its value. Each
    provider is asked once per path, for every key wanted there (as Kafka asks).
    Raises VariableError naming each setting and variable whose provider could not read
    (every use of a path it could not read)."""
    wanted: dict[tuple[str, str], set[str]] = {}  # (provider, path) -> keys
    uses: dict[tuple[str, str], dict[tuple[str, str], None]] = {}  # (provider, path) -> (setting, variable)s
    for name, value in configs.items():
        for match in VARIABLE.finditer(value):
            where = (match[1], match[2] or "")
            if where[0] in providers:
                wanted.setdefault(where, set()).add(match[3])
                uses.setdefault(where, {})[(name, match[0])] = None
    found: dict[tuple[str, str], Found] = {}
    failures = []
    for where, keys in wanted.items():
        try:
            found[where] = providers[where[0]].get(where[1], keys)
        except ProviderError as exc:
            failures += [Failure(setting, variable, str(exc)) for setting, variable in uses[where]]
    if failures:
        raise VariableError(failures)
    unresolved: list[Unresolved] = []
    resolved: set[str] = set()

    def replace(name: str, match: re.Match[str]) -> str:
        where = (match[1], match[2] or "")
        if where not in found:  # a provider not configured: the text is the connector's
            return match[0]
        lookup = found[where]
        if match[3] not in lookup.values:
            at = f" at {where[1]}" if where[1] else ""
            reason = f"the {where[0]} provider has no {match[3]!r}{at}" + (
                f" ({lookup.note})" if lookup.note else ""
            )
            unresolved.append(Unresolved(name, match[0], reason))
            return match[0]
        resolved.add(name)
        return lookup.values[match[3]]

    values = {name: VARIABLE.sub(lambda m, n=name: replace(n, m), value) for name, value in configs.items()}
    return Resolution(values, unresolved, frozenset(resolved))


def with_variables(raw: Mapping[str, str], generated: Iterable[Mapping[str, str]]) -> list[dict[str, str]]:
    """Task configs a connector generated from its resolved config, with each setting that has
    a variable in the connector's raw config given back its `${...}` text (Kafka's
    reverseTransform): the config topic never holds what a provider read, and each task
    resolves it again when it starts."""
    with_vars = {name: value for name, value in raw.items() if VARIABLE.search(value)}
    return [{k: with_vars.get(k, v) for k, v in config.items()} for config in generated]

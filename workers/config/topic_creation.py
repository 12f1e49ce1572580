"""A source connector's topic creation settings (KIP-158), read and checked as Kafka Connect does.

A connector that sets any `topic.creation.*` setting asks the worker to create the topics
its tasks write to before their first record, with the settings of the first of its groups
(`topic.creation.groups`, in the order listed) whose `include` patterns match the topic's
whole name and whose `exclude` patterns do not; a topic no group matches takes the
`default` group's, which must give `partitions` and `replication.factor` (-1: the
coordinator's default). A group that leaves either out takes the default group's. Every
other `topic.creation.<group>.<name>` is a topic config of the topics the group creates
(`cleanup.policy`, `retention.ms`, ...); groups do not inherit the default group's.

Kafka's rules and messages, with three differences, each a setting that Kafka Connect would
store and never use: a `topic.creation.<group>.*` setting of a group not listed in
`topic.creation.groups`, and the default group's `include` and `exclude` (it takes every
topic no other group takes), are refused. Problems are found when the connector is created
or validated, where Kafka Connect finds most of them only when the connector starts.

Patterns are Python regular expressions (`re`), matched against the whole name, as Java's
`Pattern.matches` does; the syntax shared by both means the same.
"""

from __future__ import annotations

import logging
import re
from collections.abc import Mapping
from dataclasses import dataclass, field

from workers.plugins.api import ConfigProblem

log = logging.getLogger(__name__)
PREFIX = "topic.creation."
GROUPS = f"{PREFIX}groups"
DEFAULT_GROUP = "default"
INCLUDE, EXCLUDE, PARTITIONS, REPLICATION_FACTOR = "include", "exclude", "partitions", "replication.factor"
OWN_SETTINGS = (INCLUDE, EXCLUDE, PARTITIONS, REPLICATION_FACTOR)
NO_DEFAULT = -1  # partitions or replication factor: the coordinator's default
_COMMA = re.compile(r"\s*,\s*")
_INTEGER = re.compile(r"[+-]?[0-9]+")  # Java's Integer.parseInt and Short.parseShort
DEFAULT_PATTERNS = (
    "the default group creates every topic no other group matches, so its patterns would not be used "
    f"(Kafka Connect ignores them): name the topics in a group of {GROUPS}"
)
NO_GROUP = f"names no topic creation group: list the group in {GROUPS}, or it would not be used"


def uses_topic_creation(config: Mapping[str, str]) -> bool:
    """Whether the connector asks for topic creation: any setting under `topic.creation.`."""
    return any(name.startswith(PREFIX) for name in config)


def topic_creation_settings(config: Mapping[str, str]) -> list[str]:
    """The connector's `topic.creation.*` settings, by name."""
    return sorted(name for name in config if name.startswith(PREFIX))


@dataclass(frozen=True)
class TopicCreationGroup:
    """One group's topics and the settings they are created with."""

    name: str
    include: re.Pattern[str]
    exclude: re.Pattern[str]
    partitions: int
    replication_factor: int
    configs: Mapping[str, str] = field(default_factory=dict)

    def matches(self, topic: str) -> bool:
        """Excluded patterns win over included ones; an empty list matches nothing."""
        return not self.exclude.fullmatch(topic) and bool(self.include.fullmatch(topic))

    def describe(self, topic: str) -> str:
        """How the topic is created, for logs and failures."""
        configs = ", ".join(f"{k}={v}" for k, v in sorted(self.configs.items()))
        return (
            f"{topic!r} (group {self.name}: partitions {self.partitions}, replication factor "
            f"{self.replication_factor}{', ' + configs if configs else ''})"
        )


@dataclass(frozen=True)
class TopicCreation:
    """A connector's groups: the listed ones in order, then the default group."""

    groups: tuple[TopicCreationGroup, ...]
    default: TopicCreationGroup

    def group_for(self, topic: str) -> TopicCreationGroup:
        """The first listed group that matches the topic, or else the default group."""
        return next((group for group in self.groups if group.matches(topic)), self.default)


def group_names(config: Mapping[str, str]) -> list[str]:
    """`topic.creation.groups` as listed (Kafka's LIST type), `default` left out with a warning."""
    names = _list(config.get(GROUPS, ""))
    if DEFAULT_GROUP in names:
        log.warning(
            "'%s' topic creation group always exists and does not need to be listed explicitly", DEFAULT_GROUP
        )
    return [name for name in names if name != DEFAULT_GROUP]


def topic_creation_problems(config: Mapping[str, str]) -> list[ConfigProblem]:
    """Every problem of the connector's `topic.creation.*` settings, with Kafka's messages."""
    if not uses_topic_creation(config):
        return []
    problems = []
    listed = _list(config.get(GROUPS, ""))
    if len(listed) > len(set(listed)):
        problems.append(ConfigProblem.invalid(GROUPS, _shown(listed), "Duplicate alias provided."))
    names = list(dict.fromkeys(group_names(config)))
    for setting in (PARTITIONS, REPLICATION_FACTOR):
        name = f"{PREFIX}{DEFAULT_GROUP}.{setting}"
        if name not in config:
            problems.append(
                ConfigProblem(name, f'Missing required configuration "{name}" which has no default value.')
            )
    for group in [DEFAULT_GROUP, *names]:
        for setting in (PARTITIONS, REPLICATION_FACTOR):
            name = f"{PREFIX}{group}.{setting}"
            problem = _number_problem(setting, config[name]) if name in config else None
            if problem is not None:
                problems.append(ConfigProblem.invalid(name, config[name], problem))
        for setting in (INCLUDE, EXCLUDE):
            name = f"{PREFIX}{group}.{setting}"
            if name not in config:
                continue
            if group == DEFAULT_GROUP:
                problems.append(ConfigProblem.invalid(name, config[name], DEFAULT_PATTERNS))
                continue
            patterns = _list(config[name])
            for pattern in patterns:
                try:
                    re.compile(pattern)
                except re.error as exc:
                    problem = f"Syntax error in regular expression: {exc}"
                    problems.append(ConfigProblem.invalid(name, _shown(patterns), problem))
                    break
    owners = [f"{PREFIX}{group}." for group in [DEFAULT_GROUP, *names]]
    for name in topic_creation_settings(config):
        if name != GROUPS and not name.startswith(tuple(owners)):
            problems.append(ConfigProblem.invalid(name, config[name], NO_GROUP))
    return problems


def topic_creation(config: Mapping[str, str]) -> TopicCreation | None:
    """The connector's groups, if it uses topic creation (its settings checked already)."""
    if not uses_topic_creation(config):
        return None
    default = _group(config, DEFAULT_GROUP, None)
    groups = tuple(_group(config, name, default) for name in dict.fromkeys(group_names(config)))
    return TopicCreation(groups, default)


def _group(config: Mapping[str, str], name: str, default: TopicCreationGroup | None) -> TopicCreationGroup:
    prefix = f"{PREFIX}{name}."

    def number(setting: str) -> int:
        value = config.get(prefix + setting)
        if value is None and default is not None:
            return default.partitions if setting == PARTITIONS else default.replication_factor
        return int(str(value).strip())

    if default is None:  # the default group takes every topic
        include, exclude = re.compile(".*", re.DOTALL), re.compile("(?!)")
    else:
        include, exclude = (
            re.compile("|".join(_list(config.get(prefix + s, "")))) for s in (INCLUDE, EXCLUDE)
        )
    configs = {
        key[len(prefix) :]: value
        for key, value in config.items()
        if key.startswith(prefix) and key[len(prefix) :] not in OWN_SETTINGS
    }
    return TopicCreationGroup(name, include, exclude, number(PARTITIONS), number(REPLICATION_FACTOR), configs)


def _number_problem(setting: str, value: str) -> str | None:
    """Kafka's INT (partitions) or SHORT (replication factor), -1 or positive."""
    kind, bits = ("INT", 31) if setting == PARTITIONS else ("SHORT", 15)
    if not _INTEGER.fullmatch(value.strip()) or not -(2**bits) <= int(value) < 2**bits:
        return f"Not a number of type {kind}"
    if int(value) == NO_DEFAULT or int(value) >= 1:
        return None
    if setting == PARTITIONS:
        return "Number of partitions must be positive, or -1 to use the broker's default"
    return (
        "Replication factor must be positive and not larger than the number of brokers in the Kafka "
        "cluster, or -1 to use the broker's default"
    )


def _list(value: str) -> list[str]:
    """Kafka's LIST type: comma-separated, spaces around the commas dropped; empty: none."""
    trimmed = value.strip()
    return _COMMA.split(trimmed) if trimmed else []


def _shown(values: list[str]) -> str:
    """A list as Kafka's messages show one: `[a, b]`."""
    return f"[{', '.join(values)}]"

"""A connector's config checked as Kafka Connect's herder checks it before it is written.

Kafka Connect validates in its herder (`AbstractHerder.validateConnectorConfig`), and its
REST resources only turn the herder's answer into a 400. So here: the herder calls these,
and REST answers `InvalidConnectorConfig` with 400 and its message, as Kafka Connect's
`BadRequestException` reads. Pure but for the config providers' reads.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Mapping
from typing import Any

from workers.config.connector_clients import connector_problems
from workers.config.providers import ConfigProvider, VariableError, resolve
from workers.config.worker import WorkerConfig
from workers.plugins.api import ConfigProblem, Connector
from workers.plugins.names import name_problem

FindPlugin = Callable[[str], type[Connector] | None]


class InvalidConnectorConfig(ValueError):
    """A config refused before anything is written; the message is Kafka Connect's."""


def string_values(config: Mapping[str, Any]) -> dict[str, str]:
    """A configuration's values as Kafka Connect reads a JSON object into its Map<String, String>:
    strings as they are, numbers and booleans as their JSON text, nulls left out; an object or
    an array is refused."""
    strings = {}
    for key, value in config.items():
        if isinstance(value, dict | list):
            kind = "Object" if isinstance(value, dict) else "Array"
            problem = f"Cannot deserialize value of type `java.lang.String` from {kind} value"
            raise InvalidConnectorConfig(f"{problem} (setting {key!r})")
        if value is not None:
            strings[key] = value if isinstance(value, str) else json.dumps(value)
    return strings


def validated_config(
    name: str,
    config: Mapping[str, Any],
    find_plugin: FindPlugin,
    providers: Mapping[str, ConfigProvider],
    worker: WorkerConfig,
) -> dict[str, str]:
    """`config` as the connector `name` is written: its values as strings, its name set, its
    plugin found, and none of its settings a problem; or InvalidConnectorConfig."""
    problem = name_problem(name)
    if problem is not None:
        raise invalid([ConfigProblem.invalid("name", name, problem)])
    strings = string_values(config)
    strings["name"] = name
    if "connector.class" not in strings:
        raise InvalidConnectorConfig(
            'Connector config contains no connector type: Missing required configuration "connector.class"'
        )
    plugin = find_plugin(strings["connector.class"])
    if plugin is None:
        raise InvalidConnectorConfig(
            "Failed to find any class that implements Connector and which name matches "
            f"{strings['connector.class']}"
        )
    problems = config_problems(plugin, strings, providers, worker)
    if problems:
        raise invalid(problems)
    return strings


def config_problems(
    plugin: type[Connector],
    config: dict[str, str],
    providers: Mapping[str, ConfigProvider],
    worker: WorkerConfig,
) -> list[ConfigProblem]:
    """The plugin's problems with `config` as its connector will see it: variables resolved
    by the worker's config providers, as Kafka Connect validates. A variable that cannot
    be read is its setting's problem; a value a provider read is not shown, in any problem
    (its setting's `${...}` text is, or `[hidden]`).
    Topic creation and client overrides are checked against this worker's settings."""
    try:
        resolution = resolve(config, providers)
    except VariableError as exc:
        return [ConfigProblem(f.setting, str(f)) for f in exc.failures]
    values = resolution.values
    return [
        ConfigProblem(problem.name, resolution.hidden(problem.message, config))
        for problem in [*plugin.validate(values), *connector_problems(plugin, values, worker)]
    ]


def invalid(problems: list[ConfigProblem]) -> InvalidConnectorConfig:
    """Every problem at once, each naming its setting, as Kafka Connect lists them."""
    details = "\n".join(f"{p.name}: {p.message}" for p in problems)
    count = len(problems)
    return InvalidConnectorConfig(
        f"Connector configuration is invalid and contains the following {count} error(s):\n{details}"
    )

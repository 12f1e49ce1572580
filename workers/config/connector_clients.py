"""What a connector's config asks of the worker beyond its plugin's own settings: topic creation
(KIP-158, `topic_creation`) and its clients' settings (KIP-458, `client_overrides`).

Both depend on the worker: `topic.creation.enable` and `connector.client.config.override.policy`
decide what a config may ask, and the worker's `producer.*`, `consumer.*` and `admin.*`
settings are what the overrides go over. They are checked when a connector is created or
validated (400, naming each setting) and again when its tasks start (a config written under
another worker's settings fails its tasks, saying why). With `topic.creation.enable=false`
the connector's `topic.creation.*` settings, and the admin overrides that would serve them,
are not used: a warning says so when the connector starts, as Kafka Connect warns of
settings it does not use.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass

from workers.config.client_overrides import CLIENTS, client_settings, override_problems
from workers.config.topic_creation import (
    TopicCreation,
    topic_creation,
    topic_creation_problems,
    topic_creation_settings,
)
from workers.config.topic_creation import uses_topic_creation as asks_for_topic_creation
from workers.config.worker import WorkerConfig
from workers.plugins.api import ConfigProblem, Connector

NO_TOPICS = "this connector's tasks write no records to Kafka, so there are no topics to create"


class ConnectorSettingsRefused(ValueError):
    """A connector's config asks what this worker does not allow or apply."""

    def __init__(self, problems: list[ConfigProblem]) -> None:
        super().__init__("; ".join(f"{p.name}: {p.message}" for p in problems))
        self.problems = problems


@dataclass(frozen=True)
class ConnectorClients:
    """The settings of a connector's clients, and its topic creation (None: not used)."""

    producer: Mapping[str, str]
    consumer: Mapping[str, str]
    admin: Mapping[str, str]
    topic_creation: TopicCreation | None


def worker_settings(worker: WorkerConfig) -> dict[str, Mapping[str, str]]:
    """Each client's security settings from the worker, which a connector's overrides go over
    (the worker's own `ssl.*` are left out of a client that uses no TLS: they serve its REST
    listener)."""
    settings = {}
    for client in CLIENTS:
        security = worker.client_security(f"{client}.")
        settings[client] = {k: v for k, v in security.settings.items()
                            if security.uses_tls or not k.startswith("ssl.")}  # fmt: skip
    return settings


def creates_topics(plugin: type[Connector], config: Mapping[str, str], worker: WorkerConfig) -> bool:
    return (
        worker.topic_creation_enable
        and asks_for_topic_creation(config)
        and "producer" in plugin.kafka_clients
    )


def connector_problems(
    plugin: type[Connector], config: Mapping[str, str], worker: WorkerConfig
) -> list[ConfigProblem]:
    """The problems of the config's topic creation and client overrides under this worker."""
    problems = []
    if worker.topic_creation_enable and "producer" not in plugin.kafka_clients:
        problems += [ConfigProblem.invalid(n, config[n], NO_TOPICS) for n in topic_creation_settings(config)]
    elif worker.topic_creation_enable:
        problems += topic_creation_problems(config)
    problems += override_problems(
        config,
        worker.connector_client_config_override_policy,
        plugin.kafka_clients,
        asks_for_topic_creation(config),
        worker_settings(worker),
    )
    return problems


def unused_settings_warning(config: Mapping[str, str], worker: WorkerConfig) -> str | None:
    """What a worker with `topic.creation.enable=false` says of a config that asks for it."""
    if worker.topic_creation_enable or not asks_for_topic_creation(config):
        return None
    unused = topic_creation_settings(config) + sorted(n for n in config if n.startswith("admin.override."))
    return (
        f"{', '.join(unused)} are not used: topic.creation.enable is false on this worker, so the "
        "connector's tasks create no topics (the coordinator creates a missing topic with its defaults "
        "if its auto.create.topics.enable is set)"
    )


def connector_clients(
    plugin: type[Connector], config: Mapping[str, str], worker: WorkerConfig
) -> ConnectorClients:
    """The resolved settings of a connector's clients; ConnectorSettingsRefused if the worker
    would not allow or apply them."""
    problems = connector_problems(plugin, config, worker)
    if problems:
        raise ConnectorSettingsRefused(problems)
    base = worker_settings(worker)
    settings = {client: client_settings(base[client], config, client) for client in CLIENTS}
    creation = topic_creation(config) if creates_topics(plugin, config, worker) else None
    return ConnectorClients(settings["producer"], settings["consumer"], settings["admin"], creation)

"""A worker as REST sees it, in memory: an implementation of REST's `Herder` protocol
(workers/rest/herder.py) and nothing more, so a route that reached past the protocol into a
herder's parts would fail here. Connectors are dicts; writes are recorded so a test can see
which worker took them; `leader_url` makes it a follower of another REST app.
"""

from __future__ import annotations

import ssl
import time
from dataclasses import dataclass, field
from typing import Any

from connect_rebalance.work import Work
from workers.config.connector_validation import InvalidConnectorConfig, string_values
from workers.config.worker import WorkerConfig
from workers.observe.metrics import WorkerFigures
from workers.observe.rebalance_clock import RebalanceClock
from workers.observe.timeline import ClusterTimeline
from workers.plugins.api import ConfigProblem, Connector, OffsetChanges, OffsetsRefused
from workers.plugins.registry import Plugins
from workers.storage.session_key import SessionKey

SETTINGS = {"bootstrap.servers": "localhost:9092", "group.id": "connect-cluster",
            "config.storage.topic": "configs", "offset.storage.topic": "offsets",
            "status.storage.topic": "statuses", "listeners": "http://127.0.0.1:8083",
            "spark.session.warmup": "false"}  # fmt: skip


@dataclass
class FakeHerder:
    leader: str | None = None  # a follower's leader url; None: this worker takes writes
    shutting_down: bool = False
    settings: dict[str, str] = field(default_factory=lambda: dict(SETTINGS))
    configs: dict[str, dict[str, str]] = field(default_factory=dict)
    targets: dict[str, str] = field(default_factory=dict)
    writes: list[tuple[str, str]] = field(default_factory=list)  # (operation, connector)
    offsets: dict[str, list[dict[str, Any]]] = field(default_factory=dict)
    refuse_offsets: str = ""  # an OffsetsRefused message for the next change
    levels: dict[str, str] = field(default_factory=dict)
    _timeline: ClusterTimeline = field(default_factory=lambda: ClusterTimeline(time.time()))
    _plugins: Plugins = field(default_factory=Plugins.installed)

    def __post_init__(self) -> None:
        self._config = WorkerConfig.from_settings(self.settings)

    # -- the connectors' part ----------------------------------------------------------------

    def connectors(self) -> list[str]:
        return sorted(self.configs)

    def connector_config(self, name: str) -> dict[str, str] | None:
        return self.configs.get(name)

    def connector_type(self, name: str) -> str:
        plugin = self._plugins.named_by(self.configs.get(name))
        return plugin.type if plugin else "unknown"

    def task_configs(self, name: str) -> list[dict[str, str]]:
        return [{"task": "0"}] if name in self.configs else []

    def connector_status(self, name: str) -> dict[str, Any] | None:
        if name not in self.configs:
            return None
        state = {"PAUSED": "PAUSED", "STOPPED": "STOPPED"}.get(self.targets.get(name, ""), "RUNNING")
        entry = {"state": state, "worker_id": self._config.worker_id}
        return {
            "name": name,
            "connector": entry,
            "tasks": [{"id": 0, **entry}],
            "type": self.connector_type(name),
        }

    def has_status(self, name: str) -> bool:
        return name in self.configs

    def validated_config(self, name: str, config: dict[str, Any]) -> dict[str, str]:
        strings = {**string_values(config), "name": name}
        if self._plugins.find(strings.get("connector.class", "")) is None:
            raise InvalidConnectorConfig(f"no plugin {strings.get('connector.class')!r}")
        return strings

    def config_problems(self, plugin: type[Connector], config: dict[str, str]) -> list[ConfigProblem]:
        return list(plugin.validate(config))

    async def create_connector(self, name: str, config: dict[str, str], initial_state: str) -> None:
        self.writes.append(("create", name))
        self.configs[name], self.targets[name] = config, initial_state

    async def put_connector_config(self, name: str, config: dict[str, str]) -> None:
        self.writes.append(("put", name))
        self.configs[name] = config

    async def delete_connector(self, name: str) -> None:
        self.writes.append(("delete", name))
        del self.configs[name]

    async def set_target_state(self, name: str, state: str) -> None:
        self.writes.append((state, name))
        self.targets[name] = state

    async def request_restart(self, name: str, include_tasks: bool, only_failed: bool) -> None:
        self.writes.append(("restart", name))

    def active_topics(self, name: str) -> list[str]:
        return []

    async def reset_topics(self, name: str) -> None:
        self.writes.append(("reset topics", name))

    def runs(self, item: Work) -> bool:
        return item[0] in self.configs

    async def restart(self, item: Work) -> None:
        self.writes.append(("restart task", item[0]))

    def worker_url(self, worker_id: str) -> str:
        return f"http://{worker_id}"

    async def put_task_configs(self, name: str, configs: list[dict[str, str]]) -> None:
        self.writes.append(("task configs", name))

    def signs_requests(self) -> bool:
        return False

    def session_key(self) -> SessionKey | None:
        return None

    async def connector_offsets(self, name: str) -> list[dict[str, Any]]:
        return self.offsets.get(name, [])

    async def alter_offsets(self, name: str, changes: OffsetChanges) -> None:
        if self.refuse_offsets:
            raise OffsetsRefused(self.refuse_offsets)
        self.writes.append(("alter offsets", name))

    async def reset_offsets(self, name: str) -> None:
        if self.refuse_offsets:
            raise OffsetsRefused(self.refuse_offsets)
        self.writes.append(("reset offsets", name))

    def stopped(self, name: str) -> bool:
        return self.targets.get(name) == "STOPPED"

    # -- the worker's part -------------------------------------------------------------------

    @property
    def config(self) -> WorkerConfig:
        return self._config

    def started(self) -> bool:
        return True

    async def wait_started(self) -> None:
        return None

    def stopping(self) -> bool:
        return self.shutting_down

    def cluster_id(self) -> str:
        return "fake-cluster"

    def spark_runtime(self) -> dict[str, Any]:
        return {"state": "READY"}

    def figures(self) -> WorkerFigures:
        return WorkerFigures(0, 0, "", RebalanceClock(), 0, {}, {}, {}, False, 0, 0, [], self._timeline,
                             time.time(), {}, {})  # fmt: skip

    def leader_url(self) -> str | None:
        return self.leader

    def client_tls(self) -> ssl.SSLContext | None:
        return None

    def plugins(self) -> dict[str, type[Connector]]:
        return self._plugins.all()

    def find_plugin(self, name: str) -> type[Connector] | None:
        return self._plugins.find(name)

    def logger_levels(self) -> dict[str, dict[str, Any]]:
        return {name: {"level": level, "last_modified": None} for name, level in self.levels.items()}

    def logger_level(self, name: str) -> dict[str, Any] | None:
        return self.logger_levels().get(name)

    def set_logger_level(self, name: str, level: str) -> list[str]:
        self.levels[name] = level.upper()
        return [name]

    async def set_cluster_logger_level(self, namespace: str, level: str) -> None:
        self.writes.append(("cluster log level", namespace))

    def viewed(self) -> None:
        return None

    def task_rates(self) -> dict[Work, float]:
        return {}

    def timeline(self) -> ClusterTimeline:
        return self._timeline

    def group_state(self) -> str:
        return "Stable"

    def configured_tasks(self) -> dict[str, int]:
        return {name: 1 for name in self.configs}

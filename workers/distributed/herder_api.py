"""Kafka Connect's `Herder` interface over this worker's distributed herder: what the REST API
calls (the protocol is REST's, workers/rest/herder.py), answered from the herder's parts.

Reads come from this worker's view of the config and status topics. Writes go to the config
topic and return once this worker has read them back, so a read that follows sees them.
Config validation is here, as in Kafka Connect's herder (workers/config/connector_validation.py
holds the rules). KIP-875's offsets are the offset topic's, or the Spark checkpoints' of
connectors that keep them there.

Two parts, as the protocol has two: the connectors' (`ConnectorRequests`) and the worker's
(`WorkerRequests`); `HerderApi` is both.
"""

from __future__ import annotations

import asyncio
import ssl
import time
from typing import Any

from connect_rebalance.work import CONNECTOR, Work
from workers.config.connector_validation import config_problems, validated_config
from workers.config.worker import WorkerConfig
from workers.distributed.herder import Herder
from workers.observe.metrics import WorkerFigures
from workers.observe.timeline import ClusterTimeline
from workers.plugins.api import ConfigProblem, Connector, OffsetChanges, OffsetsRefused
from workers.storage.config_state import STOPPED
from workers.storage.session_key import SessionKey


class ConnectorRequests:
    """The connectors, their configs, statuses, tasks and offsets (the protocol's
    `ConnectorsHerder`)."""

    def __init__(self, herder: Herder) -> None:
        self.herder = herder
        self._offset_changes = asyncio.Lock()  # KIP-875 alters and resets, one at a time

    def connectors(self) -> list[str]:
        return sorted(self.herder.state.connectors)

    def connector_config(self, name: str) -> dict[str, str] | None:
        return self.herder.state.connectors.get(name)

    def connector_type(self, name: str) -> str:
        """`source` or `sink` as the connector's plugin says; `unknown` without one."""
        plugin = self.herder.plugins.named_by(self.connector_config(name))
        return plugin.type if plugin else "unknown"

    def task_configs(self, name: str) -> list[dict[str, str]]:
        return self.herder.state.tasks.get(name, [])

    def connector_status(self, name: str) -> dict[str, Any] | None:
        if self.connector_config(name) is None:
            return None
        statuses, runner = self.herder.statuses, self.herder.runner
        tasks = []
        configured = len(self.task_configs(name))
        stopping = [task for task in statuses.tasks_still_running(name) if task >= configured]
        for i in [*range(configured), *stopping]:
            status = statuses.status_of((name, i))
            progress = runner.progress((name, i))  # known to the worker running it
            tasks.append(_entry(status, id=i) | ({"progress": progress} if progress else {}))
        connector = _entry(statuses.status_of((name, CONNECTOR)))
        return {"name": name, "connector": connector, "tasks": tasks, "type": self.connector_type(name)}

    def has_status(self, name: str) -> bool:
        return self.herder.statuses.reported((name, CONNECTOR))

    def validated_config(self, name: str, config: dict[str, Any]) -> dict[str, str]:
        """The config as it is written (InvalidConnectorConfig: every problem at once)."""
        herder = self.herder
        return validated_config(name, config, herder.plugins.find, herder.runner.providers, herder.config)

    def config_problems(self, plugin: type[Connector], config: dict[str, str]) -> list[ConfigProblem]:
        return config_problems(plugin, config, self.herder.runner.providers, self.herder.config)

    async def create_connector(self, name: str, config: dict[str, str], initial_state: str) -> None:
        await self.herder.configs.put_connector(name, config, initial_state)
        await self.herder.configs.read_to_end()

    async def put_connector_config(self, name: str, config: dict[str, str]) -> None:
        await self.herder.configs.put_connector(name, config)
        await self.herder.configs.read_to_end()

    async def delete_connector(self, name: str) -> None:
        await self.herder.configs.delete_connector(name)
        await self.herder.configs.read_to_end()

    async def set_target_state(self, name: str, state: str) -> None:
        await self.herder.configs.put_target_state(name, state)
        await self.herder.configs.read_to_end()

    async def request_restart(self, name: str, include_tasks: bool, only_failed: bool) -> None:
        await self.herder.configs.request_restart(name, include_tasks, only_failed)
        await self.herder.configs.read_to_end()

    def active_topics(self, name: str) -> list[str]:
        """The topics the connector's tasks used since its creation or the last reset (KIP-558)."""
        return self.herder.statuses.active_topics(name)

    async def reset_topics(self, name: str) -> None:
        await self.herder.statuses.reset_topics(name)

    def runs(self, item: Work) -> bool:
        return item in self.herder.runner.running

    async def restart(self, item: Work) -> None:
        await self.herder.runner.restart(item)

    def worker_url(self, worker_id: str) -> str:
        return self.herder.statuses.worker_url(worker_id, self.herder.config.rest_url.split("://", 1)[0])

    async def put_task_configs(self, name: str, configs: list[dict[str, str]]) -> None:
        await self.herder.put_task_configs(name, configs)

    def signs_requests(self) -> bool:
        return self.herder.signs_requests()

    def session_key(self) -> SessionKey | None:
        return self.herder.session_key()

    async def connector_offsets(self, name: str) -> list[dict[str, Any]]:
        """KIP-875's offsets: the offset topic's, or those in the Spark checkpoints of connectors
        that keep them themselves, of every task (also while the connector is stopped)."""
        plugin = self._keeping_offsets(name)
        if plugin is None:
            return self.herder.offsets.of_connector(name)
        return await asyncio.to_thread(plugin.offsets, self.herder.config, name)

    async def alter_offsets(self, name: str, changes: OffsetChanges) -> None:
        """KIP-875's alter of a stopped connector (OffsetsRefused: one it cannot do, or one
        whose tasks have not all stopped yet)."""
        async with self._offset_changes:
            plugin = await self._offsets_changeable(name, "alter")
            if plugin is None:
                await self.herder.offsets.alter(name, list(changes))
            else:
                await asyncio.to_thread(plugin.alter_offsets, self.herder.config, name, changes)

    async def reset_offsets(self, name: str) -> None:
        """KIP-875's reset of a stopped connector (OffsetsRefused: its tasks have not all stopped)."""
        async with self._offset_changes:
            plugin = await self._offsets_changeable(name, "reset")
            if plugin is None:
                await self.herder.offsets.reset(name)
            else:
                await asyncio.to_thread(plugin.reset_offsets, self.herder.config, name)

    def stopped(self, name: str) -> bool:
        """KIP-875's STOPPED: the target state, and no task configs left (the stop has taken)."""
        return self.herder.state.target_state(name) == STOPPED and not self.task_configs(name)

    def _keeping_offsets(self, name: str) -> type[Connector] | None:
        """The connector's plugin, if it keeps its offsets itself (Spark connectors: in their
        tasks' checkpoints)."""
        plugin = self.herder.plugins.named_by(self.connector_config(name))
        return plugin if plugin is not None and plugin.keeps_own_offsets else None

    async def _offsets_changeable(self, name: str, verb: str) -> type[Connector] | None:
        """The connector's plugin if it keeps its offsets (None: they are in the offset topic), once
        the config and status topics, read to their ends, say it is stopped and none of its
        tasks still runs anywhere: a task stopping on another worker may still commit a batch
        (or an offset) that the change would then be undone by, as Kafka Connect refuses a
        sink connector's change while its consumer group has members."""
        await self.herder.configs.read_to_end()
        await self.herder.statuses.read_to_end()
        running = [str(task) for task in self.herder.statuses.tasks_still_running(name)]
        if not self.stopped(name) or running:
            raise OffsetsRefused(
                f"Failed to {verb} offsets for connector {name} either because its tasks haven't stopped "
                f"completely yet or the connector was resumed before the request to {verb} its offsets "
                "could be successfully completed. If the connector is in a stopped state, this operation "
                "can be safely retried" + (f" (tasks still running: {', '.join(running)})" if running else "")
            )
        return self._keeping_offsets(name)


class WorkerRequests:
    """The worker itself (the protocol's `WorkerHerder`)."""

    herder: Herder

    @property
    def config(self) -> WorkerConfig:
        return self.herder.config

    def started(self) -> bool:
        return self.herder.ready.is_set()

    async def wait_started(self) -> None:
        await self.herder.ready.wait()

    def stopping(self) -> bool:
        """The worker is shutting down: it takes no more writes."""
        return self.herder.stopping

    def cluster_id(self) -> str:
        """The Kafka cluster's id, read at start (`GET /` reports it, as Kafka Connect does)."""
        return self.herder.kafka_cluster_id

    def spark_runtime(self) -> dict[str, Any]:
        """The worker's Spark session: starting, ready (with its start time) or failed."""
        return self.herder.spark.describe()

    def figures(self) -> WorkerFigures:
        herder = self.herder
        membership, runner, spark = herder.membership, herder.runner, herder.spark
        return WorkerFigures(
            membership.rebalances, membership.epoch, herder.leader.assignor, membership.clock,
            membership.zombie_stops, dict(runner.started_by_connector), dict(runner.stopped_by_connector),
            runner.running_by_connector(), spark.ready, spark.queries_started, spark.queries_stopped,
            runner.task_progress(), herder.watch.timeline, time.time(), self.configured_tasks(),
            herder.watch.rates.rates(),
        )  # fmt: skip

    def configured_tasks(self) -> dict[str, int]:
        """Connector -> its number of task configs (whose unassigned time counts)."""
        return {name: len(configs) for name, configs in self.herder.state.tasks.items()}

    def leader_url(self) -> str | None:
        return self.herder.leader_url()

    def client_tls(self) -> ssl.SSLContext | None:
        return self.herder.client_tls()

    def plugins(self) -> dict[str, type[Connector]]:
        return self.herder.plugins.all()

    def find_plugin(self, name: str) -> type[Connector] | None:
        return self.herder.plugins.find(name)

    def logger_levels(self) -> dict[str, dict[str, Any]]:
        return self.herder.loggers.all_levels()

    def logger_level(self, name: str) -> dict[str, Any] | None:
        return self.herder.loggers.level(name)

    def set_logger_level(self, name: str, level: str) -> list[str]:
        return self.herder.loggers.set_level(name, level)

    async def set_cluster_logger_level(self, namespace: str, level: str) -> None:
        """A log level for every worker of the cluster (this one too, once it reads it back),
        written to the config topic by whichever worker was asked, as Kafka Connect does."""
        await self.herder.configs.put_logger_level(namespace, level)

    def viewed(self) -> None:
        """The web view was looked at: the group's state is followed more closely a while."""
        self.herder.watch.viewed()

    def task_rates(self) -> dict[Work, float]:
        return self.herder.watch.rates.rates()

    def timeline(self) -> ClusterTimeline:
        return self.herder.watch.timeline

    def group_state(self) -> str:
        return self.herder.watch.group_state


class HerderApi(ConnectorRequests, WorkerRequests):
    """What REST calls, over one worker's herder."""


def _entry(status: dict[str, Any], **extra: Any) -> dict[str, Any]:
    """A status as Kafka Connect's REST API shows it: state, worker, and the trace if FAILED."""
    entry = {**extra, "state": status["state"], "worker_id": status["worker_id"]}
    return entry | ({"trace": status["trace"]} if status.get("trace") else {})

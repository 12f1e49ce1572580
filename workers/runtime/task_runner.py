"""Running the connectors and tasks a worker is assigned: Kafka Connect's `Worker`.

Rules:
- one change of what runs at a time (one lock): a start, a stop, a restart, a reconfiguration
  or a target state's change never interleave for the same worker;
- a revocation is not acknowledged until the work has stopped: `stop` returns only then (a
  task's stop is bounded by `task.shutdown.graceful.timeout.ms`; a Spark task's stop bounds
  itself), and a task run's fenced output has nothing in flight by then;
- a start that waited (for the config to be read, for the SparkSession) is skipped if the item
  was revoked or assigned anew meanwhile;
- every start and stop is reported to the status store at the membership's generation; a run
  fenced by a newer run elsewhere stops and reports nothing (another worker runs the task);
- a task whose config is gone (its connector stopped, or cut to fewer tasks) is not started:
  the rebalance the change starts revokes it, and configs committed first start it;
- a Spark task moving here from another worker may be prepared first (`prepare`,
  distributed/warm_handoff.py): its query waits at its source's gate, outside `running`, and its start
  on assignment is the gate's grant; a prepared run no longer moving here is cancelled.

What starts the work (assignment, config changes, restart requests) is the herder's; where a
connector's task configs go is the `TaskConfigSink` the herder gives (the leader writes them).

Configs are kept as the config topic holds them, `${provider:[path:]key}` variables and all
(workers.config.providers); a connector or task is given them resolved by the worker's config
providers as it starts (or is prepared), and a connector's generated task configs get the
variables of its own config back before they are sent, so no value a provider read is ever
written to the config topic. A variable that cannot be read fails the start: FAILED, with a
trace naming the setting and the variable.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import traceback
from collections.abc import Awaitable, Callable, Mapping
from dataclasses import dataclass, field
from typing import Any

from connect_rebalance.work import CONNECTOR, Work, work_name
from workers.config.connector_clients import (
    ConnectorClients,
    ConnectorSettingsRefused,
    connector_clients,
    unused_settings_warning,
)
from workers.config.providers import VariableError, resolve, with_variables
from workers.config.worker import WorkerConfig
from workers.plugins.api import ConfigProblem, Connector, Task, TaskContext
from workers.plugins.converters import SETTING_PREFIXES as CONVERTER_SETTINGS
from workers.plugins.converters import record_converters
from workers.plugins.registry import Plugins
from workers.runtime.output_connections import OutputConnections
from workers.runtime.prepared_runs import PREPARE_TIMEOUT_S, Prepared, PreparedRuns
from workers.runtime.task_topics import TaskTopics
from workers.runtime.task_writes import SourceOffset, TaskWrites
from workers.spark.runtime import SparkRuntime
from workers.spark.task import SparkTask
from workers.storage.config_state import PAUSED, STARTED, STOPPED, ConfigState
from workers.storage.fenced_output import TaskFenced, fence_id
from workers.storage.offset_store import OffsetStore
from workers.storage.status_store import StatusStore

log = logging.getLogger(__name__)
# A connector's task configs, as it generated them, on their way to the leader.
TaskConfigSink = Callable[[str, list[dict[str, str]]], Awaitable[None]]


@dataclass
class Running:
    """A connector or task this worker runs (or holds, paused)."""

    item: Work
    instance: Connector | Task | None = None
    state: str = "UNASSIGNED"
    trace: str | None = None
    config: dict[str, str] = field(default_factory=dict)
    writes: TaskWrites | None = None  # a task run's records and offsets, through its fence


class TaskRunner:
    def __init__(
        self,
        config: WorkerConfig,
        state: ConfigState,
        statuses: StatusStore,
        offsets: OffsetStore,
        outputs: OutputConnections,
        spark: SparkRuntime,
        generation: Callable[[], int],
        task_configs: TaskConfigSink,
        plugins: Plugins,
    ) -> None:
        self.config, self.state, self.statuses, self.offsets = config, state, statuses, offsets
        self.outputs, self.spark, self.generation = outputs, spark, generation
        self.plugins = plugins
        self.task_configs = task_configs
        self.running: dict[Work, Running] = {}
        self.started_by_connector: dict[str, int] = {}
        self.stopped_by_connector: dict[str, int] = {}
        self._lock = asyncio.Lock()
        self._assigned: dict[Work, int] = {}  # times each item was assigned or revoked
        self._generated: dict[str, list[dict[str, str]]] = {}  # task configs of connectors running here
        self.providers = config.config_providers()  # what resolves variables in configs (Kafka's Worker's)
        self.prepared = PreparedRuns(self._prepared_run, self._context)  # work moving here

    # -- assignment and revocation --------------------------------------------------------

    async def start(self, work: frozenset[Work], ready: Callable[[], Awaitable[None]]) -> None:
        """Start `work` once `ready()` (the config read far enough) has returned."""
        assigned = {item: self._reassigned(item) for item in work}
        await ready()
        spark_tasks = sorted(item for item in work if self._is_spark_task(item))
        if spark_tasks:
            if not self.spark.ready:  # said where users look: the tasks' status
                for item in spark_tasks:
                    self._report(item, "UNASSIGNED", self.spark.waiting_message())
            # The SparkSession may take tens of seconds to start: wait outside the lock, so a
            # revocation (or the watchdog) meanwhile is not held up behind it.
            with contextlib.suppress(Exception):  # a task's start reports it, with its trace
                await asyncio.to_thread(self.spark.session)
        async with self._lock:
            # Skipped: revoked (or assigned anew) while this start waited.
            starting = [item for item in sorted(work) if self._assigned.get(item) == assigned[item]]
            if len(starting) < len(work):
                skipped = sorted(work_name(item) for item in work if item not in starting)
                log.info("not starting %s: revoked or assigned again meanwhile", ", ".join(skipped))
            for item in starting:
                self.running[item] = Running(item)
            # Lightweight connectors and tasks start together (their status writes share
            # batches: a thousand tasks start in a fraction of the session, so the lock is
            # free again before a revocation needs it); Spark queries start one at a time.
            spark = [item for item in starting if self._is_spark_task(item)]
            await asyncio.gather(*(self._start(item) for item in starting if item not in spark))
            for item in spark:
                await self._start(item)

    async def stop(self, work: frozenset[Work], at_once: bool = False) -> None:
        """Stop `work`; returns once it has stopped. `at_once`: the work may already run
        elsewhere, so a Spark task does not let its batch under way commit first."""
        for item in work:
            self._reassigned(item)
        async with self._lock:
            stops = (self._stop(item, "UNASSIGNED", at_once=at_once) for item in work if item in self.running)
            await asyncio.gather(*stops)
            for item in work:
                self.running.pop(item, None)

    # -- work moving here (distributed/warm_handoff.py) -----------------------------------------------

    def prepare(
        self, items: frozenset[Work], assigned: frozenset[Work], on_warmed: Callable[[], None]
    ) -> None:
        """What the computing worker says is moving here: prepare each (prepared_runs.py);
        prepared runs of items neither moving here nor `assigned` here are cancelled."""
        self.prepared.prepare(items - set(self.running), assigned, on_warmed)

    def _prepared_run(self, item: Work) -> Prepared | None:
        """A run of `item` to prepare, if it is a Spark task that can be (its config here)."""
        name, index = item
        configs = self.state.tasks.get(name, [])
        if not self._is_spark_task(item) or index >= len(configs) or self.state.target_state(name) != STARTED:
            return None
        task = self.plugins.of(self.state.connectors[name]).task_class()
        if not isinstance(task, SparkTask) or not task.preparable:
            return None
        try:
            resolved = self.resolved(item, configs[index])
            writes = self._writes(item)
        except (VariableError, ConnectorSettingsRefused):  # a variable that cannot be read, refused settings
            return None  # it starts cold when assigned, and fails there, saying why
        # The gate exists from here: a cancel before the query starts is found by its reader.
        gate = self.spark.gate(name, index, self.config.rebalance_timeout_ms / 1000 + PREPARE_TIMEOUT_S)
        task.gate = gate
        return Prepared(task, dict(configs[index]), resolved, writes, gate)

    def runs_preparable(self) -> bool:
        """Whether a task running here could be prepared by the worker taking it over."""
        return any(isinstance(r.instance, SparkTask) and r.instance.preparable for r in self.running.values())

    async def _released(self, runner: Running) -> bool:
        """Start a task assigned here from its prepared run, if it has one that is still good."""
        name, index = runner.item
        prepared = await self.prepared.release(runner.item, self.state.tasks[name][index])
        if prepared is None:
            return False
        runner.instance, runner.config, runner.writes = prepared.task, prepared.config, prepared.writes
        return True

    # -- what changes running work --------------------------------------------------------

    async def restart(self, item: Work) -> None:
        async with self._lock:
            if item in self.running:
                await self._stop(item, "RESTARTING")
                await self._start(item)

    async def restart_connector(self, connector: str, include_tasks: bool, only_failed: bool) -> None:
        """A restart request (Kafka Connect's `restart-connector-<name>` record): owners act."""
        for item in sorted(i for i in self.running if i[0] == connector):
            wanted = item[1] == CONNECTOR or include_tasks
            if wanted and (not only_failed or self.running[item].state == "FAILED"):
                await self.restart(item)

    async def reconfigure(self, name: str) -> None:
        """A running connector's config changed: restart it; it may produce new task configs."""
        async with self._lock:
            item = (name, CONNECTOR)
            if item in self.running:
                await self._stop(item, "UNASSIGNED")
                await self._start(item)

    async def follow_task_configs(self, name: str) -> None:
        """New task configs were committed: a task of the connector running here with another
        config is restarted with its new one, as Kafka Connect does (a task no longer wanted
        is revoked by the rebalance the change starts), and one assigned here while it had no
        config (its connector resumed after a stop) starts."""
        async with self._lock:
            configs = self.state.tasks.get(name, [])
            owner = self.running.get((name, CONNECTOR))
            generated = self._generated.get(name)
            if owner is not None and owner.state == "RUNNING" and generated not in (None, configs):
                # Configs committed after this connector generated its own (a stop's empty set
                # landing after a resume): the connector's stand, so they are sent again.
                await self.task_configs(name, generated)
            for item in sorted(i for i in self.running if i[0] == name and i[1] != CONNECTOR):
                runner = self.running[item]
                index = int(item[1])
                started = runner.instance is not None and runner.state in ("RUNNING", "FAILED")
                idle = runner.instance is None and runner.state == "UNASSIGNED"
                if idle and index < len(configs) and self.state.target_state(name) == STARTED:
                    await self._start(item)
                if started and index < len(configs) and runner.config != configs[index]:
                    await self._stop(item, "RESTARTING")
                    await self._start(item)

    async def follow_target_state(self, name: str) -> None:
        """The connector's target state changed: pause, stop or resume what runs of it here."""
        async with self._lock:
            target = self.state.target_state(name)
            for item in sorted(i for i in self.running if i[0] == name):
                runner = self.running[item]
                if target in (PAUSED, STOPPED) and runner.state == "RUNNING":
                    await self._stop(item, PAUSED if target == PAUSED else "STOPPED")
                    if item[1] == CONNECTOR and target == STOPPED:
                        self._generated[name] = []  # a stopped connector has no tasks
                        await self.task_configs(name, [])
                elif target not in (PAUSED, STOPPED) and runner.state in (PAUSED, "STOPPED"):
                    await self._start(item)

    # -- what is read of the running work -------------------------------------------------

    def progress(self, item: Work) -> dict[str, Any]:
        """A running task's figures (rows, batches, ...), known to the worker running it."""
        runner = self.running.get(item)
        if runner is not None and isinstance(runner.instance, Task):
            return runner.instance.progress()
        return {}

    def running_by_connector(self) -> dict[str, int]:
        counts: dict[str, int] = {}
        for (connector, _), runner in self.running.items():
            counts[connector] = counts.get(connector, 0) + (runner.state == "RUNNING")
        return counts

    def task_progress(self) -> list[tuple[Work, Mapping[str, Any]]]:
        return [
            (item, runner.instance.progress())
            for item, runner in sorted(self.running.items())
            if isinstance(runner.instance, Task) and runner.instance.progress()
        ]

    # -- starting and stopping one item ---------------------------------------------------

    def _reassigned(self, item: Work) -> int:
        """A new assignment or revocation of `item`: starts waiting for an older one skip it."""
        self._assigned[item] = self._assigned.get(item, 0) + 1
        return self._assigned[item]

    def _is_spark_task(self, item: Work) -> bool:
        return item[1] != CONNECTOR and self.is_spark_connector(item[0])

    def is_spark_connector(self, name: str) -> bool:
        """Whether the connector's tasks are Spark queries."""
        config = self.state.connectors.get(name)
        plugin = self.plugins.named_by(config)
        return plugin is not None and issubclass(plugin.task_class, SparkTask)

    async def _start(self, item: Work) -> None:
        runner = self.running[item]
        name, task = item
        if task != CONNECTOR and int(task) >= len(self.state.tasks.get(name, [])):
            runner.state = "UNASSIGNED"  # its config is gone: see the module's rules
            return
        target = self.state.target_state(name)
        if target in (PAUSED, STOPPED):
            runner.state = target if task == CONNECTOR or target == PAUSED else "UNASSIGNED"
            self._report(item, runner.state)
            return
        try:
            if task == CONNECTOR:
                await self._start_connector(runner)
            else:
                await self._start_task(runner)
            runner.state, runner.trace = "RUNNING", None
            self.started_by_connector[name] = self.started_by_connector.get(name, 0) + 1
        except Exception as exc:  # noqa: BLE001 - a plugin's failure is its FAILED state
            runner.state, runner.trace = "FAILED", "".join(traceback.format_exception(exc))
            log.warning("%s failed to start: %s", item, exc)
        self._report(item, runner.state, runner.trace)

    def resolved(self, item: Work, config: Mapping[str, str]) -> dict[str, str]:
        """`config` as the item's run sees it: its variables resolved by the worker's config
        providers (those left as they are logged); VariableError if one cannot be read."""
        resolution = resolve(config, self.providers)
        for unresolved in resolution.unresolved:
            log.warning("%s: %s", work_name(item), unresolved)
        return resolution.values

    async def _start_connector(self, runner: Running) -> None:
        name = runner.item[0]
        config = self.state.connectors[name]
        connector = self.plugins.of(config)()
        runner.instance, runner.config = connector, dict(config)
        resolved = self.resolved(runner.item, config)
        unused = unused_settings_warning(resolved, self.config)
        if unused is not None:
            log.warning("%s: %s", work_name(runner.item), unused)
        generated = connector.task_configs(resolved, int(resolved.get("tasks.max", "1")))
        wanted = with_variables(config, generated)
        if self.state.target_state(name) == STOPPED:
            wanted = []
        self._generated[name] = wanted
        if wanted != self.state.tasks.get(name):
            await self.task_configs(name, wanted)

    async def _start_task(self, runner: Running) -> None:
        if await self._released(runner):
            return
        name, index = runner.item
        task_config = self.state.tasks[name][index]
        resolved = self.resolved(runner.item, task_config)
        task = self.plugins.of(self.state.connectors[name]).task_class()
        writes = self._writes(runner.item)
        runner.instance, runner.config, runner.writes = task, task_config, writes
        await task.start(resolved, self._context(runner.item, task, writes))

    def clients(self, name: str) -> ConnectorClients:
        """The connector's client settings and topic creation, from its config as resolved now;
        ConnectorSettingsRefused (a ValueError) if this worker would not allow or apply them."""
        config = self.state.connectors[name]
        # Variables left as they are were logged when the connector started: not again per task.
        resolution = resolve(config, self.providers)
        try:
            return connector_clients(self.plugins.of(config), resolution.values, self.config)
        except ConnectorSettingsRefused as refused:  # its reasons go to the status: no secret in them
            hidden = [ConfigProblem(p.name, resolution.hidden(p.message, config)) for p in refused.problems]
            raise ConnectorSettingsRefused(hidden) from None

    def _writes(self, item: Work) -> TaskWrites:
        """A task run's writes: through the connection its producer's identity asks for,
        compressed as it asks, creating the topics it writes to if its connector asks for that."""
        name, index = item
        clients = self.clients(name)
        topics = None
        if clients.topic_creation is not None:
            admin_id = f"connector-adminclient-{name}-{index}"  # Kafka Connect's, unless overridden
            topics = TaskTopics(
                self.config.bootstrap_servers, clients.topic_creation, clients.admin, admin_id
            )
        return TaskWrites(
            self.outputs.for_producer(clients.producer), fence_id(self.config.group_id, name, index), name,
            self.offsets, compression=clients.producer.get("compression.type", "none").strip(), topics=topics,
        )  # fmt: skip

    def _context(self, item: Work, task: Task, writes: TaskWrites) -> TaskContext:
        """What a task run may use; its failures are reported while it is the item's run here."""

        def fail(exc: BaseException) -> None:
            runner = self.running.get(item)
            if runner is not None:
                asyncio.ensure_future(self._failed(runner, task, exc))

        connector = self.state.connectors[item[0]]
        converting = {k: v for k, v in connector.items() if k.startswith(CONVERTER_SETTINGS)}
        key_converter, value_converter = record_converters(
            self.config.converter_settings, self.resolved(item, converting)
        )

        loop = asyncio.get_running_loop()
        tracking = self.config.topic_tracking_enable

        def track_topic(topic: str) -> None:
            """From any thread (a Spark task's planning): handed to the loop."""
            if tracking:
                loop.call_soon_threadsafe(self.statuses.record_topic, item[0], topic, item[1])

        async def send(topic: str, key: Any, value: Any, source: SourceOffset | None = None) -> None:
            """The task's key and value as its converters write them (a ConversionError fails it)."""
            if tracking:  # on the loop already: no hand-over per record
                self.statuses.record_topic(item[0], topic, item[1])
            await writes.send(topic, key_converter.from_data(key), value_converter.from_data(value), source)

        return TaskContext(
            item[0], item[1], self.config.worker_id, self.config.bootstrap_servers,
            read_offset=writes.read_offset, write_offset=writes.write_offset, send=send,
            track_topic=track_topic, fail=fail, consumer_settings=self.clients(item[0]).consumer,
            extra={"worker_config": self.config, "spark": self.spark},
        )  # fmt: skip

    async def _stop(self, item: Work, state: str, report: bool = True, at_once: bool = True) -> None:
        """Stop one item; a Spark task lets its batch under way commit unless `at_once`."""
        runner = self.running.get(item)
        if runner is None:
            return
        if isinstance(runner.instance, Task):
            try:
                if isinstance(runner.instance, SparkTask):
                    # Bounds its own wait, and returns only once the query has stopped.
                    await runner.instance.stop(finish_batch=not at_once)
                else:
                    await asyncio.wait_for(
                        runner.instance.stop(), self.config.task_shutdown_graceful_timeout_ms / 1000
                    )
            except Exception:  # noqa: BLE001 - a plugin's failure to stop must not stop the worker
                log.exception("%s did not stop cleanly", item)
        if runner.writes is not None:
            await runner.writes.close()  # nothing of this run is in flight from here on
            runner.writes = None
        if runner.instance is not None:
            self.stopped_by_connector[item[0]] = self.stopped_by_connector.get(item[0], 0) + 1
        runner.instance = None
        runner.state = state
        if report:
            self._report(item, state)

    async def _failed(self, runner: Running, task: Task, exc: BaseException) -> None:
        if self.running.get(runner.item) is not runner or runner.instance is not task:
            return  # a run already stopped: what it reports is not the task's state
        if isinstance(exc, TaskFenced):
            # A newer run of the task began elsewhere (this worker was cut off, and its session
            # gave the task away): this run stops, and says nothing of the task's state.
            log.warning("%s stops: %s", runner.item, exc)
            async with self._lock:
                if self.running.get(runner.item) is runner and runner.instance is task:
                    await self._stop(runner.item, "UNASSIGNED", report=False)
            return
        runner.state, runner.trace = "FAILED", "".join(traceback.format_exception(exc))
        self._report(runner.item, "FAILED", runner.trace)

    def _report(self, item: Work, state: str, trace: str | None = None) -> None:
        log.info("%s: %s at generation %s", work_name(item), state, self.generation())
        self.statuses.report(item, state, trace, self.generation())

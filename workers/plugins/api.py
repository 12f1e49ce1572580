"""The connector plugin API: what a connector and its tasks implement, and how they are found.

Kafka Connect's shape, in Python: a *connector* validates its configuration and splits its
work into task configurations (at most `tasks.max`); a *task* is started when its worker is
assigned it and stopped when the assignment is revoked, and reports its progress. Tasks
drive their own IO (a lightweight task is an asyncio task; a PySpark task runs a Spark
job) — the worker only starts, stops and observes them, and keeps their source offsets.

Plugins are found by entry point (group `connect_rebalance.connectors`), in the distributions
installed beside the worker and in those on `plugin.path` (`registry`, `path`, `scan`).
"""

from __future__ import annotations

from abc import ABC, abstractmethod
from collections.abc import Awaitable, Callable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any, ClassVar

from workers.plugins.converters import SETTING_PREFIXES as CONVERTER_SETTINGS
from workers.plugins.converters import converter_problems
from workers.plugins.names import name_problem

ENTRY_POINT_GROUP = "connect_rebalance.connectors"


@dataclass(frozen=True)
class ConfigProblem:
    """One invalid setting: the field it concerns and what is wrong."""

    name: str
    message: str

    @classmethod
    def invalid(cls, name: str, value: str, problem: str) -> ConfigProblem:
        """Kafka's ConfigException message for a value its validator refused."""
        return cls(name, f"Invalid value {value} for configuration {name}: {problem}")


@dataclass(frozen=True)
class ConfigDef:
    """A connector setting, as `GET /connector-plugins/{pluginName}/config` lists it."""

    name: str
    type: str = "STRING"
    required: bool = False
    default: str | None = None
    documentation: str = ""
    validate: Callable[[str], str | None] | None = None  # returns a problem, or None

    def definition(self) -> dict[str, Any]:
        return {
            "name": self.name,
            "type": self.type,
            "required": self.required,
            "default_value": self.default,
            "importance": "HIGH" if self.required else "MEDIUM",
            "documentation": self.documentation,
            "group": None,
            "width": "NONE",
            "display_name": self.name,
            "dependents": [],
            "order": -1,
        }


def positive_int(value: str) -> str | None:
    try:
        return None if int(value) > 0 else "must be a positive integer"
    except ValueError:
        return "must be a positive integer"


# The most tasks a connector may ask for: each task is a Spark streaming query on some worker
# (each with its threads, buffers and checkpoint), so more would not run on any cluster this
# runtime serves, and tasks.max=100000 took a worker to 550 MB before one of them started.
MAX_TASKS = 1000


def task_count(value: str) -> str | None:
    try:
        if 1 <= int(value) <= MAX_TASKS:
            return None
    except ValueError:
        pass
    return f"must be an integer from 1 to {MAX_TASKS:,} (each task is a Spark streaming query)"


def non_negative_int(value: str) -> str | None:
    try:
        return None if int(value) >= 0 else "must be a non-negative integer"
    except ValueError:
        return "must be a non-negative integer"


COMMON_CONFIG = [
    ConfigDef(
        "name", required=True, documentation="Globally unique name of the connector.", validate=name_problem
    ),
    ConfigDef("connector.class", required=True, documentation="The connector plugin."),
    ConfigDef("tasks.max", "INT", default="1", validate=task_count, documentation="Maximum number of tasks."),
]


# Kafka Connect's own connector settings that this runtime does not implement, each with the
# value that means "not used" (Kafka's default), which is accepted: a task reads and writes
# through its connector's own settings and its converters (workers.plugins.converters), with no
# transforms or error handling around it. Any other value is refused, naming the setting,
# instead of being stored and ignored. Topic creation (`topic.creation.*`) and client
# overrides (`producer.override.*`...) depend on the worker's settings, and are checked
# against them (workers.config.connector_clients).
UNSUPPORTED_FRAMEWORK_SETTINGS = {
    "transforms": "", "predicates": "", "errors.tolerance": "none", "errors.retry.timeout": "0",
    "errors.log.enable": "false", "errors.log.include.messages": "false",
    "errors.deadletterqueue.topic.name": "", "exactly.once.support": "requested",
    "transaction.boundary": "poll", "config.action.reload": "restart",
}  # fmt: skip
UNSUPPORTED_FRAMEWORK_PREFIXES = (
    "header.converter", "transforms.", "predicates.", "errors.", "transaction.boundary.", "offsets.storage.",
)  # fmt: skip


def framework_problems(config: Mapping[str, str]) -> list[ConfigProblem]:
    """Kafka Connect framework settings given a value this runtime would ignore."""
    problems = [ConfigProblem.invalid(name, config[name], problem)
                for name, problem in converter_problems(config)]  # fmt: skip
    for name, value in sorted(config.items()):
        if name.startswith(CONVERTER_SETTINGS):
            continue  # the connector's own converters
        unused = UNSUPPORTED_FRAMEWORK_SETTINGS.get(name)
        if unused is None and not name.startswith(UNSUPPORTED_FRAMEWORK_PREFIXES):
            continue  # the connector's own setting
        if unused is not None and value.strip().lower() == unused:
            continue
        wanted = f"only {unused!r} (the default)" if unused is not None else "nothing"
        problems.append(
            ConfigProblem.invalid(
                name, value, f"this runtime does not support this setting: it accepts {wanted}"
            )
        )
    return problems


@dataclass
class TaskContext:
    """What a running task can use from its worker."""

    connector: str
    task: int
    worker_id: str
    bootstrap_servers: str
    read_offset: Callable[[Mapping[str, Any]], Awaitable[Mapping[str, Any] | None]]
    write_offset: Callable[[Mapping[str, Any], Mapping[str, Any]], Awaitable[None]]
    fail: Callable[[BaseException], None]
    # send(topic, key, value, source=(source partition, offset)): one record and, with `source`,
    # the offset it moves the task to, written together through the task's fence.
    send: Callable[..., Awaitable[None]] | None = None
    # A topic the task reads (a write through `send` is noted already): its connector's
    # active topics (GET /connectors/<name>/topics). Callable from any thread.
    track_topic: Callable[[str], None] = lambda topic: None
    # The task's consumer settings, by Kafka's names: the worker's `consumer.*` security with
    # the connector's `consumer.override.*` over it (workers.config.client_overrides).
    consumer_settings: Mapping[str, str] = field(default_factory=dict)
    extra: dict[str, Any] = field(default_factory=dict)


class Task(ABC):
    """One slice of a connector's work."""

    @abstractmethod
    async def start(self, config: Mapping[str, str], context: TaskContext) -> None:
        """Begin working; return promptly (run the work in the background)."""

    @abstractmethod
    async def stop(self) -> None:
        """Stop working and release everything; when this returns, the task does no more work."""

    def progress(self) -> dict[str, Any]:
        """Figures for status and metrics (records written, batches run...)."""
        return {}


# KIP-875's alter: (partition, offset or None to forget it) pairs, as the REST body gives them.
OffsetChanges = Sequence[tuple[Mapping[str, Any], Mapping[str, Any] | None]]


class OffsetsRefused(ValueError):
    """A KIP-875 alter or reset that cannot be done: the REST API answers 400 with the message."""


class Connector(ABC):
    """Validates a configuration and divides the work among tasks."""

    type: ClassVar[str] = "source"
    version: ClassVar[str] = "0.1.0"
    task_class: ClassVar[type[Task]]
    config_defs: ClassVar[list[ConfigDef]] = []
    # The Kafka clients the worker runs for the tasks, which the connector's overrides may tune
    # (workers.config.client_overrides): `producer`, the tasks' writes through `TaskContext.send`
    # (with topic creation, an admin client too); `consumer`, the topics they read.
    kafka_clients: ClassVar[frozenset[str]] = frozenset({"producer"})
    # KIP-875's hooks, as Kafka's `SourceConnector.alterOffsets`: a connector that keeps its
    # offsets itself (a Spark connector: its tasks' checkpoints), not in the worker's offset
    # topic, says so and answers the REST API's read, alter and reset of them. They are called
    # off the event loop, with the worker's settings; an alter or a reset only while the
    # connector is stopped and none of its tasks runs anywhere. OffsetsRefused: one it cannot do.
    keeps_own_offsets: ClassVar[bool] = False

    @classmethod
    def offsets(cls, worker: Any, connector: str) -> list[dict[str, Any]]:
        """`GET /connectors/{name}/offsets`, in Kafka Connect's shape."""
        raise NotImplementedError(f"{cls.__name__} keeps no offsets of its own")

    @classmethod
    def alter_offsets(cls, worker: Any, connector: str, changes: OffsetChanges) -> None:
        raise NotImplementedError(f"{cls.__name__} keeps no offsets of its own")

    @classmethod
    def reset_offsets(cls, worker: Any, connector: str) -> None:
        raise NotImplementedError(f"{cls.__name__} keeps no offsets of its own")

    @classmethod
    def all_config_defs(cls) -> list[ConfigDef]:
        return COMMON_CONFIG + cls.config_defs

    @classmethod
    def validate(cls, config: Mapping[str, str]) -> list[ConfigProblem]:
        problems = framework_problems(config)
        for definition in cls.all_config_defs():
            value = config.get(definition.name, definition.default)
            if value is None or (definition.required and not str(value).strip()):
                if definition.required:
                    problems.append(
                        ConfigProblem(definition.name, f'Missing required configuration "{definition.name}"')
                    )
                continue
            if definition.validate is not None:
                problem = definition.validate(str(value))
                if problem is not None:
                    problems.append(ConfigProblem.invalid(definition.name, str(value), problem))
        return problems

    @classmethod
    def declared(cls, config: Mapping[str, str]) -> dict[str, str]:
        """The connector's own settings (its `config_defs`), defaults filled in."""
        return {d.name: config.get(d.name, d.default or "") for d in cls.config_defs}

    @abstractmethod
    def task_configs(self, config: Mapping[str, str], max_tasks: int) -> list[dict[str, str]]:
        """One configuration per task, at most `max_tasks`."""


def indexed_task_configs(shared: Mapping[str, str], max_tasks: int) -> list[dict[str, str]]:
    """`max_tasks` task configs, each naming its place in the split: `task.index` of `task.count`.

    For connectors whose tasks find their share themselves when they start (partitions,
    sub-directories), because a connector has no data source to ask when it splits.
    """
    return [{**shared, "task.index": str(i), "task.count": str(max_tasks)} for i in range(max_tasks)]

"""The cluster's connector configuration, as the config topic says it is (pure, no IO).

This module alone knows the config topic's record keys, both to read them and to write them
(`config_store.py` writes what the `*_record` functions build). Kafka Connect's records
(connect-reference.md §7): `connector-<name>` holds a connector's configuration (a tombstone
deletes it), `target-state-<name>` its target state, `task-<name>-<n>` task configurations
that take effect only when `commit-<name>` with the task count is read (so a half-written
set is never used), `restart-connector-<name>` a restart request, `session-key` the key that
signs requests between workers, `logger-cluster-<namespace>` a log level every worker
applies (KIP-976).

`apply` folds one record in and says what it changed (`ConfigChange`), so whoever acts on
changes never parses keys; `offset` is the config offset (last offset read + 1), which
workers compare to agree on what they act on.
"""

from __future__ import annotations

import json
import re
from dataclasses import dataclass, field
from enum import StrEnum
from typing import Any

from connect_rebalance.work import CONNECTOR, Work
from workers.storage.session_key import RECORD_KEY as SESSION_KEY_RECORD
from workers.storage.session_key import SessionKey

TASK_KEY = re.compile(r"^task-(?P<name>.+)-(?P<task>\d+)$")
STARTED, PAUSED, STOPPED = "STARTED", "PAUSED", "STOPPED"
LOGGER_PREFIX = "logger-cluster-"
Record = tuple[bytes, bytes | None]  # a config topic record: key, value (None: a tombstone)


class Changed(StrEnum):
    CONNECTOR = "connector"  # created, or its configuration replaced
    DELETED = "deleted"
    TARGET_STATE = "target-state"
    TASKS = "tasks"  # new task configurations committed
    RESTART = "restart"
    LOGGER_LEVEL = "logger-level"  # `connector` holds the logger namespace, `level` the level
    NOTHING = "nothing"  # a task config not committed yet, a session key, a tombstone of nothing


@dataclass(frozen=True)
class ConfigChange:
    """What one record changed. `replaced`: an existing connector's configuration or its
    committed task configurations are now different (its running work must follow)."""

    kind: Changed
    connector: str = ""
    replaced: bool = False
    include_tasks: bool = False  # a restart request's scope
    only_failed: bool = False
    level: str = ""  # a cluster-wide log level


NOTHING = ConfigChange(Changed.NOTHING)


@dataclass
class ConfigState:
    connectors: dict[str, dict[str, str]] = field(default_factory=dict)
    target_states: dict[str, str] = field(default_factory=dict)
    tasks: dict[str, list[dict[str, str]]] = field(default_factory=dict)
    pending_tasks: dict[str, dict[int, dict[str, str]]] = field(default_factory=dict)
    session_key: SessionKey | None = None  # signs requests between workers (leader's task configs)
    offset: int = 0

    def apply(self, key: str, value: dict[str, Any] | None, offset: int) -> ConfigChange:
        self.offset = offset + 1
        if key.startswith("connector-"):
            name = key[len("connector-") :]
            if value is None:
                existed = self.connectors.pop(name, None) is not None
                self.tasks.pop(name, None)
                self.target_states.pop(name, None)
                self.pending_tasks.pop(name, None)
                return ConfigChange(Changed.DELETED, name) if existed else NOTHING
            before = self.connectors.get(name)
            self.connectors[name] = {str(k): str(v) for k, v in value["properties"].items()}
            replaced = before is not None and before != self.connectors[name]
            return ConfigChange(Changed.CONNECTOR, name, replaced)
        if key.startswith("target-state-"):
            name = key[len("target-state-") :]
            if value is None:
                self.target_states.pop(name, None)
            else:
                self.target_states[name] = value.get("state.v2") or value.get("state") or STARTED
            return ConfigChange(Changed.TARGET_STATE, name)
        if key.startswith("commit-"):
            name = key[len("commit-") :]
            count = int(value["tasks"]) if value else 0
            pending = self.pending_tasks.pop(name, {})
            if not all(i in pending for i in range(count)):
                return NOTHING
            before = self.tasks.get(name)
            self.tasks[name] = [pending[i] for i in range(count)]
            return ConfigChange(Changed.TASKS, name, before != self.tasks[name])
        if key.startswith("restart-connector-"):
            if value is None:
                return NOTHING
            name = key[len("restart-connector-") :]
            include, only = bool(value.get("include-tasks")), bool(value.get("only-failed"))
            return ConfigChange(Changed.RESTART, name, include_tasks=include, only_failed=only)
        if key.startswith(LOGGER_PREFIX):
            level = value.get("level") if value else None
            if not isinstance(level, str):
                return NOTHING
            return ConfigChange(Changed.LOGGER_LEVEL, key[len(LOGGER_PREFIX) :], level=level)
        if key == SESSION_KEY_RECORD:
            if value is not None:
                self.session_key = SessionKey.from_record(value)
        elif (match := TASK_KEY.match(key)) is not None and value is not None:
            name, task = match["name"], int(match["task"])
            self.pending_tasks.setdefault(name, {})[task] = {
                str(k): str(v) for k, v in value["properties"].items()
            }
        return NOTHING

    def target_state(self, name: str) -> str:
        return self.target_states.get(name, STARTED)

    def work(self) -> frozenset[Work]:
        """Every connector and task there is to run: what the group's target must cover."""
        items: set[Work] = set()
        for name in self.connectors:
            items.add((name, CONNECTOR))
            if self.target_state(name) != STOPPED:
                items.update((name, i) for i in range(len(self.tasks.get(name, []))))
        return frozenset(items)


# -- the records the config store writes -------------------------------------------------


def logger_level_record(namespace: str, level: str) -> Record:
    """A log level for a namespace, which every worker running when it is read applies."""
    return _record(f"{LOGGER_PREFIX}{namespace}", {"level": level})


def connector_record(name: str, config: dict[str, str] | None) -> Record:
    """A connector's configuration, or (None) its deletion."""
    return _record(f"connector-{name}", None if config is None else {"properties": config})


def target_state_record(name: str, state: str | None) -> Record:
    """Kafka Connect writes STOPPED as state=PAUSED + state.v2=STOPPED, for older workers."""
    if state is None:
        return _record(f"target-state-{name}", None)
    return _record(
        f"target-state-{name}", {"state": PAUSED if state == STOPPED else state, "state.v2": state}
    )


def task_config_records(name: str, configs: list[dict[str, str]]) -> list[Record]:
    """Each task's configuration; the commit record (`commit_record`) makes them visible."""
    return [_record(f"task-{name}-{i}", {"properties": config}) for i, config in enumerate(configs)]


def commit_record(name: str, count: int) -> Record:
    return _record(f"commit-{name}", {"tasks": count})


def restart_record(name: str, include_tasks: bool, only_failed: bool) -> Record:
    return _record(f"restart-connector-{name}", {"include-tasks": include_tasks, "only-failed": only_failed})


def session_key_record(key: SessionKey) -> Record:
    return _record(SESSION_KEY_RECORD, key.record())


def _record(key: str, value: dict[str, Any] | None) -> Record:
    return key.encode(), encode_json(value)


def decode_json(value: bytes | None) -> dict[str, Any] | None:
    return None if value is None else json.loads(value)


def encode_json(value: dict[str, Any] | None) -> bytes | None:
    return None if value is None else json.dumps(value, separators=(",", ":")).encode()

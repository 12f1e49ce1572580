"""The cluster's connector configuration, as the config topic says it is (pure, no IO).

Kafka Connect's config topic records (connect-reference.md §7): `connector-<name>` holds a
connector's configuration (a tombstone deletes it), `target-state-<name>` its target state,
`task-<name>-<n>` task configurations that take effect only when `commit-<name>` with the
task count is read (so a half-written set is never used), `session-key` the key that signs
requests between workers. `apply` folds one record in;
`offset` is the config offset (last offset read + 1), which workers compare to agree on
what they act on.
"""

from __future__ import annotations

import json
import re
from dataclasses import dataclass, field
from typing import Any

from connect_rebalance.work import CONNECTOR, Work

from .session_key import RECORD_KEY as SESSION_KEY_RECORD
from .session_key import SessionKey

TASK_KEY = re.compile(r"^task-(?P<name>.+)-(?P<task>\d+)$")
STARTED, PAUSED, STOPPED = "STARTED", "PAUSED", "STOPPED"


@dataclass
class ConfigState:
    connectors: dict[str, dict[str, str]] = field(default_factory=dict)
    target_states: dict[str, str] = field(default_factory=dict)
    tasks: dict[str, list[dict[str, str]]] = field(default_factory=dict)
    pending_tasks: dict[str, dict[int, dict[str, str]]] = field(default_factory=dict)
    restarts: list[tuple[str, bool, bool]] = field(default_factory=list)
    session_key: SessionKey | None = None  # signs requests between workers (leader's task configs)
    offset: int = 0

    def apply(self, key: str, value: dict[str, Any] | None, offset: int) -> None:
        self.offset = offset + 1
        if key.startswith("connector-"):
            name = key[len("connector-") :]
            if value is None:
                self.connectors.pop(name, None)
                self.tasks.pop(name, None)
                self.target_states.pop(name, None)
                self.pending_tasks.pop(name, None)
            else:
                self.connectors[name] = {str(k): str(v) for k, v in value["properties"].items()}
        elif key.startswith("target-state-"):
            name = key[len("target-state-") :]
            if value is None:
                self.target_states.pop(name, None)
            else:
                self.target_states[name] = value.get("state.v2") or value.get("state") or STARTED
        elif key.startswith("commit-"):
            name = key[len("commit-") :]
            count = int(value["tasks"]) if value else 0
            pending = self.pending_tasks.pop(name, {})
            if all(i in pending for i in range(count)):
                self.tasks[name] = [pending[i] for i in range(count)]
        elif key.startswith("restart-connector-"):
            name = key[len("restart-connector-") :]
            if value is not None:
                self.restarts.append((name, bool(value.get("include-tasks")), bool(value.get("only-failed"))))
        elif key == SESSION_KEY_RECORD:
            if value is not None:
                self.session_key = SessionKey.from_record(value)
        elif (match := TASK_KEY.match(key)) is not None and value is not None:
            name, task = match["name"], int(match["task"])
            self.pending_tasks.setdefault(name, {})[task] = {
                str(k): str(v) for k, v in value["properties"].items()
            }

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


def decode_json(value: bytes | None) -> dict[str, Any] | None:
    return None if value is None else json.loads(value)


def encode_json(value: dict[str, Any] | None) -> bytes | None:
    return None if value is None else json.dumps(value, separators=(",", ":")).encode()

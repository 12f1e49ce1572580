"""Connect's assignable items: connectors and tasks, in one hashable shape.

`Work` is a (connector, task) pair; task `CONNECTOR` (-1) is the connector instance itself.
Kafka Connect keeps connectors (names) and tasks (ConnectorTaskId) apart; one shape lets
the reconciliation engine treat both as opaque items, and on the wire both travel in the
ConnectorsAndTasks struct of the connect group schemas.
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any

Work = tuple[str, int]
CONNECTOR = -1


def work_field(items: Iterable[Work]) -> dict[str, Any]:
    """Work as the schemas' ConnectorsAndTasks struct (sorted, so the bytes are stable)."""
    ordered = sorted(items)
    return {
        "connectors": [c for c, t in ordered if t == CONNECTOR],
        "tasks": [{"connector": c, "task": t} for c, t in ordered if t != CONNECTOR],
    }


def work_of(struct_: Any) -> frozenset[Work]:
    """The Work named by a ConnectorsAndTasks struct, decoded or as plain dicts."""
    if struct_ is None:
        return frozenset()
    if isinstance(struct_, dict):
        connectors, tasks = struct_.get("connectors") or [], struct_.get("tasks") or []
        pairs = [(t["connector"], t["task"]) for t in tasks]
    else:
        connectors, tasks = struct_.connectors or [], struct_.tasks or []
        pairs = [(t.connector, t.task) for t in tasks]
    return frozenset([(c, CONNECTOR) for c in connectors] + pairs)


def work_name(item: Work) -> str:
    """Kafka Connect's spelling: a connector's name, or `connector-N` for a task."""
    connector, task = item
    return connector if task == CONNECTOR else f"{connector}-{task}"


def describe_work(items: Iterable[Work]) -> str:
    """Work for a table cell: names in Kafka Connect's spelling, `-` for none."""
    return " ".join(work_name(item) for item in sorted(items)) or "-"

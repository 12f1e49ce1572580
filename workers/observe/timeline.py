"""The connect group as one worker sees it: a bounded timeline of its rebalances, and the
figures the web view (`/ui`) and `/metrics` show of it.

Rules:
- Pure: no IO, no clock. The worker feeds it what it can know itself, each with its time
  (wall-clock seconds): the status topic's records of tasks and connectors (the record's
  timestamp), presence records, and the group as ConnectGroupDescribe (or, on the classic
  protocol, the worker's own generation) says it is.
- A *run* is one stretch of one connector or task on one worker: from its RUNNING status to
  the status that ended it (UNASSIGNED, PAUSED, STOPPED, FAILED) or to its worker leaving
  the group. A task RUNNING on another worker than its previous run is a *move*; its handoff
  gap is from the end of the previous run to the start of the new one (unknown while the
  previous run's end is not known: it is not counted).
- A task is *unassigned* from its UNASSIGNED status, or from its worker leaving the group
  while it ran there, until a status of another state. A connector's unassigned seconds are
  the union of its configured tasks' unassigned spans: the seconds during which it had at
  least one task unassigned. Like every Prometheus counter, they count from the worker's
  start (`since`); a counter read never goes down.
- Bounded: the last MAX_ENTRIES entries, the last MAX_RUNS ended runs; spans of unassigned
  time older than FOLD_S before the newest time seen are folded into a sum. A deleted
  connector is forgotten (its runs, unassigned time and handoff gaps, so its figures leave
  the view and /metrics); the statuses its stopping tasks still write for FOLD_S after are
  not taken as a new life of it, a RUNNING status is (the connector was created again).
"""

from __future__ import annotations

from collections import deque
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from typing import Any

from connect_rebalance.work import CONNECTOR, Work, work_name

MAX_ENTRIES = 200
MAX_RUNS = 400
FOLD_S = 300.0  # records arrive within seconds of their timestamps: older spans can be summed
RUNNING = "RUNNING"
UNASSIGNED = "UNASSIGNED"


@dataclass
class Run:
    item: Work
    worker: str
    started: float
    ended: float | None = None

    def json(self) -> dict[str, Any]:
        return {"item": work_name(self.item), "connector": self.item[0], "task": self.item[1],
                "worker": self.worker, "started": self.started, "ended": self.ended}  # fmt: skip


@dataclass
class HandoffGaps:
    """A connector's handoff gaps of moved tasks (a Prometheus summary, and its largest)."""

    count: int = 0
    total_s: float = 0.0
    max_s: float = 0.0
    last_s: float = 0.0

    def add(self, gap_s: float) -> None:
        self.count += 1
        self.total_s += gap_s
        self.max_s = max(self.max_s, gap_s)
        self.last_s = gap_s


@dataclass
class UnassignedTime:
    """One connector's unassigned spans: merged closed ones, open ones per task."""

    folded_s: float = 0.0
    closed: list[tuple[float, float]] = field(default_factory=list)
    open: dict[int, float] = field(default_factory=dict)  # task -> unassigned since
    reported_s: float = 0.0

    def close(self, task: int, at: float, since: float) -> None:
        began = self.open.pop(task, None)
        if began is None:
            return
        began = max(began, since)
        if at > began:
            self.closed = _merged([*self.closed, (began, at)])

    def fold(self, horizon: float) -> None:
        old = [span for span in self.closed if span[1] < horizon]
        self.folded_s += sum(end - start for start, end in old)
        self.closed = [span for span in self.closed if span[1] >= horizon]

    def seconds(self, now: float, since: float, configured: int) -> float:
        spans = [*self.closed]
        spans += [(max(began, since), now) for task, began in self.open.items() if task < configured]
        value = self.folded_s + sum(end - start for start, end in _merged(spans) if end > start)
        self.reported_s = max(self.reported_s, value)  # a late record never takes a count back
        return self.reported_s


def _merged(spans: Iterable[tuple[float, float]]) -> list[tuple[float, float]]:
    merged: list[tuple[float, float]] = []
    for start, end in sorted(spans):
        if merged and start <= merged[-1][1]:
            merged[-1] = (merged[-1][0], max(merged[-1][1], end))
        else:
            merged.append((start, end))
    return merged


class ClusterTimeline:
    def __init__(self, since: float, max_entries: int = MAX_ENTRIES, max_runs: int = MAX_RUNS) -> None:
        """`since`: the worker's start; counters count from it."""
        self.since = since
        self.entries: deque[dict[str, Any]] = deque(maxlen=max_entries)
        self.runs: dict[Work, Run] = {}  # each item's last run, open or ended
        self.ended: deque[Run] = deque(maxlen=max_runs)
        self.unassigned: dict[str, UnassignedTime] = {}
        self.gaps: dict[str, HandoffGaps] = {}
        self.epoch: int | None = None
        self.members: frozenset[str] = frozenset()
        self.presence: dict[str, dict[str, Any]] = {}  # worker -> state, url, at
        self.latest = since
        self.deleted: dict[str, float] = {}  # connector -> when it was forgotten

    # -- what the worker feeds it ------------------------------------------------------------

    def status(self, item: Work, state: str, worker: str, at: float) -> None:
        """A status record of `item` (the status topic's, with its timestamp)."""
        self._seen(at)
        if item[0] in self.deleted:
            if state != RUNNING:
                return  # a deleted connector's tasks stopping
            del self.deleted[item[0]]  # created again
        previous = self.runs.get(item)
        if state != RUNNING:
            if previous is not None and previous.worker == worker and previous.ended is None:
                self._end(previous, at)
            if state == UNASSIGNED:
                self._unassigned(item, at)
            else:
                self._assigned(item, at)
            return
        self._assigned(item, at)
        if previous is not None and previous.worker == worker and previous.ended is None:
            return  # the same run, reported again
        if previous is not None and previous.ended is None:
            self._end(previous, at)
            gap = None  # the previous owner's stop was never heard of
        else:
            gap = None if previous is None or previous.ended is None else max(at - previous.ended, 0.0)
        self.runs[item] = Run(item, worker, at)
        if previous is not None and previous.worker != worker:
            self.entries.append({"kind": "move", "at": at, "item": work_name(item), "connector": item[0],
                                 "task": item[1], "from": previous.worker, "to": worker,
                                 "stopped": previous.ended, "gap_s": gap})  # fmt: skip
            if gap is not None and item[1] != CONNECTOR and at >= self.since:
                self.gaps.setdefault(item[0], HandoffGaps()).add(gap)

    def presence_record(self, worker: str, state: str, url: str, at: float) -> None:
        """A worker's presence record: UP when it starts, LEFT when it leaves for good."""
        self._seen(at)
        self.presence[worker] = {"state": state, "url": url, "at": at}
        if state == "LEFT":
            self._gone(worker, at)

    def group(self, epoch: int, members: Iterable[str], at: float) -> None:
        """The group as described at `at`: its epoch and its workers (by worker id)."""
        self._seen(at)
        members = frozenset(members)
        if epoch != self.epoch:
            first = self.epoch is None
            joined = [] if first else sorted(members - self.members)
            left = [] if first else sorted(self.members - members)
            self.entries.append({"kind": "epoch", "at": at, "epoch": epoch, "previous": self.epoch,
                                 "joined": joined, "left": left, "members": sorted(members)})  # fmt: skip
            for worker in left:
                self._gone(worker, at)
            self.epoch = epoch
        self.members = members

    def forget(self, connector: str, at: float) -> None:
        """The connector was deleted: drop what the timeline holds of it (the entries and
        ended runs already shown age out with the others)."""
        self._seen(at)
        for item in [item for item in self.runs if item[0] == connector]:
            del self.runs[item]
        self.unassigned.pop(connector, None)
        self.gaps.pop(connector, None)
        self.deleted[connector] = at

    # -- what it shows -----------------------------------------------------------------------

    def unassigned_seconds(self, connector: str, now: float, configured_tasks: int) -> float:
        time = self.unassigned.get(connector)
        return 0.0 if time is None else time.seconds(now, self.since, configured_tasks)

    def unassigned_tasks(self, connector: str, configured_tasks: int) -> int:
        time = self.unassigned.get(connector)
        return 0 if time is None else sum(task < configured_tasks for task in time.open)

    def handoff_gaps(self, connector: str) -> HandoffGaps:
        return self.gaps.get(connector, HandoffGaps())

    def connector_figures(self, now: float, configured: Mapping[str, int]) -> dict[str, dict[str, Any]]:
        """Per connector (configured, or with a handoff gap counted): what the view and /metrics
        show of it, read once so that both say the same."""
        figures = {}
        for name in sorted(set(configured) | set(self.gaps)):
            tasks, gaps = configured.get(name, 0), self.handoff_gaps(name)
            figures[name] = {
                "unassigned_s": round(self.unassigned_seconds(name, now, tasks), 3),
                "unassigned_tasks": self.unassigned_tasks(name, tasks),
                "handoff_gaps": gaps.count, "handoff_gap_total_s": round(gaps.total_s, 3),
                "handoff_gap_max_s": round(gaps.max_s, 3), "handoff_gap_last_s": round(gaps.last_s, 3),
            }  # fmt: skip
        return figures

    def workers(self) -> list[str]:
        """Every worker the view has a lane for: members, presence, and runs it remembers."""
        named = set(self.members) | set(self.presence)
        named |= {run.worker for run in self.runs.values()} | {run.worker for run in self.ended}
        return sorted(w for w in named if w)

    def snapshot(self) -> dict[str, Any]:
        """The timeline as JSON: entries (oldest first) and runs (ended, then open)."""
        runs = [*self.ended, *(run for run in self.runs.values() if run.ended is None)]
        return {"epoch": self.epoch, "members": sorted(self.members), "entries": list(self.entries),
                "runs": [run.json() for run in runs]}  # fmt: skip

    # -- inside --------------------------------------------------------------------------------

    def _seen(self, at: float) -> None:
        if at > self.latest:
            self.latest = at
            for time in self.unassigned.values():
                time.fold(at - FOLD_S)
            for connector in [c for c, when in self.deleted.items() if when < at - FOLD_S]:
                del self.deleted[connector]

    def _end(self, run: Run, at: float) -> None:
        run.ended = max(at, run.started)
        self.ended.append(run)

    def _gone(self, worker: str, at: float) -> None:
        """The worker left the group: what it ran stops there, its tasks unassigned."""
        for item, run in list(self.runs.items()):
            if run.worker == worker and run.ended is None:
                self._end(run, at)
                self._unassigned(item, at)

    def _unassigned(self, item: Work, at: float) -> None:
        name, task = item
        if task != CONNECTOR:
            self.unassigned.setdefault(name, UnassignedTime()).open.setdefault(task, at)

    def _assigned(self, item: Work, at: float) -> None:
        name, task = item
        if task != CONNECTOR and name in self.unassigned:
            self.unassigned[name].close(task, at, self.since)

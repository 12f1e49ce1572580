"""Spark task runs started before their task is assigned here (distributed/warm_handoff.py).

The computing worker names, in this worker's assignment metadata, the tasks moving here that
another worker still runs. Each is prepared: its query starts held at its source's gate
(spark/start_gate.py), outside the runner's running work, and once it waits there (or
its preparation failed, or took too long) it counts as warmed, which the worker reports in
its assignor metadata. When the task is assigned here, its start is the gate's grant
(`release`); a prepared run no longer moving here, or whose config changed meanwhile, is
cancelled at its gate, having read nothing.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
from collections.abc import Callable
from dataclasses import dataclass

from connect_rebalance.work import Work, work_name
from workers.plugins.api import TaskContext
from workers.runtime.task_writes import TaskWrites
from workers.spark.runtime import is_active
from workers.spark.start_gate import Gate
from workers.spark.task import SparkTask

log = logging.getLogger(__name__)
# How long a prepared run may take to reach its gate before it is reported warmed anyway (the
# task then starts cold when it is assigned here).
PREPARE_TIMEOUT_S = 30.0


@dataclass
class Prepared:
    """A Spark task's run started ahead of its assignment here, held at its start gate."""

    task: SparkTask
    config: dict[str, str]  # as the config topic holds it: what `release` compares
    resolved: dict[str, str]  # as the task sees it: its variables resolved (workers.config.providers)
    writes: TaskWrites
    gate: Gate
    job: asyncio.Future[None] | None = None  # the start, then the wait for the reader at the gate


# A prepared run of an item (task, its config, its output, its gate), or None: nothing to prepare.
NewRun = Callable[[Work], Prepared | None]
Context = Callable[[Work, SparkTask, TaskWrites], TaskContext]


class PreparedRuns:
    def __init__(self, new_run: NewRun, context: Context) -> None:
        self.new_run, self.context = new_run, context
        self.runs: dict[Work, Prepared] = {}
        self.warmed: set[Work] = set()  # items whose preparation is over (reported, until assigned)

    def prepare(self, items: frozenset[Work], keep: frozenset[Work], on_warmed: Callable[[], None]) -> None:
        """Prepare each of `items` (in the background; `on_warmed()` once its preparation is
        over, prepared or not); cancel prepared runs of items neither in `items` nor in `keep`
        (assigned here: they start from their prepared run)."""
        for item in sorted(set(self.runs) - items - keep):
            self._spawn_cancel(self.runs.pop(item))
        self.warmed &= items | keep
        for item in sorted(items - set(self.runs) - self.warmed):
            prepared = self.new_run(item)
            if prepared is None:  # nothing to prepare: it starts cold when assigned
                self.warmed.add(item)
                on_warmed()
                continue
            self.runs[item] = prepared
            prepared.job = asyncio.ensure_future(self._prepare(item, prepared, on_warmed))

    async def release(self, item: Work, config: dict[str, str]) -> Prepared | None:
        """`item` is assigned here with `config`: its prepared run goes on, if it has one that is
        still good (else that one is cancelled, and None says: start it afresh)."""
        prepared = self.runs.pop(item, None)
        self.warmed.discard(item)
        if prepared is None:
            return None
        if prepared.job is not None:
            with contextlib.suppress(Exception):
                await prepared.job
        if prepared.config == config and await prepared.task.release():
            log.info("%s starts from its prepared run", work_name(item))
            return prepared
        self._spawn_cancel(prepared)
        return None

    async def cancel_all(self) -> None:
        """This worker stops: prepared runs end at their gates."""
        prepared, self.runs = list(self.runs.values()), {}
        self.warmed.clear()
        await asyncio.gather(*(self._cancel(run) for run in prepared))

    async def _prepare(self, item: Work, prepared: Prepared, on_warmed: Callable[[], None]) -> None:
        task, gate = prepared.task, prepared.gate
        loop = asyncio.get_running_loop()
        try:
            await task.prepare(prepared.resolved, self.context(item, task, prepared.writes), gate)
            deadline = loop.time() + PREPARE_TIMEOUT_S
            while not gate.waiting() and task.prepare_error is None and is_active(task.query):
                if loop.time() > deadline:
                    break
                await asyncio.sleep(0.02)
            log.info("%s prepared: %s", work_name(item), "waiting at its gate" if gate.waiting()
                     else task.prepare_error or "not at its gate in time")  # fmt: skip
        except Exception as exc:  # noqa: BLE001 - it starts cold when assigned
            log.warning("%s could not be prepared: %s", work_name(item), exc)
        finally:
            if self.runs.get(item) is prepared:
                self.warmed.add(item)
                on_warmed()

    def _spawn_cancel(self, prepared: Prepared) -> None:
        asyncio.ensure_future(self._cancel(prepared))

    async def _cancel(self, prepared: Prepared) -> None:
        try:
            await prepared.task.cancel(prepared.job)
            await prepared.writes.close()
        except Exception:  # noqa: BLE001 - a plugin's failure to stop must not stop the worker
            log.exception("a prepared run of %s did not end cleanly", prepared.task)

"""A task that is one Structured Streaming query, run by its worker's Spark runtime.

A connector's Spark task says only *what* to run: `writer()` returns the query's
DataStreamWriter (source -> sink, with format, options and trigger), without a checkpoint
location or a query name. The runtime adds those (`<checkpoint.dir>/<connector>/<task>`,
`<connector>-<task>`), starts the query off the event loop, and stops it within a bound on
revocation. The task reports the query's progress (from the session's streaming query
listener) and fails — FAILED with Spark's error, restartable through the REST API — when the
query ends by itself.

Except when it ends because another run of the same task wrote its checkpoint first: a
worker frozen past its session (a paused machine) resumes with its JVM, whose query plans or
commits a batch before the worker's watchdog stops it, beside the run that took the task
over. The checkpoint's logs take each batch once (an atomic create), so the output stays
exactly once, but the run that loses the race ends with "Concurrent update to the log". If
that is the task's current run, its query starts again from the checkpoint (at most
CONFLICT_RESTARTS times in a row) instead of the task failing.
"""

from __future__ import annotations

import asyncio
import json
import logging
import threading
from abc import abstractmethod
from collections.abc import Mapping
from typing import Any

from .plugins import Task, TaskContext
from .spark_runtime import SparkRuntime, query_name

log = logging.getLogger(__name__)
# What Spark says when another query wrote the same checkpoint's batch first.
CHECKPOINT_CONFLICTS = ("Concurrent update to the log", "ConcurrentModificationException")
CONFLICT_RESTARTS = 3


class SparkTask(Task):
    """stop() bounds its own wait (graceful, then forced) and returns only once the query is
    no longer active: the worker waits for it rather than cutting it short."""

    def __init__(self) -> None:
        self.runtime: SparkRuntime | None = None
        self.query: Any = None
        self._lock = threading.Lock()
        self._progress: dict[str, Any] = {}
        self._first: dict[str, Any] | None = None  # the run's first batch: id, start offsets
        self._last: dict[str, Any] | None = None  # the run's last batch: id, end offsets
        self._stopping = False
        self._conflicts = 0  # checkpoint conflicts in a row (see the module's docstring)

    @abstractmethod
    def writer(self, spark: Any, config: Mapping[str, str], context: TaskContext) -> Any:
        """The query's DataStreamWriter (format, options, trigger; no checkpoint, no name).

        Called off the event loop (it may do IO). None: this task has nothing to run.
        """

    async def start(self, config: Mapping[str, str], context: TaskContext) -> None:
        runtime: SparkRuntime = context.extra["spark"]
        self.runtime = runtime
        loop = asyncio.get_running_loop()
        name = query_name(context.connector, context.task)

        def terminated(error: str | None) -> None:
            conflict = error is not None and any(words in error for words in CHECKPOINT_CONFLICTS)
            if conflict and self._conflicts < CONFLICT_RESTARTS:
                self._conflicts += 1
                log.warning("query %s lost its checkpoint to another run of the task; starting it "
                            "again from the checkpoint", name)  # fmt: skip
                loop.call_soon_threadsafe(lambda: asyncio.ensure_future(restart()))
                return
            failure = RuntimeError(f"query {name} terminated: {error or 'without an error'}")
            loop.call_soon_threadsafe(context.fail, failure)

        def start_query() -> Any:
            writer = self.writer(runtime.session(), config, context)
            if writer is None:
                return None
            return runtime.start_query(writer, context.connector, context.task, self._on_progress, terminated)

        async def restart() -> None:
            if not self._stopping:
                self.query = await asyncio.to_thread(start_query)

        self.query = await asyncio.to_thread(start_query)

    def after_stop(self) -> None:
        """Called off the event loop once this run's query has stopped (if it started one)."""

    async def stop(self, finish_batch: bool = False) -> None:
        """Stop the query; `finish_batch`: let a batch under way commit first (bounded)."""
        self._stopping = True
        query, runtime = self.query, self.runtime
        if query is not None and runtime is not None:
            await asyncio.to_thread(runtime.stop_query, query, self._run_summary, finish_batch)
            await asyncio.to_thread(self.after_stop)
        self.query = None

    def progress(self) -> dict[str, Any]:
        with self._lock:
            return dict(self._progress)

    def _run_summary(self) -> dict[str, Any]:
        """What this run did, once its query has stopped (for the journal)."""
        # The listener's events are asynchronous: batches it has not delivered yet are in
        # the stopped query's own record.
        for progress in _recent(self.query):
            self._on_progress(progress)
        with self._lock:
            rows = self._progress.get("rows", 0)
            return {"rows": rows, "first_batch": self._first, "last_batch": self._last}

    def _on_progress(self, progress: Any) -> None:
        """A batch's progress (Spark's listener thread): totals for status and metrics."""
        durations = progress.durationMs or {}
        if "addBatch" not in durations:
            return  # a trigger that found no new data ran no batch
        rows = int(progress.numInputRows or 0)
        sources = progress.sources
        batch = {
            "batch": progress.batchId,
            "start": _offsets(sources[0].startOffset) if sources else None,
            "end": _offsets(sources[0].endOffset) if sources else None,
        }
        with self._lock:
            if self._progress and progress.batchId <= self._progress["last_batch_id"]:
                return  # already counted (from the listener, or from the stopped query)
            self._conflicts = 0  # a batch went through: conflicts start counting again
            first = self._first is None
            if first:
                self._first = batch
            self._last = batch
            totals = self._progress
            self._progress = {
                "query": progress.name,
                "rows": int(totals.get("rows", 0)) + rows,
                "batches": int(totals.get("batches", 0)) + 1,
                "input_rows_per_second": round(float(progress.inputRowsPerSecond or 0.0), 1),
                "processed_rows_per_second": round(float(progress.processedRowsPerSecond or 0.0), 1),
                "last_batch_ms": int(durations.get("triggerExecution") or 0),
                "last_batch_id": progress.batchId,
            }
        if first and self.runtime is not None:
            # With where its time went: how fast a moved task ingests again (bench/handoff_gap.py).
            self.runtime.journal("first-batch", progress.name, trigger=progress.timestamp,
                                 durations=dict(durations), **batch)  # fmt: skip


def _offsets(value: Any) -> Any:
    """A source's offsets as Spark reports them (JSON text; "None" before the first) -> JSON."""
    if value in (None, "None", "null"):
        return None
    if isinstance(value, str):
        try:
            return json.loads(value)
        except ValueError:
            return value
    return value


def _recent(query: Any) -> list[Any]:
    try:
        return list(query.recentProgress)
    except Exception:  # noqa: BLE001 - the session is gone: nothing more to learn
        return []

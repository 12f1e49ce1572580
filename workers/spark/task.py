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
exactly once, but the run that loses the race ends with "Concurrent update to the log" (an
offset or commit log), or, when both ran the same batch, with "Race while writing batch N"
(the file sink's metadata log: the other run committed that batch's output). If that is the
task's current run, its query starts again from the checkpoint (at most CONFLICT_RESTARTS
times in a row) instead of the task failing; the restarted run finds the batch committed and
skips it.

Spark's own machinery can also fail on a busy machine, where a retry cures it: a Python
process that does not connect back to the JVM within Spark's 10 s, a Python worker or daemon
that dies, a Py4J call that is dropped (`spark_machinery_failed`). Such an end, or such an
error from the start itself, starts the query again from its checkpoint after a backoff
(TRANSIENT_BACKOFF_S, doubling up to TRANSIENT_BACKOFF_MAX_S), and the task stays RUNNING;
only after MACHINERY_RESTARTS in a row with no batch between them does it go FAILED. A
config or data error fails the task at once, with its reason.

A task whose class is `preparable` can be prepared before it is assigned here
(distributed/warm_handoff.py), in one of two ways:
- its source waits at a gate (`source_gate`, start_gate.py): `prepare` starts the query held
  at the gate while another worker still runs the task, `release` (once the task is assigned
  here) lets it go on, `cancel` ends it unreleased. Until it is released the run is not the
  task's: it is journalled `prepared`, not `starting`, leaves no marker and reports no failure.
  Meanwhile `warm_up` does what the held query cannot do before its first batch (readying
  the Python workers that will read, for TopicIngest);
- its source cannot wait (Spark's own file source reads the checkpoint as its query starts):
  `prepare` does what the start can do before the checkpoint is read (`warm_up`: the query's
  shape run once over scratch data, so the JVM has compiled it), and arrives at the gate
  itself; `release` starts the query, whose first batch then runs warm.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import logging
import threading
from abc import abstractmethod
from collections.abc import Awaitable, Mapping
from typing import Any

from workers.plugins.api import Task, TaskContext
from workers.spark.runtime import SparkRuntime, is_active, query_name
from workers.spark.start_gate import Gate

log = logging.getLogger(__name__)
# What Spark says when another query wrote the same checkpoint's batch first: its offset or
# commit log, or (the same batch run twice) its file sink's metadata log.
CHECKPOINT_CONFLICTS = (
    "Concurrent update to the log",
    "ConcurrentModificationException",
    "Race while writing batch",
)
CONFLICT_RESTARTS = 3
# What Spark (4.x) says when its own processes fail, not the task's code or data (each entry:
# words that all appear): a Python planner or worker that did not connect back in time (a
# busy machine), one that died (a planner's connection ends in the middle of a call), the
# Python daemon, a Py4J call between the worker and its JVM that was dropped.
MACHINERY_FAILURES = (
    ("Python worker failed to connect back",),
    ("Timed out while waiting for the Python worker to connect back",),
    ("Python daemon failed to launch worker",),
    ("Failed to open socket to Python daemon",),
    ("Python worker exited unexpectedly",),
    ("java.io.EOFException", "PythonStreamingSourceRunner"),
    ("Py4JNetworkError",),
    ("Answer from Java side is empty",),
    ("Error while sending or receiving",),
)
MACHINERY_RESTARTS = 10
TRANSIENT_BACKOFF_S, TRANSIENT_BACKOFF_MAX_S = 1.0, 30.0


def lost_to_another_run(error: str | None) -> bool:
    """Whether a query ended because another run of its task wrote its checkpoint or its
    output's batch first (not a failure of the task)."""
    return error is not None and any(words in error for words in CHECKPOINT_CONFLICTS)


def spark_machinery_failed(error: str | None) -> bool:
    """Whether a query's end (or its start's error) is one of Spark's own processes failing,
    which a new start cures, rather than the task's config or data."""
    return error is not None and any(all(w in error for w in words) for words in MACHINERY_FAILURES)


def machinery_backoff_s(restarts: int) -> float:
    """The wait before the `restarts`-th start again (1 for the first) after Spark's machinery failed."""
    return float(min(TRANSIENT_BACKOFF_S * 2 ** (restarts - 1), TRANSIENT_BACKOFF_MAX_S))


class SparkTask(Task):
    """stop() bounds its own wait (graceful, then forced) and returns only once the query is
    no longer active: the worker waits for it rather than cutting it short."""

    preparable = False  # can be prepared ahead of its assignment here (see the module's docstring)
    source_gate = True  # prepared: its query's source waits at the gate; else `warm_up` prepares it

    def __init__(self) -> None:
        self.runtime: SparkRuntime | None = None
        self.query: Any = None
        self.gate: Gate | None = None  # a prepared run's start gate
        self._released = True  # a run started by `start`, or a prepared one once released
        self.prepare_error: str | None = None  # a prepared run that ended before its release
        self._name = ""
        self._lock = threading.Lock()
        self._progress: dict[str, Any] = {}
        self._first: dict[str, Any] | None = None  # the run's first batch: id, start offsets
        self._last: dict[str, Any] | None = None  # the run's last batch: id, end offsets
        self._stopping = False
        self._conflicts = 0  # checkpoint conflicts in a row (see the module's docstring)
        self._machinery = 0  # starts again after Spark's machinery failed, in a row
        self._starting = asyncio.Lock()  # held while the query starts (or starts again)
        self._stop_asked = asyncio.Event()  # ends a wait before a start again
        # Prepared by `warm_up`: the config, the context, and the query's writer built ahead
        self._warmed: tuple[Mapping[str, str], TaskContext, Any] | None = None

    @abstractmethod
    def writer(self, spark: Any, config: Mapping[str, str], context: TaskContext) -> Any:
        """The query's DataStreamWriter (format, options, trigger; no checkpoint, no name).

        Called off the event loop (it may do IO). None: this task has nothing to run.
        """

    def begin_run(self) -> None:
        """Called off the event loop as this run becomes the task's (before its query reads)."""

    def warm_up(self, spark: Any, config: Mapping[str, str], context: TaskContext) -> None:
        """A prepared run's work ahead of its first batch: nothing that reads or writes the
        task's checkpoint or output. For a task whose source waits at a gate, it runs beside
        the held query's start; a failure only costs the speed it would have brought. Called
        off the event loop."""

    def gate_options(self) -> dict[str, str]:
        """The source options that hold a prepared run at its gate (none for a started one)."""
        if self.gate is None:
            return {}
        return {"startGate": str(self.gate.path), "startGateTimeoutMs": str(int(self.gate.timeout_s * 1000))}

    async def start(self, config: Mapping[str, str], context: TaskContext) -> None:
        await self._launch(config, context, None)

    async def prepare(self, config: Mapping[str, str], context: TaskContext, gate: Gate) -> None:
        """Start the query ahead of the task's assignment here, held at `gate` until `release`
        (or, for a task whose source cannot wait there, warm it up and arrive at `gate`)."""
        if self.source_gate:
            warming = asyncio.ensure_future(self._warm_up_beside(config, context))
            try:
                await self._launch(config, context, gate)
            finally:
                await warming
            return
        self.runtime, self.gate, self._released = context.extra["spark"], gate, False
        runtime = self.runtime

        def warm_and_build() -> Any:
            """Warm up, then build the query's writer: a file source lists its input to find its
            partition columns as its DataFrame is made (0.2 s at the release, in a probe)."""
            self.warm_up(runtime.session(), config, context)
            return self.writer(runtime.session(), config, context)

        try:
            writer = await asyncio.to_thread(warm_and_build)
        except Exception as exc:  # noqa: BLE001 - it starts as it would have, unprepared
            self.prepare_error = f"{type(exc).__name__}: {exc}"
            return
        self._warmed = (config, context, writer)
        gate.arrive()

    async def _warm_up_beside(self, config: Mapping[str, str], context: TaskContext) -> None:
        runtime: SparkRuntime = context.extra["spark"]
        try:
            await asyncio.to_thread(lambda: self.warm_up(runtime.session(), config, context))
        except Exception as exc:  # noqa: BLE001 - the held query is prepared all the same
            log.info("%s: its warm-up failed (%s); its first batch runs cold",
                     query_name(context.connector, context.task), exc)  # fmt: skip

    async def release(self) -> bool:
        """The task is assigned here: its prepared query goes on (or, warmed up, starts). False
        if it ended meanwhile (then it is stopped, and the task is started afresh)."""
        if not self.source_gate:
            if self._warmed is None or self.prepare_error or self._stopping:
                return False
            gate = self.gate
            try:
                config, context, writer = self._warmed
                await self._launch(config, context, None, writer)
            except Exception as exc:  # noqa: BLE001 - started afresh, which reports what fails
                log.warning("%s: the warmed-up start failed (%s); starting it afresh", self._name, exc)
                return False
            finally:
                if gate is not None:
                    gate.remove()
            return True
        if self.runtime is None or self.gate is None or not is_active(self.query) or self.prepare_error:
            return False
        self.runtime.journal("starting", self._name, prepared=True)  # from here it may read
        await asyncio.to_thread(self.begin_run)
        self._released = True
        self.gate.grant()
        return True

    async def cancel(self, starting: Awaitable[Any] | None = None) -> None:
        """End a prepared run that is not released (`starting`: its start, maybe under way):
        its reader raises at the gate, so the query ends without having read anything."""
        if self.query is not None and self.runtime is not None:
            self.runtime.expect_stop(self.query)
        if self.gate is not None:
            self.gate.cancel()
        if starting is not None:
            with contextlib.suppress(Exception):
                await starting
        await self.stop()

    async def _launch(
        self, config: Mapping[str, str], context: TaskContext, gate: Gate | None, built: Any = None
    ) -> None:
        """Start the query (held at `gate`, if given); `built`: its writer, built while it was
        prepared, for its first start (a start again builds its own)."""
        runtime: SparkRuntime = context.extra["spark"]
        self.runtime, self.gate, self._released = runtime, gate, gate is None
        loop = asyncio.get_running_loop()
        name = self._name = query_name(context.connector, context.task)

        def terminated(error: str | None) -> None:
            if not self._released:  # not the task's run yet: `release` finds it ended
                self.prepare_error = error or "the query ended"
                return
            if lost_to_another_run(error) and self._conflicts < CONFLICT_RESTARTS:
                self._conflicts += 1
                log.warning("query %s lost its checkpoint to another run of the task; starting it "
                            "again from the checkpoint", name)  # fmt: skip
                loop.call_soon_threadsafe(lambda: asyncio.ensure_future(restart(0.0)))
                return
            if self._machinery_restart(name, error):
                loop.call_soon_threadsafe(lambda: asyncio.ensure_future(restart(self._backoff())))
                return
            failure = RuntimeError(f"query {name} terminated: {error or 'without an error'}")
            loop.call_soon_threadsafe(context.fail, failure)

        def start_query() -> Any:
            nonlocal built
            writer, built = built, None
            if writer is None:
                writer = self.writer(runtime.session(), config, context)
            if writer is None:
                return None
            if self._released:
                self.begin_run()
            return runtime.start_query(writer, context.connector, context.task, self._on_progress,
                                       terminated, prepared=not self._released)  # fmt: skip

        async def start_until_started() -> Any:
            """Start the query; a start that Spark's machinery failed is tried again."""
            while not self._stopping:
                try:
                    return await asyncio.to_thread(start_query)
                except Exception as exc:
                    error = f"{type(exc).__name__}: {exc}"
                    if not self._released or not self._machinery_restart(name, error):
                        raise
                await self._pause(self._backoff())
            return None

        async def restart(after_s: float) -> None:
            await self._pause(after_s)
            async with self._starting:  # a stop waits for a start under way, and comes after it
                if self._stopping:
                    return
                try:
                    self.query = await start_until_started()
                except Exception as exc:  # noqa: BLE001 - the task's failure, with its reason
                    context.fail(exc)

        async with self._starting:
            self.query = await start_until_started()

    def _machinery_restart(self, name: str, error: str | None) -> bool:
        """Whether the query starts again after `error` (Spark's machinery failed, and not
        MACHINERY_RESTARTS times in a row already); says so in the log."""
        if not spark_machinery_failed(error) or self._machinery >= MACHINERY_RESTARTS:
            return False
        self._machinery += 1
        log.warning("query %s: Spark's own processes failed (%s); starting it again from its checkpoint "
                    "in %.0f s (%d of %d)", name, (error or "").splitlines()[0][:300], self._backoff(),
                    self._machinery, MACHINERY_RESTARTS)  # fmt: skip
        return True

    def _backoff(self) -> float:
        return machinery_backoff_s(max(self._machinery, 1))

    async def _pause(self, seconds: float) -> None:
        """Wait `seconds`, or less if the task is being stopped meanwhile."""
        with contextlib.suppress(TimeoutError):
            await asyncio.wait_for(self._stop_asked.wait(), seconds)

    def after_stop(self) -> None:
        """Called off the event loop once this run's query has stopped (if it started one)."""

    async def stop(self, finish_batch: bool = False) -> None:
        """Stop the query; `finish_batch`: let a batch under way commit first (bounded)."""
        self._stopping = True
        self._stop_asked.set()
        async with self._starting:
            query, runtime = self.query, self.runtime
            if query is not None and runtime is not None:
                summary = self._run_summary if self._released else lambda: {"prepared_only": True}
                await asyncio.to_thread(runtime.stop_query, query, summary, finish_batch and self._released)
                if self._released:
                    await asyncio.to_thread(self.after_stop)
        if self.gate is not None:
            self.gate.remove()
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
            self._conflicts = self._machinery = 0  # a batch went through: they start counting again
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

"""The worker's Spark runtime: one long-lived SparkSession that runs every Spark task's query.

A SparkSession costs seconds to start and hundreds of megabytes, and a cold session takes
4-6 s to a query's first batch where a warm one takes under one (pyspark-notes §2-3). So a
worker creates one session — on a thread when it starts (`spark.session.warmup=true`, the
default), or on its first Spark task (`false`: workers that never run a Spark task never
start a JVM) — and runs a trivial job to warm it. Each task is then a named streaming query
in it: `<connector>-<task>`, checkpointed under `<checkpoint.dir>/<connector>/<task>` (the name
encoded as one directory name, `plugins.names.path_segment`), which
every worker shares, so whichever worker runs the task next resumes after its last
committed batch.

Stopping is where ownership is decided. Spark has no lock across processes: two queries on
one checkpoint are only detected after the fact. So `stop_query` returns only once the
query is no longer active: a graceful stop bounded by `task.shutdown.graceful.timeout.ms`
(for a revocation or a leave, the batch under way commits first, within half of it, so the
next owner goes on from there), then the query's jobs are cancelled and it is stopped
again, and if even that leaves it running the worker process ends itself (its JVM goes
with it). The worker acknowledges a revocation only after that, so a task never runs on
two workers at once. Each start and stop is journalled (log lines `spark-query {json}`)
with its wall-clock time, so the one-owner-at-a-time rule can be checked from outside,
kill -9 included.

The JVM is a child of the worker that exits when the worker dies: it watches its stdin, a
pipe from the worker, and exits on EOF (pyspark-notes §3: within ~3 s of a SIGKILL).

Spark's own Python processes (the data source planner and Python workers) must use this
interpreter — the one with pyarrow and the connectors installed — and find the connectors'
modules, those on `plugin.path` too, so `PYSPARK_PYTHON` and `PYTHONPATH` are set before the
JVM starts. The planners of all the session's streaming queries run in one process, the
worker's planner host (planner_host.py), started before the session: one process and a
thread per query instead of a process per query.
"""

from __future__ import annotations

import json
import logging
import os
import shutil
import signal
import sys
import tempfile
import threading
import time
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

from workers.plugins.names import path_segment
from workers.spark.planner_host import HOST_SOCKET_ENV, PlannerHost
from workers.spark.start_gate import Gate

log = logging.getLogger(__name__)

CHECKPOINT_MANAGER_SETTING = "spark.sql.streaming.checkpointFileManagerClass"
# Settings every session gets unless the worker config says otherwise.
DEFAULTS = {
    "spark.ui.showConsoleProgress": "false",
    # A second start on an active checkpoint in this session is an error, not a silent stop.
    "spark.sql.streaming.stopActiveRunOnRestart": "false",
    # Spark's default redaction, plus `jaas`: TopicIngest's `kafka.sasl.jaas.config` option holds
    # a password, and options are shown in plans and the UI.
    "spark.redaction.regex": "(?i)secret|password|token|access[.]?key|jaas",
    # Checkpoints and the file sink's metadata logs through Hadoop's FileSystem API, not its
    # FileContext API. On the local file system (checkpoint.dir is a local path) both rename a
    # log entry into place the same way, a check that it is absent and then rename(2), but
    # FileContext resolves symlinks first, and Hadoop without its native library (as PySpark
    # ships it) does that by running `readlink` in a new process: 25 of every batch's 36 forks
    # of the JVM, and half of a small batch's time on 2 cores (docs/performance.md).
    CHECKPOINT_MANAGER_SETTING: "org.apache.spark.sql.execution.streaming.checkpointing."
    "FileSystemBasedCheckpointFileManager",
}
JOURNAL = "spark-query"
# In a task's status while the worker's session starts (`waiting_message`): what to look for.
SESSION_STARTING = "Spark session is starting"
# Where this package lives: Spark's Python processes import connectors from here.
_SOURCE_ROOT = str(Path(__file__).resolve().parents[2])

ProgressHandler = Callable[[Any], None]
TerminationHandler = Callable[[str | None], None]


def checkpoint_path(checkpoint_dir: str | Path, connector: str, task: int) -> str:
    """A task's checkpoint, the same on every worker sharing `checkpoint.dir`; the connector's
    name is encoded (`plugins.names.path_segment`), so no name leads outside it."""
    return str(Path(checkpoint_dir) / path_segment(connector) / str(task))


def query_name(connector: str, task: int) -> str:
    return f"{connector}-{task}"


def python_environment(environ: dict[str, str], plugin_paths: Sequence[str] = ()) -> dict[str, str]:
    """The interpreter and import path Spark's Python processes need (what to add to `environ`).

    With `plugin.path` locations (`plugin_paths`, at the end of this process's import path),
    the whole of this process's import path comes before them: on PYTHONPATH they would
    otherwise come before the interpreter's own packages, and a plugin's copy of a package
    (pyarrow, say) would replace the worker's in Spark's processes but not in the worker.
    """
    paths = [_SOURCE_ROOT] + [p for p in environ.get("PYTHONPATH", "").split(os.pathsep) if p]
    if plugin_paths:
        paths += [p for p in sys.path if p and p not in plugin_paths] + list(plugin_paths)
    return {
        "PYSPARK_PYTHON": environ.get("PYSPARK_PYTHON", sys.executable),
        "PYSPARK_DRIVER_PYTHON": environ.get("PYSPARK_DRIVER_PYTHON", sys.executable),
        "PYTHONPATH": os.pathsep.join(dict.fromkeys(paths)),
    }


class SparkRuntime:
    def __init__(
        self,
        master: str,
        settings: dict[str, str],
        checkpoint_dir: str,
        stop_timeout_ms: int,
        worker_id: str = "",
        plugin_paths: Sequence[str] = (),
    ) -> None:
        """`plugin_paths`: the `plugin.path` locations the worker put on its import path, which
        Spark's Python processes need too."""
        self.master, self.settings = master, dict(settings)
        self.plugin_paths = list(plugin_paths)
        self.checkpoint_dir = Path(checkpoint_dir)
        self.stop_timeout_ms = max(stop_timeout_ms, 1000)
        self.worker_id = worker_id
        self.start_s: float | None = None  # how long the session took to start (and warm)
        # What `/` and a waiting task's status say (`describe`): not started, starting, ready
        # or failed, since when (wall clock), and the error that failed it.
        self.state, self.state_since, self.error = "NOT_STARTED", time.time(), ""
        self.queries_started = 0
        self.queries_stopped = 0
        self._spark: Any = None
        self._warming = False
        self._lock = threading.RLock()
        self._handlers: dict[str, tuple[ProgressHandler, TerminationHandler]] = {}  # by query name
        # By run id: a task's runs share its query id (kept in the checkpoint), and a stopped
        # run's events may arrive after the next run of the task has started.
        self._runs: dict[str, str] = {}  # run id -> query name
        self._current: dict[str, str] = {}  # query name -> run id of its latest run
        self._stopping: set[str] = set()  # run ids of runs stopped on purpose
        self._gates: Path | None = None  # prepared starts' gate files (local: the driver reads them)
        self._gates_made = 0
        self.planner_host: PlannerHost | None = None

    # -- the session ----------------------------------------------------------------------

    def session(self) -> Any:
        """The worker's SparkSession, created on first use (thread-safe; blocks while starting)."""
        with self._lock:
            if self._spark is None:
                started = time.monotonic()
                self._set_state("STARTING")
                os.environ.update(python_environment(dict(os.environ), self.plugin_paths))
                self._start_planner_host()
                # py4j logs every listener callback at INFO.
                logging.getLogger("py4j").setLevel(logging.WARNING)
                from pyspark.sql import SparkSession

                builder = SparkSession.builder.master(self.master).appName(f"connect-worker {self.worker_id}")
                for key, value in {**DEFAULTS, **self.settings}.items():
                    builder = builder.config(key, value)
                # stop() waits this long for the stream thread, then fails (default: forever):
                # with the wait for a batch under way (`_finish_batch`), one stop's bound.
                builder = builder.config("spark.sql.streaming.stopTimeout", f"{self.stop_timeout_ms // 2}ms")
                try:
                    spark = builder.getOrCreate()
                except Exception as exc:
                    self._set_state("FAILED", f"{type(exc).__name__}: {exc}")
                    raise
                spark.streams.addListener(_listener(self))
                self._spark = spark
                self.start_s = time.monotonic() - started
                if not self._warming:
                    self._set_state("READY")
            return self._spark

    def _start_planner_host(self) -> None:
        """The process that plans every query of the session (planner_host.py), before
        the JVM starts (it passes its environment on to the planners); without it, Spark
        starts a planner process for each query, as it does by default."""
        os.environ.pop(HOST_SOCKET_ENV, None)  # another process's host, inherited: not this session's
        host = PlannerHost()
        try:
            host.start(os.environ)
        except (OSError, RuntimeError):
            log.exception("the Spark planner host did not start; each query gets a planner process")
            return
        os.environ.update(host.environment(os.environ))
        self.planner_host = host

    @property
    def ready(self) -> bool:
        return self._spark is not None

    def warm(self) -> None:
        """Start the session and run a throw-away streaming query in it (warmup.py),
        so the first task's first batch is as fast as any later one's."""
        started = time.monotonic()
        self._warming = True
        try:
            from workers.spark.warmup import run_warmup_query

            run_warmup_query(self.session())
        except Exception as exc:  # noqa: BLE001 - a task start will report the same failure with its trace
            log.exception("the Spark session did not start")
            if self.state != "FAILED" and self._spark is None:
                self._set_state("FAILED", f"{type(exc).__name__}: {exc}")
            elif self._spark is not None:
                self._set_state("READY")  # the session runs: only the warm-up query failed
            return
        finally:
            self._warming = False
        self.start_s = time.monotonic() - started
        self._set_state("READY")
        log.info("Spark session ready in %.1f s (master %s)", self.start_s, self.master)

    def describe(self) -> dict[str, Any]:
        """The runtime as `/` shows it: state (NOT_STARTED, STARTING, READY, FAILED), since
        when, the master, and how long the start took or what failed it."""
        described: dict[str, Any] = {"state": self.state, "master": self.master,
                                     "since": _iso(self.state_since)}  # fmt: skip
        if self.start_s is not None:
            described["start_seconds"] = round(self.start_s, 1)
        if self.error:
            described["error"] = self.error
        return described

    def waiting_message(self) -> str:
        """What a task assigned here says while the session is not ready."""
        return (f"This worker's {SESSION_STARTING} (since {_iso(self.state_since)}, spark.master "
                f"{self.master}); the task starts once it is ready.")  # fmt: skip

    def _set_state(self, state: str, error: str = "") -> None:
        self.state, self.state_since, self.error = state, time.time(), error

    def close(self) -> None:
        with self._lock:
            if self._gates is not None:  # prepared runs end at their gates, not at their timeout
                for gate in self._gates.glob("*.waiting"):
                    Gate(gate.with_suffix(""), 0).cancel_unless_granted()
            if self._spark is not None:
                for query in list(self._spark.streams.active):
                    try:
                        self.stop_query(query)
                    except Exception:  # noqa: BLE001 - the session stops anyway
                        log.exception("query %s did not stop at shutdown", query.name)
                self._spark.stop()
                self._spark = None
            if self.planner_host is not None:
                self.planner_host.stop()
                self.planner_host.forget(os.environ)
                self.planner_host = None
            if self._gates is not None:
                shutil.rmtree(self._gates, ignore_errors=True)
                self._gates = None

    # -- queries --------------------------------------------------------------------------

    def checkpoint_of(self, connector: str, task: int) -> str:
        return checkpoint_path(self.checkpoint_dir, connector, task)

    def gate(self, connector: str, task: int, timeout_s: float) -> Gate:
        """A new start gate for a prepared run of a task (start_gate.py)."""
        with self._lock:
            if self._gates is None:
                self._gates = Path(tempfile.mkdtemp(prefix="spark-start-gates-"))
            self._gates_made += 1
            made = self._gates_made
        return Gate(self._gates / f"{path_segment(connector)}-{task}-{made}", timeout_s)

    def start_query(
        self,
        writer: Any,
        connector: str,
        task: int,
        on_progress: ProgressHandler,
        on_terminated: TerminationHandler,
        prepared: bool = False,
    ) -> Any:
        """Start a task's query from its writer (source -> sink, format, options, trigger).

        `on_progress(progress)` is called for each batch and `on_terminated(error)` when the
        query ends by itself (not when `stop_query` stops it), on Spark's listener threads.
        `prepared`: the query waits at its start gate; it is journalled as `starting` only
        when the gate is granted.
        """
        name = query_name(connector, task)
        spark = self.session()
        if self.planner_host is not None:
            self.planner_host.ensure_running()
        for active in spark.streams.active:
            if active.name == name:  # a previous run of this task on this worker, not yet gone
                self.stop_query(active)
        self._handlers[name] = (on_progress, on_terminated)
        # Journalled before start(): from here on the query may be running.
        self.journal("prepared" if prepared else "starting", name)
        try:
            query = (
                writer.option("checkpointLocation", self.checkpoint_of(connector, task))
                .queryName(name)
                .start()
            )
        except BaseException:
            self._handlers.pop(name, None)
            self.journal("stopped", name, started=False)
            raise
        self.queries_started += 1
        return query

    def stop_query(
        self, query: Any, summary: Callable[[], dict[str, Any]] | None = None, finish_batch: bool = False
    ) -> None:
        """Stop `query`; returns only once it is no longer active (graceful, forced, or the end).

        `summary()`, called once the query has stopped, adds what the run did to the journal.
        `finish_batch`: a batch under way may commit first (`_finish_batch`).
        """
        name = query.name
        self.expect_stop(query)
        if finish_batch:
            self._finish_batch(query)
        try:
            query.stop()
        except Exception as exc:  # noqa: BLE001 - the graceful stop timed out: force it
            log.warning("query %s did not stop within %d ms (%s); cancelling its jobs",
                        name, self.stop_timeout_ms, exc)  # fmt: skip
            try:
                self.session().sparkContext.cancelJobGroup(str(query.runId))
                query.stop()
            except Exception:  # noqa: BLE001 - checked below
                log.exception("query %s did not stop after its jobs were cancelled", name)
        deadline = time.monotonic() + self.stop_timeout_ms / 1000
        while is_active(query) and time.monotonic() < deadline:
            time.sleep(0.05)
        if is_active(query):
            # Acknowledging the revocation now would let another worker run the task while
            # this one still does. Ending the process ends the query (and the JVM with it).
            log.critical("query %s is still active after being stopped; the worker exits", name)
            logging.shutdown()
            os.kill(os.getpid(), signal.SIGKILL)
        self.queries_stopped += 1
        self._handlers.pop(name, None)
        self.journal("stopped", name, **(summary() if summary is not None else {}))

    def expect_stop(self, query: Any) -> None:
        """`query` is about to end on purpose (stopped, or a prepared run cancelled at its gate):
        its end is not journalled as one it came to by itself."""
        self._stopping.add(str(query.runId))

    def _finish_batch(self, query: Any) -> None:
        """Let a batch under way commit before the query stops, for at most half the stop's
        bound: what it read is then the next owner's starting point, not work it does again
        (a stop in the middle of a batch throws the batch away). The stop comes at the first
        sign the batch ended, so it may cut the planning of the next one short: that batch,
        if its offsets were written, is replayed by the next run, as after any stop."""
        deadline = time.monotonic() + self.stop_timeout_ms / 2000
        began = _last_batch(query)
        while time.monotonic() < deadline and _in_batch(query) and _last_batch(query) == began:
            time.sleep(0.01)

    def active_queries(self) -> list[str]:
        if self._spark is None:
            return []
        return sorted(q.name for q in self._spark.streams.active)

    @staticmethod
    def read_journal(log_text: str) -> list[dict[str, Any]]:
        """The journal entries in a worker's log, in the order they were written."""
        entries = []
        for line in log_text.splitlines():
            _, mark, payload = line.partition(f" {JOURNAL} ")
            if mark and payload.startswith("{"):
                entries.append(json.loads(payload))
        return entries

    def journal(self, event: str, name: str, **extra: Any) -> None:
        """One line `spark-query {json}` in the worker log: when a query started or stopped."""
        entry = {"event": event, "query": name, "worker": self.worker_id, "at": time.time(), **extra}
        log.info("%s %s", JOURNAL, json.dumps(entry, sort_keys=True))

    # -- listener events (Spark's callback threads) ----------------------------------------

    def _progress(self, progress: Any) -> None:
        if self._current.get(progress.name) != str(progress.runId):
            return  # an earlier run's batch, delivered late: not the task's current run's
        handlers = self._handlers.get(progress.name)
        if handlers is not None:
            handlers[0](progress)

    def _started(self, run_id: str, name: str) -> None:
        self._runs[run_id] = name
        self._current[name] = run_id

    def _terminated(self, run_id: str, error: str | None) -> None:
        name = self._runs.pop(run_id, None)
        stopped = run_id in self._stopping
        self._stopping.discard(run_id)
        handlers = self._handlers.get(name) if name is not None else None
        if handlers is None or stopped or self._current.get(name) != run_id:
            # Stopped on purpose, an earlier run of the task whose end came late, or no
            # task's query (the warm-up).
            return
        self.journal("ended", name, error=(error or "")[:300])  # by itself: not stopped on purpose
        handlers[1](error)


def _iso(at: float) -> str:
    return time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime(at))


def _in_batch(query: Any) -> bool:
    try:
        return bool(query.isActive and query.status["isTriggerActive"])
    except Exception:  # noqa: BLE001 - the session is gone, and its queries with it
        return False


def _last_batch(query: Any) -> int:
    try:
        progress = query.lastProgress
        return int(progress.batchId) if progress is not None else -1
    except Exception:  # noqa: BLE001
        return -1


def is_active(query: Any) -> bool:
    try:
        return bool(query.isActive)
    except Exception:  # noqa: BLE001 - the session is gone, and its queries with it
        return False


def _listener(runtime: SparkRuntime) -> Any:
    """One listener per session, routing Spark's query events to the runtime.

    Defined here so that importing this module does not import PySpark (workers that run no
    Spark task never load it).
    """
    from pyspark import SparkContext
    from pyspark.sql.streaming import StreamingQueryListener
    from pyspark.sql.streaming.listener import (
        JStreamingQueryListener,
        QueryProgressEvent,
        StreamingQueryProgress,
    )

    class ProgressFromJson(JStreamingQueryListener):  # type: ignore[misc]
        """PySpark's own bridge, except that a batch's progress crosses as its JSON, in one
        Py4J call, and is read with PySpark's `fromJson`: its `fromJObject` asks the JVM for
        each field, source and map entry in a call of its own, 90 ms a batch (190 at the 90th
        percentile) against 1.5 ms, and a listener slower than the batches falls behind (23 s
        behind, two tasks at two batches a second each, in bench/handoff_gap.py)."""

        def onQueryProgress(self, jevent: Any) -> None:  # noqa: N802 - Spark's names
            progress = StreamingQueryProgress.fromJson(json.loads(jevent.progress().json()))
            self.pylistener.onQueryProgress(QueryProgressEvent(progress))

    class Listener(StreamingQueryListener):  # type: ignore[misc]
        @property
        def _jlistener(self) -> Any:
            if not hasattr(self, "_jlistener_from_json"):
                jvm = SparkContext._jvm
                self._jlistener_from_json = jvm.PythonStreamingQueryListenerWrapper(ProgressFromJson(self))
            return self._jlistener_from_json

        def onQueryStarted(self, event: Any) -> None:  # noqa: N802 - Spark's names
            runtime._started(str(event.runId), event.name)  # called before start() returns

        def onQueryProgress(self, event: Any) -> None:  # noqa: N802
            try:
                runtime._progress(event.progress)
            except Exception:  # noqa: BLE001 - a listener must not fail Spark's event bus
                log.exception("query progress could not be recorded")

        def onQueryIdle(self, event: Any) -> None:  # noqa: N802
            pass

        def onQueryTerminated(self, event: Any) -> None:  # noqa: N802
            try:
                runtime._terminated(str(event.runId), event.exception)
            except Exception:  # noqa: BLE001
                log.exception("query termination could not be recorded")

    return Listener()

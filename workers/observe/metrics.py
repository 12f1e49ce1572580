"""A worker's figures (`GET /metrics`): taken as one snapshot, written as Prometheus text.

The herder takes the snapshot (`WorkerFigures`) from its membership, task runner and Spark
runtime; this module only writes it out, so the REST layer reads no one's attributes.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from connect_rebalance.prometheus import Exposition
from connect_rebalance.work import Work
from workers.observe.rebalance_clock import RebalanceClock
from workers.observe.timeline import ClusterTimeline

# A Spark task's progress figures (SparkTask.progress): Prometheus name, type and help.
TASK_PROGRESS_METRICS = (
    ("rows", "connect_worker_task_rows_total", "counter", "Rows this task read or wrote (this run)."),
    ("batches", "connect_worker_task_batches_total", "counter", "Micro-batches this task's query ran."),
    ("input_rows_per_second", "connect_worker_task_input_rows_per_second", "gauge",
     "Rows per second arriving, last batch."),
    ("processed_rows_per_second", "connect_worker_task_processed_rows_per_second", "gauge",
     "Rows per second processed, last batch."),
    ("last_batch_ms", "connect_worker_task_last_batch_duration_ms", "gauge", "Last batch's duration."),
)  # fmt: skip


@dataclass(frozen=True)
class WorkerFigures:
    rebalances: int
    epoch: int
    assignor: str  # of the current assignment ("" before the first)
    clock: RebalanceClock
    zombie_stops: int
    started: Mapping[str, int]  # per connector
    stopped: Mapping[str, int]
    running: Mapping[str, int]
    spark_ready: bool
    spark_started: int
    spark_stopped: int
    task_progress: Sequence[tuple[Work, Mapping[str, Any]]]
    timeline: ClusterTimeline  # the connect group as this worker sees it (timeline.py)
    now: float  # wall clock, s: open unassigned spans count up to it
    configured: Mapping[str, int]  # connector -> its number of task configs
    row_rates: Mapping[Work, float]  # rows/s of the tasks running here


def metrics_text(figures: WorkerFigures) -> str:
    clock = figures.clock

    def per_connector(counts: Mapping[str, int]) -> list[tuple[dict[str, str], int]]:
        """A series per connector that exists or still runs here: a deleted one's series
        go, as Kafka Connect drops a deleted connector's metrics."""
        return [
            ({"connector": connector}, count)
            for connector, count in sorted(counts.items())
            if connector in figures.configured or figures.running.get(connector)
        ]

    exposition = (
        Exposition()
        .family("connect_worker_rebalances_total", "counter", "Rebalances this worker took part in.",
                [({}, figures.rebalances)])
        .family("connect_worker_member_epoch", "gauge", "This worker's member epoch (generation).",
                [({}, figures.epoch)])
        .family("connect_worker_assignor", "gauge",
                "1 for the assignor of this worker's assignment (connect: the client assignor; "
                "classic: the embedded protocol).",
                [({"assignor": figures.assignor}, 1)] if figures.assignor else [])
        .summary("connect_worker_rebalance_seconds",
                 "Time to converge: from the first change a rebalance brought this worker until "
                 "everything it was given runs and nothing is left to stop.",
                 [({}, clock.total_s, clock.count)])
        .family("connect_worker_rebalance_max_seconds", "gauge", "The longest time to converge.",
                [({}, clock.max_s)])
        .family("connect_worker_rebalance_last_seconds", "gauge", "The last time to converge.",
                [({}, clock.last_s)])
        .family("connect_worker_rebalancing", "gauge", "1 while a rebalance is under way on this worker.",
                [({}, int(clock.rebalancing))])
        .family("connect_worker_zombie_stops_total", "counter",
                "Times this worker stopped its work on losing the coordinator.",
                [({}, figures.zombie_stops)])
        .family("connect_worker_work_started_total", "counter", "Connectors and tasks started.",
                per_connector(figures.started))
        .family("connect_worker_work_stopped_total", "counter", "Connectors and tasks stopped.",
                per_connector(figures.stopped))
        .family("connect_worker_running", "gauge", "Connectors and tasks running now.",
                per_connector(figures.running))
        .family("connect_worker_spark_session_ready", "gauge",
                "1 once the worker's SparkSession has started.", [({}, int(figures.spark_ready))])
        .family("connect_worker_spark_queries_started_total", "counter",
                "Streaming queries this worker started.", [({}, figures.spark_started)])
        .family("connect_worker_spark_queries_stopped_total", "counter",
                "Streaming queries this worker stopped (and saw inactive).", [({}, figures.spark_stopped)])
    )  # fmt: skip
    progress = [
        ({"connector": connector, "task": str(task)}, figures)
        for (connector, task), figures in figures.task_progress
    ]
    for key, metric, kind, about in TASK_PROGRESS_METRICS:
        samples = [(labels, values[key]) for labels, values in progress if key in values]
        exposition = exposition.family(metric, kind, about, samples)
    return _timeline_families(exposition, figures).text()


def _timeline_families(exposition: Exposition, figures: WorkerFigures) -> Exposition:
    """The connect group's figures, the same the web view shows (ClusterTimeline.connector_figures)."""
    connectors = figures.timeline.connector_figures(figures.now, figures.configured)

    def each(key: str) -> list[tuple[dict[str, str], float]]:
        return [({"connector": name}, values[key]) for name, values in connectors.items()]

    gaps = [({"connector": name}, values["handoff_gap_total_s"], values["handoff_gaps"])
            for name, values in connectors.items()]  # fmt: skip
    epoch = figures.timeline.epoch
    rates = [({"connector": connector, "task": str(task)}, rate)
             for (connector, task), rate in sorted(figures.row_rates.items())]  # fmt: skip
    return (
        exposition
        .family("connect_worker_connector_unassigned_seconds_total", "counter",
                "Seconds during which the connector had at least one task unassigned (from the "
                "status topic, since this worker started).", each("unassigned_s"))
        .family("connect_worker_connector_unassigned_tasks", "gauge",
                "The connector's tasks unassigned now.", each("unassigned_tasks"))
        .summary("connect_worker_connector_handoff_gap_seconds",
                 "Handoff gap of moved tasks: from a task's stop on one worker to its start on another.",
                 gaps)
        .family("connect_worker_connector_handoff_gap_max_seconds", "gauge",
                "The longest handoff gap of the connector's moved tasks.", each("handoff_gap_max_s"))
        .family("connect_worker_group_epoch", "gauge", "The connect group's epoch, as last described.",
                [({}, epoch)] if epoch is not None else [])
        .family("connect_worker_task_rows_per_second", "gauge",
                "Rows per second of a task running here, over the last 10 s.", rates)
    )  # fmt: skip

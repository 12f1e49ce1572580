"""The worker's timeline of its connect group (workers/observe/timeline.py), on a virtual clock:
given a group of w1-w3 running orders' 4 tasks, when w4 joins and one task moves, then ..."""

from __future__ import annotations

import pytest

from workers.observe.timeline import ClusterTimeline

pytestmark = pytest.mark.unit


def three_workers() -> ClusterTimeline:
    """orders' tasks 0-3 on w1, w2, w3, w1 since t=10; the group at epoch 5."""
    timeline = ClusterTimeline(since=0.0)
    timeline.group(5, ["w1", "w2", "w3"], 9.0)
    for task, worker in enumerate(["w1", "w2", "w3", "w1"]):
        timeline.status(("orders", task), "RUNNING", worker, 10.0)
    return timeline


def test_a_join_that_moves_one_task_is_an_epoch_entry_and_a_move_with_its_gap() -> None:
    timeline = three_workers()
    timeline.group(6, ["w1", "w2", "w3", "w4"], 20.0)
    timeline.status(("orders", 3), "UNASSIGNED", "w1", 20.1)
    timeline.status(("orders", 3), "RUNNING", "w4", 20.4)
    entries = timeline.snapshot()["entries"]
    assert entries[-2] == {"kind": "epoch", "at": 20.0, "epoch": 6, "previous": 5, "joined": ["w4"],
                           "left": [], "members": ["w1", "w2", "w3", "w4"]}  # fmt: skip
    move = entries[-1]
    assert (move["kind"], move["item"], move["from"], move["to"]) == ("move", "orders-3", "w1", "w4")
    assert move["gap_s"] == pytest.approx(0.3)
    gaps = timeline.handoff_gaps("orders")
    assert (gaps.count, gaps.total_s, gaps.max_s) == (1, pytest.approx(0.3), pytest.approx(0.3))
    assert timeline.unassigned_seconds("orders", 30.0, 4) == pytest.approx(0.3)
    runs = [(r["task"], r["worker"], r["started"], r["ended"]) for r in timeline.snapshot()["runs"]]
    assert (3, "w1", 10.0, 20.1) in runs and (3, "w4", 20.4, None) in runs
    assert timeline.workers() == ["w1", "w2", "w3", "w4"]


def test_a_connectors_unassigned_seconds_are_the_union_of_its_tasks_spans_and_count_up_while_open() -> None:
    timeline = three_workers()
    timeline.status(("orders", 0), "UNASSIGNED", "w1", 20.0)
    timeline.status(("orders", 1), "UNASSIGNED", "w2", 21.0)
    timeline.status(("orders", 0), "RUNNING", "w3", 22.0)
    assert timeline.unassigned_seconds("orders", 23.0, 4) == pytest.approx(3.0)  # 20 -> 23, task 1 open
    assert timeline.unassigned_tasks("orders", 4) == 1
    timeline.status(("orders", 1), "RUNNING", "w3", 24.0)
    assert timeline.unassigned_seconds("orders", 50.0, 4) == pytest.approx(4.0)
    assert timeline.unassigned_seconds("other", 50.0, 4) == 0.0


def test_a_crashed_worker_leaving_the_group_leaves_its_tasks_unassigned_until_they_run_again() -> None:
    timeline = three_workers()
    timeline.group(6, ["w1", "w3"], 30.0)
    assert timeline.snapshot()["entries"][-1]["left"] == ["w2"]
    assert timeline.unassigned_tasks("orders", 4) == 1
    timeline.status(("orders", 1), "RUNNING", "w3", 32.0)
    assert timeline.unassigned_seconds("orders", 40.0, 4) == pytest.approx(2.0)
    assert timeline.handoff_gaps("orders").last_s == pytest.approx(2.0)


def test_counters_count_from_the_workers_start_never_go_down_and_skip_deleted_tasks() -> None:
    timeline = ClusterTimeline(since=100.0)
    timeline.status(("orders", 0), "UNASSIGNED", "w1", 50.0)  # read back from the topic's history
    assert timeline.unassigned_seconds("orders", 101.0, 1) == pytest.approx(1.0)
    timeline.status(("orders", 0), "RUNNING", "w2", 100.5)  # landed late: its span ended before the read
    assert timeline.unassigned_seconds("orders", 102.0, 1) == pytest.approx(1.0)
    timeline.status(("gone", 0), "UNASSIGNED", "w1", 101.0)
    assert timeline.unassigned_seconds("gone", 200.0, 0) == 0.0  # its config is gone


def test_the_timeline_is_bounded() -> None:
    timeline = ClusterTimeline(since=0.0, max_entries=5, max_runs=3)
    for i in range(50):
        timeline.status(("orders", 0), "RUNNING", f"w{i % 2}", float(i))
        timeline.group(i, [f"w{i % 2}"], float(i))
    snapshot = timeline.snapshot()
    assert len(snapshot["entries"]) == 5 and len(snapshot["runs"]) == 4


def test_a_deleted_connector_is_forgotten_and_its_stopping_tasks_do_not_bring_it_back() -> None:
    timeline = three_workers()
    timeline.status(("orders", 3), "UNASSIGNED", "w1", 20.0)
    timeline.status(("orders", 3), "RUNNING", "w2", 21.0)
    assert timeline.handoff_gaps("orders").count == 1
    timeline.forget("orders", 30.0)
    for task, worker in enumerate(["w1", "w2", "w3", "w2"]):
        timeline.status(("orders", task), "UNASSIGNED", worker, 30.5)  # its tasks stopping
    assert not any(item[0] == "orders" for item in timeline.runs)
    assert "orders" not in timeline.unassigned and timeline.connector_figures(40.0, {}) == {}
    timeline.status(("orders", 0), "RUNNING", "w1", 50.0)  # created again
    assert timeline.connector_figures(60.0, {"orders": 1})["orders"]["unassigned_tasks"] == 0
    assert ("orders", 0) in timeline.runs
    timeline.forget("gone", 60.0)
    timeline.status(("other", 0), "RUNNING", "w1", 60.0 + 301.0)
    assert timeline.deleted == {}, "a deleted name is remembered only while its last statuses may arrive"

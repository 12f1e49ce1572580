"""A partition that changes TopicIngest task when tasks.max changes (spark/share_handoff.py): where
its new task starts reading it, and when it must wait, from the tasks' checkpoints on disk."""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.unit.test_topic_ingest_plan import write_batch
from workers.spark.share_handoff import INITIAL_OFFSETS, Handoff, handoff, mark, unmarked_gone
from workers.spark.topic_source import TopicStreamReader

pytestmark = pytest.mark.unit

P, Q, NEW = ("t", 0), ("t", 1), ("t", 7)


def test_a_partition_waits_until_its_former_task_runs_under_the_new_count_and_starts_where_it_will_stop(
    tmp_path: Path,
) -> None:
    # Task 0 of 2 read P: batch 4 committed up to 40, batch 5 planned up to 50, not committed.
    write_batch(tmp_path / "0", 4, '{"t":{"0":40}}', committed=True)
    write_batch(tmp_path / "0", 5, '{"t":{"0":50}}', committed=False)
    mark(tmp_path / "0", 2, stopped=False)
    # tasks.max becomes 3, and P falls to task 2: while task 0 may still read under 2, P waits.
    assert handoff(tmp_path, 2, 3, {P, NEW}, set()).waiting == {P}
    assert handoff(tmp_path, 2, 3, {P, NEW}, set()).starts == {}
    # Task 0's run under 3 starts: it will re-run its planned batch 5 (P up to 50) and no more.
    mark(tmp_path / "0", 3, stopped=False)
    moved = handoff(tmp_path, 2, 3, {P, NEW}, set())
    assert moved.starts == {P: 50} and moved.waiting == frozenset()  # NEW: held by no task


def test_a_task_dropped_by_the_new_count_hands_over_what_it_committed(tmp_path: Path) -> None:
    # Task 2 of 3 read Q; tasks.max becomes 2, Q falls to task 1.
    write_batch(tmp_path / "2", 8, '{"t":{"1":30}}', committed=True)
    write_batch(tmp_path / "2", 9, '{"t":{"1":35}}', committed=False)
    mark(tmp_path / "2", 3, stopped=False)
    assert unmarked_gone(tmp_path, 2) == {2}
    assert handoff(tmp_path, 1, 2, {Q}, set()).waiting == {Q}
    # Stopped: its planned batch 9 never runs again, so Q starts after what it committed.
    mark(tmp_path / "2", 3, stopped=True)
    assert unmarked_gone(tmp_path, 2) == set()
    assert handoff(tmp_path, 1, 2, {Q}, set()).starts == {Q: 30}


def test_a_dropped_task_of_a_killed_worker_is_waited_for_only_until_it_is_overdue(tmp_path: Path) -> None:
    write_batch(tmp_path / "2", 3, '{"t":{"1":12}}', committed=True)
    write_batch(tmp_path / "2", 4, '{"t":{"1":20}}', committed=False)
    mark(tmp_path / "2", 3, stopped=False)  # its worker was killed: no stop marker
    assert handoff(tmp_path, 1, 2, {Q}, set()).waiting == {Q}
    assert handoff(tmp_path, 1, 2, {Q}, {2}).starts == {Q: 12}


def test_a_task_that_started_but_planned_no_batch_yet_holds_the_partitions_it_starts_from(
    tmp_path: Path,
) -> None:
    """Seen in the e2e test: tasks.max 2 -> 3 -> 2. Task 2 (of 3) started and kept where its
    query starts (P at 49), but planned its first batch only 1.5 s later; meanwhile task 0
    was back under 2 and, finding nothing of P in task 2's checkpoint, read P from 49 too."""
    write_batch(tmp_path / "0", 0, '{"t":{"0":49}}', committed=True)
    mark(tmp_path / "0", 2, stopped=False)  # task 0's run under 2 (again)
    mark(tmp_path / "2", 3, stopped=False)  # task 2's run under 3: started, no batch planned yet
    (tmp_path / "2" / INITIAL_OFFSETS).write_text('{"t": {"0": 49}}')
    assert handoff(tmp_path, 0, 2, {P}, set()).waiting == {P}
    mark(tmp_path / "2", 3, stopped=True)  # it stopped before planning a batch: it read nothing
    assert handoff(tmp_path, 0, 2, {P}, set()) == Handoff({P: 49}, frozenset())


def test_the_latest_of_several_former_tasks_counts(tmp_path: Path) -> None:
    """tasks.max changed twice: an older owner still records P where it left it long ago."""
    write_batch(tmp_path / "0", 0, '{"t":{"0":10}}', committed=True)
    write_batch(tmp_path / "1", 6, '{"t":{"0":90}}', committed=True)
    mark(tmp_path / "0", 4, stopped=False)
    mark(tmp_path / "1", 4, stopped=False)
    assert handoff(tmp_path, 3, 4, {P}, set()).starts == {P: 90}


def test_the_topic_source_asks_the_checkpoints_where_a_partition_new_to_its_query_starts(
    tmp_path: Path,
) -> None:
    write_batch(tmp_path / "0", 2, '{"t":{"0":25}}', committed=True)
    mark(tmp_path / "0", 3, stopped=False)
    options = {"bootstrap.servers": "127.0.0.1:9", "subscribe": "t", "share": "2/3",
               "handoffCheckpoints": str(tmp_path)}  # fmt: skip
    assert TopicStreamReader(options)._handoff({P, NEW}).starts == {P: 25}
    unshared = TopicStreamReader({"bootstrap.servers": "127.0.0.1:9", "subscribe": "t"})
    assert unshared._handoff({P}).starts == {}

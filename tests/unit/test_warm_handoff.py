"""The computing worker's staging of moves (workers/distributed/warm_handoff.py): a Spark task moving
between two workers stays with its old owner until its new owner reports it prepared."""

from __future__ import annotations

import pytest

from connect_rebalance.work import CONNECTOR, Work
from workers.distributed.warm_handoff import stage

pytestmark = pytest.mark.unit

SPARK = {("ingest", 0), ("ingest", 1)}  # tasks whose start can be prepared
TIMEOUT_S = 60.0


def preparable(item: Work) -> bool:
    return item in SPARK


def items(*pairs: Work) -> frozenset[Work]:
    return frozenset(pairs)


CURRENT = {"w1": items(("ingest", CONNECTOR), ("ingest", 0), ("ingest", 1), ("files", 0)), "w2": items()}
# The assignor balances: a Spark task and a plain task move to the joiner w2.
BALANCED = {"w1": items(("ingest", CONNECTOR), ("ingest", 0)), "w2": items(("ingest", 1), ("files", 0))}


def test_a_preparable_task_moving_between_two_workers_stays_until_its_new_owner_has_prepared_it() -> None:
    staged = stage(BALANCED, CURRENT, preparable, {"w1": items(), "w2": items()}, {}, 100.0, TIMEOUT_S)
    assert staged.target == {
        "w1": items(("ingest", CONNECTOR), ("ingest", 0), ("ingest", 1)),  # runs on where it is
        "w2": items(("files", 0)),  # a task that cannot be prepared moves at once
    }
    assert staged.warm == {"w2": items(("ingest", 1))}, "the new owner is told to prepare it"
    assert staged.deadline(TIMEOUT_S) == 160.0

    # w2 reports it prepared: the task moves, and w2 is still told it is coming (its
    # prepared run is kept until the coordinator assigns the task to it).
    moved = stage(BALANCED, CURRENT, preparable, {"w1": items(), "w2": items(("ingest", 1))},
                  staged.warming, 101.0, TIMEOUT_S)  # fmt: skip
    assert moved.target == BALANCED
    assert moved.warm == {"w2": items(("ingest", 1))}
    assert moved.warming == {} and moved.deadline(TIMEOUT_S) is None


def test_a_prepared_task_whose_move_is_installed_stays_named_until_it_is_assigned() -> None:
    # The target already moved the task (current is the installed target), the old owner has
    # not let go yet, and another target is computed meanwhile.
    installed = {"w1": items(("ingest", 0)), "w2": items(("ingest", 1))}
    again = stage(installed, installed, preparable, {"w1": items(), "w2": items(("ingest", 1))}, {}, 5.0,
                  TIMEOUT_S)  # fmt: skip
    assert again.target == installed
    assert again.warm == {"w2": items(("ingest", 1))}, "not cancelled before it is assigned"


def test_a_warm_up_that_outlasts_its_timeout_gives_up_and_the_task_moves_cold() -> None:
    first = stage(BALANCED, CURRENT, preparable, {"w1": items(), "w2": items()}, {}, 0.0, TIMEOUT_S)
    late = stage(BALANCED, CURRENT, preparable, {"w1": items(), "w2": items()}, first.warming, TIMEOUT_S,
                 TIMEOUT_S)  # fmt: skip
    assert late.target == BALANCED


def test_work_moves_at_once_to_a_worker_that_does_not_prepare_and_when_it_has_no_live_owner() -> None:
    # w2 does not prepare moved work (a classic worker, an older one): nothing waits for it.
    cold = stage(BALANCED, CURRENT, preparable, {"w1": items()}, {}, 0.0, TIMEOUT_S)
    assert cold.target == BALANCED and cold.warm == {}
    # New work, or a lost worker's, has no owner in the group to keep it running meanwhile.
    fresh = stage(BALANCED, {"w1": items(("ingest", CONNECTOR), ("ingest", 0)), "w2": items()}, preparable,
                  {"w1": items(), "w2": items()}, {}, 0.0, TIMEOUT_S)  # fmt: skip
    assert fresh.target == BALANCED


def test_a_leaving_worker_keeps_its_preparable_tasks_until_they_are_prepared_elsewhere() -> None:
    # w1 leaves: the assignor gives it nothing; w2 takes everything.
    target = {"w1": items(), "w2": CURRENT["w1"]}
    staged = stage(target, CURRENT, preparable, {"w1": items(), "w2": items()}, {}, 0.0, TIMEOUT_S)
    assert staged.target == {"w1": items(("ingest", 0), ("ingest", 1)),
                             "w2": items(("ingest", CONNECTOR), ("files", 0))}  # fmt: skip
    assert staged.warm == {"w2": items(("ingest", 0), ("ingest", 1))}

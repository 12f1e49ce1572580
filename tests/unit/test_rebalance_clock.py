"""A worker's time to converge, on a virtual clock: changes in a row are one rebalance."""

from __future__ import annotations

import pytest

from workers.observe.rebalance_clock import RebalanceClock

pytestmark = pytest.mark.unit


def test_a_revocation_and_its_follow_up_count_as_one_rebalance() -> None:
    clock = RebalanceClock()
    clock.begin(10.0)  # told to stop work
    clock.begin(10.5)  # the follow-up assignment: still the same rebalance
    assert clock.rebalancing
    clock.end(12.0)
    assert (clock.count, clock.last_s, clock.max_s, clock.total_s) == (1, 2.0, 2.0, 2.0)
    assert not clock.rebalancing


def test_the_longest_and_the_last_are_kept_apart() -> None:
    clock = RebalanceClock()
    for start, end in ((0.0, 3.0), (10.0, 11.0)):
        clock.begin(start)
        clock.end(end)
    clock.end(20.0)  # nothing under way: not a rebalance
    assert (clock.count, clock.last_s, clock.max_s, clock.total_s) == (2, 1.0, 3.0, 4.0)

"""Adaptive heartbeat intervals and offloaded target computation with real librdkafka consumers
(confluent-kafka, group.protocol=consumer) against a coordinator process.

Given a lightly loaded coordinator, when a KIP-848 consumer group is stable, then librdkafka
heartbeats at the interval the coordinator gives it (the adaptive floor, not Kafka's 5 s
default), so a member joining is seen within a fraction of a second; with adaptive intervals
off, the same consumer heartbeats every 5 s. The group's targets are computed off the event
loop, and the consumers never notice.
"""

from __future__ import annotations

import time
from collections.abc import Iterator
from pathlib import Path

import pytest

from connect_rebalance.processes import CoordinatorProcess
from tests.support.group_scenario import MemberFleet, create_topic, wait_until
from tests.support.worker_cluster import metrics

pytestmark = pytest.mark.integration
GROUP = "adaptive"


def coordinator_with(tmp_path: Path, adaptive: bool) -> CoordinatorProcess:
    tmp_path.mkdir(parents=True, exist_ok=True)
    return CoordinatorProcess(
        tmp_path / "data",
        {"group.initial.rebalance.delay.ms": "300", "group.heartbeat.adaptive.enable": str(adaptive).lower()},
    ).start()


@pytest.fixture
def adaptive(tmp_path: Path) -> Iterator[CoordinatorProcess]:
    process = coordinator_with(tmp_path / "adaptive", True)
    try:
        yield process
    finally:
        process.kill()


@pytest.fixture
def fixed(tmp_path: Path) -> Iterator[CoordinatorProcess]:
    process = coordinator_with(tmp_path / "fixed", False)
    try:
        yield process
    finally:
        process.kill()


def figure(coordinator: CoordinatorProcess, metric: str) -> float:
    return metrics(coordinator.admin_url).get(
        f'connect_rebalance_group_{metric}{{group="{GROUP}",type="consumer"}}', 0
    )


def heartbeats_in(coordinator: CoordinatorProcess, seconds: float) -> float:
    """Heartbeats the coordinator answered for the group over a window of `seconds` of steady
    state: a rate is measured over time (this waits for nothing)."""
    before = figure(coordinator, "heartbeats_total")
    time.sleep(seconds)
    return figure(coordinator, "heartbeats_total") - before


def stable_pair(coordinator: CoordinatorProcess, fleets: list[MemberFleet], tmp_path: Path) -> MemberFleet:
    create_topic(coordinator.bootstrap, "events", 6)
    fleet = MemberFleet(
        tmp_path, coordinator.bootstrap, GROUP, "events", "confluent-kafka-consumer", "uniform"
    )
    fleets.append(fleet)
    fleet.start("m1")
    fleet.start("m2")
    wait_until(lambda: sorted(len(fleet.holding(m)) for m in ("m1", "m2")) == [3, 3], 60, "a stable pair")
    return fleet


def test_librdkafka_heartbeats_at_the_adaptive_interval_and_a_join_is_seen_at_once(
    adaptive: CoordinatorProcess, fleets: list[MemberFleet], tmp_path: Path
) -> None:
    fleet = stable_pair(adaptive, fleets, tmp_path)
    start = figure(adaptive, "heartbeats_total")
    wait_until(lambda: figure(adaptive, "heartbeats_total") - start >= 20, 5,
               "20 heartbeats: two members at 250 ms send about 40 in 5 s (at Kafka's 5 s, 2)")  # fmt: skip
    computed = figure(adaptive, "target_computations_total")
    assert computed >= 1, "the targets were computed on the assignor thread"
    fleet.start("m3")
    wait_until(
        lambda: sorted(len(fleet.holding(m)) for m in ("m1", "m2", "m3")) == [2, 2, 2],
        30,
        "three hold two each",
    )
    assert figure(adaptive, "target_computations_total") > computed


def test_without_adaptive_intervals_librdkafka_keeps_kafkas_five_seconds(
    fixed: CoordinatorProcess, fleets: list[MemberFleet], tmp_path: Path
) -> None:
    stable_pair(fixed, fleets, tmp_path)
    beats = heartbeats_in(fixed, 5)
    assert beats <= 6, f"two members at 5 s heartbeat about twice in 5 s; counted {beats:.0f}"

"""Classic consumer groups with real clients: members join and leave a group consuming a
12-partition topic under continuous production, and every record is consumed exactly
once (counted when its offset commit succeeds). After a rebalance, a commit at the generation
before it (a member that slept through it) is refused and moves no offset."""

from __future__ import annotations

from pathlib import Path

import pytest

from connect_rebalance.errors import ErrorCode
from tests.support.group_scenario import (
    ContinuousProducer,
    MemberFleet,
    assert_exactly_once,
    committed_offset,
    create_topic,
    group_epoch,
    member_id_of,
    stale_commit,
    wait_until,
)

pytestmark = pytest.mark.integration


@pytest.mark.parametrize(
    ("client", "assignor"),
    [
        ("kafka-python", "range"),
        ("kafka-python", "cooperative-sticky"),
        ("aiokafka", "range"),
        ("confluent-kafka", "range"),
        ("confluent-kafka", "cooperative-sticky"),
        ("kcat", "range"),
    ],
)
def test_members_join_and_leave_under_production_and_each_record_is_consumed_once(
    group_coordinator, fleets, tmp_path: Path, client: str, assignor: str
) -> None:
    total = 6000
    create_topic(group_coordinator.bootstrap, "events", 12)
    fleet = MemberFleet(tmp_path, group_coordinator.bootstrap, "readers", "events", client, assignor)
    fleets.append(fleet)
    producer = ContinuousProducer(group_coordinator.bootstrap, "events", total, per_second=400).start()
    for name in ("m1", "m2", "m3"):
        fleet.start(name)
    wait_until(lambda: fleet.consumed_at_least(1000), 60, "three members consuming")
    generation = group_epoch(group_coordinator, "readers", "classic")
    m2 = member_id_of(group_coordinator.bootstrap, "readers", "m2")
    fleet.start("m4")
    fleet.start("m5")
    wait_until(lambda: fleet.consumed_at_least(2500), 60, "five members consuming")
    wait_until(
        lambda: group_epoch(group_coordinator, "readers", "classic") > generation, 30, "a new generation"
    )
    # m2 is still a member, at a newer generation: a commit at its old one is a zombie's.
    assert member_id_of(group_coordinator.bootstrap, "readers", "m2") == m2
    stale = stale_commit(group_coordinator.bootstrap, "readers", m2, generation, "events", 0)
    assert stale == ErrorCode.ILLEGAL_GENERATION, f"a commit at generation {generation} got {stale}"
    assert committed_offset(group_coordinator.bootstrap, "readers", "events", 0) > 0, "the offset went back"
    if client == "kcat":
        # kcat's librdkafka stores a message's offset for the next auto-commit when it hands
        # the message to kcat, before kcat prints it; a SIGTERM in between commits a record
        # that was never output. So kcat members leave once what was produced is consumed.
        produced = producer.pause()
        wait_until(lambda: fleet.consumed_at_least(produced), 60, "kcat to catch up before members leave")
    fleet.stop("m1")
    fleet.stop("m4")
    producer.resume()
    producer.join()
    wait_until(lambda: fleet.consumed_at_least(total), 90, "the rest to be consumed by three members")
    fleet.stop_all()
    assert_exactly_once(fleet.consumed(), total)

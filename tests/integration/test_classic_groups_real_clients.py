"""Classic consumer groups with real clients: members join and leave a group consuming a
12-partition topic under continuous production, and every record is consumed exactly
once (counted when its offset commit succeeds)."""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.support.group_scenario import (
    ContinuousProducer,
    MemberFleet,
    assert_exactly_once,
    create_topic,
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
    fleet.start("m4")
    fleet.start("m5")
    wait_until(lambda: fleet.consumed_at_least(2500), 60, "five members consuming")
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

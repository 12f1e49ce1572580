"""Classic consumer groups with real clients: members join and leave a group consuming a
12-partition topic under continuous production, and every record is consumed exactly
once (counted when its offset commit succeeds). After a rebalance, a commit at the generation
before it (a member that slept through it) is refused and moves no offset. An admin client
describes a group's protocol and subscriptions only while it is Stable, and each member's
assignment as held."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
from confluent_kafka import Consumer
from kafka.admin import KafkaAdminClient

from connect_rebalance.errors import ErrorCode
from connect_rebalance.processes import CoordinatorProcess
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
    create_topic(group_coordinator.bootstrap, "events", 12)
    fleet = MemberFleet(tmp_path, group_coordinator.bootstrap, "readers", "events", client, assignor)
    fleets.append(fleet)
    # Produced at 400/s until the scenario is over (`finish`).
    producer = ContinuousProducer(group_coordinator.bootstrap, "events", 10**6, per_second=400).start()
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
    # Production goes on through the leaves until the three members left have read 400 more.
    more = producer.acknowledged + 400
    wait_until(lambda: fleet.consumed_at_least(more), 60, "three members consuming after the leaves")
    total = producer.finish()
    wait_until(lambda: fleet.consumed_at_least(total), 90, "the rest to be consumed by three members")
    fleet.stop_all()
    assert_exactly_once(fleet.consumed(), total)


def test_an_admin_client_sees_subscriptions_only_while_stable_and_assignments_as_held(
    group_coordinator: CoordinatorProcess,
) -> None:
    """Kafka 4.x's DescribeGroups: the protocol and each member's metadata for a Stable group only;
    while a rebalance is prepared (here held open by a member that has not rejoined: it has not
    polled since), both are empty and each member's assignment is the one it holds."""
    bootstrap = group_coordinator.bootstrap
    create_topic(bootstrap, "orders", 2)
    admin = KafkaAdminClient(bootstrap_servers=bootstrap)
    a = Consumer({"bootstrap.servers": bootstrap, "group.id": "g", "client.id": "a"})
    b = Consumer({"bootstrap.servers": bootstrap, "group.id": "g", "client.id": "b"})

    def described() -> dict[str, Any]:
        return admin.describe_groups(["g"])["g"]  # type: ignore[no-any-return]

    def partitions(member: dict[str, Any]) -> list[tuple[str, list[int]]]:
        held = member["member_assignment"]
        return [(t["topic"], t["partitions"]) for t in held["assigned_partitions"]] if held else []

    def a_assigned() -> bool:
        a.poll(0.1)
        return bool(a.assignment())

    try:
        a.subscribe(["orders"])
        wait_until(a_assigned, 20, "a's assignment")
        stable = described()
        assert (stable["group_state"], stable["protocol_data"]) == ("Stable", "range")
        [member] = stable["members"]
        assert (member["member_metadata"]["topics"], partitions(member)) == (["orders"], [("orders", [0, 1])])

        b.subscribe(["orders"])  # b's join is held until a rejoins, which it does on its next poll
        wait_until(lambda: len(described()["members"]) == 2, 20, "b to join")
        preparing = described()
        assert (preparing["group_state"], preparing["protocol_type"], preparing["protocol_data"]) == (
            "PreparingRebalance", "consumer", "")  # fmt: skip
        shown = {m["client_id"]: (m["member_metadata"], partitions(m)) for m in preparing["members"]}
        assert shown == {"a": ("", [("orders", [0, 1])]), "b": ("", [])}, "no metadata, assignments as held"
    finally:
        a.close()
        b.close()
        admin.close()

"""Online migration with real clients over TCP: kafka-python members (classic protocol) form a
group on a 12-partition topic under continuous production; librdkafka members with
`group.protocol=consumer` join it (the group is upgraded to a consumer group, the classic
members stay in it), then leave (the group is downgraded back to classic). Every record is
consumed exactly once (counted when its commit succeeded), and the members' own records of
what they held, with timestamps, show no partition held by two members at the same time.
librdkafka classic members with cooperative-sticky keep what they hold when the group turns
classic again: they are told to rejoin, never that their generation is gone."""

from __future__ import annotations

import json
import math
import time
from pathlib import Path

import pytest
from confluent_kafka import ConsumerGroupType, KafkaException
from confluent_kafka.admin import AdminClient

from connect_rebalance.protocol.api_keys import ApiKey
from tests.support.group_scenario import (
    ContinuousProducer,
    MemberFleet,
    assert_exactly_once,
    create_topic,
    wait_until,
)
from tests.support.wire import RawConnection

pytestmark = pytest.mark.integration

PARTITIONS = 12
# Records produced at most, at 250/s: production ends with the scenario (MixedGroup.finish).
PRODUCED_AT_MOST = 100_000


def held_intervals(workdir: Path, group: str) -> dict[int, list[tuple[float, float, str]]]:
    """Partition -> (from, to, member) spans each member held it, from the members' `.held` files."""
    spans: dict[int, list[tuple[float, float, str]]] = {}
    for path in sorted(workdir.glob(f"{group}-*.jsonl.held")):
        member = path.name.removeprefix(f"{group}-").removesuffix(".jsonl.held")
        opened: dict[int, float] = {}
        for line in path.read_text().splitlines():
            event = json.loads(line)
            if event["e"] == "assigned":
                for p in event["ps"]:
                    opened.setdefault(p, event["t"])
            else:
                closing = event["ps"] if event["e"] == "revoked" else list(opened)
                for p in closing:
                    if p in opened:
                        spans.setdefault(p, []).append((opened.pop(p), event["t"], member))
        for p, since in opened.items():  # still held: until the end
            spans.setdefault(p, []).append((since, math.inf, member))
    return spans


def assert_never_held_twice(workdir: Path, group: str) -> int:
    """No two members' spans of one partition overlap; every consumed record lies in a span of
    its consumer. Returns how many handovers (a partition moving between members) were seen."""
    spans = held_intervals(workdir, group)
    handovers = 0
    for partition, held in spans.items():
        held.sort()
        for (_start, end, member), (next_start, _, next_member) in zip(held, held[1:], strict=False):
            assert next_start >= end, (
                f"partition {partition}: {next_member} got it at {next_start:.3f} "
                f"while {member} held it until {end:.3f}"
            )
            handovers += member != next_member
    for path in sorted(workdir.glob(f"{group}-*.jsonl")):
        member = path.name.removeprefix(f"{group}-").removesuffix(".jsonl")
        for line in path.read_text().splitlines():
            row = json.loads(line)
            assert any(
                m == member and start <= row["t"] <= end for start, end, m in spans.get(row["p"], [])
            ), f"{member} consumed {row} outside the spans it held partition {row['p']}"
    return handovers


class MixedGroup:
    """One group, kafka-python classic members (k*) and librdkafka consumer-protocol members (c*)."""

    def __init__(self, coordinator, fleets: list[MemberFleet], workdir: Path, group: str) -> None:  # type: ignore[no-untyped-def]
        self.workdir, self.group, self.bootstrap = workdir, group, coordinator.bootstrap
        create_topic(self.bootstrap, "events", PARTITIONS)
        self.classic = MemberFleet(workdir, self.bootstrap, group, "events", "kafka-python", "range")
        self.modern = MemberFleet(
            workdir, self.bootstrap, group, "events", "confluent-kafka-consumer", "uniform"
        )
        fleets.extend([self.classic, self.modern])
        self.admin = AdminClient({"bootstrap.servers": self.bootstrap})

    def reconnect_admin(self) -> None:
        self.admin = AdminClient({"bootstrap.servers": self.bootstrap})

    def described(self):  # type: ignore[no-untyped-def]
        return self.admin.describe_consumer_groups([self.group])[self.group].result(30)

    def consumed_by(self, prefix: str) -> int:
        return sum(
            len(p.read_text().splitlines()) for p in self.workdir.glob(f"{self.group}-{prefix}*.jsonl")
        )

    def start_classic_then_upgrade(self) -> None:
        self.classic.start("k1")
        self.classic.start("k2")
        wait_until(lambda: self.classic.consumed_at_least(600), 90, "two classic members consuming")
        assert self.described().type == ConsumerGroupType.CLASSIC
        self.modern.start("c1")
        self.modern.start("c2")
        wait_until(self.upgraded_and_shared, 90, "the group upgraded, four members sharing every partition")

    def upgraded_and_shared(self) -> bool:
        try:
            group = self.described()
        except KafkaException:
            return False
        # Each member holds its own share, not only the partitions between them: a classic
        # member holds what it is to give up until it rejoins, so every partition can be held
        # while the new members still hold nothing.
        held = [sorted(p.partition for p in m.assignment.topic_partitions) for m in group.members]
        return (
            group.type == ConsumerGroupType.CONSUMER
            and len(group.members) == 4
            and sorted(p for partitions in held for p in partitions) == list(range(PARTITIONS))
            and all(len(partitions) == PARTITIONS // 4 for partitions in held)
        )

    def both_kinds_consume(self) -> None:
        at_upgrade = self.consumed_by("c")
        wait_until(
            lambda: self.consumed_by("c") > at_upgrade + 300, 60, "the consumer-protocol members consuming"
        )
        at_mixed = self.consumed_by("k")
        wait_until(
            lambda: self.consumed_by("k") > at_mixed + 300, 60, "the classic members consuming beside them"
        )

    def downgrade(self) -> None:
        self.modern.stop("c1")
        self.modern.stop("c2")

        def downgraded() -> bool:
            listed = self.admin.list_consumer_groups(types={ConsumerGroupType.CLASSIC}).result(30).valid
            return [g.group_id for g in listed] == [self.group] and self.described().state.name == "STABLE"

        wait_until(downgraded, 90, "the group back to a Stable classic group")
        assert {m.client_id for m in self.described().members} == {"k1", "k2"}

    def finish(self, producer: ContinuousProducer) -> None:
        """The scenario is over: production ends (it ran throughout, so both kinds of members
        had records to consume beside each other), and the classic members consume the rest."""
        total = producer.finish()
        wait_until(
            lambda: self.classic.consumed_at_least(total), 120, "the classic members to consume the rest"
        )
        self.classic.stop_all()
        assert_exactly_once(self.classic.consumed(), total)
        handovers = assert_never_held_twice(self.workdir, self.group)
        assert handovers >= PARTITIONS, "partitions moved to the new members and back"


def test_classic_members_upgrade_to_a_consumer_group_and_back_consuming_each_record_once(
    group_coordinator, fleets, tmp_path: Path
) -> None:
    mixed = MixedGroup(group_coordinator, fleets, tmp_path, "migrating")
    producer = ContinuousProducer(mixed.bootstrap, "events", PRODUCED_AT_MOST, per_second=250).start()
    mixed.start_classic_then_upgrade()
    mixed.both_kinds_consume()
    mixed.downgrade()
    mixed.finish(producer)


def test_an_upgraded_group_survives_a_kill9_restart_with_its_classic_members(
    group_coordinator, fleets, tmp_path: Path
) -> None:
    # Produced until the scenario is over: under way through the upgrade, the restart and the
    # downgrade, however slowly they go, so both kinds of members consume beside each other.
    mixed = MixedGroup(group_coordinator, fleets, tmp_path, "restarted")
    producer = ContinuousProducer(mixed.bootstrap, "events", PRODUCED_AT_MOST, per_second=250).start()
    mixed.start_classic_then_upgrade()
    before = {m.member_id: m.client_id for m in mixed.described().members}
    group_coordinator.kill()
    group_coordinator.start()
    mixed.reconnect_admin()
    wait_until(mixed.upgraded_and_shared, 90, "the restarted coordinator to serve the same mixed group")
    after = {m.member_id: m.client_id for m in mixed.described().members}
    assert after == before, "the same four members, classic ones included, after replay"
    mixed.both_kinds_consume()
    mixed.downgrade()
    mixed.finish(producer)


def settled_mixed_group(bootstrap: str, group: str, fleets: dict[str, MemberFleet]) -> bool:
    """Every member of the consumer group at its group epoch, which is its assignment epoch, and
    holding (by its own callbacks) exactly what ConsumerGroupDescribe says it is assigned."""
    connection = RawConnection(bootstrap)
    try:
        described = connection.request(ApiKey.CONSUMER_GROUP_DESCRIBE, 0, {"group_ids": [group]}).groups[0]
    finally:
        connection.close()
    if described.error_code != 0 or described.group_epoch != described.assignment_epoch:
        return False
    for member in described.members:
        assigned = {p for t in member.assignment.topic_partitions for p in t.partitions}
        if (
            member.member_epoch != described.group_epoch
            or fleets[member.client_id].holding(member.client_id) != assigned
        ):
            return False
    return len(described.members) == len(fleets)


def test_cooperative_classic_members_keep_their_partitions_when_the_group_turns_classic_again(
    group_coordinator, fleets, tmp_path: Path
) -> None:
    """librdkafka members on the classic protocol with cooperative-sticky: at the downgrade they
    are told to rejoin (REBALANCE_IN_PROGRESS), keep what they hold and gain the leaver's share.
    Told ILLEGAL_GENERATION, they would give everything up as lost and take it back."""
    bootstrap, group = group_coordinator.bootstrap, "cooperative"
    create_topic(bootstrap, "events", 6)
    classic = MemberFleet(tmp_path, bootstrap, group, "events", "confluent-kafka", "cooperative-sticky")
    modern = MemberFleet(tmp_path, bootstrap, group, "events", "confluent-kafka-consumer", "uniform")
    fleets.extend([classic, modern])
    for name in ("k1", "k2"):
        classic.start(name)

    def shared() -> bool:
        return classic.holding("k1") | classic.holding("k2") == set(range(6))

    wait_until(shared, 60, "k1 and k2 to share the six partitions")
    modern.start("c1")
    members = {"k1": classic, "k2": classic, "c1": modern}
    wait_until(lambda: settled_mixed_group(bootstrap, group, members), 60, "the consumer group to settle")
    before = time.time()
    kept = {name: classic.holding(name) for name in ("k1", "k2")}
    assert all(kept.values()), f"both classic members hold partitions: {kept}"

    modern.stop("c1")
    admin = AdminClient({"bootstrap.servers": bootstrap})

    def classic_and_shared() -> bool:
        described = admin.describe_consumer_groups([group])[group].result(30)
        return described.type == ConsumerGroupType.CLASSIC and described.state.name == "STABLE" and shared()

    wait_until(classic_and_shared, 60, "the classic group to share all six partitions over k1 and k2")
    for name, held in kept.items():
        since = [e for e in classic.held_events(name) if e["t"] >= before]
        assert not [e for e in since if e.get("lost")], f"{name} lost its partitions: {since}"
        assert held <= classic.holding(name), f"{name} held {sorted(held)}, now {classic.holding(name)}"

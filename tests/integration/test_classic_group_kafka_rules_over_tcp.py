"""Classic-group rules real clients meet, over TCP against a coordinator process, as Apache
Kafka 4.x has them: a static member restarted under production (confluent-kafka and
kafka-python) gets its partitions back at the same generation while the others never stop;
DescribeGroups by state; and group.max.size counted as Kafka's `acceptJoiningMember`."""

from __future__ import annotations

import threading
import time
from pathlib import Path
from typing import Any

import pytest

from connect_rebalance.errors import ErrorCode
from connect_rebalance.processes import CoordinatorProcess
from connect_rebalance.protocol.api_keys import ApiKey
from tests.support.group_scenario import (
    ContinuousProducer,
    MemberFleet,
    create_topic,
    groups_describe,
    wait_until,
)
from tests.support.wire import RawConnection
from tests.support.worker_cluster import metrics

pytestmark = pytest.mark.integration
PARTITIONS = 12

# Records arrive on every partition about every 30 ms (400 records/s over 12 partitions) and
# members poll every 0.2 s; a member stopped by a rebalance would stand still for at least a
# heartbeat interval and a join round. The bound leaves room for a loaded 2-core machine.
MAX_GAP_S = 2.5


def group_figures(coordinator: CoordinatorProcess, group: str) -> tuple[float, float]:
    """The group's generation and how many generations the coordinator has counted."""
    samples = metrics(coordinator.admin_url)
    labels = f'{{group="{group}",type="classic"}}'
    return (
        samples[f"connect_rebalance_group_epoch{labels}"],
        samples[f"connect_rebalance_group_rebalances_total{labels}"],
    )


def described_members(bootstrap: str, group: str) -> tuple[str, dict[str, list[str]]]:
    """`connect-rebalance groups describe --state`'s row (state, strategy, member count), and
    each member's row of `--members --verbose` by instance id (or member id for a dynamic
    member): [member id, client id, assignment]."""
    state = groups_describe(bootstrap, group, "--state").splitlines()[1]
    header, *lines = groups_describe(bootstrap, group, "--members", "--verbose").splitlines()
    rows: dict[str, list[str]] = {}
    for line in lines:
        row = dict(zip(header.split(), line.split(), strict=True))
        key = row["CONSUMER-ID"] if row["GROUP-INSTANCE-ID"] == "-" else row["GROUP-INSTANCE-ID"]
        rows[key] = [row["CONSUMER-ID"], row["CLIENT-ID"], row["CURRENT-ASSIGNMENT"]]
    return state, rows


def assert_consumed_without_pause(fleet: MemberFleet, member: str, since: float, until: float) -> float:
    """`member` had no rebalance callback between `since` and `until`, and consumed each of its
    partitions throughout, no gap between records longer than MAX_GAP_S; returns the longest."""
    events = [e for e in fleet.held_events(member) if since < e["t"] <= until]
    assert not events, f"{member} went through a rebalance: {events}"
    held = fleet.holding(member, since)
    times: dict[int, list[float]] = {p: [] for p in held}
    longest = 0.0
    for row in fleet.records(member):
        if row["p"] in held:
            times[row["p"]].append(row["t"])
    for partition, seen in times.items():
        assert any(t > until for t in seen), f"{member} stopped consuming partition {partition}"
        gaps = [b - a for a, b in zip(seen, seen[1:], strict=False) if b >= since and a <= until]
        assert gaps and max(gaps) <= MAX_GAP_S, (
            f"{member} paused partition {partition} for {max(gaps, default=0):.2f}s around the restart"
        )
        longest = max(longest, *gaps)
    return longest


@pytest.mark.parametrize(
    ("client", "assignor"),
    [
        ("confluent-kafka", "range"),
        ("confluent-kafka", "cooperative-sticky"),
        ("kafka-python", "cooperative-sticky"),
    ],
)
def test_a_static_member_restarted_under_production_keeps_the_generation_and_nobody_stops(
    group_coordinator: CoordinatorProcess,
    fleets: list[MemberFleet],
    tmp_path: Path,
    client: str,
    assignor: str,
) -> None:
    """The static leader (first to join) is restarted: a new process with the same
    group.instance.id. Its subscription bytes differ (a fresh client owns nothing, and the Java
    clients name no generation); the group would select the same protocol, so no rebalance."""
    b = group_coordinator.bootstrap
    create_topic(b, "events", PARTITIONS)
    fleet = MemberFleet(tmp_path, b, "statics", "events", client, assignor)
    fleets.append(fleet)
    producer = ContinuousProducer(b, "events", 1_000_000, per_second=400).start()
    try:
        restart_the_static_leader(group_coordinator, fleet)
    finally:
        producer.finish()


def restart_the_static_leader(group_coordinator: CoordinatorProcess, fleet: MemberFleet) -> None:
    fleet.start("s1", instance_id="host-1")
    wait_until(lambda: len(fleet.holding("s1")) == PARTITIONS, 60, "s1 to hold every partition")
    fleet.start("s2", instance_id="host-2")
    fleet.start("d1")  # a dynamic member: nobody, static or not, may notice the restart
    members = ["s1", "s2", "d1"]

    def settled(names: list[str]) -> bool:
        fleet.consumed_at_least(0)  # fails at once if a member died
        held = [fleet.holding(m) for m in names]
        return sorted(p for ps in held for p in ps) == list(range(PARTITIONS)) and all(
            len(ps) == 4 for ps in held
        )

    wait_until(lambda: settled(members), 60, "three members with four partitions each", interval=0.2)
    settled_at = time.time()
    wait_until(lambda: all(fleet.holding(m) <= {r["p"] for r in fleet.records(m) if r["t"] > settled_at}
                           for m in members), 60, "every member consuming what it holds")  # fmt: skip
    generation, rebalances = group_figures(group_coordinator, "statics")
    header_before, before = described_members(group_coordinator.bootstrap, "statics")
    assert " Stable " in header_before and len(before) == 3 and {"host-1", "host-2"} <= set(before)
    s1_partitions = fleet.holding("s1")

    since = time.time()
    fleet.stop("s1")
    fleet.start("s1b", instance_id="host-1")
    wait_until(
        lambda: fleet.holding("s1b") == s1_partitions, 60, "the restarted member to get its partitions back"
    )
    wait_until(
        lambda: s1_partitions <= {r["p"] for r in fleet.records("s1b")},
        60,
        "the restarted member to consume them",
    )
    until = time.time()
    wait_until(
        lambda: all(
            fleet.holding(m) <= {r["p"] for r in fleet.records(m) if r["t"] > until} for m in ("s2", "d1")
        ),
        30,
        "the others' records after the restart",
    )

    assert group_figures(group_coordinator, "statics") == (generation, rebalances), "no new generation"
    header_after, after = described_members(group_coordinator.bootstrap, "statics")
    assert header_after == header_before, "same state, protocol and member count"
    assert after["host-1"][0] != before["host-1"][0], "the restarted process is a new member id"
    assert after["host-1"][1:] == ["s1b", before["host-1"][2]], "with the old member's assignment"
    assert {k: v for k, v in after.items() if k != "host-1"} == {
        k: v for k, v in before.items() if k != "host-1"
    }
    gaps = {member: assert_consumed_without_pause(fleet, member, since, until) for member in ("s2", "d1")}
    print(f"generation {generation:.0f} before and after, {rebalances:.0f} rebalances counted; restart took "
          f"{until - since:.2f}s; longest gap between records of s2, d1: "
          f"{', '.join(f'{g:.2f}s' for g in gaps.values())}\n{header_before} {before}\n"
          f"{header_after} {after}")  # fmt: skip


# -- raw requests: exact states and bytes ------------------------------------------------------


def join_fields(
    member_id: str = "", instance_id: str | None = None, metadata: bytes = b"m"
) -> dict[str, Any]:
    return {"group_id": "g", "session_timeout_ms": 30000, "rebalance_timeout_ms": 30000,
            "member_id": member_id, "group_instance_id": instance_id, "protocol_type": "consumer",
            "protocols": [{"name": "range", "metadata": metadata}]}  # fmt: skip


class HeldRequest:
    """A request on its own connection whose answer the coordinator holds back."""

    def __init__(self, bootstrap: str, api_key: int, version: int, fields: dict[str, Any]) -> None:
        self.connection = RawConnection(bootstrap, timeout=30)
        self.answer: Any = None
        self._thread = threading.Thread(
            target=lambda: setattr(self, "answer", self.connection.request(api_key, version, fields)),
            daemon=True,
        )
        self._thread.start()

    def result(self) -> Any:
        self._thread.join(30)
        assert not self._thread.is_alive(), "never answered"
        self.connection.close()
        return self.answer


def describe_group(connection: RawConnection) -> Any:
    [group] = connection.request(
        ApiKey.DESCRIBE_GROUPS, 5, {"groups": ["g"], "include_authorized_operations": False}
    ).groups
    return group


def test_describe_groups_reports_protocol_and_metadata_only_for_a_stable_group(
    group_coordinator: CoordinatorProcess,
) -> None:
    admin = RawConnection(group_coordinator.bootstrap)
    a = RawConnection(group_coordinator.bootstrap)
    try:
        joined = a.request(ApiKey.JOIN_GROUP, 5, join_fields(instance_id="a", metadata=b"a's subscription"))
        assert joined.error_code == 0 and joined.generation_id == 1
        completing = describe_group(admin)
        assert (completing.group_state, completing.protocol_type, completing.protocol_data) == (
            "CompletingRebalance", "consumer", "")  # fmt: skip
        assert [bytes(m.member_metadata) for m in completing.members] == [b""]

        assignments = [{"member_id": joined.member_id, "assignment": b"a's partitions"}]
        a.request(ApiKey.SYNC_GROUP, 3, {"group_id": "g", "generation_id": 1, "member_id": joined.member_id,
                            "group_instance_id": "a", "assignments": assignments})  # fmt: skip
        stable = describe_group(admin)
        assert (stable.group_state, stable.protocol_data) == ("Stable", "range")
        assert [(bytes(m.member_metadata), bytes(m.member_assignment)) for m in stable.members] == [
            (b"a's subscription", b"a's partitions")]  # fmt: skip

        newcomer = HeldRequest(
            group_coordinator.bootstrap, ApiKey.JOIN_GROUP, 5, join_fields(instance_id="b")
        )
        wait_until(lambda: describe_group(admin).group_state == "PreparingRebalance", 10, "the rebalance")
        preparing = describe_group(admin)
        assert (preparing.protocol_type, preparing.protocol_data) == ("consumer", "")
        assert [(bytes(m.member_metadata), bytes(m.member_assignment)) for m in preparing.members] == [
            (b"", b"a's partitions"), (b"", b"")]  # fmt: skip
        a.request(
            ApiKey.JOIN_GROUP, 5, join_fields(joined.member_id, instance_id="a", metadata=b"a's subscription")
        )
        assert newcomer.result().generation_id == 2
        assert describe_group(admin).protocol_data == "", "CompletingRebalance again"
    finally:
        admin.close()
        a.close()


def test_group_max_size_counts_as_kafka_does(tmp_path: Path) -> None:
    """group.max.size=2: an Empty group takes three joins (each given a member id); of the three
    rejoining, the last is refused and dropped; the full group then takes its members' rejoins
    and refuses a newcomer."""
    coordinator = CoordinatorProcess(
        tmp_path / "data", {"group.initial.rebalance.delay.ms": "300", "group.max.size": "2"}
    ).start()
    connection = RawConnection(coordinator.bootstrap)
    try:
        first = [connection.request(ApiKey.JOIN_GROUP, 5, join_fields()) for _ in range(3)]
        assert [f.error_code for f in first] == [ErrorCode.MEMBER_ID_REQUIRED] * 3, "Empty: all accepted"
        parked = [
            HeldRequest(coordinator.bootstrap, ApiKey.JOIN_GROUP, 5, join_fields(f.member_id))
            for f in first[:2]
        ]
        wait_until(lambda: describe_group(connection).group_state != "Empty", 10, "the first join")
        wait_until(lambda: len(describe_group(connection).members) == 2, 10, "the second join")
        refused = connection.request(ApiKey.JOIN_GROUP, 5, join_fields(first[2].member_id))
        assert (refused.error_code, refused.member_id) == (ErrorCode.GROUP_MAX_SIZE_REACHED, "")
        answers = [p.result() for p in parked]
        assert [(a.error_code, a.generation_id) for a in answers] == [(0, 1), (0, 1)]
        again = connection.request(ApiKey.JOIN_GROUP, 5, join_fields(first[2].member_id))
        assert again.error_code == ErrorCode.GROUP_MAX_SIZE_REACHED, "refused, not pending any more"
        rejoin = connection.request(ApiKey.JOIN_GROUP, 5, join_fields(answers[1].member_id))
        assert (rejoin.error_code, rejoin.generation_id) == (0, 1), "a member rejoins a full group"
        newcomer = connection.request(ApiKey.JOIN_GROUP, 5, join_fields())
        assert newcomer.error_code == ErrorCode.GROUP_MAX_SIZE_REACHED
    finally:
        connection.close()
        coordinator.kill()

"""KIP-848 client-side assignment for consumer groups in the pure core, on a virtual clock:
choosing the assignor and the computing member, Prepare, Install validation (each error),
an assignor error keeping the target, re-selection when the chosen member does not install,
revoke-before-assign for an installed target, and replay."""

from __future__ import annotations

import random
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from connect_rebalance.errors import ErrorCode
from connect_rebalance.protocol.api_keys import ApiKey
from connect_rebalance.protocol.connect_group import ClientAssignor
from connect_rebalance.protocol.consumer_group import (
    MemberTarget,
    heartbeat_fields,
    install_fields,
    partitions_of,
)
from tests.support.group_harness import GroupHarness
from tests.unit.test_consumer_group_core import assert_replay_rebuilds

pytestmark = pytest.mark.unit
REBALANCE_TIMEOUT_MS = 30000
STICKY = ClientAssignor("sticky", 0, 2, 1, b"meta")


class ClientGroup:
    """Members of group "cg" that compute their own targets, over a GroupHarness."""

    def __init__(self, topics: dict[str, int] | None = None) -> None:
        self.h = GroupHarness(topics=topics or {"orders": 4})
        self.epochs: dict[str, int] = {}
        self.joins: dict[str, dict[str, Any]] = {}

    def tp(self, topic: str, *partitions: int) -> frozenset[tuple[str, int]]:
        topic_id = self.h.metadata.topic_id(topic)
        assert topic_id is not None
        return frozenset((topic_id, p) for p in partitions)

    def beat(self, member: str, epoch: int | None = None, **fields: Any) -> dict[str, Any]:
        """A heartbeat at the member's epoch; at epoch 0 (no target installed yet) a full join."""
        epoch = self.epochs.get(member, 0) if epoch is None else epoch
        if epoch == 0 and member in self.joins:
            fields = {**self.joins[member], **fields}
        answer = self.h.call(
            ApiKey.CONSUMER_GROUP_HEARTBEAT, 1, **heartbeat_fields("cg", member, epoch, **fields)
        )
        if answer["error_code"] == 0:
            self.epochs[member] = answer["member_epoch"]
        return answer

    def join(self, member: str, topics=("orders",), assignors=(STICKY,), **fields: Any) -> dict[str, Any]:  # type: ignore[no-untyped-def]
        join = {"topics": topics, "owned": (), "rebalance_timeout_ms": REBALANCE_TIMEOUT_MS,
                "assignors": assignors, **fields}  # fmt: skip
        answer = self.beat(member, 0, **join)
        if answer["error_code"] == 0:
            self.joins[member] = join
        return answer

    def alone(self, member: str) -> None:
        """The member forms the group and installs a target giving itself every partition of orders."""
        self.join(member)
        assert self.prepare(member)["group_epoch"] == 1
        assert (
            self.install(member, 1, {member: self.tp("orders", *range(self.h.topics["orders"]))})[
                "error_code"
            ]
            == 0
        )

    def prepare(self, member: str, epoch: int | None = None) -> dict[str, Any]:
        epoch = self.epochs[member] if epoch is None else epoch
        return self.h.call(
            ApiKey.CONSUMER_GROUP_PREPARE_ASSIGNMENT, 0, group_id="cg", member_id=member, member_epoch=epoch
        )

    def install(
        self, member: str, group_epoch: int, targets: dict[str, frozenset[tuple[str, int]]], error: int = 0
    ) -> dict[str, Any]:
        members = [MemberTarget(m, items, 1, f"for-{m}".encode()) for m, items in targets.items()]
        fields = install_fields("cg", member, self.epochs[member], group_epoch, members, error)
        return self.h.call(ApiKey.CONSUMER_GROUP_INSTALL_ASSIGNMENT, 0, **fields)

    def group(self):  # type: ignore[no-untyped-def]
        return self.h.core.groups["cg"]


def test_the_member_whose_versions_cover_everyone_computes_and_only_it_is_told() -> None:
    g = ClientGroup()
    # The KIP's example: A [1-5], B [3-4], C [2-4]; only A can read everyone's metadata.
    assert g.join("B", assignors=[ClientAssignor("streams", 3, 4, 3)])["should_compute_assignment"]
    assert g.join("A", assignors=[ClientAssignor("streams", 1, 5, 5)])["should_compute_assignment"], (
        "B [3-4] cannot read A's version 5: A computes instead"
    )
    assert not g.beat("B")["should_compute_assignment"]
    assert g.prepare("B")["error_code"] == ErrorCode.UNKNOWN_MEMBER_ID
    assert g.prepare("A")["group_epoch"] == 2
    assert g.install("A", 2, {"B": g.tp("orders", 0, 1), "A": g.tp("orders", 2, 3)})["error_code"] == 0
    c = g.join("C", assignors=[ClientAssignor("streams", 2, 4, 2)])
    assert not c["should_compute_assignment"] and g.group().group_epoch == 3
    assert not g.beat("B")["should_compute_assignment"]
    assert g.beat("A")["should_compute_assignment"], "A still covers everyone: it computes again"
    assert (
        g.h.call(69, 0, group_ids=["cg"], include_authorized_operations=False)["groups"][0]["assignor_name"]
        == "streams"
    )


def test_the_oldest_members_priority_picks_the_assignor_and_a_server_assignor_vote_wins() -> None:
    g = ClientGroup()
    g.join("A", assignors=[ClientAssignor("x", 0, 1, 0), ClientAssignor("y", 0, 1, 0)])
    g.join("B", assignors=[ClientAssignor("y", 0, 1, 0), ClientAssignor("x", 0, 1, 0)])
    assert g.prepare("A")["assignor_name"] == "x"
    server = g.h.consumer_heartbeat(
        "S", 0, topics=["orders"], owned={}, rebalance_timeout_ms=1000, assignor="range"
    )
    assert server["error_code"] == 0 and not server["should_compute_assignment"]
    assert g.group().assignment_epoch == g.group().group_epoch, "the server computed the target at once"
    assert g.prepare("A")["error_code"] == ErrorCode.UNKNOWN_MEMBER_ID, "A's round was abandoned"


def test_assignors_are_validated_and_must_overlap_with_the_group() -> None:
    g = ClientGroup()
    g.join("A", assignors=[ClientAssignor("x", 2, 3, 2)])
    refused = g.join("B", assignors=[ClientAssignor("x", 0, 1, 1)])
    assert (
        refused["error_code"] == ErrorCode.UNSUPPORTED_ASSIGNOR and "overlapping" in refused["error_message"]
    )
    assert set(g.group().members) == {"A"}, "a refused member is not left behind"
    for bad, why in [
        (ClientAssignor("", 0, 1, 0), "Name"),
        (ClientAssignor("x", -2, 1, 0), "MinimumVersion"),
        (ClientAssignor("x", 2, 1, 1), "MaximumVersion"),
        (ClientAssignor("x", 0, 1, 3), "MetadataVersion"),
    ]:
        answer = g.join("C", assignors=[bad])
        assert answer["error_code"] == ErrorCode.INVALID_REQUEST and why in answer["error_message"]
    both = g.h.call(
        ApiKey.CONSUMER_GROUP_HEARTBEAT, 1,
        **{**heartbeat_fields("cg", "D", 0, topics=["orders"], owned=(), rebalance_timeout_ms=1000,
                              assignors=[STICKY]), "server_assignor": "uniform"},
    )  # fmt: skip
    assert both["error_code"] == ErrorCode.INVALID_REQUEST and "together" in both["error_message"]


def test_prepare_returns_the_group_state_and_checks_who_asks() -> None:
    g = ClientGroup(topics={"orders": 4, "audit": 2})
    g.join("A", topics=["orders", "audit"], instance_id="host-a")
    g.prepare("A")
    g.install("A", 1, {"A": g.tp("orders", 0, 1, 2, 3) | g.tp("audit", 0, 1)})
    g.join("B", assignors=[ClientAssignor("sticky", 0, 2, 2, b"b-meta", reason=3)])
    g.beat("A")
    prepared = g.prepare("A")
    assert prepared["error_code"] == 0 and (prepared["group_epoch"], prepared["assignment_epoch"]) == (2, 1)
    assert (prepared["assignor_name"], prepared["assignor_minimum_version"]) == ("sticky", 0)
    members = {m["member_id"]: m for m in prepared["members"]}
    orders, audit = g.h.metadata.topic_id("orders"), g.h.metadata.topic_id("audit")
    assert sorted(map(str, members["A"]["subscribed_topic_ids"])) == sorted([orders, audit])
    assert [str(t) for t in members["B"]["subscribed_topic_ids"]] == [orders]
    assert members["A"]["instance_id"] == "host-a"
    assert members["B"]["assignor"] == {"reason": 3, "metadata_version": 2, "metadata_bytes": b"b-meta"}
    assert partitions_of(members["A"]["topic_partitions"]) == g.tp("orders", 0, 1, 2, 3) | g.tp("audit", 0, 1)
    assert members["B"]["topic_partitions"] == []
    topics = {t["topic_name"]: (str(t["topic_id"]), t["num_partitions"]) for t in prepared["topics"]}
    assert topics == {"orders": (orders, 4), "audit": (audit, 2)}
    assert not g.beat("A")["should_compute_assignment"], "prepared: no longer asked"

    assert g.prepare("B")["error_code"] == ErrorCode.UNKNOWN_MEMBER_ID, "B is not chosen"
    assert g.prepare("A", epoch=7)["error_code"] == ErrorCode.STALE_MEMBER_EPOCH
    assert g.prepare("ghost", epoch=1)["error_code"] == ErrorCode.UNKNOWN_MEMBER_ID
    missing = g.h.call(
        ApiKey.CONSUMER_GROUP_PREPARE_ASSIGNMENT, 0, group_id="nope", member_id="A", member_epoch=1
    )
    assert missing["error_code"] == ErrorCode.GROUP_ID_NOT_FOUND
    empty = g.h.call(ApiKey.CONSUMER_GROUP_PREPARE_ASSIGNMENT, 0, group_id="cg", member_id="", member_epoch=1)
    assert empty["error_code"] == ErrorCode.INVALID_REQUEST


@pytest.mark.parametrize(
    ("targets", "reason"),
    [
        ({"A": ("orders", 0, 1, 2), "B": ("orders", 2, 3)}, "assigned to both"),
        ({"A": ("orders", 0, 1), "B": ("orders", 2)}, "declared as covered but not assigned"),
        ({"A": ("orders", 0, 1), "B": ("orders", 2, 3, 9)}, "not declared as covered"),
        ({"A": ("orders", 0, 1), "B": ("orders", 2, 3), "Z": ("orders",)}, "were not in the group"),
        ({"A": ("orders", 0, 1, 2, 3), "B": ("audit", 0)}, "does not subscribe to"),
    ],
)
def test_an_invalid_install_is_refused_with_the_reason_and_changes_nothing(targets, reason) -> None:  # type: ignore[no-untyped-def]
    g = ClientGroup(topics={"orders": 4, "audit": 1})
    g.join("A", topics=["orders", "audit"])
    g.join("B")
    g.beat("A")
    assert g.prepare("A")["group_epoch"] == 2
    before = list(g.h.records)
    answer = g.install("A", 2, {m: g.tp(t[0], *t[1:]) for m, t in targets.items()})
    assert answer["error_code"] == ErrorCode.INVALID_ASSIGNMENT and reason in answer["error_message"], answer
    assert g.h.records == before and g.group().assignment_epoch == 0
    assert (
        g.install("A", 2, {"A": g.tp("orders", 0, 1) | g.tp("audit", 0), "B": g.tp("orders", 2, 3)})[
            "error_code"
        ]
        == 0
    ), "the member may try again with a valid assignment"


def test_install_checks_the_epoch_it_was_computed_for_and_that_it_was_prepared() -> None:
    g = ClientGroup()
    g.join("A")
    unprepared = g.install("A", 1, {"A": g.tp("orders", 0, 1, 2, 3)})
    assert unprepared["error_code"] == ErrorCode.INVALID_REQUEST and "Prepare" in unprepared["error_message"]
    g.prepare("A")
    wrong = g.install("A", 5, {"A": g.tp("orders", 0, 1, 2, 3)})
    assert wrong["error_code"] == ErrorCode.INVALID_ASSIGNMENT and "epoch 5" in wrong["error_message"]
    body = install_fields("cg", "A", g.epochs["A"], 1, [MemberTarget("A", g.tp("orders", 0, 1, 2, 3))] * 2)
    duplicated = g.h.call(ApiKey.CONSUMER_GROUP_INSTALL_ASSIGNMENT, 0, **body)
    assert duplicated["error_code"] == ErrorCode.INVALID_ASSIGNMENT and "twice" in duplicated["error_message"]


def test_an_install_for_an_older_epoch_is_accepted_and_the_next_round_starts_at_once() -> None:
    g = ClientGroup()
    g.join("A")
    g.prepare("A")
    g.join("B")  # epoch 2 while A computes for epoch 1
    assert g.install("A", 1, {"A": g.tp("orders", 0, 1, 2, 3)})["error_code"] == 0
    assert g.group().assignment_epoch == 1 and {m: t.items for m, t in g.group().target.items()} == {
        "A": g.tp("orders", 0, 1, 2, 3),
        "B": frozenset(),
    }
    assert g.beat("A")["should_compute_assignment"], "asked again for epoch 2"


def test_an_assignor_error_keeps_the_current_target_and_advances_its_epoch() -> None:
    g = ClientGroup()
    g.alone("A")
    g.join("B")
    g.beat("A")
    g.prepare("A")
    assert g.install("A", 2, {"B": g.tp("orders", 0, 1, 2, 3)}, error=7)["error_code"] == 0
    group = g.group()
    assert group.assignment_epoch == 2 and group.target_of("A") == g.tp("orders", 0, 1, 2, 3)
    assert not group.target_of("B")
    a = g.beat("A")
    assert a["member_epoch"] == 2 and not a["should_compute_assignment"], (
        "no new round until something changes"
    )
    assert group.members["A"].assignment.assigned == g.tp("orders", 0, 1, 2, 3)


def test_a_chosen_member_that_does_not_install_in_time_is_passed_over() -> None:
    g = ClientGroup()
    g.alone("A")
    g.join("B")
    assert g.beat("A")["should_compute_assignment"]
    g.prepare("A")
    g.h.advance(REBALANCE_TIMEOUT_MS // 2)
    g.beat("B")
    g.h.advance(REBALANCE_TIMEOUT_MS // 2 + 1)
    assert g.beat("B")["should_compute_assignment"], "B is chosen once A's rebalance timeout passed"
    assert g.prepare("A")["error_code"] == ErrorCode.UNKNOWN_MEMBER_ID
    late = g.install("A", 2, {"A": g.tp("orders", 0, 1), "B": g.tp("orders", 2, 3)})
    assert late["error_code"] == ErrorCode.UNKNOWN_MEMBER_ID
    assert g.prepare("B")["group_epoch"] == 2
    assert g.install("B", 2, {"A": g.tp("orders", 0, 1), "B": g.tp("orders", 2, 3)})["error_code"] == 0


def test_a_chosen_member_that_leaves_is_replaced() -> None:
    g = ClientGroup()
    g.join("A")
    g.join("B")
    assert g.beat("A")["should_compute_assignment"]
    g.beat("A", -1)
    assert g.beat("B")["should_compute_assignment"]


def test_an_installed_target_is_reconciled_revoke_before_assign() -> None:
    g = ClientGroup()
    g.alone("A")
    a = g.beat("A")
    assert partitions_of(a["assignment"]["topic_partitions"]) == g.tp("orders", 0, 1, 2, 3)
    g.join("B")
    g.beat("A", owned=g.tp("orders", 0, 1, 2, 3))
    g.prepare("A")
    assert g.install("A", 2, {"A": g.tp("orders", 0, 1), "B": g.tp("orders", 2, 3)})["error_code"] == 0
    b = g.beat("B")
    assert b["member_epoch"] == 2 and g.group().members["B"].assignment.assigned == frozenset(), (
        "B moves to epoch 2 but waits for what A still holds"
    )
    told = g.beat("A", owned=g.tp("orders", 0, 1, 2, 3))
    assert told["member_epoch"] == 1 and partitions_of(told["assignment"]["topic_partitions"]) == g.tp(
        "orders", 0, 1
    ), "A is told to revoke first and stays at epoch 1"
    assert_replay_rebuilds(g.h)
    assert g.beat("B")["assignment"] is None, "still held by A"
    done = g.beat("A", owned=g.tp("orders", 0, 1))
    assert done["member_epoch"] == 2
    b = g.beat("B")
    assert partitions_of(b["assignment"]["topic_partitions"]) == g.tp("orders", 2, 3)
    assert g.group().state.value == "Stable"
    assert_replay_rebuilds(g.h)


def test_after_a_restart_the_group_asks_a_member_to_compute_again() -> None:
    from coordinator.group_record_codec import decode_record, encode_record
    from coordinator.groups.coordinator import GroupCoordinator
    from coordinator.groups.settings import GroupSettings

    g = ClientGroup()
    g.alone("A")
    g.join("B")
    g.beat("A")
    g.prepare("A")  # the coordinator restarts before A installs
    replayed = GroupCoordinator(GroupSettings(), g.h.topics.get, topics_view=g.h.metadata)
    for record in g.h.records:
        replayed.replay(decode_record(*encode_record(record)))
    replayed.load_complete(g.h.now)
    g.h.core = replayed
    assert [m.client_assignors for m in g.group().members.values()] == [
        g.group().members["A"].client_assignors
    ] * 2
    assert g.beat("A")["should_compute_assignment"], "the prepared round was not persisted: prepare again"
    assert g.install("A", 2, {"A": g.tp("orders", 0, 1)})["error_code"] == ErrorCode.INVALID_REQUEST
    # Subscribed partition counts are not persisted, so the first heartbeat after a restart
    # sees them as new and bumps the group epoch once more.
    epoch = g.prepare("A")["group_epoch"]
    assert epoch >= 2
    assert g.install("A", epoch, {"A": g.tp("orders", 0, 1), "B": g.tp("orders", 2, 3)})["error_code"] == 0
    assert g.group().assignment_epoch == g.group().group_epoch


def test_the_tagged_fields_leave_kafkas_heartbeat_bytes_unchanged_for_real_clients() -> None:
    from connect_rebalance.protocol import codec

    answer = {"throttle_time_ms": 0, "error_code": 0, "error_message": None, "member_id": "m",
              "member_epoch": 3, "heartbeat_interval_ms": 5000, "assignment": None}  # fmt: skip
    for version in (0, 1):
        kafka = bytes(codec.build_response(ApiKey.CONSUMER_GROUP_HEARTBEAT, version, answer).encode())
        unasked = {**answer, "should_compute_assignment": False}
        assert (
            bytes(codec.build_response(ApiKey.CONSUMER_GROUP_HEARTBEAT, version, unasked).encode()) == kafka
        )
        assert kafka.endswith(b"\x00"), "no tagged fields"
        asked = codec.build_response(
            ApiKey.CONSUMER_GROUP_HEARTBEAT, version, {**answer, "should_compute_assignment": True}
        )
        decoded = codec.decode_response_body(
            ApiKey.CONSUMER_GROUP_HEARTBEAT, version, b"\x00\x00\x00\x07\x00" + bytes(asked.encode())
        )[1]
        assert decoded.should_compute_assignment is True
        request = heartbeat_fields("cg", "m", 3, owned=())
        plain = bytes(codec.build_request(ApiKey.CONSUMER_GROUP_HEARTBEAT, version, request).encode())
        decoded_request = codec.decode_request_body(
            codec.RequestHeader(ApiKey.CONSUMER_GROUP_HEARTBEAT, version, 1, "c"), plain, 0
        )
        assert decoded_request.client_assignors is None


def test_members_receive_the_metadata_and_error_their_assignor_computed_and_they_survive_replay() -> None:
    from coordinator.group_record_codec import decode_record, encode_record
    from coordinator.groups.coordinator import GroupCoordinator
    from coordinator.groups.settings import GroupSettings

    g = ClientGroup()
    g.alone("A")
    a = g.beat("A")
    assert (a["assignment"]["metadata_version"], a["assignment"]["metadata_bytes"]) == (1, b"for-A")
    assert "error" not in a["assignment"] or a["assignment"]["error"] == 0
    g.join("B")
    g.beat("A", owned=g.tp("orders", 0, 1, 2, 3))
    g.prepare("A")
    g.install("A", 2, {"A": g.tp("orders", 0, 1, 2, 3)}, error=4)
    a = g.beat("A", owned=g.tp("orders", 0, 1, 2, 3))
    assert a["member_epoch"] == 2 and a["assignment"]["error"] == 4, (
        "the error reaches the member with its epoch"
    )
    b = g.beat("B")
    assert b["assignment"]["error"] == 4 and "metadata_version" in b["assignment"]
    replayed = GroupCoordinator(GroupSettings(), g.h.topics.get, topics_view=g.h.metadata)
    for record in g.h.records:
        replayed.replay(decode_record(*encode_record(record)))
    group = replayed.groups["cg"]
    metadata = {m: (t.metadata_version, t.metadata) for m, t in group.target.items() if t.metadata}
    assert (group.target_error, metadata) == (4, {"A": (1, b"for-A")})
    assert_replay_rebuilds(g.h)


class SimulatedClients:
    """Members that do what a consumer with a client-side assignor does: report what they hold,
    revoke at once when told, rejoin when fenced, and compute when asked (validly, with an
    assignor error, or wrongly, as the script says)."""

    def __init__(self) -> None:
        self.g = ClientGroup(topics={"orders": 6})
        self.held: dict[str, frozenset[tuple[str, int]]] = {}

    def drop(self, member: str) -> None:
        for table in (self.g.epochs, self.g.joins, self.held):
            table.pop(member, None)

    def beat(self, member: str, acknowledge: bool = True) -> None:
        g = self.g
        if member not in g.joins:
            answer = g.join(member)
        elif g.epochs[member] == 0:
            answer = g.beat(member)  # waiting for a first target: a full heartbeat owning nothing
        else:
            answer = g.beat(member, owned=self.held[member] if acknowledge else None)
        if answer["error_code"] in (ErrorCode.FENCED_MEMBER_EPOCH, ErrorCode.UNKNOWN_MEMBER_ID):
            self.drop(member)  # it gives everything up and rejoins later
            return
        assert answer["error_code"] == 0, answer
        self.held.setdefault(member, frozenset())
        if answer["assignment"] is not None:
            self.held[member] = partitions_of(answer["assignment"]["topic_partitions"])

    def ask_again(self, member: str, reason: int) -> None:
        """A new reason for its assignor metadata: the KIP's way to ask for a new assignment."""
        assignor = ClientAssignor(STICKY.name, STICKY.minimum_version, STICKY.maximum_version,
                                  STICKY.metadata_version, STICKY.metadata, reason)  # fmt: skip
        owned = () if self.g.epochs[member] == 0 else self.held[member]
        assert self.g.beat(member, owned=owned, assignors=[assignor])["error_code"] == 0

    def compute(self, how: str, seed: int) -> None:
        group = self.g.h.core.groups.get("cg")
        member = group.compute.member_id if group is not None else None
        if member is None or member not in self.g.epochs:
            return
        prepared = self.g.prepare(member)
        if prepared["error_code"] != 0:
            return
        members = sorted(m["member_id"] for m in prepared["members"])
        partitions = [(str(t["topic_id"]), p) for t in prepared["topics"] for p in range(t["num_partitions"])]
        rng = random.Random(seed)
        targets: dict[str, set[tuple[str, int]]] = {m: set() for m in members}
        for tp in partitions:
            targets[rng.choice(members)].add(tp)
        if how == "twice" and partitions:
            targets = {m: t | {partitions[0]} for m, t in targets.items()}
        answer = self.g.install(
            member,
            prepared["group_epoch"],
            {m: frozenset(t) for m, t in targets.items()},
            3 if how == "error" else 0,
        )
        expected = ErrorCode.INVALID_ASSIGNMENT if how == "twice" and len(members) > 1 else ErrorCode.NONE
        assert answer["error_code"] == expected, answer

    def check_no_partition_held_twice(self) -> None:
        seen: dict[tuple[str, int], str] = {}
        for member, held in self.held.items():
            for item in held:
                assert item not in seen, f"{item} held by {seen[item]} and {member}"
                seen[item] = member


client_steps = st.lists(
    st.tuples(
        st.sampled_from(["beat", "beat", "beat", "compute", "compute", "leave", "timeout", "grow"]),
        st.sampled_from(["A", "B", "C"]),
        st.sampled_from(["valid", "valid", "error", "twice"]),
        st.integers(0, 1000),
        st.booleans(),
    ),
    max_size=40,
)


@settings(max_examples=120, deadline=None)
@given(script=client_steps)
def test_no_partition_is_held_twice_and_a_quiet_client_assigned_group_converges(script) -> None:  # type: ignore[no-untyped-def]
    sim = SimulatedClients()
    g = sim.g
    for kind, member, how, seed, acknowledge in script:
        if kind == "beat":
            sim.beat(member, acknowledge)
        elif kind == "compute":
            sim.compute(how, seed)
        elif kind == "leave" and member in g.joins:
            g.beat(member, -1)
            sim.drop(member)
        elif kind == "timeout":
            g.h.advance(REBALANCE_TIMEOUT_MS + 1)  # unacknowledged revocations and computations expire
            group = g.h.core.groups.get("cg")
            for fenced in [m for m in list(g.joins) if group is None or m not in group.members]:
                # A member past its revocation deadline is fenced and its partitions move; a
                # client that late has stopped on its own timer (as the Java consumer's
                # max.poll.interval.ms makes it leave), so it no longer holds them.
                sim.drop(fenced)
        elif kind == "grow":
            g.h.topics["orders"] += 1
        sim.check_no_partition_held_twice()
    for round_ in range(40):  # quiet: everyone acknowledges, the chosen member computes validly
        group = g.h.core.groups.get("cg")
        if group is None or not group.members:
            break
        if group.state.value == "Stable" and round_ > 1:
            if not group.target_error:
                break
            sim.ask_again(sorted(g.joins)[0], round_)  # the assignor failed last time: try again
        for member in sorted(g.joins):
            sim.beat(member)
            sim.compute("valid", round_)
            sim.check_no_partition_held_twice()
    assert_replay_rebuilds(g.h)
    group = g.h.core.groups.get("cg")
    if group is not None and group.members:
        assert group.state.value == "Stable"
        held = sorted(item for m in group.members.values() for item in m.assignment.assigned)
        assert held == sorted(g.tp("orders", *range(g.h.topics["orders"]))), "every partition is held once"
        assert {m: h for m, h in sim.held.items() if h} == {
            m.member_id: m.assignment.assigned for m in group.members.values() if m.assignment.assigned
        }

"""KIP-848 client-side assignment over TCP against a coordinator process, with the project's
own protocol client: members with a client assignor converge on the target one of them
computes and installs; a bad install is INVALID_ASSIGNMENT with the reason; real librdkafka
KIP-848 consumers in another group keep working beside them (ApiVersions still decodes)."""

from __future__ import annotations

import asyncio
import time
from collections.abc import Awaitable, Callable
from pathlib import Path
from typing import Any

import pytest
from confluent_kafka import Consumer, ConsumerGroupType
from confluent_kafka.admin import AdminClient

from connect_rebalance.errors import ErrorCode
from connect_rebalance.processes import CoordinatorProcess
from connect_rebalance.protocol.api_keys import ApiKey
from connect_rebalance.protocol.client import ProtocolClient
from connect_rebalance.protocol.connect_group import ClientAssignor
from connect_rebalance.protocol.consumer_group import ConsumerGroupApi, MemberTarget, partitions_of
from tests.support.clients import produce_confluent
from tests.support.group_scenario import create_topic

pytestmark = pytest.mark.integration
GROUP, TOPIC, PARTITIONS = "client-assigned", "orders", 4
ROUND_ROBIN = ClientAssignor("round-robin", 0, 1, 1, b"v1")


class ClientAssigningMember:
    """A member running a client-side assignor, as a consumer would: it applies each assignment
    at once (what is gone is revoked), reports what it holds, and when asked computes the
    group's target (every subscribed partition, round-robin over the members) and installs it."""

    def __init__(self, api: ConsumerGroupApi, member_id: str) -> None:
        self.api, self.member_id = api, member_id
        self.epoch = 0
        self.held: frozenset[tuple[str, int]] = frozenset()
        self.installs: list[dict[str, Any]] = []
        self.bad_install_first = False
        self.metadata: tuple[int, bytes] = (0, b"")  # what the assignor computed for this member

    async def beat(self) -> None:
        if self.epoch == 0:  # joining, or waiting for the first target: a full heartbeat
            fields: dict[str, Any] = {"topics": [TOPIC], "rebalance_timeout_ms": 20000, "owned": (),
                                      "assignors": [ROUND_ROBIN]}  # fmt: skip
        else:
            fields = {"owned": self.held}
        answer = await self.api.heartbeat(GROUP, self.member_id, self.epoch, **fields)
        assert answer["error_code"] == 0, answer
        self.epoch = answer["member_epoch"]
        if answer["assignment"] is not None:
            self.held = partitions_of(answer["assignment"]["topic_partitions"])
            self.metadata = (answer["assignment"]["metadata_version"], answer["assignment"]["metadata_bytes"])
        if answer["should_compute_assignment"]:
            await self.compute()

    async def compute(self) -> None:
        prepared = await self.api.prepare(GROUP, self.member_id, self.epoch)
        assert prepared["error_code"] == 0, prepared
        assert prepared["assignor_name"] == ROUND_ROBIN.name
        members = sorted(m["member_id"] for m in prepared["members"])
        partitions = sorted(
            (str(t["topic_id"]), p) for t in prepared["topics"] for p in range(t["num_partitions"])
        )
        targets: dict[str, set[tuple[str, int]]] = {m: set() for m in members}
        for i, tp in enumerate(partitions):
            targets[members[i % len(members)]].add(tp)
        if self.bad_install_first:
            self.bad_install_first = False
            twice = {m: frozenset(t) | {partitions[0]} for m, t in targets.items()}
            await self._install(prepared["group_epoch"], twice)
        await self._install(prepared["group_epoch"], {m: frozenset(t) for m, t in targets.items()})

    async def _install(self, group_epoch: int, targets: dict[str, frozenset[tuple[str, int]]]) -> None:
        members = [MemberTarget(m, t, 1, f"for {m}".encode()) for m, t in targets.items()]
        self.installs.append(await self.api.install(GROUP, self.member_id, self.epoch, group_epoch, members))


async def settle(
    members: list[ClientAssigningMember], settled: Callable[[], Awaitable[bool]], timeout: float
) -> None:
    """Heartbeat every member in turn until `settled()` holds (a deadline, not a sleep)."""
    deadline = time.monotonic() + timeout
    while not await settled():
        assert time.monotonic() < deadline, f"the group did not settle within {timeout:.0f}s"
        for member in members:
            await member.beat()
        await asyncio.sleep(0.05)


def converged(api: ConsumerGroupApi, members: list[ClientAssigningMember]) -> Callable[[], Awaitable[bool]]:
    async def check() -> bool:
        (described,) = await api.describe(GROUP)
        held = [m.held for m in members]
        return (
            described["group_state"] == "Stable"
            and len(described["members"]) == len(members)
            and sum(len(h) for h in held) == PARTITIONS
            and len(frozenset().union(*held)) == PARTITIONS
            and max(len(h) for h in held) - min(len(h) for h in held) <= 1
        )

    return check


async def client_assignment_scenario(bootstrap: str) -> None:
    clients = [await ProtocolClient.connect(bootstrap, f"member-{i}") for i in range(3)]
    try:
        a, b, c = (
            ClientAssigningMember(ConsumerGroupApi(cl), n) for cl, n in zip(clients, "abc", strict=True)
        )
        await settle([a, b], converged(a.api, [a, b]), 30)
        computed = [m for m in (a, b) if m.installs]
        assert len(computed) == 1 and all(i["error_code"] == 0 for i in computed[0].installs), (
            "one member computed every target"
        )
        (described,) = await a.api.describe(GROUP)
        assert described["assignor_name"] == ROUND_ROBIN.name and {a.epoch, b.epoch} == {
            described["group_epoch"]
        }
        assert (a.metadata, b.metadata) == ((1, b"for a"), (1, b"for b")), "each got its assignor metadata"

        # A third member joins; the computing member first installs a partition twice.
        computer = computed[0]
        computer.bad_install_first = True
        await settle([a, b, c], converged(a.api, [a, b, c]), 30)
        bad = computer.installs[-2]
        assert bad["error_code"] == ErrorCode.INVALID_ASSIGNMENT, bad
        assert "is assigned to both" in bad["error_message"], bad["error_message"]
        assert computer.installs[-1]["error_code"] == 0
        assert sorted(len(m.held) for m in (a, b, c)) == [1, 1, 2]
    finally:
        for client in clients:
            await client.close()


def test_members_with_a_client_assignor_converge_on_the_target_one_of_them_installs(
    group_coordinator: CoordinatorProcess,
) -> None:
    create_topic(group_coordinator.bootstrap, TOPIC, PARTITIONS)
    asyncio.run(client_assignment_scenario(group_coordinator.bootstrap))


def consume_with_librdkafka(bootstrap: str, group_id: str, topic: str, expected: int) -> set[bytes]:
    """A real KIP-848 consumer (group.protocol=consumer) reads `expected` records, then leaves."""
    consumer = Consumer({
        "bootstrap.servers": bootstrap, "group.id": group_id, "group.protocol": "consumer",
        "auto.offset.reset": "earliest", "enable.auto.commit": False,
    })  # fmt: skip
    received: set[bytes] = set()
    try:
        consumer.subscribe([topic])
        deadline = time.monotonic() + 60
        while len(received) < expected:
            assert time.monotonic() < deadline, f"librdkafka consumed only {len(received)} of {expected}"
            for message in consumer.consume(num_messages=100, timeout=0.5):
                assert message.error() is None, message.error()
                received.add(message.value())
        consumer.commit(asynchronous=False)
    finally:
        consumer.close()
    return received


def test_librdkafka_consumer_group_members_keep_working_beside_a_client_assigned_group(
    group_coordinator: CoordinatorProcess,
) -> None:
    bootstrap = group_coordinator.bootstrap
    create_topic(bootstrap, TOPIC, PARTITIONS)
    create_topic(bootstrap, "events", 2)
    produce_confluent(bootstrap, "events", [(str(i).encode(), str(i).encode()) for i in range(50)])

    async def side_by_side() -> set[bytes]:
        client = await ProtocolClient.connect(bootstrap, "member-a")
        try:
            versions = await client.request(
                ApiKey.API_VERSIONS, 3, {"client_software_name": "test", "client_software_version": "1"}
            )
            ranges = {k["api_key"]: (k["min_version"], k["max_version"]) for k in versions["api_keys"]}
            assert ranges[ApiKey.CONSUMER_GROUP_HEARTBEAT] == (0, 1), "librdkafka negotiates v0-v1 as before"
            assert (
                ranges[ApiKey.CONSUMER_GROUP_PREPARE_ASSIGNMENT]
                == ranges[ApiKey.CONSUMER_GROUP_INSTALL_ASSIGNMENT]
                == (0, 0)
            )
            a = ClientAssigningMember(ConsumerGroupApi(client), "a")
            await settle([a], converged(a.api, [a]), 30)
            # The client-assigned member keeps heartbeating while librdkafka consumes.
            consuming = asyncio.create_task(
                asyncio.to_thread(consume_with_librdkafka, bootstrap, "librdkafka-kip848", "events", 50)
            )
            while not consuming.done():
                await a.beat()
                await asyncio.wait({consuming}, timeout=0.5)
            assert len(a.held) == PARTITIONS and not a.installs[1:], "the client-assigned group did not move"
            return consuming.result()
        finally:
            await client.close()

    assert len(asyncio.run(side_by_side())) == 50
    admin = AdminClient({"bootstrap.servers": bootstrap})
    described = admin.describe_consumer_groups([GROUP, "librdkafka-kip848"])
    assert described["librdkafka-kip848"].result(30).type == ConsumerGroupType.CONSUMER
    client_group = described[GROUP].result(30)
    assert client_group.type == ConsumerGroupType.CONSUMER and len(client_group.members) == 1
    assert sorted(p.partition for p in client_group.members[0].assignment.topic_partitions) == [0, 1, 2, 3]


async def restart_scenario(coordinator: CoordinatorProcess) -> None:
    clients = [await ProtocolClient.connect(coordinator.bootstrap, f"member-{i}") for i in range(2)]
    members = [ClientAssigningMember(ConsumerGroupApi(cl), n) for cl, n in zip(clients, "ab", strict=True)]
    try:
        await settle(members, converged(members[0].api, members), 30)
        (before,) = await members[0].api.describe(GROUP)
        held = [m.held for m in members]
        for client in clients:
            await client.close()
        coordinator.kill()  # kill -9: only what was written survives
        coordinator.start()
        clients = [await ProtocolClient.connect(coordinator.bootstrap, f"member-{i}") for i in range(2)]
        for member, client in zip(members, clients, strict=True):
            member.api = ConsumerGroupApi(client)
        (after,) = await members[0].api.describe(GROUP)
        assert after["assignment_epoch"] == before["assignment_epoch"]
        assert {m["member_id"]: m["target_assignment"] for m in after["members"]} == {
            m["member_id"]: m["target_assignment"] for m in before["members"]
        }, "the installed target survived the restart"
        await settle(members, converged(members[0].api, members), 30)
        assert [m.held for m in members] == held, "no partition moved across the restart"
    finally:
        for client in clients:
            await client.close()


def test_an_installed_target_survives_a_kill_9_of_the_coordinator(tmp_path: Path) -> None:
    coordinator = CoordinatorProcess(tmp_path / "data").start()
    try:
        create_topic(coordinator.bootstrap, TOPIC, PARTITIONS)
        asyncio.run(restart_scenario(coordinator))
    finally:
        coordinator.kill()

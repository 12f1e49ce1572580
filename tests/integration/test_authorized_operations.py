"""KIP-430's authorized operations, as confluent-kafka's AdminClient asks for them
(`include_authorized_operations=True` on describe_topics, describe_cluster and
describe_consumer_groups): with an authorizer, the operations the asking principal may do
on each resource, implied ones included (Read implies Describe, AlterConfigs implies
DescribeConfigs); for one allowed everything, all of the resource's (8 for a topic, 7 for
the cluster, 5 for a group); without Describe on the cluster, none of the cluster's. Without
an authorizer, every operation of the resource, as Kafka answers."""

from __future__ import annotations

import asyncio
import time
from collections.abc import Iterator
from pathlib import Path

import pytest
from confluent_kafka import Consumer, TopicCollection
from confluent_kafka import TopicPartition as Tp
from confluent_kafka.admin import AclOperation, AdminClient, NewTopic, ResourcePatternType, ResourceType

from connect_rebalance.errors import ErrorCode
from connect_rebalance.processes import CoordinatorProcess
from connect_rebalance.protocol.api_keys import ApiKey
from tests.support.certificates import Pki, make_pki
from tests.support.client_security import ClientSecurity
from tests.support.secure_coordinator import (
    ADMIN,
    ADMIN_PASSWORD,
    allow,
    authenticated_client,
    create_acls,
    secure_coordinator,
)

pytestmark = pytest.mark.integration
CLUSTER = ResourceType.BROKER  # code 4: Kafka's CLUSTER resource in ACLs
USERS = {"alice": "alice-secret", "bob": "bob-secret", "carol": "carol-secret"}
TOPIC, CLASSIC_GROUP, CONSUMER_GROUP = "kip430-topic", "kip430-classic", "kip430-consumer"

TOPIC_OPERATIONS = {
    "READ",
    "WRITE",
    "CREATE",
    "DESCRIBE",
    "DELETE",
    "ALTER",
    "DESCRIBE_CONFIGS",
    "ALTER_CONFIGS",
}
CLUSTER_OPERATIONS = {"CREATE", "CLUSTER_ACTION", "DESCRIBE_CONFIGS", "ALTER_CONFIGS", "IDEMPOTENT_WRITE",
                      "ALTER", "DESCRIBE"}  # fmt: skip
GROUP_OPERATIONS = {"READ", "DESCRIBE", "DELETE", "DESCRIBE_CONFIGS", "ALTER_CONFIGS"}


def security(user: str, password: str) -> ClientSecurity:
    return ClientSecurity("SASL_PLAINTEXT", mechanism="PLAIN", username=user, password=password)


def names(operations: list[AclOperation] | None) -> set[str] | None:
    return None if operations is None else {op.name for op in operations}


def make_groups(bootstrap: str, extra: dict[str, str]) -> None:
    """A classic group (an assign()-ed consumer's commit) and a consumer group (a member of
    the KIP-848 protocol that got its partition)."""
    classic = Consumer({"bootstrap.servers": bootstrap, "group.id": CLASSIC_GROUP, **extra})
    try:
        classic.commit(offsets=[Tp(TOPIC, 0, 0)], asynchronous=False)
    finally:
        classic.close()
    settings = {"bootstrap.servers": bootstrap, "group.id": CONSUMER_GROUP, "group.protocol": "consumer"}
    member = Consumer({**settings, **extra})
    try:
        member.subscribe([TOPIC])
        deadline = time.monotonic() + 30
        while not member.assignment():
            assert time.monotonic() < deadline, "the consumer group member got no assignment in 30 s"
            member.poll(0.1)
    finally:
        member.close()


def described(admin: AdminClient) -> dict[str, set[str] | None]:
    """The authorized operations each describe returns, by resource."""
    topic = admin.describe_topics(TopicCollection([TOPIC]), include_authorized_operations=True)[TOPIC].result(
        30
    )
    cluster = admin.describe_cluster(include_authorized_operations=True).result(30)
    groups = admin.describe_consumer_groups(
        [CLASSIC_GROUP, CONSUMER_GROUP], include_authorized_operations=True
    )
    return {
        "topic": names(topic.authorized_operations),
        "cluster": names(cluster.authorized_operations),
        **{group: names(future.result(30).authorized_operations) for group, future in groups.items()},
    }


@pytest.fixture(scope="module")
def acl_coordinator(tmp_path_factory: pytest.TempPathFactory) -> Iterator[CoordinatorProcess]:
    pki: Pki = make_pki(tmp_path_factory.mktemp("pki"))
    process = secure_coordinator(pki, tmp_path_factory.mktemp("kip430") / "data", USERS, authorizer=True)
    try:
        yield process
    finally:
        process.kill()


def test_each_principal_sees_the_operations_its_acls_allow_it(acl_coordinator: CoordinatorProcess) -> None:
    bootstrap = acl_coordinator.bootstrap_for("SASL_PLAINTEXT")
    as_admin = security(ADMIN, ADMIN_PASSWORD).confluent()
    admin = AdminClient({"bootstrap.servers": bootstrap, **as_admin})
    admin.create_topics([NewTopic(TOPIC, 1, 1)])[TOPIC].result(30)
    make_groups(bootstrap, as_admin)

    bindings = [
        # alice: some operations, and those they imply.
        allow(ResourceType.TOPIC, "kip430-", "User:alice", AclOperation.READ, ResourcePatternType.PREFIXED),
        allow(ResourceType.TOPIC, TOPIC, "User:alice", AclOperation.ALTER_CONFIGS),
        allow(ResourceType.GROUP, "kip430-", "User:alice", AclOperation.READ, ResourcePatternType.PREFIXED),
        allow(ResourceType.GROUP, CONSUMER_GROUP, "User:alice", AclOperation.DELETE),
        allow(CLUSTER, "kafka-cluster", "User:alice", AclOperation.DESCRIBE),
        allow(CLUSTER, "kafka-cluster", "User:alice", AclOperation.IDEMPOTENT_WRITE),
        # bob: everything, through ALL.
        allow(ResourceType.TOPIC, "*", "User:bob", AclOperation.ALL),
        allow(ResourceType.GROUP, "*", "User:bob", AclOperation.ALL),
        allow(CLUSTER, "kafka-cluster", "User:bob", AclOperation.ALL),
        # carol: the topic and the groups, but nothing of the cluster.
        allow(ResourceType.TOPIC, TOPIC, "User:carol", AclOperation.DESCRIBE),
        allow(
            ResourceType.GROUP, "kip430-", "User:carol", AclOperation.DESCRIBE, ResourcePatternType.PREFIXED
        ),
    ]
    create_acls(admin, *bindings)

    def as_user(user: str) -> dict[str, set[str] | None]:
        return described(
            AdminClient({"bootstrap.servers": bootstrap, **security(user, USERS[user]).confluent()})
        )

    assert as_user("alice") == {
        "topic": {"READ", "DESCRIBE", "ALTER_CONFIGS", "DESCRIBE_CONFIGS"},
        "cluster": {"DESCRIBE", "IDEMPOTENT_WRITE"},
        CLASSIC_GROUP: {"READ", "DESCRIBE"},
        CONSUMER_GROUP: {"READ", "DESCRIBE", "DELETE"},
    }
    everything = {"topic": TOPIC_OPERATIONS, "cluster": CLUSTER_OPERATIONS, CLASSIC_GROUP: GROUP_OPERATIONS,
                  CONSUMER_GROUP: GROUP_OPERATIONS}  # fmt: skip
    assert as_user("bob") == everything
    assert described(admin) == everything, "a super user may do everything"
    # librdkafka gives no list for an empty set: the wire answer below tells 0 from INT32_MIN.
    assert as_user("carol") == {"topic": {"DESCRIBE"}, "cluster": None, CLASSIC_GROUP: {"DESCRIBE"},
                                CONSUMER_GROUP: {"DESCRIBE"}}  # fmt: skip

    # On the wire: carol's cluster operations are 0 (no Describe on the cluster), not INT32_MIN,
    # in Metadata v10 (what librdkafka asks) and DescribeCluster alike, alice's those she may do;
    # a topic carol may not Describe carries none at all, as Kafka answers it.
    async def ask(user: str) -> tuple[dict, dict]:  # type: ignore[type-arg]
        client = await authenticated_client(bootstrap, user, USERS[user])
        try:
            topics = [{"name": TOPIC}, {"name": "__consumer_offsets"}]
            metadata = await client.request(ApiKey.METADATA, 10, {
                "topics": topics, "allow_auto_topic_creation": False,
                "include_cluster_authorized_operations": True, "include_topic_authorized_operations": True,
            })  # fmt: skip
            cluster = await client.request(ApiKey.DESCRIBE_CLUSTER, 1, {
                "include_cluster_authorized_operations": True, "endpoint_type": 1})  # fmt: skip
            return metadata, cluster
        finally:
            await client.close()

    metadata, cluster = asyncio.run(ask("carol"))
    assert metadata["authorized_operations"] == set() and cluster["authorized_operations"] == set()
    by_name = {t["name"]: t for t in metadata["topics"]}
    assert by_name[TOPIC]["authorized_operations"] == {AclOperation.DESCRIBE.value}
    hidden = by_name["__consumer_offsets"]
    assert (
        hidden["error_code"] == ErrorCode.TOPIC_AUTHORIZATION_FAILED
        and hidden["authorized_operations"] is None
    )
    alices = {AclOperation.DESCRIBE.value, AclOperation.IDEMPOTENT_WRITE.value}
    assert asyncio.run(ask("alice"))[1]["authorized_operations"] == alices


def test_without_an_authorizer_every_operation_is_returned_and_none_unless_asked(tmp_path: Path) -> None:
    coordinator = CoordinatorProcess(tmp_path / "data").start()
    try:
        admin = AdminClient({"bootstrap.servers": coordinator.bootstrap})
        admin.create_topics([NewTopic(TOPIC, 1, 1)])[TOPIC].result(30)
        make_groups(coordinator.bootstrap, {})
        assert described(admin) == {
            "topic": TOPIC_OPERATIONS, "cluster": CLUSTER_OPERATIONS,
            CLASSIC_GROUP: GROUP_OPERATIONS, CONSUMER_GROUP: GROUP_OPERATIONS,
        }  # fmt: skip
        unasked = admin.describe_topics(TopicCollection([TOPIC]))[TOPIC].result(30)
        assert unasked.authorized_operations is None
        assert admin.describe_cluster().result(30).authorized_operations is None
        group = admin.describe_consumer_groups([CLASSIC_GROUP])[CLASSIC_GROUP].result(30)
        assert group.authorized_operations is None
    finally:
        coordinator.kill()

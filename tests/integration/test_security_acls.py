"""ACLs with Kafka's model, enforced against real clients over SASL_SSL and SASL_PLAINTEXT.

A super user manages ACLs through confluent-kafka's admin client (create_acls,
describe_acls, delete_acls); other principals are held to them: Metadata shows only the
topics they may Describe, produce and fetch need Write and Read, and the group APIs
(JoinGroup, the consumer group heartbeat, the connect group heartbeat) need Read on the
group, and a group's dynamic configs AlterConfigs/DescribeConfigs on it. ACLs and users
created over the wire survive kill -9 of the coordinator.
"""

from __future__ import annotations

import asyncio
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest
from confluent_kafka import KafkaException
from confluent_kafka.admin import (
    AclBinding,
    AclBindingFilter,
    AclOperation,
    AclPermissionType,
    AdminClient,
    AlterConfigOpType,
    ConfigEntry,
    ConfigResource,
    NewTopic,
    ResourcePatternType,
    ResourceType,
    ScramCredentialInfo,
    ScramMechanism,
    UserScramCredentialUpsertion,
)

from connect_rebalance.errors import ErrorCode
from connect_rebalance.processes import CoordinatorProcess
from connect_rebalance.protocol.api_keys import ApiKey
from connect_rebalance.protocol.connect_group import ClientAssignor, heartbeat_fields
from tests.support.certificates import Pki, make_pki
from tests.support.clients import consume_confluent, produce_confluent
from tests.support.secure_coordinator import (
    ADMIN,
    ADMIN_PASSWORD,
    allow,
    authenticated_client,
    create_acls,
    scram512,
    secure_coordinator,
)

pytestmark = pytest.mark.integration
USERS = {"alice": "alice-secret", "bob": "bob-secret"}


@pytest.fixture(scope="module")
def pki(tmp_path_factory: pytest.TempPathFactory) -> Pki:
    return make_pki(tmp_path_factory.mktemp("pki"))


@pytest.fixture(scope="module")
def acl_coordinator(pki: Pki, tmp_path_factory: pytest.TempPathFactory) -> Iterator[CoordinatorProcess]:
    process = secure_coordinator(
        pki, tmp_path_factory.mktemp("acls") / "data", USERS, authorizer=True,
        **{"group.initial.rebalance.delay.ms": "300"},
    )  # fmt: skip
    try:
        yield process
    finally:
        process.kill()


def admin_of(
    coordinator: CoordinatorProcess, pki: Pki, user: str = ADMIN, password: str = ADMIN_PASSWORD
) -> AdminClient:
    security = scram512(pki, user, password)
    return AdminClient({"bootstrap.servers": coordinator.bootstrap_for("SASL_SSL"), **security.confluent()})


def test_acls_are_created_described_and_deleted_with_confluent_kafkas_admin_client(
    acl_coordinator: CoordinatorProcess, pki: Pki
) -> None:
    admin = admin_of(acl_coordinator, pki)
    bindings = [
        allow(ResourceType.TOPIC, "audit-", "User:alice", AclOperation.READ, ResourcePatternType.PREFIXED),
        allow(ResourceType.TOPIC, "audit-log", "User:alice", AclOperation.WRITE),
        allow(ResourceType.GROUP, "auditors", "User:alice", AclOperation.READ),
    ]
    create_acls(admin, *bindings)
    every_alice_acl = AclBindingFilter(
        ResourceType.ANY,
        None,
        ResourcePatternType.ANY,
        "User:alice",
        None,
        AclOperation.ANY,
        AclPermissionType.ANY,
    )
    assert set(admin.describe_acls(every_alice_acl).result(30)) >= set(bindings)
    applying_to_audit_log = AclBindingFilter(
        ResourceType.TOPIC,
        "audit-log",
        ResourcePatternType.MATCH,
        None,
        None,
        AclOperation.ANY,
        AclPermissionType.ANY,
    )
    assert set(admin.describe_acls(applying_to_audit_log).result(30)) == set(bindings[:2])

    # Bad input: Kafka's code and message for that binding alone; the others are created.
    bad = AclBinding(ResourceType.TOPIC, "x", ResourcePatternType.LITERAL, "alice-without-type", "*",
                     AclOperation.READ, AclPermissionType.ALLOW)  # fmt: skip
    extra = allow(ResourceType.TOPIC, "extra", "User:alice", AclOperation.READ)
    futures = admin.create_acls([bad, extra])
    with pytest.raises(KafkaException) as refused:
        futures[bad].result(30)
    assert refused.value.args[0].code() == ErrorCode.INVALID_REQUEST
    assert "Could not parse principal" in refused.value.args[0].str()
    futures[extra].result(30)

    extra_filter = AclBindingFilter(
        ResourceType.TOPIC,
        "extra",
        ResourcePatternType.LITERAL,
        None,
        None,
        AclOperation.ANY,
        AclPermissionType.ANY,
    )
    deleted = admin.delete_acls([extra_filter])
    assert [list(r) for r in (f.result(30) for f in deleted.values())] == [[extra]]
    assert extra not in admin.describe_acls(every_alice_acl).result(30)

    # A principal that is not a super user may not manage ACLs.
    alices_admin = admin_of(acl_coordinator, pki, "alice", USERS["alice"])
    with pytest.raises(KafkaException) as forbidden:
        list(alices_admin.create_acls([extra]).values())[0].result(30)
    assert forbidden.value.args[0].code() == ErrorCode.CLUSTER_AUTHORIZATION_FAILED
    from kafka import KafkaAdminClient
    from kafka.admin import ACLFilter, ACLOperation, ACLPermissionType, ResourcePatternFilter
    from kafka.admin import ACLResourcePatternType as KpPattern
    from kafka.admin import ResourceType as KpResource
    from kafka.errors import ClusterAuthorizationFailedError

    alice_kp = KafkaAdminClient(
        bootstrap_servers=acl_coordinator.bootstrap_for("SASL_SSL"),
        **scram512(pki, "alice", USERS["alice"]).kafka_python(),
    )
    try:
        with pytest.raises(ClusterAuthorizationFailedError, match="User:alice"):
            alice_kp.describe_acls(
                ACLFilter(None, None, ACLOperation.ANY, ACLPermissionType.ANY,
                          ResourcePatternFilter(KpResource.ANY, None, KpPattern.ANY))
            )  # fmt: skip
    finally:
        alice_kp.close()
    assert acl_coordinator.is_running()


def test_topics_need_describe_to_be_seen_write_to_produce_and_read_to_fetch(
    acl_coordinator: CoordinatorProcess, pki: Pki
) -> None:
    admin = admin_of(acl_coordinator, pki)
    for future in admin.create_topics([NewTopic(n, 1, 1) for n in ("open-topic", "secret-topic")]).values():
        future.result(30)
    create_acls(
        admin,
        allow(ResourceType.TOPIC, "open-topic", "User:bob", AclOperation.WRITE),
        allow(ResourceType.TOPIC, "open-topic", "User:bob", AclOperation.READ),
        # The consumer helper names a group (librdkafka looks up its coordinator even when assigning).
        allow(ResourceType.GROUP, "unused-assign-only", "User:bob", AclOperation.DESCRIBE),
    )
    bob = scram512(pki, "bob", USERS["bob"])
    bootstrap = acl_coordinator.bootstrap_for("SASL_SSL")
    visible = AdminClient({"bootstrap.servers": bootstrap, **bob.confluent()}).list_topics(timeout=30).topics
    assert "open-topic" in visible and "secret-topic" not in visible and "__consumer_offsets" not in visible
    assert "secret-topic" in admin.list_topics(timeout=30).topics

    produce_confluent(bootstrap, "open-topic", [(b"k", b"allowed")], security=bob)
    assert [v for *_, v in consume_confluent(bootstrap, "open-topic", 1, 1, security=bob)] == [b"allowed"]
    with pytest.raises(AssertionError, match="TOPIC_AUTHORIZATION_FAILED|Authorization"):
        produce_confluent(bootstrap, "secret-topic", [(b"k", b"refused")], security=bob)


def test_a_principal_without_read_on_a_group_is_refused_on_every_group_protocol(
    acl_coordinator: CoordinatorProcess, pki: Pki
) -> None:
    admin = admin_of(acl_coordinator, pki)
    # bob may find the group's coordinator (Describe) and see the topic, but not Read the group.
    create_acls(
        admin,
        allow(
            ResourceType.GROUP, "guarded-", "User:bob", AclOperation.DESCRIBE, ResourcePatternType.PREFIXED
        ),
        allow(ResourceType.TOPIC, "guarded-topic", "User:bob", AclOperation.DESCRIBE),
        allow(ResourceType.GROUP, "guarded-", "User:alice", AclOperation.READ, ResourcePatternType.PREFIXED),
        allow(ResourceType.TOPIC, "guarded-topic", "User:alice", AclOperation.DESCRIBE),
    )
    bootstrap = acl_coordinator.bootstrap_for("SASL_PLAINTEXT")

    async def calls(user: str) -> dict[str, dict]:  # type: ignore[type-arg]
        client = await authenticated_client(bootstrap, user, USERS[user])
        try:
            join = await client.request(11, 9, {
                "group_id": "guarded-classic", "session_timeout_ms": 10000, "rebalance_timeout_ms": 10000,
                "member_id": "", "group_instance_id": None, "protocol_type": "consumer",
                "protocols": [{"name": "range", "metadata": b""}], "reason": None})  # fmt: skip
            consumer = await client.request(68, 1, {
                "group_id": "guarded-consumer", "member_id": f"{user}-member-0001", "member_epoch": 0,
                "instance_id": None, "rack_id": None, "rebalance_timeout_ms": 10000,
                "subscribed_topic_names": ["guarded-topic"], "subscribed_topic_regex": None,
                "server_assignor": None, "topic_partitions": []})  # fmt: skip
            connect = await client.request(ApiKey.CONNECT_GROUP_HEARTBEAT, 0, heartbeat_fields(
                "guarded-connect", f"{user}-worker", 0, url=f"http://{user}:8083", rebalance_timeout_ms=60000,
                assignors=[ClientAssignor("incremental", 1, 2, 2, b"")], owned=[]))  # fmt: skip
            return {"join": join, "consumer": consumer, "connect": connect}
        finally:
            await client.close()

    refused = asyncio.run(calls("bob"))
    for api, answer in refused.items():
        assert answer["error_code"] == ErrorCode.GROUP_AUTHORIZATION_FAILED, (api, answer)
    assert "User:bob" in refused["consumer"]["error_message"]
    assert "User:bob" in refused["connect"]["error_message"]
    allowed = asyncio.run(calls("alice"))
    assert allowed["consumer"]["error_code"] == 0, allowed["consumer"]
    assert allowed["connect"]["error_code"] == 0, allowed["connect"]
    assert allowed["join"]["error_code"] == ErrorCode.MEMBER_ID_REQUIRED, allowed["join"]


def test_a_groups_configs_need_alter_configs_and_describe_configs_on_the_group(
    acl_coordinator: CoordinatorProcess, pki: Pki
) -> None:
    """KIP-848's dynamic group configuration is held to ACLs on the GROUP resource."""
    entry = ConfigEntry("consumer.heartbeat.interval.ms", "6000", incremental_operation=AlterConfigOpType.SET)
    altered = ConfigResource(ResourceType.GROUP, "tuned", incremental_configs=[entry])
    read = ConfigResource(ResourceType.GROUP, "tuned")
    alice = admin_of(acl_coordinator, pki, "alice", USERS["alice"])
    for call in (
        lambda: alice.incremental_alter_configs([altered])[altered].result(30),
        lambda: alice.describe_configs([read])[read].result(30),
    ):
        try:
            call()
            code = ErrorCode.NONE
        except KafkaException as exc:
            code = exc.args[0].code()
        assert code == ErrorCode.GROUP_AUTHORIZATION_FAILED
    create_acls(
        admin_of(acl_coordinator, pki),
        allow(ResourceType.GROUP, "tuned", "User:alice", AclOperation.ALTER_CONFIGS),
        allow(ResourceType.GROUP, "tuned", "User:alice", AclOperation.DESCRIBE_CONFIGS),
    )
    alice.incremental_alter_configs([altered])[altered].result(30)
    assert alice.describe_configs([read])[read].result(30)["consumer.heartbeat.interval.ms"].value == "6000"


def test_the_brokers_dynamic_configs_need_alter_configs_on_the_cluster(
    acl_coordinator: CoordinatorProcess, pki: Pki
) -> None:
    """kafka-configs --entity-type brokers, as Kafka holds it: ALTER_CONFIGS on the CLUSTER."""
    admin = admin_of(acl_coordinator, pki)
    node = str(admin.describe_cluster().result(30).nodes[0].id)
    entry = ConfigEntry("num.io.threads", "4", incremental_operation=AlterConfigOpType.SET)
    altered = ConfigResource(ResourceType.BROKER, node, incremental_configs=[entry])
    alice = admin_of(acl_coordinator, pki, "alice", USERS["alice"])
    try:
        alice.incremental_alter_configs([altered])[altered].result(30)
        code = ErrorCode.NONE
    except KafkaException as exc:
        code = exc.args[0].code()
    assert code == ErrorCode.CLUSTER_AUTHORIZATION_FAILED
    create_acls(admin, allow(ResourceType.BROKER, "kafka-cluster", "User:alice", AclOperation.ALTER_CONFIGS))
    alice.incremental_alter_configs([altered])[altered].result(30)
    read = ConfigResource(ResourceType.BROKER, node)
    assert admin.describe_configs([read])[read].result(30)["num.io.threads"].value == "4"


def test_acls_and_users_survive_kill_9(acl_coordinator: CoordinatorProcess, pki: Pki) -> None:
    admin = admin_of(acl_coordinator, pki)
    binding = allow(
        ResourceType.TOPIC, "durable-", "User:carol", AclOperation.ALL, ResourcePatternType.PREFIXED
    )
    create_acls(
        admin, binding, allow(ResourceType.GROUP, "unused-assign-only", "User:carol", AclOperation.DESCRIBE)
    )
    info = ScramCredentialInfo(ScramMechanism.SCRAM_SHA_512, 4096)
    admin.alter_user_scram_credentials([UserScramCredentialUpsertion("carol", info, b"carol-secret")])[
        "carol"
    ].result(30)

    acl_coordinator.kill()
    acl_coordinator.start()

    carol = scram512(pki, "carol", "carol-secret")
    bootstrap = acl_coordinator.bootstrap_for("SASL_SSL")
    produce_confluent(bootstrap, "durable-topic", [(b"k", b"after kill -9")], security=carol)
    assert [v for *_, v in consume_confluent(bootstrap, "durable-topic", 1, 1, security=carol)] == [
        b"after kill -9"
    ]
    every = AclBindingFilter(
        ResourceType.ANY, None, ResourcePatternType.ANY, None, None, AclOperation.ANY, AclPermissionType.ANY
    )
    assert binding in admin_of(acl_coordinator, pki).describe_acls(every).result(30)


def command_config(pki: Pki, path: Path, user: str, password: str) -> Path:
    """A `--command-config` file: SASL_SSL with SCRAM-SHA-512, in Kafka's setting names."""
    path.write_text(
        "security.protocol=SASL_SSL\nsasl.mechanism=SCRAM-SHA-512\n"
        f"ssl.truststore.type=PEM\nssl.truststore.location={pki.ca_certificate}\n"
        "sasl.jaas.config=org.apache.kafka.common.security.scram.ScramLoginModule required "
        f'username="{user}" password="{password}";\n'
    )
    return path


def test_the_acls_command_adds_lists_and_removes_acls_that_real_clients_are_held_to(
    acl_coordinator: CoordinatorProcess, pki: Pki, tmp_path: Path
) -> None:
    admin = admin_of(acl_coordinator, pki)
    for future in admin.create_topics([NewTopic("cli-topic", 1, 1)]).values():
        future.result(30)
    bootstrap = acl_coordinator.bootstrap_for("SASL_SSL")

    def acls(
        *args: str, user: str = ADMIN, password: str = ADMIN_PASSWORD
    ) -> subprocess.CompletedProcess[str]:
        config = command_config(pki, tmp_path / f"{user}.properties", user, password)
        command = [sys.executable, "-m", "connect_rebalance_cli.cli", "acls", "--bootstrap-server", bootstrap,
                   "--command-config", str(config), *args]  # fmt: skip
        return subprocess.run(command, capture_output=True, text=True, timeout=60)

    bob, admin_security = scram512(pki, "bob", USERS["bob"]), scram512(pki, ADMIN, ADMIN_PASSWORD)

    def bob_sees() -> bool:
        return (
            "cli-topic"
            in AdminClient({"bootstrap.servers": bootstrap, **bob.confluent()}).list_topics(timeout=30).topics
        )

    assert not bob_sees()
    added = acls("add", "--allow-principal", "User:bob", "--operation", "Describe", "--operation", "read",
                 "--topic", "cli-topic")  # fmt: skip
    assert added.returncode == 0, added.stderr
    listed = acls("list", "--topic", "cli-topic").stdout.splitlines()
    assert sorted(listed) == [
        "TOPIC\tLITERAL\tcli-topic\tUser:bob\t*\tDESCRIBE\tALLOW",
        "TOPIC\tLITERAL\tcli-topic\tUser:bob\t*\tREAD\tALLOW",
    ], listed
    assert bob_sees()
    # The consumer helper names a group (librdkafka looks up its coordinator even when assigning).
    assert acls("add", "--allow-principal", "User:bob", "--operation", "Describe",
                "--group", "unused-assign-only").returncode == 0  # fmt: skip
    produce_confluent(bootstrap, "cli-topic", [(b"k", b"for bob")], security=admin_security)
    assert [v for *_, v in consume_confluent(bootstrap, "cli-topic", 1, 1, security=bob)] == [b"for bob"]

    # Only a super user changes ACLs; bad options are named; neither changes anything.
    refused = acls("add", "--allow-principal", "User:bob", "--operation", "Write", "--topic", "cli-topic",
                   user="bob", password=USERS["bob"])  # fmt: skip
    assert refused.returncode == 1 and "uthoriz" in refused.stderr, refused.stderr
    bad = acls("add", "--allow-principal", "bob", "--operation", "Write", "--topic", "cli-topic")
    assert bad.returncode == 1 and "--allow-principal 'bob'" in bad.stderr, bad.stderr
    assert len(acls("list", "--topic", "cli-topic").stdout.splitlines()) == 2

    removed = acls("remove", "--allow-principal", "User:bob", "--topic", "cli-topic")
    assert removed.returncode == 0 and removed.stdout.count("Removed") == 2, removed
    assert acls("list", "--topic", "cli-topic").stdout == ""
    assert not bob_sees()

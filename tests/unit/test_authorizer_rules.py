"""The authorizer's rules (Kafka's StandardAuthorizer): which bindings match a resource,
which apply to a principal and host, deny over allow, implied Describe, super users and
allow.everyone.if.no.acl.found; and the ACL filters DescribeAcls and DeleteAcls use."""

from __future__ import annotations

import pytest

from connect_rebalance.errors import ErrorCode, KafkaApiError
from coordinator.security.acls import (
    SUPPORTED_OPERATIONS,
    AclBinding,
    AclOperation,
    AclPermissionType,
    PatternType,
    ResourceType,
    new_binding,
    new_filter,
    operations_bit_field,
)
from coordinator.security.authorizer import StandardAuthorizer

pytestmark = pytest.mark.unit

ALLOW, DENY = AclPermissionType.ALLOW, AclPermissionType.DENY
LITERAL, PREFIXED = PatternType.LITERAL, PatternType.PREFIXED
TOPIC, GROUP = ResourceType.TOPIC, ResourceType.GROUP
READ, WRITE, DESCRIBE, ALL = AclOperation.READ, AclOperation.WRITE, AclOperation.DESCRIBE, AclOperation.ALL


def acl(
    name: str,
    op: AclOperation = READ,
    perm: AclPermissionType = ALLOW,
    pattern: PatternType = LITERAL,
    principal: str = "User:alice",
    host: str = "*",
    rtype: ResourceType = TOPIC,
) -> AclBinding:
    return AclBinding(rtype, name, pattern, principal, host, op, perm)


def authorizer(
    *bindings: AclBinding, supers: frozenset[str] = frozenset(), everyone: bool = False
) -> StandardAuthorizer:
    return StandardAuthorizer(lambda: bindings, supers, everyone)


def may(
    a: StandardAuthorizer,
    op: AclOperation,
    name: str,
    principal: str = "User:alice",
    host: str = "10.0.0.1",
    rtype: ResourceType = TOPIC,
) -> bool:
    return a.authorize(principal, host, op, rtype, name)


def test_literal_prefixed_and_wildcard_patterns_match_as_kafka_matches_them() -> None:
    literal = authorizer(acl("orders"))
    assert (
        may(literal, READ, "orders")
        and not may(literal, READ, "orders-eu")
        and not may(literal, READ, "order")
    )
    prefixed = authorizer(acl("orders-", pattern=PREFIXED))
    assert (
        may(prefixed, READ, "orders-eu")
        and may(prefixed, READ, "orders-")
        and not may(prefixed, READ, "orders")
    )
    wildcard = authorizer(acl("*"))
    assert may(wildcard, READ, "anything") and not may(wildcard, READ, "anything", rtype=GROUP)
    star_prefix = authorizer(acl("*", pattern=PREFIXED))  # a prefix "*" is the character, not a wildcard
    assert not may(star_prefix, READ, "anything") and may(star_prefix, READ, "*x")


def test_a_deny_wins_over_any_allow() -> None:
    a = authorizer(acl("*"), acl("orders-", pattern=PREFIXED), acl("orders-secret", perm=DENY))
    assert may(a, READ, "orders-eu") and not may(a, READ, "orders-secret")
    everyone_denied = authorizer(acl("orders"), acl("orders", perm=DENY, principal="User:*"))
    assert not may(everyone_denied, READ, "orders")


def test_principal_and_host_must_match_the_binding_or_its_wildcard() -> None:
    a = authorizer(acl("t", host="10.0.0.1"), acl("u", principal="User:*"))
    assert may(a, READ, "t", host="10.0.0.1") and not may(a, READ, "t", host="10.0.0.2")
    assert not may(a, READ, "t", principal="User:bob")
    assert may(a, READ, "u", principal="User:bob")


def test_operations_all_and_the_describe_implied_by_an_allow() -> None:
    a = authorizer(
        acl("t"), acl("all", op=ALL), acl("w", op=WRITE), acl("cfg", op=AclOperation.ALTER_CONFIGS)
    )
    assert (
        may(a, DESCRIBE, "t") and may(a, DESCRIBE, "w") and not may(a, WRITE, "t") and not may(a, READ, "w")
    )
    assert may(a, AclOperation.DELETE, "all") and may(a, AclOperation.DESCRIBE_CONFIGS, "cfg")
    # A DENY of Read does not deny Describe; a DENY of ALL does.
    b = authorizer(acl("t", op=ALL), acl("t", perm=DENY))
    assert may(b, DESCRIBE, "t") and not may(b, READ, "t")
    assert not may(authorizer(acl("t", op=ALL), acl("t", op=ALL, perm=DENY)), DESCRIBE, "t")


def test_super_users_may_do_anything_even_against_a_deny() -> None:
    a = authorizer(acl("t", op=ALL, perm=DENY, principal="User:*"), supers=frozenset({"User:admin"}))
    assert may(a, WRITE, "t", principal="User:admin") and not may(a, WRITE, "t")


def test_allow_everyone_applies_only_to_resources_without_any_binding() -> None:
    a = authorizer(acl("guarded", principal="User:bob"), everyone=True)
    assert may(a, WRITE, "free")  # no binding names it
    assert not may(a, READ, "guarded")  # bindings exist, none for alice
    assert not may(authorizer(everyone=False), READ, "free")


def test_authorize_any_finds_an_allow_not_covered_by_a_deny() -> None:
    a = authorizer(acl("orders-", op=WRITE, pattern=PREFIXED))
    assert a.authorize_any("User:alice", "h", WRITE, TOPIC) and not a.authorize_any(
        "User:bob", "h", WRITE, TOPIC
    )
    covered = authorizer(
        acl("orders-", op=WRITE, pattern=PREFIXED), acl("orders", op=WRITE, perm=DENY, pattern=PREFIXED)
    )
    assert not covered.authorize_any("User:alice", "h", WRITE, TOPIC)
    assert not authorizer(acl("x", op=WRITE), acl("*", op=WRITE, perm=DENY)).authorize_any(
        "User:alice", "h", WRITE, TOPIC
    )


def test_filters_match_bindings_and_bad_bindings_are_refused_with_kafkas_messages() -> None:
    bindings = [
        acl("orders"),
        acl("orders-", pattern=PREFIXED),
        acl("*"),
        acl("other"),
        acl("g", rtype=GROUP),
    ]
    match = new_filter(2, "orders-eu", 2, None, None, 1, 1)  # MATCH: what applies to topic orders-eu
    assert [b.resource_name for b in bindings if match.matches(b)] == ["orders-", "*"]
    any_topic_of_alice = new_filter(2, None, 1, "User:alice", None, 1, 1)
    assert len([b for b in bindings if any_topic_of_alice.matches(b)]) == 4
    for args, words in [
        ((1, "t", 3, "User:a", "*", 3, 3), "Invalid resourceType ANY"),
        ((2, "t", 2, "User:a", "*", 3, 3), "Invalid patternType MATCH"),
        ((2, "t", 3, "User:a", "*", 1, 3), "Invalid operation ANY"),
        ((2, "t", 3, "User:a", "*", 3, 1), "Invalid permissionType ANY"),
        ((2, "", 3, "User:a", "*", 3, 3), "Resource name should not be empty"),
        ((2, "t", 3, "alice", "*", 3, 3), "Could not parse principal"),
        ((2, "t", 3, "User:a", "*", 99, 3), "operation 99"),
    ]:
        with pytest.raises(KafkaApiError, match=words) as refused:
            new_binding(*args)
        assert refused.value.code == ErrorCode.INVALID_REQUEST
    with pytest.raises(KafkaApiError, match="Unknown patternFilter"):
        new_filter(2, None, 0, None, None, 1, 1)


def test_authorized_operations_are_counted_over_kafkas_operations_of_each_resource_type() -> None:
    """KIP-430's bit fields over AclEntry.supportedOperations: 8 operations for a topic, 7 for
    the cluster, 5 for a group; the int32 values Kafka puts on the wire for all of them."""
    topic, group, cluster = (SUPPORTED_OPERATIONS[t] for t in (TOPIC, GROUP, ResourceType.CLUSTER))
    assert (len(topic), len(cluster), len(group)) == (8, 7, 5)
    assert operations_bit_field(topic) == 3576
    assert operations_bit_field(cluster) == 8096
    assert operations_bit_field(group) == 3400
    assert operations_bit_field([]) == 0
    assert AclOperation.ALL not in topic and AclOperation.CLUSTER_ACTION in cluster

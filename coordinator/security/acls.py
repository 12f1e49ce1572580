"""ACL bindings and filters with Apache Kafka's model and enum codes.

A binding says: `principal` from `host` is ALLOWed or DENYed `operation` on resources of
`resource_type` whose name matches `resource_name` under `pattern_type` (LITERAL: the name,
or every name for the wildcard "*"; PREFIXED: every name starting with it). Filters
(DescribeAcls, DeleteAcls) match bindings with ANY for "whatever", and the MATCH pattern
type for "every binding that would apply to this literal name".

Validation follows Kafka's controller (AclControlManager.validateNewAcl and
validateFilter): the answer is INVALID_REQUEST with a message naming the field.
Pure data and functions; the authorizer (authorizer.py) decides with them.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass
from enum import IntEnum

from connect_rebalance.errors import ErrorCode, KafkaApiError

WILDCARD = "*"
WILDCARD_PRINCIPAL = "User:*"
CLUSTER_NAME = "kafka-cluster"


class ResourceType(IntEnum):
    UNKNOWN = 0
    ANY = 1
    TOPIC = 2
    GROUP = 3
    CLUSTER = 4
    TRANSACTIONAL_ID = 5
    DELEGATION_TOKEN = 6
    USER = 7


class PatternType(IntEnum):
    UNKNOWN = 0
    ANY = 1
    MATCH = 2
    LITERAL = 3
    PREFIXED = 4


class AclOperation(IntEnum):
    UNKNOWN = 0
    ANY = 1
    ALL = 2
    READ = 3
    WRITE = 4
    CREATE = 5
    DELETE = 6
    ALTER = 7
    DESCRIBE = 8
    CLUSTER_ACTION = 9
    DESCRIBE_CONFIGS = 10
    ALTER_CONFIGS = 11
    IDEMPOTENT_WRITE = 12
    CREATE_TOKENS = 13
    DESCRIBE_TOKENS = 14


# The operations that apply to each type of resource (Kafka's AclEntry.supportedOperations):
# KIP-430's authorized operations of a resource are the ones of these a principal may do.
SUPPORTED_OPERATIONS: dict[ResourceType, tuple[AclOperation, ...]] = {
    ResourceType.TOPIC: (
        AclOperation.READ, AclOperation.WRITE, AclOperation.CREATE, AclOperation.DESCRIBE,
        AclOperation.DELETE, AclOperation.ALTER, AclOperation.DESCRIBE_CONFIGS, AclOperation.ALTER_CONFIGS,
    ),
    ResourceType.GROUP: (
        AclOperation.READ, AclOperation.DESCRIBE, AclOperation.DELETE, AclOperation.DESCRIBE_CONFIGS,
        AclOperation.ALTER_CONFIGS,
    ),
    ResourceType.CLUSTER: (
        AclOperation.CREATE, AclOperation.CLUSTER_ACTION, AclOperation.DESCRIBE_CONFIGS,
        AclOperation.ALTER_CONFIGS, AclOperation.IDEMPOTENT_WRITE, AclOperation.ALTER, AclOperation.DESCRIBE,
    ),
    ResourceType.TRANSACTIONAL_ID: (AclOperation.DESCRIBE, AclOperation.WRITE),
    ResourceType.DELEGATION_TOKEN: (AclOperation.DESCRIBE,),
    ResourceType.USER: (AclOperation.CREATE_TOKENS, AclOperation.DESCRIBE_TOKENS),
}  # fmt: skip


def operations_bit_field(operations: Iterable[AclOperation]) -> int:
    """KIP-430's wire form of a set of operations: bit n set for the operation of code n."""
    field = 0
    for operation in operations:
        field |= 1 << operation
    return field


class AclPermissionType(IntEnum):
    UNKNOWN = 0
    ANY = 1
    DENY = 2
    ALLOW = 3


def _enum(cls: type[IntEnum], value: int, field: str) -> IntEnum:
    try:
        return cls(value)
    except ValueError:
        raise KafkaApiError(ErrorCode.INVALID_REQUEST, f"{field} {value} is not a known code") from None


@dataclass(frozen=True, slots=True)
class AclBinding:
    resource_type: ResourceType
    resource_name: str
    pattern_type: PatternType
    principal: str
    host: str
    operation: AclOperation
    permission: AclPermissionType

    def describe(self) -> str:
        return (
            f"{self.permission.name} {self.principal} from {self.host} {self.operation.name} on "
            f"{self.resource_type.name} {self.pattern_type.name} {self.resource_name!r}"
        )


def new_binding(
    resource_type: int,
    resource_name: str | None,
    pattern_type: int,
    principal: str | None,
    host: str | None,
    operation: int,
    permission: int,
) -> AclBinding:
    """A binding to create, validated as Kafka's controller validates one."""
    rtype = ResourceType(_enum(ResourceType, resource_type, "resource type"))
    if rtype in (ResourceType.UNKNOWN, ResourceType.ANY):
        raise KafkaApiError(ErrorCode.INVALID_REQUEST, f"Invalid resourceType {rtype.name}")
    ptype = PatternType(_enum(PatternType, pattern_type, "pattern type"))
    if ptype not in (PatternType.LITERAL, PatternType.PREFIXED):
        raise KafkaApiError(ErrorCode.INVALID_REQUEST, f"Invalid patternType {ptype.name}")
    op = AclOperation(_enum(AclOperation, operation, "operation"))
    if op in (AclOperation.UNKNOWN, AclOperation.ANY):
        raise KafkaApiError(ErrorCode.INVALID_REQUEST, f"Invalid operation {op.name}")
    perm = AclPermissionType(_enum(AclPermissionType, permission, "permission type"))
    if perm not in (AclPermissionType.ALLOW, AclPermissionType.DENY):
        raise KafkaApiError(ErrorCode.INVALID_REQUEST, f"Invalid permissionType {perm.name}")
    if not resource_name:
        raise KafkaApiError(ErrorCode.INVALID_REQUEST, "Resource name should not be empty")
    check_principal(principal)
    assert principal is not None
    if not host:
        raise KafkaApiError(ErrorCode.INVALID_REQUEST, "Host should not be empty; use * for any host")
    return AclBinding(rtype, resource_name, ptype, principal, host, op, perm)


def check_principal(principal: str | None) -> None:
    if not principal or ":" not in principal:
        raise KafkaApiError(
            ErrorCode.INVALID_REQUEST,
            f"Could not parse principal from {principal!r} "
            "(no colon is present separating the principal type from the principal name)",
        )


@dataclass(frozen=True, slots=True)
class AclFilter:
    """None for a name, principal or host means any; ANY codes match every value."""

    resource_type: ResourceType
    resource_name: str | None
    pattern_type: PatternType
    principal: str | None
    host: str | None
    operation: AclOperation
    permission: AclPermissionType

    def matches(self, binding: AclBinding) -> bool:
        if self.resource_type not in (ResourceType.ANY, binding.resource_type):
            return False
        if not self._pattern_matches(binding):
            return False
        if self.principal is not None and self.principal != binding.principal:
            return False
        if self.host is not None and self.host != binding.host:
            return False
        if self.operation not in (AclOperation.ANY, binding.operation):
            return False
        return self.permission in (AclPermissionType.ANY, binding.permission)

    def _pattern_matches(self, binding: AclBinding) -> bool:
        if self.pattern_type == PatternType.MATCH:
            if self.resource_name is None:
                return True
            if binding.pattern_type == PatternType.LITERAL:
                return binding.resource_name in (self.resource_name, WILDCARD)
            return self.resource_name.startswith(binding.resource_name)
        if self.pattern_type not in (PatternType.ANY, binding.pattern_type):
            return False
        return self.resource_name is None or self.resource_name == binding.resource_name


def new_filter(
    resource_type: int,
    resource_name: str | None,
    pattern_type: int,
    principal: str | None,
    host: str | None,
    operation: int,
    permission: int,
) -> AclFilter:
    """A filter from a request; UNKNOWN anywhere is refused as Kafka refuses it."""
    acl_filter = AclFilter(
        ResourceType(_enum(ResourceType, resource_type, "resource type")),
        resource_name,
        PatternType(_enum(PatternType, pattern_type, "pattern type")),
        principal,
        host,
        AclOperation(_enum(AclOperation, operation, "operation")),
        AclPermissionType(_enum(AclPermissionType, permission, "permission type")),
    )
    if acl_filter.resource_type == ResourceType.UNKNOWN or acl_filter.pattern_type == PatternType.UNKNOWN:
        raise KafkaApiError(ErrorCode.INVALID_REQUEST, "Unknown patternFilter.")
    if acl_filter.operation == AclOperation.UNKNOWN or acl_filter.permission == AclPermissionType.UNKNOWN:
        raise KafkaApiError(ErrorCode.INVALID_REQUEST, "Unknown entryFilter.")
    return acl_filter

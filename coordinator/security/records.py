"""The records of the coordinator's security log, as typed values and as bytes.

Two record types, keyed so that compaction keeps each one's latest state:
- a user's SCRAM credential for one mechanism (key: user, mechanism; null value: removed);
- an ACL binding (key: the whole binding; null value: deleted).
The bytes follow the schemas Security*Key/Value.json in connect_rebalance/protocol/schemas
(keys start with an int16 record type, as the group coordinator's records do).
"""

from __future__ import annotations

import struct
from dataclasses import dataclass

from connect_rebalance.protocol.coordinator_records import (
    SecurityAclKey,
    SecurityAclValue,
    SecurityScramCredentialKey,
    SecurityScramCredentialValue,
)
from connect_rebalance.scram import MECHANISM_BY_TYPE, MECHANISMS, ScramCredential

from .acls import AclBinding, AclOperation, AclPermissionType, PatternType, ResourceType

SCRAM_CREDENTIAL_KEY_VERSION, ACL_KEY_VERSION = 0, 1


@dataclass(frozen=True, slots=True)
class ScramCredentialRecord:
    user: str
    mechanism: str
    credential: ScramCredential | None  # None: removed


@dataclass(frozen=True, slots=True)
class AclRecord:
    binding: AclBinding
    created_ms: int | None  # None: deleted


SecurityRecord = ScramCredentialRecord | AclRecord


def encode_security_record(record: SecurityRecord) -> tuple[bytes, bytes | None]:
    if isinstance(record, ScramCredentialRecord):
        key = SecurityScramCredentialKey(
            version=SCRAM_CREDENTIAL_KEY_VERSION, name=record.user, mechanism=MECHANISMS[record.mechanism][1]
        ).encode()
        c = record.credential
        if c is None:
            return bytes(key), None
        value = SecurityScramCredentialValue(
            version=0, salt=c.salt, stored_key=c.stored_key, server_key=c.server_key, iterations=c.iterations
        ).encode()
        return bytes(key), bytes(value)
    b = record.binding
    key = SecurityAclKey(
        version=ACL_KEY_VERSION, resource_type=b.resource_type, resource_name=b.resource_name,
        pattern_type=b.pattern_type, principal=b.principal, host=b.host, operation=b.operation,
        permission_type=b.permission,
    ).encode()  # fmt: skip
    if record.created_ms is None:
        return bytes(key), None
    return bytes(key), bytes(SecurityAclValue(version=0, created_ms=record.created_ms).encode())


def decode_security_record(key: bytes, value: bytes | None) -> SecurityRecord:
    (record_type,) = struct.unpack_from(">h", key)
    if record_type == SCRAM_CREDENTIAL_KEY_VERSION:
        k = SecurityScramCredentialKey.decode(key)
        mechanism = MECHANISM_BY_TYPE[k.mechanism]
        if value is None:
            return ScramCredentialRecord(k.name, mechanism, None)
        v = SecurityScramCredentialValue.decode(value)
        credential = ScramCredential(bytes(v.salt), bytes(v.stored_key), bytes(v.server_key), v.iterations)
        return ScramCredentialRecord(k.name, mechanism, credential)
    if record_type == ACL_KEY_VERSION:
        a = SecurityAclKey.decode(key)
        binding = AclBinding(
            ResourceType(a.resource_type), a.resource_name, PatternType(a.pattern_type), a.principal, a.host,
            AclOperation(a.operation), AclPermissionType(a.permission_type),
        )  # fmt: skip
        return AclRecord(binding, None if value is None else SecurityAclValue.decode(value).created_ms)
    raise ValueError(f"unknown security record type {record_type}")

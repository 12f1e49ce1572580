"""The records of the coordinator's security log, as typed values and as bytes.

Three record types, keyed so that compaction keeps each one's latest state:
- a user's SCRAM credential for one mechanism (key: user, mechanism; null value: removed);
- an ACL binding (key: the whole binding; null value: deleted);
- one quota of a client quota entity (key: entity, quota key; null value: removed).
The bytes follow the schemas Security*Key/Value.json in connect_rebalance/protocol/schemas
(keys start with an int16 record type, as the group coordinator's records do).
"""

from __future__ import annotations

import struct
from dataclasses import dataclass

from connect_rebalance.protocol.coordinator_records import (
    SecurityAclKey,
    SecurityAclValue,
    SecurityClientQuotaKey,
    SecurityClientQuotaValue,
    SecurityScramCredentialKey,
    SecurityScramCredentialValue,
)
from connect_rebalance.scram import MECHANISM_BY_TYPE, MECHANISMS, ScramCredential
from coordinator.quotas.entities import Entity
from coordinator.security.acls import AclBinding, AclOperation, AclPermissionType, PatternType, ResourceType

SCRAM_CREDENTIAL_KEY_VERSION, ACL_KEY_VERSION, CLIENT_QUOTA_KEY_VERSION = 0, 1, 2


@dataclass(frozen=True, slots=True)
class ScramCredentialRecord:
    user: str
    mechanism: str
    credential: ScramCredential | None  # None: removed


@dataclass(frozen=True, slots=True)
class AclRecord:
    binding: AclBinding
    created_ms: int | None  # None: deleted


@dataclass(frozen=True, slots=True)
class ClientQuotaRecord:
    entity: Entity
    key: str
    value: float | None  # None: removed


SecurityRecord = ScramCredentialRecord | AclRecord | ClientQuotaRecord


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
    if isinstance(record, ClientQuotaRecord):
        key = SecurityClientQuotaKey(
            version=CLIENT_QUOTA_KEY_VERSION,
            entity=[{"entity_type": t, "entity_name": name} for t, name in record.entity],
            key=record.key,
        ).encode()
        if record.value is None:
            return bytes(key), None
        return bytes(key), bytes(SecurityClientQuotaValue(version=0, value=record.value).encode())
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
    if record_type == CLIENT_QUOTA_KEY_VERSION:
        q = SecurityClientQuotaKey.decode(key)
        entity = tuple((e.entity_type, e.entity_name) for e in q.entity)
        return ClientQuotaRecord(
            entity, q.key, None if value is None else SecurityClientQuotaValue.decode(value).value
        )
    raise ValueError(f"unknown security record type {record_type}")

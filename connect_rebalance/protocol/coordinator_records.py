"""Schema classes of the records the group coordinator writes to its log.

Keys start with an int16 version that doubles as the record type, as in Apache Kafka's
`__consumer_offsets`: 0 and 1 are committed offsets, 2 is classic group metadata. The
JSON schemas beside this module are the on-disk format's documentation.
"""

from __future__ import annotations

import warnings
from struct import pack_into
from typing import Any

with warnings.catch_warnings():
    warnings.simplefilter("ignore", DeprecationWarning)
    from kafka.protocol.api_data import ApiData
    from kafka.protocol.schemas.fields.codecs.encode_buffer import EncodeBufferPool

_SCHEMAS = "connect_rebalance.protocol.schemas"


class OffsetCommitKey(ApiData, load_json=_SCHEMAS):
    pass


class OffsetCommitValue(ApiData, load_json=_SCHEMAS):
    pass


class GroupMetadataKey(ApiData, load_json=_SCHEMAS):
    pass


class GroupMetadataValue(ApiData, load_json=_SCHEMAS):
    pass


class ConsumerGroupMetadataKey(ApiData, load_json=_SCHEMAS):
    pass


class ConsumerGroupMetadataValue(ApiData, load_json=_SCHEMAS):
    pass


class ConsumerGroupMemberMetadataKey(ApiData, load_json=_SCHEMAS):
    pass


class ConsumerGroupMemberMetadataValue(ApiData, load_json=_SCHEMAS):
    pass


class ConsumerGroupTargetAssignmentMetadataKey(ApiData, load_json=_SCHEMAS):
    pass


class ConsumerGroupTargetAssignmentMetadataValue(ApiData, load_json=_SCHEMAS):
    pass


class ConsumerGroupTargetAssignmentMemberKey(ApiData, load_json=_SCHEMAS):
    pass


class ConsumerGroupTargetAssignmentMemberValue(ApiData, load_json=_SCHEMAS):
    pass


class ConsumerGroupCurrentMemberAssignmentKey(ApiData, load_json=_SCHEMAS):
    pass


class ConsumerGroupCurrentMemberAssignmentValue(ApiData, load_json=_SCHEMAS):
    pass


# Connect groups (the project's private block of record types, 10000-10004).


class ConnectGroupMetadataKey(ApiData, load_json=_SCHEMAS):
    pass


class ConnectGroupMetadataValue(ApiData, load_json=_SCHEMAS):
    pass


class ConnectGroupConnectorsTasksKey(ApiData, load_json=_SCHEMAS):
    pass


class ConnectGroupConnectorsTasksValue(ApiData, load_json=_SCHEMAS):
    pass


class ConnectGroupMemberMetadataKey(ApiData, load_json=_SCHEMAS):
    pass


class ConnectGroupMemberMetadataValue(ApiData, load_json=_SCHEMAS):
    pass


class ConnectGroupTargetAssignmentKey(ApiData, load_json=_SCHEMAS):
    pass


class ConnectGroupTargetAssignmentValue(ApiData, load_json=_SCHEMAS):
    pass


class ConnectGroupCurrentMemberAssignmentKey(ApiData, load_json=_SCHEMAS):
    pass


class ConnectGroupCurrentMemberAssignmentValue(ApiData, load_json=_SCHEMAS):
    pass


# A group's dynamic configuration, whatever its type (coordinator/groups/group_configs.py).


class GroupConfigurationKey(ApiData, load_json=_SCHEMAS):
    pass


class GroupConfigurationValue(ApiData, load_json=_SCHEMAS):
    pass


# The coordinator's security log (coordinator/security/store.py): SCRAM credentials and ACLs.


class SecurityScramCredentialKey(ApiData, load_json=_SCHEMAS):
    pass


class SecurityScramCredentialValue(ApiData, load_json=_SCHEMAS):
    pass


class SecurityAclKey(ApiData, load_json=_SCHEMAS):
    pass


class SecurityAclValue(ApiData, load_json=_SCHEMAS):
    pass


class SecurityClientQuotaKey(ApiData, load_json=_SCHEMAS):
    pass


class SecurityClientQuotaValue(ApiData, load_json=_SCHEMAS):
    pass


def _encode(self: ApiData, version: int | None = None, header: bool = True, framed: bool = False) -> Any:
    """A record's key or value with the compiled encoder the API messages use: the same bytes
    (the int16 version, then the fields) at a fraction of the generic encoder's cost, which
    counts when a target for thousands of members is written in one go."""
    if version is not None:
        self._version = version
    version = self._version
    if version is None or not header or framed:
        return ApiData.encode(self, version, header, framed)
    flexible = self.flexible_version_q(version)
    encode_into = self._struct.compiled_encode_into(version, compact=flexible, tagged=flexible)
    with EncodeBufferPool.acquire() as out:
        out.ensure(2)
        pack_into(">h", out.buf, 0, version)
        out.pos = 2
        encode_into(self, out)
        return bytes(out.result())


# The records written per member (consumer groups) and per offset; their nested fields are
# built as containers, which the compiled encoder needs (the connect records' are dicts).
for _name, _record_class in list(globals().items()):
    if _name.startswith(("ConsumerGroup", "OffsetCommit")):
        _record_class.encode = _encode

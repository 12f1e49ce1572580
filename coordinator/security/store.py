"""The coordinator's security state, durable: SCRAM credentials, ACL bindings and client quotas.

State lives in its own compacted log under the data directory (`security/0`), outside the
topics, so no client can fetch the salted credentials. As with the group coordinator,
records are the only way state changes: a change is computed as records, appended and
flushed to disk (fsync: these changes are rare and must survive a crash of the machine),
then replayed into memory; start-up replays the whole log. A kill -9 loses nothing that was
acknowledged.
"""

from __future__ import annotations

import logging
from pathlib import Path

from connect_rebalance.scram import ScramCredential
from coordinator.configs.coordinator import CoordinatorConfig
from coordinator.configs.topics import log_settings
from coordinator.quotas.entities import QuotaSettings
from coordinator.security.acls import AclBinding, AclFilter
from coordinator.security.records import (
    AclRecord,
    ClientQuotaRecord,
    ScramCredentialRecord,
    SecurityRecord,
    decode_security_record,
    encode_security_record,
)
from coordinator.storage.partition_log import PartitionLog, now_ms
from coordinator.storage.record_log import append_records, read_records

log = logging.getLogger(__name__)

LOG_DIRECTORY = "security"


class SecurityStore:
    def __init__(self, log_: PartitionLog) -> None:
        self._log = log_
        self.credentials: dict[str, dict[str, ScramCredential]] = {}
        self.acls: dict[AclBinding, int] = {}  # binding -> created at (ms)
        self.quotas = QuotaSettings()

    @classmethod
    def open(cls, data_dir: Path, config: CoordinatorConfig) -> SecurityStore:
        settings = log_settings({"cleanup.policy": "compact"}, config)
        store = cls(PartitionLog.open(data_dir / LOG_DIRECTORY / "0", settings))
        count = 0
        for key, value in read_records(store._log):
            store.replay(decode_security_record(key, value))
            count += 1
        log.info(
            "security store loaded %d records: %d user(s), %d ACL(s), %d quota entit(y/ies)",
            count,
            len(store.credentials),
            len(store.acls),
            len(store.quotas.values),
        )
        return store

    def close(self) -> None:
        self._log.close()

    def compact(self) -> None:
        if self._log.needs_compaction():
            self._log.compact(now_ms())

    # -- changes --------------------------------------------------------------------------

    def write(self, records: list[SecurityRecord]) -> None:
        """Append, flush to disk, then apply: acknowledged changes are on disk."""
        if not records:
            return
        append_records(self._log, [encode_security_record(r) for r in records], now_ms())
        self._log.flush()
        for record in records:
            self.replay(record)

    def replay(self, record: SecurityRecord) -> None:
        if isinstance(record, ScramCredentialRecord):
            if record.credential is None:
                mechanisms = self.credentials.get(record.user, {})
                mechanisms.pop(record.mechanism, None)
                if not mechanisms:
                    self.credentials.pop(record.user, None)
            else:
                self.credentials.setdefault(record.user, {})[record.mechanism] = record.credential
        elif isinstance(record, AclRecord):
            if record.created_ms is None:
                self.acls.pop(record.binding, None)
            else:
                self.acls[record.binding] = record.created_ms
        elif isinstance(record, ClientQuotaRecord):
            self.quotas.apply(record.entity, record.key, record.value)

    # -- reads ----------------------------------------------------------------------------

    def credential(self, user: str, mechanism: str) -> ScramCredential | None:
        return self.credentials.get(user, {}).get(mechanism)

    def matching_acls(self, acl_filter: AclFilter) -> list[AclBinding]:
        return [binding for binding in self.acls if acl_filter.matches(binding)]

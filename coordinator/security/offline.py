"""Changing a stopped coordinator's security state: the first SASL users and ACLs.

A coordinator whose listeners all require SASL cannot be reached before it has a user,
so, as Kafka's `kafka-storage format --add-scram` does, users (and ACLs) can be written
straight into the data directory while no coordinator runs there. The data directory's
lock is taken, so this refuses to run beside a live coordinator; the records written are
the same the coordinator writes for AlterUserScramCredentials and CreateAcls.
"""

from __future__ import annotations

import os
from pathlib import Path
from types import TracebackType

from connect_rebalance.scram import new_credential
from coordinator.broker import lock_data_dir
from coordinator.configs.coordinator import CoordinatorConfig
from coordinator.security.acls import AclBinding, AclFilter
from coordinator.security.records import AclRecord, ScramCredentialRecord
from coordinator.security.store import SecurityStore
from coordinator.storage.partition_log import now_ms


class OfflineSecurity:
    def __init__(self, data_dir: Path) -> None:
        self.data_dir = data_dir
        self._lock_fd: int | None = None
        self._store: SecurityStore | None = None

    def __enter__(self) -> OfflineSecurity:
        self._lock_fd = lock_data_dir(self.data_dir)
        config = CoordinatorConfig.from_settings({"log.dirs": str(self.data_dir)})
        self._store = SecurityStore.open(self.data_dir, config)
        return self

    def __exit__(
        self, kind: type[BaseException] | None, value: BaseException | None, traceback: TracebackType | None
    ) -> None:
        if self._store is not None:
            self._store.close()
        if self._lock_fd is not None:
            os.close(self._lock_fd)

    @property
    def store(self) -> SecurityStore:
        assert self._store is not None, "use OfflineSecurity as a context manager"
        return self._store

    def set_password(self, user: str, mechanism: str, password: str, iterations: int) -> None:
        if not user:
            raise ValueError("the user name must not be empty")
        credential = new_credential(mechanism, password, iterations)
        self.store.write([ScramCredentialRecord(user, mechanism, credential)])

    def remove_user(self, user: str, mechanisms: list[str] | None) -> bool:
        held = self.store.credentials.get(user, {})
        gone = [m for m in (mechanisms or list(held)) if m in held]
        self.store.write([ScramCredentialRecord(user, m, None) for m in gone])
        return bool(gone)

    def users(self) -> dict[str, list[str]]:
        return {name: sorted(held) for name, held in self.store.credentials.items()}

    def add_acl(self, binding: AclBinding) -> None:
        if binding not in self.store.acls:
            self.store.write([AclRecord(binding, now_ms())])

    def remove_acls(self, acl_filter: AclFilter) -> list[AclBinding]:
        matching = self.store.matching_acls(acl_filter)
        self.store.write([AclRecord(binding, None) for binding in matching])
        return matching

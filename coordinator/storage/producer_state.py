"""Idempotent-producer state of one partition: duplicate and out-of-order batch detection.

Follows Apache Kafka's rules, which idempotent clients (librdkafka, the Java and Python
clients) depend on:
- each producer id keeps its epoch and the sequence ranges of its last five batches;
- a retried batch whose sequence range matches a cached one is a duplicate: it is not
  appended again and the original offset is returned with no error;
- within an epoch, a batch must start at the last sequence + 1 (mod 2^31), otherwise
  OUT_OF_ORDER_SEQUENCE_NUMBER; an older epoch is INVALID_PRODUCER_EPOCH;
- a producer the partition has not seen, or a new epoch, may start at any sequence
  for a new producer and must start at 0 for a bumped epoch.
State survives restarts: a snapshot is written when a segment rolls, and the batches after
it are replayed from the log on start-up.
"""

from __future__ import annotations

from collections import deque
from dataclasses import dataclass, field
from typing import Any

from connect_rebalance.errors import ErrorCode, KafkaApiError
from coordinator.storage.batches import NO_PRODUCER_ID, BatchHeader

CACHED_BATCHES = 5


@dataclass(frozen=True, slots=True)
class AppendedBatch:
    first_sequence: int
    last_sequence: int
    base_offset: int


@dataclass(slots=True)
class ProducerEntry:
    epoch: int
    batches: deque[AppendedBatch] = field(default_factory=lambda: deque(maxlen=CACHED_BATCHES))

    @property
    def last_sequence(self) -> int:
        return self.batches[-1].last_sequence if self.batches else -1

    def copy(self) -> ProducerEntry:
        return ProducerEntry(self.epoch, deque(self.batches, maxlen=CACHED_BATCHES))


class ProducerStateTable:
    def __init__(self) -> None:
        self.entries: dict[int, ProducerEntry] = {}

    def check(self, header: BatchHeader) -> AppendedBatch | None:
        """Validate a batch before it is appended; return the original if it is a duplicate."""
        if header.producer_id == NO_PRODUCER_ID:
            return None
        entry = self.entries.get(header.producer_id)
        if entry is None:
            return None
        if header.producer_epoch < entry.epoch:
            raise KafkaApiError(
                ErrorCode.INVALID_PRODUCER_EPOCH,
                f"producer {header.producer_id} epoch {header.producer_epoch} is older than {entry.epoch}",
            )
        if header.producer_epoch > entry.epoch:
            if header.base_sequence != 0:
                raise KafkaApiError(
                    ErrorCode.OUT_OF_ORDER_SEQUENCE_NUMBER,
                    f"a new producer epoch must start at sequence 0, not {header.base_sequence}",
                )
            return None
        for cached in entry.batches:
            if cached.first_sequence == header.base_sequence and cached.last_sequence == header.last_sequence:
                return cached
        expected = (entry.last_sequence + 1) % (2**31)
        if entry.batches and header.base_sequence != expected:
            raise KafkaApiError(
                ErrorCode.OUT_OF_ORDER_SEQUENCE_NUMBER,
                f"producer {header.producer_id} sent sequence {header.base_sequence}, expected {expected}",
            )
        return None

    def record(self, header: BatchHeader, base_offset: int) -> None:
        if header.producer_id == NO_PRODUCER_ID:
            return
        entry = self.entries.get(header.producer_id)
        if entry is None or header.producer_epoch != entry.epoch:
            entry = ProducerEntry(header.producer_epoch)
            self.entries[header.producer_id] = entry
        entry.batches.append(AppendedBatch(header.base_sequence, header.last_sequence, base_offset))

    def to_json(self) -> dict[str, Any]:
        return {
            str(pid): {
                "epoch": e.epoch,
                "batches": [[b.first_sequence, b.last_sequence, b.base_offset] for b in e.batches],
            }
            for pid, e in self.entries.items()
        }

    @classmethod
    def from_json(cls, data: dict[str, Any]) -> ProducerStateTable:
        table = cls()
        for pid, value in data.items():
            entry = ProducerEntry(int(value["epoch"]))
            entry.batches.extend(AppendedBatch(*b) for b in value["batches"])
            table.entries[int(pid)] = entry
        return table

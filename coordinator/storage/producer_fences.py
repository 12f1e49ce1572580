"""Producer fences: each fence's producer id and current epoch, kept across restarts.

A fence names a writer whose runs must never overlap (a connector's task: one run per
assignment). `begin_run` gives the fence's producer id at an epoch higher than any given
before, and from then on `check` refuses batches of that producer id at an older epoch, on
every partition at once. Kafka's transaction coordinator fences a transactional id's older
epochs the same way (InitProducerId), which is how Kafka Connect fences zombie source tasks
(KIP-618); partitions alone only refuse an old epoch once the new one has written to them.

Durable against a kill -9: every new run is one line appended to `producer_fences.jsonl`
(written through to the OS before the answer goes out) and the file is read back at start;
when it holds many more lines than fences it is rewritten atomically, one line per fence.
"""

from __future__ import annotations

import json
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

from connect_rebalance.errors import ErrorCode, KafkaApiError
from coordinator.storage.batches import NO_PRODUCER_ID
from coordinator.storage.files import write_atomically

MAX_EPOCH = 32766  # int16; the next run gets a new producer id, and the old one is fenced for good
FENCED_FOR_GOOD = 32767
REWRITE_SLACK = 1000  # lines beyond one per fence before the file is rewritten


@dataclass(frozen=True, slots=True)
class FencedRun:
    fence_id: str
    producer_id: int
    epoch: int


class ProducerFences:
    def __init__(self, path: Path, allocate: Callable[[], int]) -> None:
        """`allocate()` hands out a producer id never used before (the broker's allocator)."""
        self.path = path
        self._allocate = allocate
        self._by_fence: dict[str, FencedRun] = {}
        self._epoch_of: dict[int, int] = {}  # producer id -> the only epoch it may write at
        self._retired: dict[str, list[int]] = {}  # a fence's earlier producer ids, fenced for good
        self._lines = 0
        if path.exists():
            for line in path.read_bytes().splitlines():
                try:
                    entry = json.loads(line)
                    run = FencedRun(str(entry["fence"]), int(entry["producer_id"]), int(entry["epoch"]))
                except (ValueError, KeyError, TypeError):
                    continue  # a line torn by a crash mid-write: its run was never answered
                self._apply(run)
                self._lines += 1
        self._file = open(path, "ab")  # noqa: SIM115 - kept open for appends

    def begin_run(self, fence_id: str) -> FencedRun:
        """A new run of `fence_id`: its producer id and an epoch that fences every older run."""
        previous = self._by_fence.get(fence_id)
        if previous is None or previous.epoch >= MAX_EPOCH:
            run = FencedRun(fence_id, self._allocate(), 0)
        else:
            run = FencedRun(fence_id, previous.producer_id, previous.epoch + 1)
        self._append(run)
        return run

    def check(self, producer_id: int, epoch: int) -> None:
        """Refuse a batch of a fenced producer id written at an older epoch than its current run's."""
        if producer_id == NO_PRODUCER_ID:
            return
        current = self._epoch_of.get(producer_id)
        if current is not None and epoch < current:
            raise KafkaApiError(
                ErrorCode.INVALID_PRODUCER_EPOCH,
                f"producer {producer_id} epoch {epoch} is fenced: a newer run has epoch {current}",
            )

    def close(self) -> None:
        self._file.close()

    def _apply(self, run: FencedRun) -> None:
        old = self._by_fence.get(run.fence_id)
        if old is not None and old.producer_id != run.producer_id:
            self._epoch_of[old.producer_id] = FENCED_FOR_GOOD
            self._retired.setdefault(run.fence_id, []).append(old.producer_id)
        self._by_fence[run.fence_id] = run
        self._epoch_of[run.producer_id] = run.epoch

    def _append(self, run: FencedRun) -> None:
        self._apply(run)
        self._file.write(_line(run))
        self._file.flush()  # in the OS from here on: a kill -9 cannot take it back
        self._lines += 1
        if self._lines > len(self._by_fence) + sum(map(len, self._retired.values())) + REWRITE_SLACK:
            self._rewrite()

    def _rewrite(self) -> None:
        """One line per run that still counts: each fence's retired producer ids (replayed
        first, so the current run's line fences them again) and its current run."""
        self._file.close()
        runs = [
            *(FencedRun(f, pid, FENCED_FOR_GOOD) for f, pids in self._retired.items() for pid in pids),
            *self._by_fence.values(),
        ]
        write_atomically(self.path, b"".join(_line(run) for run in runs))
        self._lines = len(runs)
        self._file = open(self.path, "ab")  # noqa: SIM115 - kept open for appends


def _line(run: FencedRun) -> bytes:
    entry = {"fence": run.fence_id, "producer_id": run.producer_id, "epoch": run.epoch}
    return json.dumps(entry).encode() + b"\n"

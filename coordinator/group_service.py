"""The IO edge of the group coordinator: requests and the clock in, records to the log.

The core (`coordinator.groups.GroupCoordinator`) is a deterministic state machine. This
service is the only thing that feeds it:
- each group request gets an id and a future; the core's outcome names the requests it
  answers (a JoinGroup may be answered much later, when its rebalance completes);
- the outcome's records are appended to the internal topic `__consumer_offsets`, as one
  batch, before any reply is released, so an acknowledged change is in the log; if they
  cannot be written, the core takes the outcome back and every reply of it becomes an error
  with a message (the connection stays open, and nothing of the outcome is seen again);
- the append itself runs on a writer thread, so a disk that stalls (an fsync of the same
  file, a full journal) holds only the answers that wait for it, never the event loop: the
  outcome's answers and effects are held until its batch is written. While a group has an
  outcome held, every later outcome of that group is held behind it, even one that writes
  nothing, so no answer shows state the log does not hold yet (Kafka's coordinator runtime
  holds a read behind the writes before it the same way); other groups are answered at once.
  If a write fails, that outcome and every outcome held after it are taken back, newest
  first, and answered with the error;
- a timer task sleeps until the core's next deadline and calls `on_timer`;
- work the core asks for as an effect (a server-side target assignment) runs on a thread of
  its own, off the event loop, and its result goes back to the core as an input;
- at start-up every record in the internal topic is replayed into a fresh core, in the
  background: the process serves produce, fetch, metadata and admin requests from its first
  moment, and group requests answer COORDINATOR_LOAD_IN_PROGRESS (which every client
  retries) until the load is done, as Kafka's coordinator does while it loads a partition.
  The replay runs on the event loop in slices of a few ms, so the core is only ever touched
  from the loop and nothing else waits longer than one slice. Members loaded get a full
  session from the load's end.
"""

from __future__ import annotations

import asyncio
import collections
import concurrent.futures
import contextlib
import functools
import gc
import itertools
import logging
import struct
import time
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from connect_rebalance.errors import ErrorCode, KafkaApiError
from coordinator.group_record_codec import decode_record, encode_record
from coordinator.groups.coordinator import GroupCoordinator
from coordinator.groups.records import GroupConfigRecord, GroupMetadataRecord, Record
from coordinator.groups.requests import GroupRequest, Outcome
from coordinator.groups.settings import GroupSettings
from coordinator.storage.partition_log import PartitionLog, now_ms
from coordinator.storage.record_log import Batch, build_batch, read_records
from coordinator.storage.topic_store import TopicStore

log = logging.getLogger(__name__)

INTERNAL_TOPIC = "__consumer_offsets"
# How long one slice of the start-up replay holds the event loop before it lets requests in.
LOAD_SLICE_S = 0.005
LOADING_MESSAGE = "the group coordinator is loading group state after its start"


def write_error(exc: Exception) -> tuple[int, str]:
    """The Kafka error an outcome that could not be written answers with, and why.

    A change that can never be stored (a record over `max.message.bytes`, a field over its
    schema's limit) is UNKNOWN_SERVER_ERROR, as Kafka answers a RecordTooLargeException; a
    failing disk is COORDINATOR_NOT_AVAILABLE, which clients retry.
    """
    if isinstance(exc, KafkaApiError) and exc.code in (
        ErrorCode.MESSAGE_TOO_LARGE,
        ErrorCode.RECORD_LIST_TOO_LARGE,
    ):
        return (
            ErrorCode.UNKNOWN_SERVER_ERROR,
            f"the group coordinator cannot store this change: {exc.message}",
        )
    if isinstance(exc, struct.error | ValueError | OverflowError):
        return ErrorCode.UNKNOWN_SERVER_ERROR, f"the group coordinator cannot store this change: {exc}"
    if isinstance(exc, KafkaApiError) and exc.code == ErrorCode.KAFKA_STORAGE_ERROR:
        return (
            ErrorCode.COORDINATOR_NOT_AVAILABLE,
            f"the group coordinator could not write {INTERNAL_TOPIC}: {exc.message}",
        )
    if isinstance(exc, OSError):
        return (
            ErrorCode.COORDINATOR_NOT_AVAILABLE,
            f"the group coordinator could not write {INTERNAL_TOPIC}: {exc}",
        )
    return ErrorCode.UNKNOWN_SERVER_ERROR, f"the group coordinator could not write {INTERNAL_TOPIC}: {exc!r}"


class BrokerTopics:
    """The group coordinator's view of the broker's topics (names, ids, partition counts).

    Group code asks by name or by id string once per member and topic when it prepares a
    target, so the answers are kept per version of the broker's topics (a topic created,
    deleted or given partitions makes a new version) instead of formatting a UUID each time."""

    def __init__(self, topics: TopicStore) -> None:
        self.topics = topics
        self._version = -1
        self._ids: dict[str, str] = {}  # name -> id
        self._by_id: dict[str, tuple[str, int]] = {}  # id -> (name, partitions)

    def _current(self) -> None:
        topics = self.topics
        if self._version != topics.version:
            self._ids = {name: str(topic.topic_id) for name, topic in topics.topics.items()}
            self._by_id = {self._ids[t.name]: (t.name, len(t.partitions)) for t in topics.topics.values()}
            self._version = topics.version

    def topic_id(self, name: str) -> str | None:
        self._current()
        return self._ids.get(name)

    def partition_count(self, topic_id: str) -> int | None:
        self._current()
        found = self._by_id.get(topic_id)
        return found[1] if found is not None else None

    def names(self) -> list[str]:
        return sorted(self.topics.topics)

    @property
    def version(self) -> int:
        return self.topics.version

    def name_of(self, topic_id: str) -> str | None:
        self._current()
        found = self._by_id.get(topic_id)
        return found[0] if found is not None else None


@dataclass(slots=True)
class _Held:
    """An outcome whose answers and effects wait for the log."""

    outcome: Outcome
    request_id: int | None  # the request that made it, if one did (it may be parked by it)
    groups: set[str]  # the groups it concerns; empty: every group (a ListGroups)
    batch: Batch | None  # its records until written; None: ready


def _append_all(log: PartitionLog, batches: list[Batch]) -> tuple[int, Exception | None]:
    """On the writer thread: append the batches in order; how many were written, and why the
    next one was not."""
    for count, batch in enumerate(batches):
        try:
            log.append(batch, now_ms(), wake=False)
        except Exception as exc:  # noqa: BLE001 - whatever failed, its outcome is taken back
            return count, exc
    return len(batches), None


class GroupService:
    def __init__(
        self,
        topics: TopicStore,
        settings: GroupSettings,
        segment_bytes: int,
        compaction_due: Callable[[], None],
    ) -> None:
        """`topics`: the broker's, where `__consumer_offsets` is kept and group code looks topics
        up; `segment_bytes`: that topic's segments (`offsets.topic.segment.bytes`);
        `compaction_due()`: told when the group log wrote enough to be worth compacting."""
        self.topics, self._segment_bytes, self._compaction_due = topics, segment_bytes, compaction_due
        self.core = GroupCoordinator(settings, self._partition_count, topics_view=BrokerTopics(topics))
        # Per request under way: the future its answer resolves (made only once the request is not
        # answered at once), its API key and version.
        self._pending: dict[int, tuple[asyncio.Future[dict[str, Any]] | None, int, int]] = {}
        self._request_ids = itertools.count(1)
        self._wake = asyncio.Event()
        self._sleeping_until: int | None = None  # the deadline the timer task sleeps until
        self._timer_task: asyncio.Task[None] | None = None
        self._log: PartitionLog | None = None
        # One assignor thread: computations of different groups queue, and one group never has
        # two under way (the core waits for one to end before it asks again).
        self._assignor = concurrent.futures.ThreadPoolExecutor(1, thread_name_prefix="assignor")
        # Outcomes held for the log, in the order they were made, and how many concern each group.
        self._held: collections.deque[_Held] = collections.deque()
        self._held_groups: collections.Counter[str] = collections.Counter()
        self._unsent: list[_Held] = []  # held outcomes whose batch the writer has not taken yet
        self._writing: asyncio.Future[tuple[int, Exception | None]] | None = None
        self._writer = concurrent.futures.ThreadPoolExecutor(1, thread_name_prefix="group-log")
        self._load_end = 0  # the internal topic's end at start: the load replays what is before it
        self._loading: asyncio.Task[None] | None = None
        self.loaded = False
        self.load_error: str | None = None  # why the load failed, if it did
        self._deleted_while_loading: set[str] = set()

    def _partition_count(self, topic: str) -> int | None:
        found = self.topics.get(topic)
        return len(found.partitions) if found is not None else None

    # -- lifecycle ------------------------------------------------------------------------

    def open(self) -> None:
        """Create the internal topic if needed; `start` loads it into the core."""
        topic = self.topics.get(INTERNAL_TOPIC)
        # Applied at every start, not only when the topic is made: a data directory from before the
        # 4 MiB default gets segments a start can replay quickly. preallocate: the group state
        # keeps a segment of disk for itself, so groups go on forming and committing while the
        # users' topics have filled the disk.
        kept = {"segment.bytes": str(self._segment_bytes), "preallocate": "true"}
        if topic is None:
            topic = self.topics.create(
                INTERNAL_TOPIC, 1, {"cleanup.policy": "compact", **kept, "max.message.bytes": str(16 << 20)}
            )
        elif any(topic.configs.get(name) != value for name, value in kept.items()):
            topic = self.topics.update_configs(INTERNAL_TOPIC, kept)
        self._log = topic.partitions[0]
        self._load_end = self._log.log_end_offset

    def start(self) -> None:
        """Load group state in the background; the timers run once it is loaded."""
        self._loading = asyncio.create_task(self._load())

    async def loaded_state(self) -> None:
        """Wait until group state is loaded (or its load has failed)."""
        if self._loading is not None:
            await asyncio.shield(self._loading)

    async def _load(self) -> None:
        started, replayed = time.monotonic(), 0
        try:
            slice_ends = time.perf_counter() + LOAD_SLICE_S
            for record in self._read_records():
                self.core.replay(record)
                replayed += 1
                if not replayed & 0xFF and time.perf_counter() > slice_ends:
                    await asyncio.sleep(0)  # requests waiting on the loop are answered here
                    slice_ends = time.perf_counter() + LOAD_SLICE_S
            self.core.load_complete(now_ms())
        except Exception as exc:  # noqa: BLE001 - the process keeps serving data; groups say why
            self.load_error = f"the group coordinator could not load {INTERNAL_TOPIC}: {exc!r}"
            log.exception("group coordinator could not load %s", INTERNAL_TOPIC)
            return
        self.loaded = True
        # What the replay made lives as long as the process (see main.announce).
        gc.freeze()
        log.info(
            "group coordinator loaded %d records, %d groups in %.2f s",
            replayed, len(self.core.groups), time.monotonic() - started,
        )  # fmt: skip
        if self._deleted_while_loading:
            self.topics_deleted(self._deleted_while_loading)
            self._deleted_while_loading = set()
        self._timer_task = asyncio.create_task(self._run_timers())

    async def close(self) -> None:
        for task in (self._loading, self._timer_task):
            if task is not None:
                task.cancel()
                with contextlib.suppress(asyncio.CancelledError):
                    await task
        self._assignor.shutdown(wait=False, cancel_futures=True)
        while self._writing is not None:  # what was handed to the writer is written before the log closes
            await asyncio.wait([self._writing])
        self._writer.shutdown(wait=True)

    def _read_records(self):  # type: ignore[no-untyped-def]
        assert self._log is not None
        for key, value in read_records(self._log, self._load_end):
            yield decode_record(key, value)

    @property
    def waiting_for_log(self) -> int:
        """How many outcomes hold their answers until their records (or those before) are written."""
        return len(self._held)

    # -- requests -------------------------------------------------------------------------

    async def call(
        self, api_key: int, version: int, body: Any, client_id: str | None, client_host: str
    ) -> dict[str, Any]:
        request_id = next(self._request_ids)
        self._pending[request_id] = (None, api_key, version)
        try:
            request = GroupRequest(request_id, api_key, version, body, client_id or "", client_host)
            outcome = self.core.handle(request, now_ms())
            if self._apply(outcome, request):
                answered = outcome.replies.get(request_id)
                if answered is not None:  # most requests: no future to wait on
                    return answered
            future: asyncio.Future[dict[str, Any]] = asyncio.get_running_loop().create_future()
            self._pending[request_id] = (future, api_key, version)
            return await future
        finally:
            self._pending.pop(request_id, None)

    def topics_deleted(self, topics: set[str]) -> None:
        """Their offsets are deleted, in order before any later request's records (once
        loaded, if the topics went while group state was loading)."""
        if not self.loaded:
            self._deleted_while_loading |= topics
            return
        self._apply(self.core.topics_deleted(topics, now_ms()))

    def _apply(self, outcome: Outcome, request: GroupRequest | None = None) -> bool:
        """Release the outcome's answers and effects, or hold them for the log; True if released."""
        released, own = True, (request.request_id if request is not None else None)
        if outcome.records:
            assert self._log is not None
            try:
                batch = build_batch(self._log, [encode_record(r) for r in outcome.records], now_ms())
            except Exception as exc:  # noqa: BLE001 - it cannot be stored; the newest outcome goes back
                self._take_back(outcome, own, exc)
            else:
                self._hold(_Held(outcome, own, self._groups_of(outcome, request), batch))
                self._unsent.append(self._held[-1])
                self._write_next()
                released = False
        elif self._held:  # an outcome that writes nothing waits behind what its groups wait for
            groups = self._groups_of(outcome, request)
            if any(group in self._held_groups for group in groups) or not (groups or request is None):
                self._hold(_Held(outcome, own, groups, None))
                released = False
        if released:
            self._release(outcome)
        # The timer task is woken only for a deadline earlier than the one it sleeps until (a
        # heartbeat only moves its member's session later, which schedules none).
        deadline = self.core.earlier_deadline()
        if deadline is not None and (self._sleeping_until is None or deadline < self._sleeping_until):
            self._wake.set()
        return released

    def _groups_of(self, outcome: Outcome, request: GroupRequest | None) -> set[str]:
        groups = set(outcome.groups or ()) if request is None else self.core.group_ids(request)
        groups.update(getattr(record, "group_id", "") for record in outcome.records)
        groups.discard("")
        return groups

    def _hold(self, held: _Held) -> None:
        self._held.append(held)
        self._held_groups.update(held.groups)

    def _unhold(self, held: _Held) -> None:
        """`held`, just taken off the queue, no longer holds its groups' later outcomes."""
        self._held_groups.subtract(held.groups)
        for group in held.groups:
            if self._held_groups[group] <= 0:
                del self._held_groups[group]

    def _release(self, outcome: Outcome) -> None:
        outcome.journal = None  # it can no longer be taken back
        for request_id, fields in outcome.replies.items():
            future = self._pending.get(request_id, (None,))[0]
            if future is not None and not future.done():
                future.set_result(fields)
        for computation in outcome.effects:
            future = asyncio.get_running_loop().run_in_executor(self._assignor, computation.run)
            future.add_done_callback(functools.partial(self._computed, computation))
        if outcome.records:
            self._log_changes(outcome.records)

    def _release_ready(self) -> None:
        """Release held outcomes from the oldest while their batches are written."""
        while self._held and self._held[0].batch is None:
            held = self._held.popleft()
            self._unhold(held)
            self._release(held.outcome)

    def _write_next(self) -> None:
        if self._writing is not None or not self._unsent:
            return
        sending, self._unsent = self._unsent, []
        self._writing = asyncio.get_running_loop().run_in_executor(
            self._writer, _append_all, self._log, [held.batch for held in sending]
        )
        self._writing.add_done_callback(functools.partial(self._written, sending))

    def _written(self, sent: list[_Held], future: asyncio.Future[tuple[int, Exception | None]]) -> None:
        self._writing = None
        if future.cancelled():
            return
        count, exc = future.result()
        for held in sent[:count]:
            held.batch = None
        if count:
            assert self._log is not None
            self._log.wake_waiters()  # long polls on the internal topic (a kcat reading it)
            if self._log.needs_compaction():  # kept near the live state: a restart replays all of it
                self._compaction_due()
        if exc is not None:
            failed = sent[count]
            while self._held[-1] is not failed:  # everything held after it was built on it
                self._take_back_held(self._held.pop(), exc)
            self._take_back_held(self._held.pop(), exc)
            self._unsent = []
        self._release_ready()
        self._write_next()

    def _take_back_held(self, held: _Held, exc: Exception) -> None:
        """A held outcome goes back (newest first); its answers, now errors, go out at once."""
        self._unhold(held)
        self._take_back(held.outcome, held.request_id, exc)
        self._release(held.outcome)

    def _take_back(self, outcome: Outcome, request_id: int | None, exc: Exception) -> None:
        code, message = write_error(exc)
        storage = isinstance(exc, KafkaApiError) and exc.code == ErrorCode.KAFKA_STORAGE_ERROR
        if outcome.records and not storage:  # a failing disk is said by the log's OutageLog, once
            log.error("group coordinator could not write %d record(s): %s", len(outcome.records), message)
        self.core.write_failed(outcome, self._api_of, code, message, now_ms(), request_id)

    def _computed(self, computation: Any, future: asyncio.Future[Any]) -> None:
        if future.cancelled():
            return
        assigned = None
        if future.exception() is not None:
            log.error("assignor failed for group %s: %r", computation.group_id, future.exception())
        else:
            assigned = future.result()
        self._apply(self.core.target_computed(computation, assigned, now_ms()))

    def _api_of(self, request_id: int) -> tuple[int, int] | None:
        pending = self._pending.get(request_id)
        return None if pending is None else pending[1:]

    def _log_changes(self, records: list[Record]) -> None:
        for record in records:
            if isinstance(record, GroupConfigRecord):
                configs = ", ".join(f"{name}={value}" for name, value in record.configs or ())
                log.info("group %s configs are now %s", record.group_id, configs or "the defaults")
            elif isinstance(record, GroupMetadataRecord):
                if record.value is None:
                    log.info("group %s deleted", record.group_id)
                else:
                    log.info(
                        "group %s generation %d: %d member(s), protocol %s, leader %s",
                        record.group_id, record.value.generation, len(record.value.members),
                        record.value.protocol_name, record.value.leader_id,
                    )  # fmt: skip

    async def _run_timers(self) -> None:
        while True:
            self.core.earlier_deadline()  # what is scheduled so far is in the next deadline
            deadline = self.core.next_deadline()
            timeout = None if deadline is None else max(0.0, (deadline - now_ms()) / 1000)
            self._sleeping_until = deadline
            self._wake.clear()
            with contextlib.suppress(TimeoutError):
                await asyncio.wait_for(self._wake.wait(), timeout)
            try:
                self._apply(self.core.on_timer(now_ms()))
            except Exception:  # a timer must never stop the loop; the log says what failed
                log.exception("group coordinator timer failed")

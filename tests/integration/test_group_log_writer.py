"""The group log is written off the event loop: a disk that stalls holds only the answers that
wait for it, a write that fails takes back its outcome and every outcome held behind it, and
compacting a log (seconds for 100 MB) leaves the loop serving and its appends going on.

A coordinator served in this process (the same `serve` as the command, real TCP, real log
files) whose `__consumer_offsets` appends can be made to stall or fail, as a disk busy with
an fsync or a broken one does; clients are raw Kafka-protocol connections.
"""

from __future__ import annotations

import asyncio
import concurrent.futures
import errno
import threading
import time
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest
from kafka.record.default_records import DefaultRecordBatchBuilder
from kafka.record.memory_records import MemoryRecords

from connect_rebalance.errors import ErrorCode
from connect_rebalance.protocol.api_keys import ApiKey
from coordinator.broker import Broker
from coordinator.configs.coordinator import CoordinatorConfig
from coordinator.main import serve
from coordinator.network.server import CoordinatorServer
from tests.support.group_scenario import create_topic
from tests.support.group_wire import commit, fetched, listed
from tests.support.wire import RawConnection

pytestmark = pytest.mark.integration


class Disk:
    """Wraps the internal topic's appends: `stall()` makes them wait, `fail(reason)` makes
    them raise as a broken disk does, `heal()` lets them through again."""

    def __init__(self, append: Callable[..., Any]) -> None:
        self._append = append
        self._open = threading.Event()
        self._open.set()
        self._failure: str | None = None
        self.waiting = threading.Event()  # an append is stalled

    def append(self, *args: Any, **kwargs: Any) -> Any:
        if not self._open.is_set():
            self.waiting.set()
            self._open.wait(60)
        if self._failure is not None:
            raise OSError(errno.EIO, self._failure)
        return self._append(*args, **kwargs)

    def stall(self) -> None:
        self.waiting.clear()
        self._open.clear()

    def fail(self, reason: str) -> None:
        self._failure = reason
        self._open.set()

    def heal(self) -> None:
        self._failure = None
        self._open.set()


class InProcessCoordinator:
    def __init__(self, data_dir: Path, settings: dict[str, str] | None = None) -> None:
        self.data_dir = data_dir
        self.settings = settings or {}

    def start(self) -> InProcessCoordinator:
        ready = threading.Event()
        config = CoordinatorConfig.from_settings(
            {
                "log.dirs": str(self.data_dir),
                "listeners": "127.0.0.1:0",
                "group.initial.rebalance.delay.ms": "0",
                **self.settings,
            }
        )

        def on_ready(broker: Broker, server: CoordinatorServer, *_: Any) -> None:
            self.broker, self.loop = broker, asyncio.get_running_loop()
            assert server.groups is not None
            self.groups = server.groups
            ready.set()

        async def main() -> None:
            self._stop = asyncio.Event()
            await serve(config, on_ready, self._stop)

        self._thread = threading.Thread(target=asyncio.run, args=(main(),), name="coordinator")
        self._thread.start()
        assert ready.wait(30), "the coordinator did not start"
        host, port = self.broker.advertised_address
        self.bootstrap = f"{host}:{port}"
        group_log = self.groups._log
        self.disk = Disk(group_log.append)
        group_log.append = self.disk.append  # type: ignore[method-assign]
        return self

    @property
    def waiting_for_log(self) -> int:
        return self.groups.waiting_for_log

    def stop(self) -> None:
        if not self._thread.is_alive():
            return
        self.disk.heal()
        self.loop.call_soon_threadsafe(self._stop.set)
        self._thread.join(60)
        assert not self._thread.is_alive(), "the coordinator did not stop"


@pytest.fixture
def coordinator(tmp_path: Path) -> Iterator[InProcessCoordinator]:
    process = InProcessCoordinator(tmp_path / "data").start()
    try:
        yield process
    finally:
        process.stop()


@pytest.fixture
def pool() -> Iterator[concurrent.futures.ThreadPoolExecutor]:
    """Requests sent on threads of their own, so the test can look around while they wait."""
    executor = concurrent.futures.ThreadPoolExecutor(4)
    try:
        yield executor
    finally:
        executor.shutdown(wait=False, cancel_futures=True)


def until(condition: Callable[[], bool], what: str, seconds: float = 10.0) -> None:
    deadline = time.monotonic() + seconds
    while not condition():
        assert time.monotonic() < deadline, f"not within {seconds} s: {what}"
        time.sleep(0.01)


def stable_classic_member(conn: RawConnection, group_id: str) -> tuple[str, int]:
    """A one-member classic group, joined and synced: (member id, generation)."""
    fields = {
        "group_id": group_id, "session_timeout_ms": 30000, "rebalance_timeout_ms": 30000, "member_id": "",
        "group_instance_id": None, "protocol_type": "consumer",
        "protocols": [{"name": "range", "metadata": b""}],
    }  # fmt: skip
    first = conn.request(ApiKey.JOIN_GROUP, 5, fields)
    joined = conn.request(ApiKey.JOIN_GROUP, 5, {**fields, "member_id": first.member_id})
    assert joined.error_code == ErrorCode.NONE
    synced = conn.request(ApiKey.SYNC_GROUP, 3, {
        "group_id": group_id, "generation_id": joined.generation_id, "member_id": first.member_id,
        "group_instance_id": None, "assignments": [{"member_id": first.member_id, "assignment": b"a"}],
    })  # fmt: skip
    assert synced.error_code == ErrorCode.NONE
    return first.member_id, joined.generation_id


def heartbeat(conn: RawConnection, group_id: str, member: tuple[str, int]) -> int:
    answer = conn.request(ApiKey.HEARTBEAT, 4, {
        "group_id": group_id, "generation_id": member[1], "member_id": member[0], "group_instance_id": None,
    })  # fmt: skip
    return answer.error_code  # type: ignore[no-any-return]


def test_a_stalled_write_holds_only_the_answers_that_wait_for_it(
    coordinator: InProcessCoordinator, pool: concurrent.futures.ThreadPoolExecutor
) -> None:
    create_topic(coordinator.bootstrap, "orders", 1)
    other, slow, reader = (RawConnection(coordinator.bootstrap, timeout=60) for _ in range(3))
    member = stable_classic_member(other, "other")

    coordinator.disk.stall()
    committing = pool.submit(commit, slow, "slow", 7)
    until(coordinator.disk.waiting.is_set, "the commit's write reaches the stalled disk")
    fetching = pool.submit(fetched, reader, "slow")

    # The event loop is not waiting for the disk: another group's member and a metadata
    # request are answered while the write stalls.
    answered = pool.submit(heartbeat, other, "other", member)
    until(answered.done, "the other group's heartbeat is answered during the stall", 5.0)
    assert answered.result() == ErrorCode.NONE
    assert coordinator.waiting_for_log >= 1
    assert not committing.done(), "a commit is acknowledged only once its record is written"

    coordinator.disk.heal()
    assert committing.result(10) == [ErrorCode.NONE]
    assert fetching.result(10) == 7, "a read that waited behind the write sees it"
    assert fetched(reader, "slow") == 7
    until(lambda: coordinator.waiting_for_log == 0, "nothing is left waiting for the log")
    for conn in (other, slow, reader):
        conn.close()


def test_a_failed_write_takes_back_its_outcome_and_every_one_held_behind_it(
    coordinator: InProcessCoordinator, pool: concurrent.futures.ThreadPoolExecutor, tmp_path: Path
) -> None:
    create_topic(coordinator.bootstrap, "orders", 1)
    first, second, admin = (RawConnection(coordinator.bootstrap, timeout=60) for _ in range(3))
    assert commit(admin, "g", 3) == [ErrorCode.NONE]
    before = listed(admin)

    coordinator.disk.stall()
    failing = pool.submit(commit, first, "g", 5)
    until(coordinator.disk.waiting.is_set, "the first commit's write reaches the stalled disk")
    behind = pool.submit(commit, second, "g", 6)  # built on the first; waits behind it
    fresh = pool.submit(commit, admin, "new-group", 1)  # another group's write, queued behind both
    until(lambda: coordinator.waiting_for_log == 3, "three outcomes wait for the log")

    coordinator.disk.fail("injected I/O error")
    assert failing.result(10) == [ErrorCode.COORDINATOR_NOT_AVAILABLE]
    assert behind.result(10) == [ErrorCode.COORDINATOR_NOT_AVAILABLE], "what was built on it goes back"
    assert fresh.result(10) == [ErrorCode.COORDINATOR_NOT_AVAILABLE]
    coordinator.disk.heal()

    # The same connections go on, and nothing of what failed is seen.
    assert fetched(first, "g") == 3 and fetched(second, "new-group") == -1
    assert listed(admin) == before
    assert commit(second, "g", 8) == [ErrorCode.NONE]

    coordinator.stop()
    restarted = InProcessCoordinator(tmp_path / "data").start()
    try:
        conn = RawConnection(restarted.bootstrap, timeout=60)
        assert fetched(conn, "g") == 8 and fetched(conn, "new-group") == -1
        assert listed(conn) == before, "a restart shows nothing of the failed writes"
        conn.close()
    finally:
        restarted.stop()
    for conn in (first, second, admin):
        conn.close()


def test_a_join_parked_behind_a_failed_write_is_answered_with_the_error(
    coordinator: InProcessCoordinator, pool: concurrent.futures.ThreadPoolExecutor
) -> None:
    create_topic(coordinator.bootstrap, "orders", 1)
    first, second = (RawConnection(coordinator.bootstrap, timeout=60) for _ in range(2))
    member_id, generation = member = stable_classic_member(first, "c")

    coordinator.disk.stall()
    committing = pool.submit(commit, first, "c", 4, member_id, generation)
    until(coordinator.disk.waiting.is_set, "the member's commit reaches the stalled disk")
    # JoinGroup v3 takes an unknown member at once: it is parked until the group rebalances,
    # an outcome that writes nothing and waits behind the commit of its group.
    joining = pool.submit(second.request, ApiKey.JOIN_GROUP, 3, {
        "group_id": "c", "session_timeout_ms": 30000, "rebalance_timeout_ms": 30000, "member_id": "",
        "protocol_type": "consumer", "protocols": [{"name": "range", "metadata": b""}],
    })  # fmt: skip
    until(lambda: coordinator.waiting_for_log == 2, "the parked join waits behind the commit")

    coordinator.disk.fail("injected I/O error")
    assert committing.result(10) == [ErrorCode.COORDINATOR_NOT_AVAILABLE]
    until(joining.done, "the parked join is answered once the write it waited behind failed")
    assert joining.result().error_code == ErrorCode.COORDINATOR_NOT_AVAILABLE
    coordinator.disk.heal()

    described = first.request(ApiKey.DESCRIBE_GROUPS, 5, {"groups": ["c"]}).groups[0]
    assert (described.group_state, [m.member_id for m in described.members]) == ("Stable", [member_id])
    assert heartbeat(first, "c", member) == ErrorCode.NONE, "the group is where it was"
    for conn in (first, second):
        conn.close()


class SlowCleaner:
    """Holds a partition's compaction in its rewrite (the part that reads the sealed segments
    and writes the cleaned ones, seconds for 100 MB) until released, as a long one does."""

    def __init__(self, partition: Any) -> None:
        self.partition = partition
        self._rewrite = partition._rewrite
        partition._rewrite = self.rewrite
        self.running = threading.Event()
        self.release = threading.Event()

    def rewrite(self, *args: Any) -> Any:
        self.running.set()
        self.release.wait(60)
        return self._rewrite(*args)

    def finished(self) -> bool:
        return self.partition.cleaned_through > 0 and not self.partition.needs_compaction()


def test_compacting_the_group_log_leaves_commits_and_the_event_loop_serving(
    tmp_path: Path, pool: concurrent.futures.ThreadPoolExecutor
) -> None:
    settings = {"offsets.topic.segment.bytes": "1024", "log.cleaner.backoff.ms": "50"}
    coordinator = InProcessCoordinator(tmp_path / "data", settings).start()
    cleaner = SlowCleaner(coordinator.groups._log)
    try:
        create_topic(coordinator.bootstrap, "orders", 1)
        other, filler, committer = (RawConnection(coordinator.bootstrap, timeout=60) for _ in range(3))
        member = stable_classic_member(other, "other")

        def fill() -> int:  # 1 KiB segments: a few commits seal one, and compaction starts
            for offset in range(5000):  # (within 50 ms of the first seal: log.cleaner.backoff.ms)
                assert commit(filler, "g", offset) == [ErrorCode.NONE]
                if cleaner.running.is_set():
                    return offset
            raise AssertionError("5,000 commits and no compaction")

        filling = pool.submit(fill)
        until(cleaner.running.is_set, "compaction of __consumer_offsets starts")

        answered = pool.submit(heartbeat, other, "other", member)
        until(answered.done, "a heartbeat is answered while the group log is compacted", 5.0)
        assert answered.result() == ErrorCode.NONE
        committing = pool.submit(commit, committer, "h", 100)
        until(committing.done, "a commit is answered while the group log is compacted", 5.0)
        assert committing.result() == [ErrorCode.NONE]
        assert fetched(committer, "h") == 100
        offset = filling.result(5)
        assert not cleaner.release.is_set(), "all of this while the compaction was under way"

        cleaner.release.set()
        until(cleaner.finished, "the compaction swaps its cleaned segments in")
        assert (fetched(committer, "h"), fetched(committer, "g")) == (100, offset)
        for conn in (other, filler, committer):
            conn.close()
    finally:
        cleaner.release.set()
        coordinator.stop()
    restarted = InProcessCoordinator(tmp_path / "data", settings).start()
    try:
        conn = RawConnection(restarted.bootstrap, timeout=60)
        assert (fetched(conn, "h"), fetched(conn, "g")) == (100, offset), "the compacted log keeps both"
        conn.close()
    finally:
        restarted.stop()


def keyed_records(pairs: list[tuple[bytes, bytes]]) -> bytes:
    builder = DefaultRecordBatchBuilder(2, 0, False, -1, -1, -1, batch_size=1 << 30)
    for i, (key, value) in enumerate(pairs):
        builder.append(i, int(time.time() * 1000), key, value, [])
    return bytes(builder.build())


def produce(conn: RawConnection, topic: str, pairs: list[tuple[bytes, bytes]]) -> int:
    answer = conn.request(ApiKey.PRODUCE, 9, {
        "transactional_id": None, "acks": -1, "timeout_ms": 5000,
        "topic_data": [{"name": topic, "partition_data": [{"index": 0, "records": keyed_records(pairs)}]}],
    })  # fmt: skip
    return answer.responses[0].partition_responses[0].error_code  # type: ignore[no-any-return]


def read_all(conn: RawConnection, topic: str) -> list[tuple[int, bytes, bytes]]:
    """(offset, key, value) of every record in partition 0, fetched from its log start."""
    rows: list[tuple[int, bytes, bytes]] = []
    while True:
        answer = conn.request(ApiKey.FETCH, 11, {
            "replica_id": -1, "max_wait_ms": 0, "min_bytes": 0, "max_bytes": 1 << 24, "isolation_level": 0,
            "session_id": 0, "session_epoch": -1, "forgotten_topics_data": [], "rack_id": "",
            "topics": [{"topic": topic, "partitions": [{"partition": 0, "current_leader_epoch": -1,
                        "fetch_offset": rows[-1][0] + 1 if rows else 0, "log_start_offset": -1,
                        "partition_max_bytes": 1 << 24}]}],
        })  # fmt: skip
        part = answer.responses[0].partitions[0]
        assert part.error_code == ErrorCode.NONE
        records = MemoryRecords(bytes(part.records or b""))
        before = len(rows)
        while records.has_next():
            batch = records.next_batch()
            rows += [
                (r.offset, bytes(r.key), bytes(r.value)) for r in batch if not rows or r.offset > rows[-1][0]
            ]
        if len(rows) == before:
            return rows


def test_a_produce_to_a_topic_being_compacted_is_answered_during_the_compaction(
    tmp_path: Path, pool: concurrent.futures.ThreadPoolExecutor
) -> None:
    coordinator = InProcessCoordinator(tmp_path / "data", {"log.cleaner.backoff.ms": "50"}).start()
    try:
        with_a_held_compaction(coordinator, pool)
    finally:
        coordinator.stop()


def with_a_held_compaction(
    coordinator: InProcessCoordinator, pool: concurrent.futures.ThreadPoolExecutor
) -> None:
    conn, late = (RawConnection(coordinator.bootstrap, timeout=60) for _ in range(2))
    created = conn.request(ApiKey.CREATE_TOPICS, 5, {
        "topics": [{"name": "changelog", "num_partitions": 1, "replication_factor": 1, "assignments": [],
                    "configs": [{"name": "cleanup.policy", "value": "compact"},
                                {"name": "segment.bytes", "value": "1024"}]}],
        "timeout_ms": 10000, "validate_only": False,
    })  # fmt: skip
    assert created.topics[0].error_code == ErrorCode.NONE
    cleaner = SlowCleaner(coordinator.broker.topics.get("changelog").partitions[0])
    try:
        latest: dict[bytes, bytes] = {}
        for n in range(500):  # ten keys rewritten: 1 KiB segments seal, and compaction starts
            pairs = [(b"key-%d" % (n % 10), b"value-%d" % n)]
            filled = pool.submit(produce, conn, "changelog", pairs)  # the compaction may start
            until(filled.done, "a produce is answered while the topic may be compacted", 5.0)  # meanwhile
            assert filled.result() == ErrorCode.NONE
            latest.update(pairs)
            if cleaner.running.is_set():
                break
        until(cleaner.running.is_set, "compaction of the topic starts")

        producing = pool.submit(produce, late, "changelog", [(b"key-late", b"during")])
        until(producing.done, "a produce to the topic is answered while it is compacted", 5.0)
        assert producing.result() == ErrorCode.NONE
        latest[b"key-late"] = b"during"
        assert not cleaner.release.is_set(), "while the compaction was under way"

        cleaner.release.set()
        until(cleaner.finished, "the compaction swaps its cleaned segments in")
        rows = read_all(conn, "changelog")
        offsets = [offset for offset, _, _ in rows]
        assert offsets == sorted(set(offsets)), "offsets stay in order, each once"
        assert {key: value for _, key, value in rows} == latest, "every key's latest value is there"
        assert len(rows) < n + 2, "older values of the compacted segments are gone"
        for c in (conn, late):
            c.close()
    finally:
        cleaner.release.set()

"""The group log is written off the event loop: a disk that stalls holds only the answers that
wait for it, a write that fails takes back its outcome and every outcome held behind it, and
compacting the log (seconds for 100 MB) leaves the loop serving.

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

from connect_rebalance.errors import ErrorCode
from connect_rebalance.protocol.api_keys import ApiKey
from coordinator.broker import Broker
from coordinator.config import CoordinatorConfig
from coordinator.main import serve
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

        def on_ready(broker: Broker, *_: Any) -> None:
            self.broker, self.loop = broker, asyncio.get_running_loop()
            ready.set()

        async def main() -> None:
            self._stop = asyncio.Event()
            await serve(config, on_ready, self._stop)

        self._thread = threading.Thread(target=asyncio.run, args=(main(),), name="coordinator")
        self._thread.start()
        assert ready.wait(30), "the coordinator did not start"
        host, port = self.broker.advertised_address
        self.bootstrap = f"{host}:{port}"
        group_log = self.broker.groups._log
        self.disk = Disk(group_log.append)
        group_log.append = self.disk.append  # type: ignore[method-assign]
        return self

    @property
    def waiting_for_log(self) -> int:
        return self.broker.groups.waiting_for_log

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
    """Wraps a partition's compaction so it waits until released, as a long one does."""

    def __init__(self, compact: Callable[[int], int]) -> None:
        self._compact = compact
        self.running = threading.Event()
        self.release = threading.Event()

    def compact(self, now_ms: int) -> int:
        self.running.set()
        self.release.wait(60)
        return self._compact(now_ms)


def test_compacting_the_group_log_leaves_the_event_loop_serving(
    tmp_path: Path, pool: concurrent.futures.ThreadPoolExecutor
) -> None:
    settings = {"offsets.topic.segment.bytes": "1024", "log.cleaner.backoff.ms": "50"}
    coordinator = InProcessCoordinator(tmp_path / "data", settings).start()
    group_log = coordinator.broker.groups._log
    cleaner = SlowCleaner(group_log._compact)
    group_log._compact = cleaner.compact  # type: ignore[method-assign]
    try:
        create_topic(coordinator.bootstrap, "orders", 1)
        other, filler, committer = (RawConnection(coordinator.bootstrap, timeout=60) for _ in range(3))
        member = stable_classic_member(other, "other")

        def fill() -> None:  # 1 KiB segments: a few commits seal one, and compaction starts
            for offset in range(50):
                if cleaner.running.is_set():
                    return
                assert commit(filler, "g", offset) == [ErrorCode.NONE]

        filling = pool.submit(fill)
        until(cleaner.running.is_set, "compaction of __consumer_offsets starts")

        answered = pool.submit(heartbeat, other, "other", member)
        until(answered.done, "a heartbeat is answered while the group log is compacted", 5.0)
        assert answered.result() == ErrorCode.NONE
        committing = pool.submit(commit, committer, "h", 100)  # its append waits for the compaction

        cleaner.release.set()
        assert committing.result(10) == [ErrorCode.NONE]
        filling.result(10)
        assert fetched(committer, "h") == 100
        for conn in (other, filler, committer):
            conn.close()
    finally:
        cleaner.release.set()
        coordinator.stop()
    restarted = InProcessCoordinator(tmp_path / "data", settings).start()
    try:
        conn = RawConnection(restarted.bootstrap, timeout=60)
        assert fetched(conn, "h") == 100, "the compacted log keeps the latest commit"
        conn.close()
    finally:
        restarted.stop()

"""A coordinator restart against a long `__consumer_offsets` history, over TCP.

- Data requests are served from a restarted coordinator's first moment, while its group state
  still loads; group requests answer COORDINATOR_LOAD_IN_PROGRESS meanwhile, then are served
  with every committed offset.
- The offsets log stays near its live state however long the history: it is compacted as it
  rolls, so what a restart replays does not grow with the history.
- A kill -9 while `__consumer_offsets` is being compacted loses no acknowledged commit, and the
  next start loads.
- Workers keep their work through a restart whose load outlasts their watchdog's margin.
"""

from __future__ import annotations

import asyncio
import re
import threading
import time
from pathlib import Path

import pytest

from connect_rebalance.errors import ErrorCode
from connect_rebalance.processes import CoordinatorProcess, connect_timings
from connect_rebalance.protocol.api_keys import ApiKey
from connect_rebalance.protocol.client import ProtocolClient
from tests.support.group_scenario import wait_until
from tests.support.offset_history import (
    GROUPS,
    PARTITIONS,
    committed_offsets,
    group_name,
    offsets_read_back_wrong,
    write_history,
)
from tests.support.verifiable_records import runs_by_task, written_since
from tests.support.worker_cluster import WorkerCluster, metrics, rest, stops
from workers.harness.process import WorkerProcess

pytestmark = pytest.mark.integration
LOADED = re.compile(r"group coordinator loaded (\d+) records")
PROBE_VERSIONS = {"client_software_name": "probe", "client_software_version": "1"}
ALL_TOPICS = {
    "topics": None,
    "allow_auto_topic_creation": False,
    "include_topic_authorized_operations": False,
}


def run_source(cluster: WorkerCluster, worker: WorkerProcess) -> None:
    """A VerifiableSource with 2 tasks (topic seq-out), running and spread over the workers."""
    source = {"connector.class": "VerifiableSource", "topic": "seq-out", "tasks.max": "2", "throughput": "20"}
    assert rest("POST", f"{worker.url}/connectors", {"name": "seq", "config": source})[0] == 201
    wait_until(lambda: cluster.balanced("seq", 3), 60, "the connector and its tasks running")


def zombie_stops(cluster: WorkerCluster) -> list[float]:
    """Each worker's watchdog stops, from its own /metrics (the coordinator may be frozen)."""
    return [metrics(w.url).get("connect_worker_zombie_stops_total", 0) for w in cluster.running()]


def offsets_dir(coordinator: CoordinatorProcess) -> Path:
    return coordinator.data_dir / "topics" / "__consumer_offsets" / "0"


def replayed_per_start(coordinator: CoordinatorProcess) -> list[int]:
    """How many records each start of the coordinator replayed, from its log (kept across starts)."""
    return [int(n) for n in LOADED.findall(coordinator.log_text())]


def restart_loaded(coordinator: CoordinatorProcess) -> int:
    """Kill -9, start again, wait until group state is loaded: how many records it replayed."""
    starts = len(replayed_per_start(coordinator))
    coordinator.kill()
    coordinator.start()
    wait_until(lambda: len(replayed_per_start(coordinator)) > starts, 120, "group state loaded")
    return replayed_per_start(coordinator)[-1]


async def probe_while_loading(bootstrap: str) -> tuple[int, int]:
    """Until the group API answers: how many ApiVersions + Metadata probes were answered while an
    OffsetFetch answered COORDINATOR_LOAD_IN_PROGRESS, and how many of those group answers came."""
    deadline = time.monotonic() + 120
    served_while_loading = loading_answers = 0
    while time.monotonic() < deadline:
        try:
            client = await ProtocolClient.connect(bootstrap, "restart-probe")
            break
        except OSError:
            await asyncio.sleep(0.01)
    try:
        while time.monotonic() < deadline:
            answer = await client.request(ApiKey.OFFSET_FETCH, 8, {
                "groups": [{"group_id": group_name(0), "topics": None}], "require_stable": False,
            })  # fmt: skip
            code = answer["groups"][0]["error_code"]
            if code != ErrorCode.COORDINATOR_LOAD_IN_PROGRESS:
                assert code == ErrorCode.NONE, f"OffsetFetch during the start: error {code}"
                return served_while_loading, loading_answers
            loading_answers += 1
            versions = await client.request(ApiKey.API_VERSIONS, 3, PROBE_VERSIONS)
            metadata = await client.request(ApiKey.METADATA, 12, ALL_TOPICS)
            served_while_loading += versions["error_code"] == 0 and any(
                t["name"] == "history" for t in metadata["topics"]
            )
            await asyncio.sleep(0.02)
        raise AssertionError("the group API never answered after the restart")
    finally:
        await client.close()


def test_data_is_served_at_once_and_groups_answer_load_in_progress_until_their_state_is_loaded(
    tmp_path: Path,
) -> None:
    # One big active segment, as a coordinator with Kafka's 100 MiB default has: a long load.
    coordinator = CoordinatorProcess(tmp_path / "data", {"offsets.topic.segment.bytes": "104857600"}).start()
    try:
        commits = 300_000
        asyncio.run(write_history(coordinator.bootstrap, commits))
        coordinator.kill()
        coordinator.start()
        served, loading = asyncio.run(probe_while_loading(coordinator.bootstrap))
        assert loading > 0, "the restart loaded before any request was answered: nothing was checked"
        assert served == loading, f"{loading - served} data probes not answered while groups loaded"
        assert replayed_per_start(coordinator)[-1] >= commits, "the history was not replayed"
        assert asyncio.run(offsets_read_back_wrong(coordinator.bootstrap, commits)) == 0
    finally:
        coordinator.kill()


def test_the_offsets_log_stays_near_its_live_state_however_long_the_history(tmp_path: Path) -> None:
    # The periodic cleaner is left out (10 minutes): only the log's own roll can compact it.
    coordinator = CoordinatorProcess(tmp_path / "data", {"log.cleaner.backoff.ms": "600000"}).start()
    try:
        commits = 600_000
        asyncio.run(write_history(coordinator.bootstrap, commits))
        live = GROUPS * PARTITIONS
        replayed = restart_loaded(coordinator)
        # Twice the live records (a compacted part, and as much new data before the next
        # compaction) and a 4 MiB active segment (about 75,000 commits).
        assert replayed <= 2 * live + 100_000, (
            f"a restart replayed {replayed} records for {live} live offsets"
        )
        assert asyncio.run(offsets_read_back_wrong(coordinator.bootstrap, commits)) == 0
    finally:
        coordinator.kill()


def test_a_kill9_while_the_offsets_log_is_compacted_loses_no_acknowledged_commit(tmp_path: Path) -> None:
    coordinator = CoordinatorProcess(tmp_path / "data", {"log.cleaner.backoff.ms": "600000"}).start()
    acknowledged: dict[int, int] = {}
    failures: list[BaseException] = []

    def fill() -> None:
        try:
            asyncio.run(write_history(coordinator.bootstrap, 3_000_000, acknowledged))
        except (OSError, ConnectionError, AssertionError) as exc:  # the kill ends it
            failures.append(exc)

    filling = threading.Thread(target=fill, daemon=True)
    try:
        filling.start()
        wait_until(
            lambda: any(offsets_dir(coordinator).glob("*.log.cleaning")), 120, "a compaction under way"
        )
        coordinator.kill()
        filling.join(30)
        assert not filling.is_alive() and failures, "the fill went on past the kill"
        seen = dict(acknowledged)
        restart_loaded(coordinator)
        found = asyncio.run(committed_offsets(coordinator.bootstrap))
    finally:
        coordinator.kill()
    lost = {g: (n, found[g]) for g, n in seen.items() if min(found[g].values(), default=-1) < n}
    assert not lost, f"acknowledged commits lost (group: acknowledged, found): {list(lost.items())[:3]}"
    assert len(seen) == GROUPS


def test_workers_keep_their_work_through_a_restart_whose_load_outlasts_their_watchdog(tmp_path: Path) -> None:
    """A restarted coordinator answering COORDINATOR_LOAD_IN_PROGRESS will give every member a
    full session from its load's end: the workers' watchdogs count that answer, so a load
    longer than the watchdog's margin (4 s of a 6 s session) stops nothing."""
    session_ms = 6000
    settings = {**connect_timings(session_ms), "offsets.topic.segment.bytes": "104857600"}  # one long segment
    coordinator = CoordinatorProcess(tmp_path / "data", settings).start()
    cluster = WorkerCluster(tmp_path, coordinator)
    try:
        asyncio.run(write_history(coordinator.bootstrap, 1_000_000))
        w1, _ = (cluster.start(n) for n in ("w1", "w2"))
        run_source(cluster, w1)
        before = {w.worker_id: stops(w.url, "seq") for w in cluster.running()}
        starts = len(replayed_per_start(coordinator))
        coordinator.kill()
        killed = time.monotonic()
        coordinator.start()
        wait_until(lambda: len(replayed_per_start(coordinator)) > starts, 120, "group state loaded")
        outage = time.monotonic() - killed
        restarted_ms = time.time() * 1000

        def both_writing() -> bool:
            return written_since(runs_by_task(coordinator.bootstrap, "seq-out"), restarted_ms) == {0, 1}

        wait_until(both_writing, 60, "both tasks writing after the load")
        after = {w.worker_id: stops(w.url, "seq") for w in cluster.running()}
        stopped = sum(zombie_stops(cluster))
        # The clients' "No node available" while the coordinator was down: once per quiet
        # period, not every few milliseconds.
        noise = max(w.log_text().count("No node available") for w in cluster.running())
    finally:
        cluster.stop_all()
        coordinator.kill()
    assert noise <= 2 * (outage / 10 + 1), (
        f"a worker logged 'No node available' {noise} times in {outage:.0f} s"
    )
    assert outage > 4, (
        f"group state was back after {outage:.1f} s, inside the watchdog's margin: nothing was checked"
    )
    assert (after, stopped) == (before, 0), (
        f"work stopped across a {outage:.1f} s restart: {before} -> {after}"
    )


def test_workers_stopped_by_their_watchdog_while_the_coordinator_froze_get_their_work_back_on_resume(
    tmp_path: Path,
) -> None:
    """The coordinator freezes (SIGSTOP) with heartbeats on their way, past the watchdog's
    margin (4 s of a 6 s session) but not past the session: each worker stops its work once,
    and when the coordinator resumes and answers the heartbeats that were on their way (which
    find nothing to change), the full heartbeat each watchdog asked for still goes and the
    work runs again."""
    coordinator = CoordinatorProcess(tmp_path / "data", connect_timings(6000)).start()
    cluster = WorkerCluster(tmp_path, coordinator)
    try:
        w1, _ = (cluster.start(n) for n in ("w1", "w2"))
        run_source(cluster, w1)
        coordinator.pause()
        frozen = time.monotonic()
        try:
            wait_until(lambda: zombie_stops(cluster) == [1, 1], 5, "every worker's watchdog to stop its work")
            assert time.monotonic() - frozen < 5.0, "the session could have expired: nothing is checked"
        finally:
            coordinator.resume()
        resumed = time.monotonic()
        while not cluster.balanced("seq", 3) and time.monotonic() < resumed + 30:
            time.sleep(0.2)  # polling the statuses until the deadline
        back = cluster.balanced("seq", 3)
        stopped = zombie_stops(cluster)
    finally:
        cluster.stop_all()
        coordinator.kill()
    assert back, "the work did not run again within 30 s of the coordinator's resume"
    assert stopped == [1, 1], f"watchdog stops per worker: {stopped}"

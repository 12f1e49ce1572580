"""A coordinator restart against a long `__consumer_offsets` history, over TCP.

- Data requests are served from a restarted coordinator's first moment, while its group state
  still loads; group requests answer COORDINATOR_LOAD_IN_PROGRESS meanwhile, then are served
  with every committed offset.
- The offsets log stays near its live state however long the history: it is compacted as it
  rolls, so what a restart replays does not grow with the history.
- A kill -9 while `__consumer_offsets` is being compacted loses no acknowledged commit, and the
  next start loads.
"""

from __future__ import annotations

import asyncio
import re
import threading
import time
from pathlib import Path

import pytest

from connect_rebalance.errors import ErrorCode
from connect_rebalance.processes import CoordinatorProcess
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

pytestmark = pytest.mark.integration
LOADED = re.compile(r"group coordinator loaded (\d+) records")
PROBE_VERSIONS = {"client_software_name": "probe", "client_software_version": "1"}
ALL_TOPICS = {
    "topics": None,
    "allow_auto_topic_creation": False,
    "include_topic_authorized_operations": False,
}


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

"""A long history in `__consumer_offsets`: what a coordinator that has run for weeks replays.

50 groups commit all 1,000 partitions of a topic in turn (OffsetCommit of one group's 1,000
partitions per request, 4 in flight on one connection), so the live state stays at 50,000
offsets whatever the history's length, and the last offset each group committed is known
for reading back. Used by bench/recovery.py and the coordinator-restart tests.
"""

from __future__ import annotations

import asyncio
import time
from typing import Any

from connect_rebalance.protocol.api_keys import ApiKey
from connect_rebalance.protocol.client import ProtocolClient

GROUPS = 50
PARTITIONS = 1000
TOPIC = "history"
IN_FLIGHT = 4


def group_name(index: int) -> str:
    return f"history-{index}"


async def create_topic(client: ProtocolClient, name: str, partitions: int) -> None:
    answer = await client.request(ApiKey.CREATE_TOPICS, 5, {
        "topics": [{"name": name, "num_partitions": partitions, "replication_factor": 1, "assignments": [],
                    "configs": []}],
        "timeout_ms": 30000, "validate_only": False,
    })  # fmt: skip
    assert answer["topics"][0]["error_code"] == 0, f"CreateTopics {name}: {answer}"


def _commit(group: str, offset: int) -> dict[str, Any]:
    partitions = [{"partition_index": i, "committed_offset": offset, "committed_leader_epoch": -1,
                   "committed_metadata": ""} for i in range(PARTITIONS)]  # fmt: skip
    return {"group_id": group, "generation_id_or_member_epoch": -1, "member_id": "",
            "group_instance_id": None, "topics": [{"name": TOPIC, "partitions": partitions}]}  # fmt: skip


async def write_history(bootstrap: str, commits: int, acknowledged: dict[int, int] | None = None) -> float:
    """Create the topic and commit `commits` offsets (a multiple of 1,000); commits per second.
    `acknowledged`, if given, holds each group's highest offset whose commit was answered."""
    acknowledged = {} if acknowledged is None else acknowledged
    client = await ProtocolClient.connect(bootstrap, "offset-history")
    try:
        await create_topic(client, TOPIC, PARTITIONS)
        started, requests = time.monotonic(), iter(range(commits // PARTITIONS))

        async def committer() -> None:
            for n in requests:
                answer = await client.request(ApiKey.OFFSET_COMMIT, 8, _commit(group_name(n % GROUPS), n))
                errors = {p["error_code"] for p in answer["topics"][0]["partitions"]}
                assert errors == {0}, f"OffsetCommit: errors {errors}"
                acknowledged[n % GROUPS] = max(acknowledged.get(n % GROUPS, -1), n)

        await asyncio.gather(*(committer() for _ in range(IN_FLIGHT)))
        return commits / max(time.monotonic() - started, 1e-9)
    finally:
        await client.close()


def last_committed(commits: int, group: int) -> int | None:
    """The offset the history committed last for group `group` (request n went to group n % 50)."""
    requests = commits // PARTITIONS
    found = [n for n in range(max(0, requests - GROUPS), requests) if n % GROUPS == group]
    return found[-1] if found else None


async def committed_offsets(bootstrap: str) -> dict[int, dict[int, int]]:
    """Each history group's committed offset of each partition (errors fail the call)."""
    client = await ProtocolClient.connect(bootstrap, "offset-history")
    try:
        answer = await client.request(ApiKey.OFFSET_FETCH, 8, {
            "groups": [{"group_id": group_name(g), "topics": None} for g in range(GROUPS)],
            "require_stable": False,
        })  # fmt: skip
    finally:
        await client.close()
    found = {}
    for index, entry in enumerate(answer["groups"]):
        assert entry["error_code"] == 0, f"OffsetFetch of {group_name(index)}: error {entry['error_code']}"
        found[index] = {p["partition_index"]: p["committed_offset"]
                        for t in entry["topics"] for p in t["partitions"]}  # fmt: skip
    return found


async def offsets_read_back_wrong(bootstrap: str, commits: int) -> int:
    """How many of the history's live offsets an OffsetFetch of the 50 groups gets wrong."""
    wrong = 0
    for index, found in (await committed_offsets(bootstrap)).items():
        want = last_committed(commits, index)
        wrong += sum(1 for i in range(PARTITIONS) if found.get(i, -1) != (-1 if want is None else want))
    return wrong

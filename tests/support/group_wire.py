"""Offset and group requests over a raw connection, as the group tests send them: one
partition of the topic `orders`, committed as a simple (generation-less) commit unless a
member and its generation are given."""

from __future__ import annotations

from connect_rebalance.protocol.api_keys import ApiKey
from tests.support.wire import RawConnection


def commit(
    conn: RawConnection, group_id: str, offset: int, member_id: str = "", generation: int = -1
) -> list[int]:
    answer = conn.request(ApiKey.OFFSET_COMMIT, 8, {
        "group_id": group_id, "generation_id_or_member_epoch": generation, "member_id": member_id,
        "group_instance_id": None,
        "topics": [{"name": "orders", "partitions": [
            {"partition_index": 0, "committed_offset": offset, "committed_leader_epoch": -1,
             "committed_metadata": ""}]}],
    })  # fmt: skip
    return [p.error_code for t in answer.topics for p in t.partitions]


def fetched(conn: RawConnection, group_id: str) -> int:
    answer = conn.request(ApiKey.OFFSET_FETCH, 8, {
        "groups": [{"group_id": group_id, "topics": [{"name": "orders", "partition_indexes": [0]}]}],
        "require_stable": False,
    })  # fmt: skip
    return answer.groups[0].topics[0].partitions[0].committed_offset  # type: ignore[no-any-return]


def listed(conn: RawConnection) -> list[tuple[str, str]]:
    answer = conn.request(ApiKey.LIST_GROUPS, 5, {"states_filter": [], "types_filter": []})
    return sorted((g.group_id, g.group_state) for g in answer.groups)

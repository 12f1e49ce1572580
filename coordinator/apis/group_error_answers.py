"""A group API's answer when the whole request fails with one error, in that API's own shape.

Used for a request the group coordinator cannot take at all (COORDINATOR_LOAD_IN_PROGRESS while
group state loads after a start) and for a member API refused by the authorizer. Each API
carries the error where its clients read it: per partition (OffsetCommit, OffsetFetch v1),
per group (DescribeGroups, DeleteGroups, the describe APIs, OffsetFetch v8+), or at the top
level, with the message where the version has a field for it, and nothing that a success
would hand out (a generation, an assignment, offsets).
"""

from __future__ import annotations

from typing import Any

from connect_rebalance.protocol import codec
from connect_rebalance.protocol.api_keys import ApiKey
from coordinator.groups.classic import join_error

# Per-group APIs: the request's list of group ids and the response's list of answers.
PER_GROUP_FIELDS: dict[int, tuple[str, str]] = {
    ApiKey.DESCRIBE_GROUPS: ("groups", "groups"),
    ApiKey.CONSUMER_GROUP_DESCRIBE: ("group_ids", "groups"),
    ApiKey.CONNECT_GROUP_DESCRIBE: ("group_ids", "groups"),
    ApiKey.DELETE_GROUPS: ("groups_names", "results"),
}


def member_error(api_key: int, version: int, request: Any, code: int, message: str) -> dict[str, Any]:
    """The answer of a member API (join, sync, heartbeat, leave, the group heartbeats and the
    assignment APIs): the top-level error, and the member id a JoinGroup sent, kept."""
    if api_key == ApiKey.JOIN_GROUP:
        answer: dict[str, Any] = join_error(version, code, request.member_id)  # type: ignore[arg-type]
    else:
        answer = {"error_code": code}
    if "error_message" in codec.response_field_names(api_key):
        answer["error_message"] = message
    return answer


def error_answer(api_key: int, version: int, request: Any, code: int, message: str) -> dict[str, Any]:
    """The answer to `request` in which every error code it carries is `code`."""
    if api_key in PER_GROUP_FIELDS:
        asked, answered = PER_GROUP_FIELDS[api_key]
        entry = {"error_code": code, "error_message": message}
        return {"throttle_time_ms": 0, answered: [{"group_id": g, **entry} for g in getattr(request, asked)]}
    if api_key == ApiKey.OFFSET_COMMIT or (api_key == ApiKey.OFFSET_FETCH and version < 2):
        no_offset = {} if api_key == ApiKey.OFFSET_COMMIT else {"committed_offset": -1, "metadata": ""}
        topics = [
            {"name": t.name, "partitions": [{"partition_index": _index(p), "error_code": code, **no_offset}
                                            for p in _partitions(t)]}
            for t in request.topics or []
        ]  # fmt: skip
        return {"throttle_time_ms": 0, "topics": topics}
    if api_key == ApiKey.OFFSET_FETCH and version >= 8:
        groups = [{"group_id": g.group_id, "error_code": code, "topics": []} for g in request.groups]
        return {"throttle_time_ms": 0, "groups": groups}
    if api_key in (ApiKey.OFFSET_FETCH, ApiKey.OFFSET_DELETE):
        return {"throttle_time_ms": 0, "error_code": code, "topics": []}
    if api_key == ApiKey.LIST_GROUPS:
        return {"throttle_time_ms": 0, "error_code": code, "groups": []}
    return member_error(api_key, version, request, code, message)


def _partitions(topic: Any) -> list[Any]:
    """OffsetCommit's partition entries, or OffsetFetch v1's partition indexes."""
    return list(getattr(topic, "partitions", None) or getattr(topic, "partition_indexes", None) or [])


def _index(partition: Any) -> int:
    """A partition entry of OffsetCommit (an object with partition_index) or OffsetFetch v1 (an int)."""
    return partition if isinstance(partition, int) else partition.partition_index

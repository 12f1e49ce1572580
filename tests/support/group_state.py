"""Pictures of the group coordinator's state, to compare: live, after a failed write, and as a
restart rebuilds it from the records written."""

from __future__ import annotations

from collections import Counter
from dataclasses import asdict, fields, is_dataclass
from typing import Any

from connect_rebalance.protocol.api_keys import ApiKey
from coordinator.group_record_codec import decode_record, encode_record
from coordinator.groups.coordinator import GroupCoordinator
from coordinator.groups.modern.group import ModernGroup
from tests.support.group_harness import GroupHarness


def fingerprint(value: Any) -> Any:
    """A comparable picture of group state: dataclasses field by field, ownership as a mapping;
    what a group derives from its state and keeps (`compare=False`: its state, its last
    describe) is not state."""
    if isinstance(value, ModernGroup):
        kept = value.derived_state
        assert kept is None or kept == value._state(), (
            f"{value.group_id}: state {kept} kept, {value._state()} now"
        )
        picture = {
            f.name: fingerprint(getattr(value, f.name))
            for f in fields(value)
            if f.name != "ownership" and f.compare
        }
        return {**picture, "ownership": value.ownership.snapshot()}
    if is_dataclass(value) and not isinstance(value, type):
        return {f.name: fingerprint(getattr(value, f.name)) for f in fields(value)}
    if isinstance(value, dict):
        return {k: fingerprint(v) for k, v in value.items()}
    if isinstance(value, list | tuple):
        return [fingerprint(v) for v in value]
    if isinstance(value, set):
        return frozenset(value)  # a copy: the live set may change after the picture is taken
    return value


def state(core: GroupCoordinator) -> dict[str, Any]:
    timers = {key: deadline for key, (deadline, _, _) in core.ctx.timers._current.items()}
    return {
        "groups": fingerprint(core.groups),
        "offsets": fingerprint(core.offsets.committed),
        "timers": timers,
    }


def seen(h: GroupHarness, group_id: str) -> dict[str, Any]:
    """What clients and admins see of a group."""
    return {
        "list": h.call(ApiKey.LIST_GROUPS, 5, states_filter=[], types_filter=[]),
        "describe": h.call(ApiKey.DESCRIBE_GROUPS, 5, groups=[group_id], include_authorized_operations=False),
        "consumer": h.call(
            ApiKey.CONSUMER_GROUP_DESCRIBE, 0, group_ids=[group_id], include_authorized_operations=False
        ),
        "connect": h.call(ApiKey.CONNECT_GROUP_DESCRIBE, 0, group_ids=[group_id]),
        "offsets": h.call(
            ApiKey.OFFSET_FETCH, 8, groups=[{"group_id": group_id, "topics": None}], require_stable=False
        ),
    }


def replayed(h: GroupHarness) -> GroupCoordinator:
    core = GroupCoordinator(h.core.settings, h.topics.get, topics_view=h.metadata)
    for record in h.records:
        core.replay(decode_record(*encode_record(record)))
    return core


def persisted(core: GroupCoordinator) -> dict[str, Any]:
    """What the log holds of the groups (a restart rebuilds exactly this). A classic group in
    the middle of a rebalance is not in the log until the rebalance ends, as in Kafka."""
    groups: dict[str, Any] = {}
    for group_id, group in core.groups.items():
        if group.type_name != "classic":
            groups[group_id] = persisted_modern(group)
        elif group.state.value in ("Stable", "Empty"):
            groups[group_id] = fingerprint(group.snapshot())
    return {"groups": groups, "offsets": fingerprint(core.offsets.committed)}


def persisted_modern(group: ModernGroup[Any]) -> dict[str, Any]:
    if group.type_name == "consumer":  # the subscription tallies always agree with the members
        profiles = [m.profile for m in group.members.values()]
        names = Counter(n for p in profiles for n in p.subscribed_topic_names)
        regexes = Counter(p.subscribed_topic_regex for p in profiles if p.subscribed_topic_regex)
        assert (group.name_subscribers, group.regex_subscribers) == (names, regexes), group.group_id
    return {
        "epochs": (group.group_epoch, group.assignment_epoch, group.assignor_name, group.target_error),
        "target": fingerprint(group.target),
        "members": {m: (fingerprint(v.profile), asdict(v.assignment)) for m, v in group.members.items()},
        "ownership": group.ownership.snapshot(),
    }

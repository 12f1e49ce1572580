"""`groups describe`: kafka-consumer-groups' three views of consumer groups, and connect groups.

    offsets (the default)  GROUP TOPIC PARTITION CURRENT-OFFSET LOG-END-OFFSET LAG CONSUMER-ID HOST CLIENT-ID
                           (--verbose: LEADER-EPOCH after PARTITION)
    --members              GROUP CONSUMER-ID [GROUP-INSTANCE-ID] HOST CLIENT-ID #PARTITIONS
                           (--verbose: CURRENT-EPOCH CURRENT-ASSIGNMENT TARGET-EPOCH TARGET-ASSIGNMENT,
                           and UPGRADED in a consumer group that still has classic members)
    --state                GROUP COORDINATOR (ID) ASSIGNMENT-STRATEGY STATE #MEMBERS
                           (--verbose: GROUP-EPOCH TARGET-ASSIGNMENT-EPOCH before #MEMBERS)

The columns are Kafka 4's, epochs `-` for classic groups as there. A connect group is no
consumer group: it has workers and work, not partitions and offsets, so its offsets and members
views are one view, the group's epochs, assignor and computing worker over each worker's url
and current, target and revoking work; its state view is the consumer groups' one.

Every view is rows first (snake_case keys, JSON-ready values), printed as a table or, with
`--output json`, as one JSON array of every group's rows. JSON rows carry every field;
`--verbose` only widens the table.
"""

from __future__ import annotations

import asyncio
import sys
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass
from typing import Any

from kafka import KafkaAdminClient, TopicPartition
from kafka.admin import OffsetSpec

from connect_rebalance.protocol.client import AssignmentGroupApi, ProtocolClient
from connect_rebalance.protocol.connect_group import ConnectGroupApi
from connect_rebalance.protocol.consumer_group import ConsumerGroupApi
from connect_rebalance.work import work_name, work_of

from .tables import MISSING, Column, cell, print_json, print_table

Row = dict[str, Any]
REBALANCING = {"PreparingRebalance", "CompletingRebalance", "Assigning", "Reconciling"}
CLASSIC_MEMBER = 0  # ConsumerGroupDescribe's MemberType of a member on the classic protocol


@dataclass(frozen=True)
class Member:
    member_id: str
    instance_id: str | None
    client_id: str
    host: str
    partitions: list[TopicPartition]
    epoch: int | None = None  # consumer groups only, as the target fields below
    target: list[TopicPartition] | None = None
    upgraded: bool | None = None  # on the consumer protocol (True) or still classic (False)


@dataclass(frozen=True)
class Group:
    """What the three views show of one consumer, classic or connect group."""

    group_id: str
    kind: str
    state: str
    assignor: str | None
    members: list[Member]
    group_epoch: int | None = None
    target_epoch: int | None = None
    connect: dict[str, Any] | None = None  # ConnectGroupDescribe's answer, for a connect group


@dataclass(frozen=True)
class Section:
    """One group's part of the answer: a table (or a connect group's lines) and a note for stderr."""

    headers: list[str]
    rows: list[Row]
    cells: list[list[str]]
    heading: str | None = None
    note: str | None = None


def end_offsets(admin: KafkaAdminClient, partitions: Iterable[TopicPartition]) -> dict[TopicPartition, int]:
    wanted = sorted(set(partitions))
    if not wanted:
        return {}
    found = admin.list_partition_offsets({tp: OffsetSpec.LATEST for tp in wanted})
    return {tp: info.offset for tp, info in found.items()}


def described(bootstrap: str, api: type[AssignmentGroupApi], groups: list[str]) -> dict[str, dict[str, Any]]:
    """ConsumerGroupDescribe or ConnectGroupDescribe of some groups, through the project's
    protocol client (kafka-python has neither)."""

    async def ask() -> list[dict[str, Any]]:
        client = await ProtocolClient.connect(bootstrap, "connect-rebalance-groups")
        try:
            return await asyncio.wait_for(api(client).describe(*groups), 15)
        finally:
            await client.close()

    answers = {d["group_id"]: d for d in asyncio.run(ask())} if groups else {}
    for group, answer in answers.items():
        if answer["error_code"]:
            raise ValueError(answer["error_message"] or f"cannot describe group {group!r}")
    return answers


def partitions_of(assignment: dict[str, Any] | None) -> list[TopicPartition]:
    """A ConsumerGroupDescribe assignment's partitions."""
    entries = (assignment or {}).get("topic_partitions") or []
    return sorted(TopicPartition(e["topic_name"], p) for e in entries for p in e["partitions"])


def classic_partitions(assignment: Any) -> list[TopicPartition]:
    """A classic member's partitions, when its assignment is the consumer protocol's (kafka-python
    decodes it to a dict); another protocol's (Kafka Connect's) has none to show."""
    if not isinstance(assignment, dict):
        return []
    entries = assignment.get("assigned_partitions", [])
    return sorted(TopicPartition(e["topic"], p) for e in entries for p in e["partitions"])


def assignment_json(partitions: list[TopicPartition] | None) -> list[dict[str, Any]] | None:
    if partitions is None:
        return None
    by_topic: dict[str, list[int]] = {}
    for tp in partitions:
        by_topic.setdefault(tp.topic, []).append(tp.partition)
    return [{"topic": t, "partitions": sorted(ps)} for t, ps in sorted(by_topic.items())]


def consumer_group(answer: dict[str, Any]) -> Group:
    classic_members = any(m.get("member_type") == CLASSIC_MEMBER for m in answer["members"])
    members = [
        Member(m["member_id"], m["instance_id"], m["client_id"], m["client_host"],
               partitions_of(m["assignment"]), m["member_epoch"], partitions_of(m["target_assignment"]),
               (m.get("member_type") != CLASSIC_MEMBER) if classic_members else None)
        for m in answer["members"]
    ]  # fmt: skip
    return Group(answer["group_id"], "consumer", answer["group_state"], answer["assignor_name"], members,
                 answer["group_epoch"], answer["assignment_epoch"])  # fmt: skip


def classic_group(group: str, info: dict[str, Any]) -> Group:
    members = [
        Member(m["member_id"], m["group_instance_id"], m["client_id"], m["client_host"],
               classic_partitions(m["member_assignment"]))
        for m in info["members"]
    ]  # fmt: skip
    return Group(group, "classic", info["group_state"], info["protocol_data"], members)


def connect_group(answer: dict[str, Any]) -> Group:
    members = [
        Member(m["member_id"], None, "", m["url"] or "", [], m["member_epoch"]) for m in answer["members"]
    ]
    return Group(answer["group_id"], "connect", answer["group_state"], answer["assignor_name"], members,
                 answer["group_epoch"], answer["assignment_epoch"], answer)  # fmt: skip


def groups_of(admin: KafkaAdminClient, bootstrap: str, kinds: Mapping[str, str]) -> list[Group]:
    """Each group described the way its type is: ConsumerGroupDescribe, DescribeGroups or
    ConnectGroupDescribe, one request per type; in `kinds`' order."""
    named = {kind: [g for g, k in kinds.items() if k == kind] for kind in ("consumer", "classic", "connect")}
    consumer = described(bootstrap, ConsumerGroupApi, named["consumer"])
    connect = described(bootstrap, ConnectGroupApi, named["connect"])
    classic = admin.describe_groups(named["classic"]) if named["classic"] else {}
    found = {g: consumer_group(a) for g, a in consumer.items()}
    found |= {g: connect_group(a) for g, a in connect.items()}
    found |= {g: classic_group(g, info) for g, info in classic.items()}
    return [found[g] for g in kinds]


def coordinators(admin: KafkaAdminClient, groups: list[str]) -> dict[str, tuple[str, int]]:
    """Each group's coordinator as `host:port` and node id (FindCoordinator). kafka-python's
    admin client finds coordinators for its own calls but has no public method for it."""
    if not groups:
        return {}
    manager = admin._manager
    ids = manager.run(admin._find_coordinator_ids, groups)
    brokers = {node: manager.cluster.broker_metadata(node) for node in set(ids.values())}
    return {g: (f"{brokers[node].host}:{brokers[node].port}", node) for g, node in ids.items()}


def state_note(group: Group) -> str | None:
    """What kafka-consumer-groups says on stderr of a group that is not Stable."""
    if group.kind == "connect":
        return None
    if group.state == "Empty":
        return f"Consumer group '{group.group_id}' has no active members."
    if group.state in REBALANCING:
        return f"Warning: Consumer group '{group.group_id}' is rebalancing."
    return None


def offsets_rows(
    group: Group, committed: Mapping[TopicPartition, Any], ends: Mapping[TopicPartition, int]
) -> list[Row]:
    """One row per partition the group has an offset for or a member holds."""
    owner = {tp: m for m in group.members for tp in m.partitions}
    rows = []
    for tp in sorted(set(committed) | set(owner)):
        offset, member, end = committed.get(tp), owner.get(tp), ends.get(tp)
        current = offset.offset if offset is not None and offset.offset >= 0 else None
        epoch = getattr(offset, "leader_epoch", None)
        epoch = epoch if epoch is not None and epoch >= 0 else None
        rows.append({
            "group": group.group_id, "topic": tp.topic, "partition": tp.partition, "leader_epoch": epoch,
            "current_offset": current, "log_end_offset": end,
            "lag": None if current is None or end is None else max(end - current, 0),
            "consumer_id": member.member_id if member else None,
            "host": member.host if member else None, "client_id": member.client_id if member else None,
        })  # fmt: skip
    return rows


def members_rows(group: Group) -> list[Row]:
    return [
        {"group": group.group_id, "consumer_id": m.member_id, "group_instance_id": m.instance_id,
         "host": m.host, "client_id": m.client_id, "partition_count": len(m.partitions),
         "current_epoch": m.epoch, "current_assignment": assignment_json(m.partitions),
         "target_epoch": group.target_epoch if m.target is not None else None,
         "target_assignment": assignment_json(m.target), "upgraded": m.upgraded}
        for m in group.members
    ]  # fmt: skip


def state_row(group: Group, coordinator: tuple[str, int]) -> Row:
    return {
        "group": group.group_id, "type": group.kind, "coordinator": coordinator[0],
        "coordinator_id": coordinator[1], "assignment_strategy": group.assignor or None,
        "state": group.state, "group_epoch": group.group_epoch,
        "target_assignment_epoch": group.target_epoch, "members": len(group.members),
    }  # fmt: skip


def _assignment_cell(value: list[dict[str, Any]] | None) -> str:
    """Kafka 4's spelling of an assignment in one cell: `orders:0,1;audit:2`."""
    if value is None:
        return MISSING
    return ";".join(f"{e['topic']}:{','.join(map(str, e['partitions']))}" for e in value) or MISSING


# Columns whose cell is not the row's value as it is.
SHOWN: dict[str, Callable[[Row], str]] = {
    "current_assignment": lambda row: _assignment_cell(row["current_assignment"]),
    "target_assignment": lambda row: _assignment_cell(row["target_assignment"]),
    "coordinator": lambda row: f"{row['coordinator']}  ({row['coordinator_id']})",  # Kafka's spelling
}


def section(rows: list[Row], columns: list[Column], note: str | None = None) -> Section:
    """A table of `columns` (header, row key) over `rows`."""
    cells = [[SHOWN[key](row) if key in SHOWN else cell(row.get(key)) for _, key in columns] for row in rows]
    return Section([header for header, _ in columns], rows, cells, note=note)


def offsets_columns(verbose: bool) -> list[Column]:
    epoch = [("LEADER-EPOCH", "leader_epoch")] if verbose else []
    return [("GROUP", "group"), ("TOPIC", "topic"), ("PARTITION", "partition"), *epoch,
            ("CURRENT-OFFSET", "current_offset"), ("LOG-END-OFFSET", "log_end_offset"), ("LAG", "lag"),
            ("CONSUMER-ID", "consumer_id"), ("HOST", "host"), ("CLIENT-ID", "client_id")]  # fmt: skip


def members_columns(rows: list[Row], verbose: bool) -> list[Column]:
    """Kafka's: GROUP-INSTANCE-ID only when a member has one, UPGRADED only in a group mid-upgrade."""
    instance = (
        [("GROUP-INSTANCE-ID", "group_instance_id")] if any(r["group_instance_id"] for r in rows) else []
    )
    columns = [("GROUP", "group"), ("CONSUMER-ID", "consumer_id"), *instance, ("HOST", "host"),
               ("CLIENT-ID", "client_id"), ("#PARTITIONS", "partition_count")]  # fmt: skip
    if verbose:
        columns += [("CURRENT-EPOCH", "current_epoch"), ("CURRENT-ASSIGNMENT", "current_assignment"),
                    ("TARGET-EPOCH", "target_epoch"), ("TARGET-ASSIGNMENT", "target_assignment")]  # fmt: skip
        if any(r["upgraded"] is not None for r in rows):
            columns.append(("UPGRADED", "upgraded"))
    return columns


def state_columns(verbose: bool) -> list[Column]:
    epochs = [("GROUP-EPOCH", "group_epoch"), ("TARGET-ASSIGNMENT-EPOCH", "target_assignment_epoch")]
    return [("GROUP", "group"), ("COORDINATOR (ID)", "coordinator"),
            ("ASSIGNMENT-STRATEGY", "assignment_strategy"), ("STATE", "state"),
            *(epochs if verbose else []), ("#MEMBERS", "members")]  # fmt: skip


def connect_section(group: Group) -> Section:
    """A connect group as `groups describe` has always shown it: its epochs, assignor and
    computing worker, then each worker's url and current, target and revoking work."""
    answer = group.connect or {}
    computing = answer.get("computing_member_id") or MISSING
    heading = (f"GROUP {group.group_id}  TYPE connect  STATE {group.state}  GROUP-EPOCH {group.group_epoch}  "
               f"ASSIGNMENT-EPOCH {group.target_epoch}  ASSIGNOR {group.assignor or MISSING}  "
               f"COMPUTING-WORKER {computing}  MEMBERS {len(group.members)}")  # fmt: skip
    work = (("current", "assignment"), ("target", "target_assignment"), ("revoking", "pending_revocation"))
    about = {"group": group.group_id, "group_state": group.state, "group_epoch": group.group_epoch,
             "assignment_epoch": group.target_epoch, "assignor": group.assignor, "computing_member_id":
             answer.get("computing_member_id")}  # fmt: skip
    rows = [
        {**about, "member_id": m["member_id"], "url": m["url"] or None, "member_epoch": m["member_epoch"],
         "member_state": m["member_state"],
         **{name: [work_name(item) for item in sorted(work_of(m[key]))] for name, key in work}}
        for m in answer.get("members", [])
    ]  # fmt: skip
    headers = ["MEMBER-ID", "URL", "EPOCH", "STATE", "CURRENT", "TARGET", "REVOKING"]
    cells = [[r["member_id"], cell(r["url"]), str(r["member_epoch"]), r["member_state"],
              *(" ".join(r[name]) or MISSING for name, _ in work)] for r in rows]  # fmt: skip
    return Section(headers, rows, cells, heading=heading)


def _offsets_and_ends(
    admin: KafkaAdminClient, groups: list[Group]
) -> tuple[dict[str, dict[TopicPartition, Any]], dict[TopicPartition, int]]:
    """The consumer groups' committed offsets (one OffsetFetch), and the log-end offset of every
    partition they have an offset for or hold (one ListOffsets)."""
    consumers = [g.group_id for g in groups if g.kind != "connect"]
    committed = admin.list_group_offsets({g: None for g in consumers}) if consumers else {}
    held = [tp for g in groups for m in g.members for tp in m.partitions]
    return committed, end_offsets(admin, [*held, *(tp for offsets in committed.values() for tp in offsets)])


def sections(admin: KafkaAdminClient, groups: list[Group], view: str, verbose: bool) -> list[Section]:
    """Each group's section of the view."""
    if view == "state":
        found = coordinators(admin, [g.group_id for g in groups])
        return [
            section([state_row(g, found[g.group_id])], state_columns(verbose), state_note(g)) for g in groups
        ]
    committed, ends = _offsets_and_ends(admin, groups) if view == "offsets" else ({}, {})
    out = []
    for group in groups:
        if group.kind == "connect":
            out.append(connect_section(group))
        elif view == "members":
            rows = members_rows(group)
            out.append(section(rows, members_columns(rows, verbose), state_note(group)))
        else:
            rows = offsets_rows(group, committed.get(group.group_id, {}), ends)
            out.append(section(rows, offsets_columns(verbose), state_note(group)))
    return out


def print_sections(found: list[Section], output: str) -> None:
    """Every group's rows as one JSON array, or each group's table in turn, a blank line apart;
    notes go to stderr as kafka-consumer-groups writes them."""
    for part in found:
        if part.note:
            print(part.note, file=sys.stderr)
    if output == "json":
        print_json([row for part in found for row in part.rows])
        return
    shown_parts = [part for part in found if part.heading or part.cells]
    for number, part in enumerate(shown_parts):
        if number:
            print()
        if part.heading:
            print(part.heading + ("\n" if part.cells else ""))
        if part.cells:
            print_table(part.headers, part.cells)

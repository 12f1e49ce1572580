"""`connect-rebalance groups ...`: consumer groups in the spirit of `kafka-consumer-groups`.

    groups list
    groups describe GROUP          type, protocol, state, members and their assignments,
                                   committed offsets, log-end offsets and lag; for consumer
                                   and connect groups also the epochs, the assignor, and each
                                   member's current versus target assignment (and for connect
                                   groups the computing worker and each worker's url)
    groups delete GROUP
    groups reset-offsets GROUP (--topic T[:P,...] ... | --all-topics | --from-file CSV)
        (--to-earliest | --to-latest | --to-current | --to-offset N | --shift-by N |
         --to-datetime YYYY-MM-DDTHH:mm:SS.sss | --by-duration PnDTnHnMnS) [--export] [--execute]

Like Kafka's tool, reset-offsets prints the plan and changes nothing without --execute
(`--export` prints it as CSV for `--from-file`), and only an empty group's offsets can be
reset. `--output json` prints lists and plans as JSON. Everything goes through kafka-python's admin
client over the wire.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import re
import time
from datetime import datetime
from pathlib import Path
from typing import Any

from kafka import KafkaAdminClient, TopicPartition
from kafka.admin import OffsetSpec
from kafka.structs import OffsetAndMetadata

from connect_rebalance.protocol.client import AssignmentGroupApi, ProtocolClient
from connect_rebalance.protocol.connect_group import ConnectGroupApi
from connect_rebalance.protocol.consumer_group import ConsumerGroupApi
from connect_rebalance.work import describe_work, work_of

from .admin_command import run_admin_command

DURATION = re.compile(
    r"P(?:(\d+(?:\.\d+)?)D)?(?:T(?:(\d+(?:\.\d+)?)H)?(?:(\d+(?:\.\d+)?)M)?(?:(\d+(?:\.\d+)?)S)?)?"
)


def _table(rows: list[list[str]]) -> None:
    widths = [max(len(row[i]) for row in rows) for i in range(len(rows[0]))]
    for row in rows:
        print("  ".join(cell.ljust(width) for cell, width in zip(row, widths, strict=True)).rstrip())


def _end_offsets(admin: KafkaAdminClient, partitions: list[TopicPartition]) -> dict[TopicPartition, int]:
    if not partitions:
        return {}
    found = admin.list_partition_offsets({tp: OffsetSpec.LATEST for tp in partitions})
    return {tp: info.offset for tp, info in found.items()}


def _topic_partitions(admin: KafkaAdminClient, topic: str) -> list[TopicPartition]:
    [described] = admin.describe_topics([topic])
    if described["error_code"]:
        raise ValueError(f"topic {topic!r} does not exist")
    return [TopicPartition(topic, p["partition_index"]) for p in described["partitions"]]


def _described(bootstrap: str, api: type[AssignmentGroupApi], group: str) -> dict[str, Any]:
    """ConsumerGroupDescribe or ConnectGroupDescribe, through the project's protocol client."""

    async def ask() -> dict[str, Any]:
        client = await ProtocolClient.connect(bootstrap, "connect-rebalance-groups")
        try:
            [described] = await asyncio.wait_for(api(client).describe(group), 15)
            return described
        finally:
            await client.close()

    described = asyncio.run(ask())
    if described["error_code"]:
        raise ValueError(described["error_message"] or f"cannot describe group {group!r}")
    return described


def _partitions(assignment: dict[str, Any] | None) -> list[TopicPartition]:
    entries = (assignment or {}).get("topic_partitions") or []
    return sorted(TopicPartition(e["topic_name"], p) for e in entries for p in e["partitions"])


def _shown(partitions: list[TopicPartition]) -> str:
    by_topic: dict[str, list[int]] = {}
    for tp in partitions:
        by_topic.setdefault(tp.topic, []).append(tp.partition)
    return " ".join(f"{t}:{','.join(map(str, ps))}" for t, ps in sorted(by_topic.items())) or "-"


def _epochs_line(group: str, kind: str, described: dict[str, Any], extra: str = "") -> None:
    assignor, members = described["assignor_name"] or "-", len(described["members"])
    print(f"GROUP {group}  TYPE {kind}  STATE {described['group_state']}  "
          f"GROUP-EPOCH {described['group_epoch']}  ASSIGNMENT-EPOCH {described['assignment_epoch']}  "
          f"ASSIGNOR {assignor}{extra}  MEMBERS {members}")  # fmt: skip


def describe_consumer_group(bootstrap: str, group: str) -> dict[TopicPartition, str]:
    """Epochs, assignor, and each member's current versus target partitions; returns owners."""
    described = _described(bootstrap, ConsumerGroupApi, group)
    _epochs_line(group, "consumer", described)
    owner: dict[TopicPartition, str] = {}
    rows = [["MEMBER-ID", "INSTANCE-ID", "RACK", "CLIENT-ID", "HOST", "EPOCH", "CURRENT", "TARGET"]]
    for m in described["members"]:
        current = _partitions(m["assignment"])
        owner.update({tp: m["member_id"] for tp in current})
        rows.append([m["member_id"], m["instance_id"] or "-", m["rack_id"] or "-", m["client_id"],
                     m["client_host"], str(m["member_epoch"]), _shown(current),
                     _shown(_partitions(m["target_assignment"]))])  # fmt: skip
    if described["members"]:
        print()
        _table(rows)
    return owner


def describe_connect_group(bootstrap: str, group: str) -> None:
    """Epochs, assignor, computing worker, and each worker's url and current versus target work."""
    described = _described(bootstrap, ConnectGroupApi, group)
    computing = described["computing_member_id"] or "-"
    _epochs_line(group, "connect", described, f"  COMPUTING-WORKER {computing}")
    rows = [["MEMBER-ID", "URL", "EPOCH", "STATE", "CURRENT", "TARGET", "REVOKING"]]
    for m in described["members"]:
        rows.append([m["member_id"], m["url"] or "-", str(m["member_epoch"]), m["member_state"],
                     describe_work(work_of(m["assignment"])), describe_work(work_of(m["target_assignment"])),
                     describe_work(work_of(m["pending_revocation"]))])  # fmt: skip
    if described["members"]:
        print()
        _table(rows)


def describe(admin: KafkaAdminClient, group: str, bootstrap: str) -> None:
    listed = {g["group_id"]: g for g in admin.list_groups()}
    if group not in listed:
        raise ValueError(f"group {group!r} does not exist")
    kind = listed[group].get("group_type", "classic")
    if kind == "connect":
        describe_connect_group(bootstrap, group)
        return
    if kind == "consumer":
        _offsets_and_lag(admin, group, describe_consumer_group(bootstrap, group))
        return
    info = admin.describe_groups([group])[group]
    protocol = f"{info['protocol_type'] or '-'}/{info['protocol_data'] or '-'}"
    members = len(info["members"])
    print(f"GROUP {group}  TYPE {kind}  STATE {info['group_state']}  PROTOCOL {protocol}  MEMBERS {members}")
    owner: dict[TopicPartition, str] = {}
    if info["members"]:
        rows = [["MEMBER-ID", "INSTANCE-ID", "CLIENT-ID", "HOST", "ASSIGNMENT"]]
        for member in info["members"]:
            assignment = member["member_assignment"]
            parts = []
            if isinstance(assignment, dict):
                for entry in assignment.get("assigned_partitions", []):
                    parts.append(f"{entry['topic']}:{','.join(map(str, sorted(entry['partitions'])))}")
                    for partition in entry["partitions"]:
                        owner[TopicPartition(entry["topic"], partition)] = member["member_id"]
            rows.append([member["member_id"], member["group_instance_id"] or "-", member["client_id"],
                         member["client_host"], " ".join(parts) or "-"])  # fmt: skip
        print()
        _table(rows)
    _offsets_and_lag(admin, group, owner)


def _offsets_and_lag(admin: KafkaAdminClient, group: str, owner: dict[TopicPartition, str]) -> None:
    committed = admin.list_group_offsets({group: None}).get(group, {})
    ends = _end_offsets(admin, sorted(set(committed) | set(owner)))
    if ends:
        rows = [["TOPIC", "PARTITION", "CURRENT-OFFSET", "LOG-END-OFFSET", "LAG", "MEMBER-ID"]]
        for tp in sorted(ends):
            current = committed[tp].offset if tp in committed else None
            lag = "-" if current is None else str(max(ends[tp] - current, 0))
            shown = "-" if current is None else str(current)
            rows.append([tp.topic, str(tp.partition), shown, str(ends[tp]), lag, owner.get(tp, "-")])
        print()
        _table(rows)


def _selected(admin: KafkaAdminClient, args: argparse.Namespace) -> list[TopicPartition]:
    """The partitions a reset is for: `--topic t` (every partition) or `--topic t:0,2`,
    repeatable, or `--all-topics` (those the group has committed offsets for)."""
    if args.all_topics:
        return sorted(admin.list_group_offsets({args.group: None}).get(args.group, {}))
    selected: list[TopicPartition] = []
    for spec in args.topic or []:
        topic, _, numbers = spec.partition(":")
        partitions = _topic_partitions(admin, topic)
        if numbers:
            wanted = {int(n) for n in numbers.split(",") if n.strip()}
            missing = sorted(wanted - {tp.partition for tp in partitions})
            if missing:
                raise ValueError(f"topic {topic!r} has no partition {', '.join(map(str, missing))}")
            partitions = [tp for tp in partitions if tp.partition in wanted]
        selected += partitions
    return sorted(set(selected))


def parse_duration_ms(text: str) -> int:
    """An ISO-8601 duration as kafka-consumer-groups' --by-duration takes it (PnDTnHnMnS)."""
    match = DURATION.fullmatch(text.strip().upper())
    if match is None or not any(match.groups()):
        raise ValueError(f"--by-duration {text!r} is not an ISO-8601 duration such as PT15M or P1DT2H")
    days, hours, minutes, seconds = (float(g) if g else 0.0 for g in match.groups())
    return int((((days * 24 + hours) * 60 + minutes) * 60 + seconds) * 1000)


def parse_datetime_ms(text: str) -> int:
    """kafka-consumer-groups' --to-datetime: 'YYYY-MM-DDTHH:mm:SS.sss', local time unless it
    ends with a zone (Z or +hh:mm)."""
    try:
        moment = datetime.fromisoformat(text.strip().replace("Z", "+00:00"))
    except ValueError as exc:
        raise ValueError(f"--to-datetime {text!r} is not YYYY-MM-DDTHH:mm:SS.sss") from exc
    if moment.tzinfo is None:
        moment = moment.astimezone()
    return int(moment.timestamp() * 1000)


def _plan(
    admin: KafkaAdminClient, args: argparse.Namespace, partitions: list[TopicPartition]
) -> dict[TopicPartition, int]:
    earliest = {
        tp: i.offset
        for tp, i in admin.list_partition_offsets({tp: OffsetSpec.EARLIEST for tp in partitions}).items()
    }
    latest = _end_offsets(admin, partitions)
    committed = admin.list_group_offsets({args.group: partitions}).get(args.group, {})
    at_time: dict[TopicPartition, int] = {}
    if args.to_datetime or args.by_duration:
        when = parse_datetime_ms(args.to_datetime) if args.to_datetime else (
            int(time.time() * 1000) - parse_duration_ms(args.by_duration))  # fmt: skip
        found = admin.list_partition_offsets({tp: when for tp in partitions})
        at_time = {tp: (i.offset if i.offset >= 0 else latest[tp]) for tp, i in found.items()}
    plan: dict[TopicPartition, int] = {}
    for tp in partitions:
        current = committed[tp].offset if tp in committed and committed[tp].offset >= 0 else earliest[tp]
        if args.to_earliest:
            target = earliest[tp]
        elif args.to_latest:
            target = latest[tp]
        elif args.to_offset is not None:
            target = args.to_offset
        elif args.to_current:
            target = current
        elif at_time:
            target = at_time[tp]
        else:
            target = current + args.shift_by
        plan[tp] = min(max(target, earliest[tp]), latest[tp])
    return plan


def _read_plan(path: str) -> dict[TopicPartition, int]:
    """A plan `--export` wrote: `topic,partition,offset` lines."""
    plan = {}
    for number, line in enumerate(Path(path).read_text().splitlines(), start=1):
        if not line.strip():
            continue
        try:
            topic, partition, offset = (field.strip() for field in line.rsplit(",", 2))
            plan[TopicPartition(topic, int(partition))] = int(offset)
        except ValueError as exc:
            raise ValueError(f"{path}:{number}: expected topic,partition,offset, got {line!r}") from exc
    return plan


def reset_offsets(admin: KafkaAdminClient, args: argparse.Namespace) -> None:
    if args.from_file:
        plan = _read_plan(args.from_file)
    else:
        if not (args.topic or args.all_topics):
            raise ValueError(
                "name the partitions: --topic T[:P,...] (repeatable), --all-topics or --from-file"
            )
        if not any((args.to_earliest, args.to_latest, args.to_offset is not None, args.shift_by is not None,
                    args.to_current, args.to_datetime, args.by_duration)):  # fmt: skip
            raise ValueError("name the target: --to-earliest, --to-latest, --to-offset, --shift-by, "
                             "--to-current, --to-datetime or --by-duration")  # fmt: skip
        plan = _plan(admin, args, _selected(admin, args))
    if args.export:
        for tp, offset in sorted(plan.items()):
            print(f"{tp.topic},{tp.partition},{offset}")
    elif args.output == "json":
        print(
            json.dumps(
                [
                    {"topic": tp.topic, "partition": tp.partition, "offset": o}
                    for tp, o in sorted(plan.items())
                ]
            )
        )
    else:
        _table(
            [["TOPIC", "PARTITION", "NEW-OFFSET"]]
            + [[tp.topic, str(tp.partition), str(o)] for tp, o in sorted(plan.items())]
        )
    if not args.execute:
        if not args.export and args.output != "json":
            print("\n(dry run: nothing changed; add --execute to apply)")
        return
    results = admin.alter_group_offsets(
        args.group, {tp: OffsetAndMetadata(o, "", -1) for tp, o in plan.items()}
    )
    failed = {tp: err for tp, err in results.items() if getattr(err, "errno", 0)}
    if failed:
        names = sorted({getattr(err, "__name__", str(err)) for err in failed.values()})
        raise ValueError(f"offsets not reset for {len(failed)} partition(s): {', '.join(names)} "
                         "(the group must have no active members)")  # fmt: skip
    if not args.export and args.output != "json":
        print(f"\nReset {len(plan)} partition(s) of group {args.group}.")


def run(args: argparse.Namespace) -> int:
    return run_admin_command(args.bootstrap_server, lambda admin: _dispatch(admin, args))


def _dispatch(admin: KafkaAdminClient, args: argparse.Namespace) -> None:
    if args.action == "list":
        groups = sorted(admin.list_groups(), key=lambda g: g["group_id"])
        listed = [
            {"group": g["group_id"], "type": g.get("group_type", "classic"),
             "protocol": g["protocol_type"] or "-", "state": g.get("group_state", "-")}
            for g in groups
        ]  # fmt: skip
        if args.output == "json":
            print(json.dumps(listed))
        else:
            _table([["GROUP", "TYPE", "PROTOCOL", "STATE"]] + [list(g.values()) for g in listed])
    elif args.action == "describe":
        describe(admin, args.group, args.bootstrap_server)
    elif args.action == "delete":
        outcome = admin.delete_groups([args.group])[args.group]
        if outcome != "OK":
            reason = {"NonEmptyGroupError": "the group has active members",
                      "GroupIdNotFoundError": "no such group"}.get(outcome, outcome)  # fmt: skip
            raise ValueError(f"cannot delete group {args.group!r}: {reason}")
        print(f"Deleted group {args.group}.")
    elif args.action == "reset-offsets":
        reset_offsets(admin, args)


def add_parser(sub: argparse._SubParsersAction, default_bootstrap: str) -> None:  # type: ignore[type-arg]
    groups = sub.add_parser("groups", help="list, describe, delete consumer groups and reset their offsets")
    groups.add_argument("--bootstrap-server", default=default_bootstrap)
    groups.add_argument("--output", choices=("table", "json"), default="table", help="(default: table)")
    gsub = groups.add_subparsers(dest="action", required=True)
    gsub.add_parser("list", help="list groups with their type, protocol and state")
    for name, text in (
        ("describe", "members, assignments, offsets and lag"),
        ("delete", "delete an empty group"),
    ):
        gsub.add_parser(name, help=text).add_argument("group")
    reset = gsub.add_parser(
        "reset-offsets", help="move an empty group's committed offsets (a dry run unless --execute)",
        epilog="examples: reset-offsets g --topic orders:0,1 --to-datetime 2026-11-27T09:00:00.000 "
        "--execute; "
        "reset-offsets g --all-topics --by-duration PT1H --export > plan.csv; "
        "reset-offsets g --from-file plan.csv --execute",
    )  # fmt: skip
    reset.add_argument("group")
    reset.add_argument("--topic", action="append", metavar="TOPIC[:P,...]",
                       help="a topic, or some of its partitions; repeatable")  # fmt: skip
    reset.add_argument("--all-topics", action="store_true", help="every topic the group has offsets for")
    reset.add_argument(
        "--from-file", metavar="CSV", help="a plan --export wrote: topic,partition,offset lines"
    )
    target = reset.add_mutually_exclusive_group()
    target.add_argument("--to-earliest", action="store_true")
    target.add_argument("--to-latest", action="store_true")
    target.add_argument("--to-current", action="store_true", help="the committed offset (or the earliest)")
    target.add_argument("--to-offset", type=int)
    target.add_argument("--shift-by", type=int)
    target.add_argument("--to-datetime", metavar="YYYY-MM-DDTHH:mm:SS.sss",
                        help="the first offset at or after this time (local time unless zoned)")  # fmt: skip
    target.add_argument(
        "--by-duration", metavar="PnDTnHnMnS", help="the first offset at or after now less this"
    )
    reset.add_argument(
        "--export", action="store_true", help="print the plan as CSV, to apply with --from-file"
    )
    reset.add_argument("--execute", action="store_true", help="apply the plan (default: dry run)")
    groups.set_defaults(func=lambda args: run(args))

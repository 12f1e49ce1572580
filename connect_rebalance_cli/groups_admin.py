"""The operations behind `connect-rebalance groups` (groups_cli.py): list, describe, delete and
reset-offsets through kafka-python's admin client and the project's client.

They live apart from the command's options so that building the command line (which every
`connect-rebalance` command does, a coordinator's or a worker's start too) does not load
the Kafka clients.
"""

from __future__ import annotations

import argparse
import re
import time
from datetime import datetime
from pathlib import Path
from typing import Any

from kafka import KafkaAdminClient, TopicPartition
from kafka.admin import OffsetSpec
from kafka.structs import OffsetAndMetadata

from . import group_views
from .admin_command import run_admin_command
from .group_views import end_offsets
from .tables import emit

DURATION = re.compile(
    r"P(?:(\d+(?:\.\d+)?)D)?(?:T(?:(\d+(?:\.\d+)?)H)?(?:(\d+(?:\.\d+)?)M)?(?:(\d+(?:\.\d+)?)S)?)?"
)
RESETTABLE = ("Empty", "Dead")  # a group with no active members, or none at all yet
LISTED = [("GROUP", "group"), ("TYPE", "type"), ("PROTOCOL", "protocol"), ("STATE", "state")]
PLANNED = [("GROUP", "group"), ("TOPIC", "topic"), ("PARTITION", "partition"), ("NEW-OFFSET", "offset")]


def is_consumer_group(listed: dict[str, Any]) -> bool:
    """What kafka-consumer-groups' `--all-groups` takes: classic or consumer groups of the
    consumer protocol (or of none, as an offsets-only group is)."""
    kind = listed.get("group_type", "classic")
    return kind in ("classic", "consumer") and listed["protocol_type"] in ("consumer", "")


def selected_groups(admin: KafkaAdminClient, args: argparse.Namespace) -> dict[str, dict[str, Any] | None]:
    """The groups an action is for, each with its ListGroups entry (None: no such group)."""
    listed = {g["group_id"]: g for g in admin.list_groups()}
    if args.all_groups:
        return {group: entry for group, entry in sorted(listed.items()) if is_consumer_group(entry)}
    return {group: listed.get(group) for group in dict.fromkeys(args.groups)}


def describe(admin: KafkaAdminClient, args: argparse.Namespace) -> None:
    """The view asked for, of every group asked for; a group named that does not exist is an
    error before anything is printed, so a script never reads half an answer as a whole one."""
    chosen = selected_groups(admin, args)
    missing = [group for group, entry in chosen.items() if entry is None]
    if missing:
        raise ValueError(f"group {missing[0]!r} does not exist")
    # A broker before KIP-848 lists no group type: every group there is classic.
    kinds = {group: entry.get("group_type", "classic") for group, entry in chosen.items() if entry}
    groups = group_views.groups_of(admin, args.bootstrap_server, kinds)
    group_views.print_sections(group_views.sections(admin, groups, args.view, args.verbose), args.output)


def delete(admin: KafkaAdminClient, args: argparse.Namespace) -> None:
    """Delete every group asked for that can be: as Kafka's tool, one with active members (or
    none at all) does not stop the others, and is named in the error that ends the command."""
    chosen = list(selected_groups(admin, args))
    if not chosen:
        print("No consumer group to delete.")
        return
    outcomes = admin.delete_groups(chosen)
    reasons = {"NonEmptyGroupError": "the group has active members", "GroupIdNotFoundError": "no such group"}
    failed = []
    for group in chosen:
        if outcomes[group] == "OK":
            print(f"Deleted group {group}.")
        else:
            failed.append(f"cannot delete group {group!r}: {reasons.get(outcomes[group], outcomes[group])}")
    if failed:
        raise ValueError("; ".join(failed))


def _selected(admin: KafkaAdminClient, args: argparse.Namespace, group: str) -> list[TopicPartition]:
    """The partitions a reset is for: `--topic t` (every partition) or `--topic t:0,2`,
    repeatable, or `--all-topics` (those the group has committed offsets for)."""
    if args.all_topics:
        return sorted(admin.list_group_offsets({group: None}).get(group, {}))
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


def _topic_partitions(admin: KafkaAdminClient, topic: str) -> list[TopicPartition]:
    [described] = admin.describe_topics([topic])
    if described["error_code"]:
        raise ValueError(f"topic {topic!r} does not exist")
    return [TopicPartition(topic, p["partition_index"]) for p in described["partitions"]]


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
    admin: KafkaAdminClient, args: argparse.Namespace, group: str, partitions: list[TopicPartition]
) -> dict[TopicPartition, int]:
    """Where the target option puts each partition's offset, within the log's bounds."""
    earliest = {
        tp: i.offset
        for tp, i in admin.list_partition_offsets({tp: OffsetSpec.EARLIEST for tp in partitions}).items()
    }
    latest = end_offsets(admin, partitions)
    committed = admin.list_group_offsets({group: partitions}).get(group, {})
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


def read_plans(path: str, groups: list[str]) -> dict[str, dict[TopicPartition, int]]:
    """A plan `--export` wrote: `topic,partition,offset` lines for one group, or
    `group,topic,partition,offset` lines for several (a topic name has no comma)."""
    plans: dict[str, dict[TopicPartition, int]] = {}
    for number, line in enumerate(Path(path).read_text().splitlines(), start=1):
        if not line.strip():
            continue
        try:
            head, partition, offset = (field.strip() for field in line.rsplit(",", 2))
            group, _, topic = head.rpartition(",")
            tp, target = TopicPartition(topic, int(partition)), int(offset)
        except ValueError as exc:
            raise ValueError(
                f"{path}:{number}: expected [group,]topic,partition,offset, got {line!r}"
            ) from exc
        if not group and len(groups) != 1:
            raise ValueError(
                f"{path}:{number}: a line without its group is for one group only, not {len(groups)}"
            )
        plans.setdefault(group or groups[0], {})[tp] = target
    absent = [group for group in groups if group not in plans]
    if absent:
        raise ValueError(f"{path} has no plan for group {absent[0]!r}")
    return plans


def _check_reset_args(args: argparse.Namespace) -> None:
    if args.from_file:
        return
    if not (args.topic or args.all_topics):
        raise ValueError("name the partitions: --topic T[:P,...] (repeatable), --all-topics or --from-file")
    if not any((args.to_earliest, args.to_latest, args.to_offset is not None, args.shift_by is not None,
                args.to_current, args.to_datetime, args.by_duration)):  # fmt: skip
        raise ValueError("name the target: --to-earliest, --to-latest, --to-offset, --shift-by, "
                         "--to-current, --to-datetime or --by-duration")  # fmt: skip


def _plans(
    admin: KafkaAdminClient, args: argparse.Namespace
) -> tuple[dict[str, dict[TopicPartition, int]], list[str]]:
    """Each resettable group's plan, and why each other group is not reset: as Kafka's tool,
    a group with active members gets no plan, not even a dry run's."""
    chosen = selected_groups(admin, args)
    from_file = read_plans(args.from_file, list(chosen)) if args.from_file else {}
    plans, refused = {}, []
    for group, entry in chosen.items():
        state = entry["group_state"] if entry else "Dead"
        if state not in RESETTABLE:
            refused.append(f"cannot reset the offsets of group {group!r}: it is {state}, and only a group "
                           "with no active members can be reset")  # fmt: skip
        else:
            plans[group] = (
                from_file[group]
                if args.from_file
                else _plan(admin, args, group, _selected(admin, args, group))
            )
    return plans, refused


def _show_plans(plans: dict[str, dict[TopicPartition, int]], args: argparse.Namespace) -> None:
    rows = [{"group": group, "topic": tp.topic, "partition": tp.partition, "offset": offset}
            for group, plan in plans.items() for tp, offset in sorted(plan.items())]  # fmt: skip
    if args.export:
        # Kafka's CSV: the group is named when the command is not about one group only.
        with_group = args.all_groups or len(args.groups) > 1
        keys = ("group", "topic", "partition", "offset") if with_group else ("topic", "partition", "offset")
        for row in rows:
            print(",".join(str(row[key]) for key in keys))
    else:
        emit(PLANNED, rows, args.output)


def _apply(admin: KafkaAdminClient, group: str, plan: dict[TopicPartition, int]) -> str | None:
    """Commit the plan's offsets for the group; what went wrong, if anything."""
    results = admin.alter_group_offsets(group, {tp: OffsetAndMetadata(o, "", -1) for tp, o in plan.items()})
    failed = {tp: err for tp, err in results.items() if getattr(err, "errno", 0)}
    if not failed:
        return None
    names = sorted({getattr(err, "__name__", str(err)) for err in failed.values()})
    return (f"offsets of group {group!r} not reset for {len(failed)} partition(s): {', '.join(names)} "
            "(the group must have no active members)")  # fmt: skip


def reset_offsets(admin: KafkaAdminClient, args: argparse.Namespace) -> None:
    _check_reset_args(args)
    plans, refused = _plans(admin, args)
    _show_plans(plans, args)
    chatty = not args.export and args.output != "json"
    if plans and not args.execute and chatty:
        print("\n(dry run: nothing changed; add --execute to apply)")
    if plans and args.execute:
        refused += [problem for group, plan in plans.items() if (problem := _apply(admin, group, plan))]
        if chatty:
            count = sum(len(plan) for plan in plans.values())
            print(f"\nReset {count} partition(s) of group{'s' if len(plans) > 1 else ''} {', '.join(plans)}.")
    if refused:
        raise ValueError("; ".join(refused))


def run(args: argparse.Namespace) -> int:
    return run_admin_command(args.bootstrap_server, lambda admin: _dispatch(admin, args))


def _dispatch(admin: KafkaAdminClient, args: argparse.Namespace) -> None:
    if args.action == "list":
        listed = [
            {"group": g["group_id"], "type": g.get("group_type", "classic"),
             "protocol": g["protocol_type"] or "-", "state": g.get("group_state", "-")}
            for g in sorted(admin.list_groups(), key=lambda g: g["group_id"])
        ]  # fmt: skip
        emit(LISTED, listed, args.output)
    elif args.action == "describe":
        describe(admin, args)
    elif args.action == "delete":
        delete(admin, args)
    elif args.action == "reset-offsets":
        reset_offsets(admin, args)

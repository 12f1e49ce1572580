"""`connect-rebalance groups ...`: consumer groups in the spirit of `kafka-consumer-groups`.

    groups list
    groups describe (GROUP ... | --all-groups) [--offsets | --members | --state] [--verbose]
    groups delete (GROUP ... | --all-groups)
    groups timeline GROUP [--admin-url URL] [--command-config FILE]
    groups reset-offsets (GROUP ... | --all-groups) (--topic T[:P,...] ... | --all-topics | --from-file CSV)
        (--to-earliest | --to-latest | --to-current | --to-offset N | --shift-by N |
         --to-datetime YYYY-MM-DDTHH:mm:SS.sss | --by-duration PnDTnHnMnS) [--export] [--execute]

`--all-groups` means the consumer groups, classic or KIP-848, as kafka-consumer-groups lists
them: a connect group is described, deleted or reset only by its name. `describe`'s views are
Kafka 4's (group_views.py). Like Kafka's tool, reset-offsets prints the plan and changes nothing
without --execute (`--export` prints it as CSV for `--from-file`), and only a group with no
active members is reset. `--output json` prints any answer as a JSON array, one object per row.
Everything goes through kafka-python's admin client over the wire, and for the describes
kafka-python lacks (ConsumerGroupDescribe, ConnectGroupDescribe) through the project's client;
`timeline` reads the coordinator's admin port instead (timeline_view.py), where the core keeps
each group's last rebalances.
"""

from __future__ import annotations

import argparse
import re
import sys
import time
from datetime import datetime
from pathlib import Path
from typing import Any

from kafka import KafkaAdminClient, TopicPartition
from kafka.admin import OffsetSpec
from kafka.structs import OffsetAndMetadata

from . import group_views, timeline_view
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


def selection_error(args: argparse.Namespace) -> str | None:
    """Groups named or `--all-groups`: exactly one of the two, as Kafka's tool asks."""
    if args.all_groups and args.groups:
        return "name groups or give --all-groups, not both"
    if not (args.all_groups or args.groups):
        return f"groups {args.action}: name a group, or give --all-groups"
    return None


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
    if args.action == "timeline":
        return timeline_view.run(args)
    if args.action != "list" and (problem := selection_error(args)):
        print(f"error: {problem}", file=sys.stderr)
        return 2
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


GROUPS_EXAMPLES = """\
examples:
  groups list --output json
  groups describe orders-app                       offsets and lag of each partition
  groups describe --all-groups --members --verbose every consumer group's members and assignments
  groups describe orders-app --state --verbose     coordinator, assignor, state, epochs
  groups delete --all-groups                       the consumer groups with no active members
  groups reset-offsets orders-app --topic orders --to-earliest --execute
  groups reset-offsets --all-groups --all-topics --to-latest --export > plan.csv
  groups reset-offsets --all-groups --from-file plan.csv --execute
  groups timeline connect-cluster --admin-url http://127.0.0.1:9644   its last rebalances
"""

RESET_EXAMPLES = """\
examples:
  reset-offsets g --topic orders:0,1 --to-datetime 2026-11-27T09:00:00.000 --execute
  reset-offsets g --all-topics --by-duration PT1H --export > plan.csv
  reset-offsets g --from-file plan.csv --execute
"""


def _add_selection(parser: argparse.ArgumentParser, what: str) -> None:
    parser.add_argument("groups", nargs="*", metavar="GROUP", help=f"the group(s) to {what}")
    parser.add_argument(
        "--all-groups",
        action="store_true",
        help=f"{what} every consumer group (classic or consumer protocol)",
    )


def _add_describe(gsub: argparse._SubParsersAction) -> None:  # type: ignore[type-arg]
    describe_parser = gsub.add_parser("describe", help="offsets and lag, members, or state of groups")
    _add_selection(describe_parser, "describe")
    view = describe_parser.add_mutually_exclusive_group()
    view.add_argument(
        "--offsets",
        dest="view",
        action="store_const",
        const="offsets",
        help="each partition's committed and log-end offsets, lag and holder (the default)",
    )
    view.add_argument(
        "--members",
        dest="view",
        action="store_const",
        const="members",
        help="each member's host, client id and partition count",
    )
    view.add_argument(
        "--state",
        dest="view",
        action="store_const",
        const="state",
        help="coordinator, assignment strategy, state and member count",
    )
    describe_parser.set_defaults(view="offsets")
    describe_parser.add_argument(
        "--verbose", action="store_true", help="more columns: leader epochs, assignments and epochs"
    )


def _add_reset(gsub: argparse._SubParsersAction) -> None:  # type: ignore[type-arg]
    reset = gsub.add_parser(
        "reset-offsets",
        help="move empty groups' committed offsets (a dry run unless --execute)",
        epilog=RESET_EXAMPLES,
    )
    _add_selection(reset, "reset")
    reset.add_argument(
        "--topic",
        action="append",
        metavar="TOPIC[:P,...]",
        help="a topic, or some of its partitions; repeatable",
    )
    reset.add_argument("--all-topics", action="store_true", help="every topic the group has offsets for")
    reset.add_argument(
        "--from-file", metavar="CSV", help="a plan --export wrote: [group,]topic,partition,offset lines"
    )
    target = reset.add_mutually_exclusive_group()
    target.add_argument("--to-earliest", action="store_true", help="the log's first offset")
    target.add_argument("--to-latest", action="store_true", help="the log's end")
    target.add_argument("--to-current", action="store_true", help="the committed offset (or the earliest)")
    target.add_argument("--to-offset", type=int, metavar="N", help="offset N (kept within the log)")
    target.add_argument(
        "--shift-by", type=int, metavar="N", help="the committed offset plus N (N may be negative)"
    )
    target.add_argument(
        "--to-datetime",
        metavar="YYYY-MM-DDTHH:mm:SS.sss",
        help="the first offset at or after this time (local time unless zoned)",
    )
    target.add_argument(
        "--by-duration", metavar="PnDTnHnMnS", help="the first offset at or after now less this"
    )
    reset.add_argument(
        "--export", action="store_true", help="print the plan as CSV, to apply with --from-file"
    )
    reset.add_argument("--execute", action="store_true", help="apply the plan (without it: a dry run)")


def add_parser(sub: argparse._SubParsersAction, default_bootstrap: str) -> None:  # type: ignore[type-arg]
    groups = sub.add_parser(
        "groups",
        help="list, describe, delete consumer groups and reset their offsets",
        epilog=GROUPS_EXAMPLES,
    )
    groups.add_argument(
        "--bootstrap-server", default=default_bootstrap, metavar="HOST:PORT", help="a broker to ask"
    )
    groups.add_argument(
        "--output",
        choices=("table", "json"),
        default="table",
        help="a table for people, or a JSON array of one object per row for scripts",
    )
    gsub = groups.add_subparsers(dest="action", required=True)
    gsub.add_parser("list", help="list groups with their type, protocol and state")
    _add_describe(gsub)
    _add_selection(gsub.add_parser("delete", help="delete groups with no active members"), "delete")
    _add_reset(gsub)
    timeline_view.add_parser(gsub)
    groups.set_defaults(func=lambda args: run(args))

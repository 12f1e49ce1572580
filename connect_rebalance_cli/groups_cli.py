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
import sys

from . import timeline_view


def selection_error(args: argparse.Namespace) -> str | None:
    """Groups named or `--all-groups`: exactly one of the two, as Kafka's tool asks."""
    if args.all_groups and args.groups:
        return "name groups or give --all-groups, not both"
    if not (args.all_groups or args.groups):
        return f"groups {args.action}: name a group, or give --all-groups"
    return None


def run(args: argparse.Namespace) -> int:
    if args.action == "timeline":
        return timeline_view.run(args)
    if args.action != "list" and (problem := selection_error(args)):
        print(f"error: {problem}", file=sys.stderr)
        return 2
    from . import groups_admin  # the Kafka clients, loaded only when a command runs

    return groups_admin.run(args)


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

"""`connect-rebalance topics ...`: topic administration through kafka-python's admin client.

`list` and `describe` print what kafka-topics prints, or with `--output json` a JSON array:
one object per topic (`describe`'s with its partitions, one object each, and its configs).
"""

from __future__ import annotations

import argparse


def run(args: argparse.Namespace) -> int:
    from . import topics_admin  # the Kafka clients, loaded only when a command runs

    return topics_admin.run(args)


TOPICS_EXAMPLES = """\
examples:
  topics create orders --partitions 6 --config retention.ms=86400000 --if-not-exists
  topics list --exclude-internal --output json
  topics describe orders --output json
  topics alter orders --partitions 12 --config retention.ms=3600000 --delete-config segment.ms
  topics delete orders
"""


def add_parser(sub: argparse._SubParsersAction, default_bootstrap: str) -> None:  # type: ignore[type-arg]
    topics = sub.add_parser(
        "topics", help="list, create, alter, describe and delete topics", epilog=TOPICS_EXAMPLES
    )
    topics.add_argument(
        "--bootstrap-server", default=default_bootstrap, metavar="HOST:PORT", help="a broker to ask"
    )
    topics.add_argument(
        "--output", choices=("table", "json"), default="table",
        help="kafka-topics' text for people, or a JSON array of one object per topic for scripts",
    )  # fmt: skip
    tsub = topics.add_subparsers(dest="action", required=True)
    listing = tsub.add_parser("list", help="list topics")
    listing.add_argument(
        "--exclude-internal", action="store_true", help="leave out the coordinator's own topics"
    )
    create = tsub.add_parser("create", help="create a topic")
    create.add_argument("name")
    create.add_argument("--partitions", type=int, default=1, help="how many partitions")
    create.add_argument("--replication-factor", type=int, default=1, help="copies of each partition")
    create.add_argument("--config", action="append", metavar="NAME=VALUE", default=[], help="a topic config")
    create.add_argument(
        "--if-not-exists", action="store_true", help="a topic that exists already is no error"
    )
    alter = tsub.add_parser(
        "alter", help="add partitions, or change configs (IncrementalAlterConfigs)",
        epilog="example:\n"
        "  topics alter orders --partitions 6 --config retention.ms=86400000 --delete-config segment.ms",
    )  # fmt: skip
    alter.add_argument("name")
    alter.add_argument("--partitions", type=int, help="the new, larger, partition count")
    alter.add_argument("--config", action="append", metavar="NAME=VALUE", default=[], help="set a config")
    alter.add_argument(
        "--delete-config", action="append", metavar="NAME", default=[], help="back to its default"
    )
    describe = tsub.add_parser("describe", help="partitions, offsets and configs of a topic")
    describe.add_argument("name")
    delete = tsub.add_parser("delete", help="delete a topic")
    delete.add_argument("name")
    topics.set_defaults(func=run)

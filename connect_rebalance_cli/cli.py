"""The `connect-rebalance` command line.

    connect-rebalance coordinator [-c server.properties] [--listen H:P] [--data-dir D] [-o name=value ...]
    connect-rebalance topics {list,create,alter,describe,delete} [--bootstrap-server H:P] ...
    connect-rebalance groups {list,describe,delete,reset-offsets} [--bootstrap-server H:P] ...
    connect-rebalance users {add,remove,list} [--bootstrap-server H:P | --data-dir D] ...
    connect-rebalance acls {add,remove,list} [--bootstrap-server H:P] ...
    connect-rebalance worker --config worker.properties [-o name=value ...]
    connect-rebalance quickstart

The admin commands are ordinary Kafka clients (kafka-python) talking to the coordinator
over the wire, so they work against any Kafka-compatible cluster too. Their options may
come before or after the action, as kafka-topics and kafka-consumer-groups take them.
"""

from __future__ import annotations

import argparse
import logging
import sys
from pathlib import Path

DEFAULT_BOOTSTRAP = "127.0.0.1:9092"


def _settings_from_args(args: argparse.Namespace) -> dict[str, str]:
    from connect_rebalance.properties import ConfigError, read_properties

    settings: dict[str, str] = {}
    if args.config:
        settings.update(read_properties(Path(args.config)))
    if args.listen:
        settings["listeners"] = args.listen
    if args.data_dir is not None:
        settings["log.dirs"] = args.data_dir
    for override in args.override or []:
        name, sep, value = override.partition("=")
        if not sep:
            raise ConfigError(f"--override expects name=value, got {override!r}")
        settings[name.strip()] = value.strip()
    return settings


def cmd_coordinator(args: argparse.Namespace) -> int:
    from coordinator.config import ConfigError, CoordinatorConfig
    from coordinator.main import run

    try:
        config = CoordinatorConfig.from_settings(_settings_from_args(args))
    except (ConfigError, OSError) as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 2
    return run(config)


def cmd_topics(args: argparse.Namespace) -> int:
    from . import topics_cli

    return topics_cli.run(args)


def cmd_worker(args: argparse.Namespace) -> int:
    from coordinator.config import ConfigError
    from workers.main import run
    from workers.worker_config import WorkerConfig

    try:
        overrides = dict(o.partition("=")[::2] for o in args.override or [])
        config = WorkerConfig.from_file(Path(args.config), overrides)
    except (ConfigError, OSError) as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 2
    return run(config)


def cmd_quickstart(args: argparse.Namespace) -> int:
    if args.coordinator_only:
        from . import quickstart

        return quickstart.run(args)
    from . import cluster_demo

    return cluster_demo.run(args)


def _options_after_the_action(command: argparse.ArgumentParser) -> None:
    """A command's own options (`--bootstrap-server`, `--command-config`) are taken after its
    action too, as kafka-topics takes them anywhere: each action's parser learns them, with
    no default of its own, so one given before the action is kept."""
    actions = [a for a in command._actions if isinstance(a, argparse._SubParsersAction)]
    shared = [a for a in command._actions if a.option_strings and a.dest not in ("help",)]
    for action_parsers in actions:
        for action_parser in action_parsers.choices.values():
            known = {flag for a in action_parser._actions for flag in a.option_strings}
            for option in shared:
                if not known & set(option.option_strings):
                    action_parser.add_argument(
                        *option.option_strings, dest=option.dest, default=argparse.SUPPRESS, help=option.help
                    )


def build_parser() -> argparse.ArgumentParser:
    from connect_rebalance import __version__

    parser = argparse.ArgumentParser(prog="connect-rebalance", description=__doc__.split("\n")[0])
    parser.add_argument("--version", action="version", version=f"connect-rebalance {__version__}")
    parser.add_argument("--log-level", default="INFO", help="logging level (default INFO)")
    sub = parser.add_subparsers(dest="command", required=True)

    coord = sub.add_parser("coordinator", help="run a coordinator (Kafka-wire broker and group coordinator)")
    coord.add_argument("-c", "--config", help="a properties file with Kafka-style setting names")
    coord.add_argument(
        "--listen", help="host:port to listen on (setting 'listeners'; port 0 picks a free one)"
    )
    coord.add_argument("--data-dir", help="data directory (setting 'log.dirs')")
    coord.add_argument(
        "-o", "--override", action="append", metavar="NAME=VALUE", help="any setting, repeatable"
    )
    coord.set_defaults(func=cmd_coordinator)

    topics = sub.add_parser("topics", help="list, create, describe and delete topics")
    topics.add_argument("--bootstrap-server", default=DEFAULT_BOOTSTRAP)
    tsub = topics.add_subparsers(dest="action", required=True)
    listing = tsub.add_parser("list", help="list topics")
    listing.add_argument(
        "--exclude-internal", action="store_true", help="leave out the coordinator's own topics"
    )
    create = tsub.add_parser("create", help="create a topic")
    create.add_argument("name")
    create.add_argument("--partitions", type=int, default=1)
    create.add_argument("--replication-factor", type=int, default=1)
    create.add_argument("--config", action="append", metavar="NAME=VALUE", default=[])
    create.add_argument(
        "--if-not-exists", action="store_true", help="a topic that exists already is no error"
    )
    alter = tsub.add_parser(
        "alter", help="add partitions, or change configs (IncrementalAlterConfigs)",
        epilog="example: topics alter orders --partitions 6 --config retention.ms=86400000 "
        "--delete-config segment.ms",
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
    topics.set_defaults(func=cmd_topics)

    from . import acls_cli, groups_cli, quotas_cli, users_cli

    groups_cli.add_parser(sub, DEFAULT_BOOTSTRAP)
    users_cli.add_parser(sub, DEFAULT_BOOTSTRAP)
    quotas_cli.add_parser(sub, DEFAULT_BOOTSTRAP)
    acls_cli.add_parser(sub, DEFAULT_BOOTSTRAP)
    for command in sub.choices.values():
        _options_after_the_action(command)

    worker = sub.add_parser("worker", help="run a Kafka Connect-style worker")
    worker.add_argument(
        "-c", "--config", required=True, help="a properties file with Kafka Connect's setting names"
    )
    worker.add_argument(
        "-o", "--override", action="append", metavar="NAME=VALUE", help="any setting, repeatable"
    )
    worker.set_defaults(func=cmd_worker)

    quick = sub.add_parser(
        "quickstart", help="a coordinator and three workers ingesting files with PySpark, shown working"
    )
    quick.add_argument("--dir", help="where everything goes (default: a fresh temporary directory)")
    quick.add_argument(
        "--coordinator-only", action="store_true",
        help="only a coordinator: produce, consume as a group, kill -9, restart, read back",
    )  # fmt: skip
    quick.add_argument("--data-dir", help="--coordinator-only: data directory (default: a temporary one)")
    quick.add_argument("--records", type=int, default=3000, help="--coordinator-only: records to produce")
    quick.set_defaults(func=cmd_quickstart)
    return parser


def main(argv: list[str] | None = None) -> int:
    args = build_parser().parse_args(argv)
    logging.basicConfig(
        level=args.log_level.upper(), format="%(asctime)s %(levelname)s %(name)s: %(message)s"
    )
    from connect_rebalance.log_noise import NOISY, quiet_repeats

    for noisy in NOISY:
        logging.getLogger(noisy).setLevel(logging.WARNING)
    quiet_repeats()
    return int(args.func(args) or 0)


if __name__ == "__main__":
    sys.exit(main())

"""The `connect-rebalance` command line.

    connect-rebalance coordinator [-c server.properties] [--listen H:P] [--data-dir D] [-o name=value ...]
    connect-rebalance topics {list,create,alter,describe,delete} [--bootstrap-server H:P] ...
    connect-rebalance groups {list,describe,delete,reset-offsets,timeline} [--bootstrap-server H:P] ...
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
import os
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
    from coordinator.configs.coordinator import ConfigError, CoordinatorConfig
    from coordinator.main import run

    try:
        config = CoordinatorConfig.from_settings(_settings_from_args(args))
    except (ConfigError, OSError) as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 2
    return run(config)


def cmd_worker(args: argparse.Namespace) -> int:
    from coordinator.configs.coordinator import ConfigError
    from workers.config.worker import WorkerConfig
    from workers.main import run

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


def _says_its_default(action: argparse.Action) -> bool:
    """Whether the help names the default already, or has none worth naming: a flag's (off),
    none at all, or one its help spells out (`default: literal (add), any (list, remove)`)."""
    return (
        action.nargs == 0
        or action.default in (None, [], argparse.SUPPRESS)
        or "default" in (action.help or "").lower()
    )


class HelpFormatter(argparse.ArgumentDefaultsHelpFormatter, argparse.RawDescriptionHelpFormatter):
    """Help that names each option's default, and keeps the examples of an epilog as written."""

    def _get_help_string(self, action: argparse.Action) -> str | None:
        return action.help if _says_its_default(action) else super()._get_help_string(action)


def _with_help_formatter(parser: argparse.ArgumentParser) -> None:
    """The formatter for a parser and every parser under it (subparsers do not inherit it)."""
    parser.formatter_class = HelpFormatter
    for action in parser._actions:
        if isinstance(action, argparse._SubParsersAction):
            for child in action.choices.values():
                _with_help_formatter(child)


def _help_with_default(option: argparse.Action) -> str | None:
    """An option's help as its copy after the action shows it: that copy has no default of its own."""
    if option.help is None or _says_its_default(option):
        return option.help
    return f"{option.help} (default: {option.default})"


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
                        *option.option_strings, dest=option.dest, default=argparse.SUPPRESS,
                        help=_help_with_default(option), choices=option.choices, metavar=option.metavar,
                    )  # fmt: skip


def build_parser() -> argparse.ArgumentParser:
    from connect_rebalance import __version__

    parser = argparse.ArgumentParser(prog="connect-rebalance", description=__doc__.split("\n")[0])
    parser.add_argument("--version", action="version", version=f"connect-rebalance {__version__}")
    parser.add_argument("--log-level", default="INFO", help="logging level")
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

    from . import acls_cli, configs_cli, groups_cli, quotas_cli, topics_cli, users_cli

    topics_cli.add_parser(sub, DEFAULT_BOOTSTRAP)
    groups_cli.add_parser(sub, DEFAULT_BOOTSTRAP)
    users_cli.add_parser(sub, DEFAULT_BOOTSTRAP)
    quotas_cli.add_parser(sub, DEFAULT_BOOTSTRAP)
    acls_cli.add_parser(sub, DEFAULT_BOOTSTRAP)
    configs_cli.add_parser(sub, DEFAULT_BOOTSTRAP)
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
    _with_help_formatter(parser)
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
    try:
        return int(args.func(args) or 0)
    except BrokenPipeError:
        # The reader went away (`groups describe --all-groups | head`): the rest of the answer has
        # no one to go to, which is no error of ours. Python would print a traceback on exit
        # flushing stdout, so it flushes into /dev/null instead.
        os.dup2(os.open(os.devnull, os.O_WRONLY), sys.stdout.fileno())
        return 141  # as a shell reports a command ended by SIGPIPE


if __name__ == "__main__":
    sys.exit(main())

"""`connect-rebalance users ...`: SASL users (SCRAM credentials) of a coordinator.

    users add NAME [--mechanism SCRAM-SHA-512 ...] [--iterations N] (--bootstrap-server H:P | --data-dir D)
    users remove NAME [--mechanism ...] (--bootstrap-server H:P | --data-dir D)
    users list (--bootstrap-server H:P | --data-dir D)

Over the wire it is AlterUserScramCredentials / DescribeUserScramCredentials through
kafka-python's admin client (`--command-config` carries the client's own security
settings). With `--data-dir`, it writes the records into a stopped coordinator's data
directory, which is how the first user is made before any SASL listener can be reached
(as Kafka's `kafka-storage format --add-scram`). The password is read from the terminal,
or from standard input when it is not one; it never appears on the command line.
"""

from __future__ import annotations

import argparse
import getpass
import sys
from pathlib import Path

from connect_rebalance.scram import DEFAULT_ITERATIONS, MECHANISMS

DEFAULT_MECHANISMS = ("SCRAM-SHA-256", "SCRAM-SHA-512")


def add_parser(sub: argparse._SubParsersAction, default_bootstrap: str) -> None:  # type: ignore[type-arg]
    users = sub.add_parser("users", help="add, remove and list SASL users (SCRAM credentials)")
    where = users.add_mutually_exclusive_group()
    where.add_argument("--bootstrap-server", help=f"a running coordinator (default {default_bootstrap})")
    where.add_argument("--data-dir", help="a stopped coordinator's data directory (makes the first users)")
    users.add_argument("--command-config", help="client security settings (Kafka names) as a properties file")
    actions = users.add_subparsers(dest="action", required=True)
    add = actions.add_parser("add", help="add a user, or change its password")
    add.add_argument("name")
    add.add_argument(
        "--mechanism", action="append", choices=sorted(MECHANISMS), help="repeatable; default both"
    )
    add.add_argument("--iterations", type=int, default=DEFAULT_ITERATIONS)
    remove = actions.add_parser("remove", help="remove a user's credentials")
    remove.add_argument("name")
    remove.add_argument(
        "--mechanism", action="append", choices=sorted(MECHANISMS), help="repeatable; default all"
    )
    actions.add_parser("list", help="users and their SCRAM mechanisms")
    users.set_defaults(func=run, default_bootstrap=default_bootstrap)


def _password(name: str) -> str:
    if sys.stdin.isatty():
        first = getpass.getpass(f"password for {name}: ")
        if getpass.getpass("again: ") != first:
            raise ValueError("the passwords differ")
        return first
    password = sys.stdin.readline().rstrip("\n")
    if not password:
        raise ValueError("no password on standard input")
    return password


def run(args: argparse.Namespace) -> int:
    from coordinator.broker import DataDirectoryLocked

    try:
        if args.data_dir:
            return _run_offline(args)
        return _run_online(args)
    except (ValueError, DataDirectoryLocked) as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 1


def _run_offline(args: argparse.Namespace) -> int:
    from coordinator.security.offline import OfflineSecurity

    with OfflineSecurity(Path(args.data_dir)) as security:
        if args.action == "add":
            password = _password(args.name)
            for mechanism in args.mechanism or DEFAULT_MECHANISMS:
                security.set_password(args.name, mechanism, password, args.iterations)
            print(f"Added user {args.name}.")
        elif args.action == "remove":
            if not security.remove_user(args.name, args.mechanism):
                raise ValueError(f"user {args.name!r} has no such credentials")
            print(f"Removed user {args.name}.")
        else:
            for name, mechanisms in sorted(security.users().items()):
                print(f"{name}\t{','.join(mechanisms)}")
    return 0


def _run_online(args: argparse.Namespace) -> int:
    from kafka.admin import UserScramCredentialDeletion, UserScramCredentialUpsertion

    from .admin_command import run_admin_command

    def action(admin) -> None:  # type: ignore[no-untyped-def]
        if args.action == "list":
            for name, info in sorted(admin.describe_user_scram_credentials().items()):
                mechanisms = ",".join(_mechanism_name(c["mechanism"]) for c in info["credential_infos"])
                print(f"{name}\t{info['error'] or mechanisms}")
            return
        if args.action == "add":
            password = _password(args.name)
            alterations = [
                UserScramCredentialUpsertion(args.name, mechanism, password, iterations=args.iterations)
                for mechanism in args.mechanism or DEFAULT_MECHANISMS
            ]
        else:
            mechanisms = args.mechanism or [
                _mechanism_name(c["mechanism"])
                for c in admin.describe_user_scram_credentials([args.name])[args.name]["credential_infos"]
            ]
            if not mechanisms:
                raise ValueError(f"user {args.name!r} has no credentials")
            alterations = [UserScramCredentialDeletion(args.name, m) for m in mechanisms]
        error = admin.alter_user_scram_credentials(alterations).get(args.name)
        if error:
            raise ValueError(f"user {args.name!r}: {error}")
        print(f"{'Added' if args.action == 'add' else 'Removed'} user {args.name}.")

    return run_admin_command(args.bootstrap_server or args.default_bootstrap, action, args.command_config)


def _mechanism_name(mechanism: int) -> str:
    from connect_rebalance.scram import MECHANISM_BY_TYPE

    return MECHANISM_BY_TYPE.get(int(mechanism), str(mechanism))

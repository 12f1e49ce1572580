"""`connect-rebalance quotas ...`: produce and fetch byte-rate quotas of a coordinator.

    quotas set (--user U | --user-default) (--client-id C | --client-id-default)
               [--producer-byte-rate N] [--consumer-byte-rate N]
    quotas remove <entity> [--producer-byte-rate] [--consumer-byte-rate]   (default both)
    quotas list [<entity>]

An entity is a user, a client id, or both; `--*-default` names the type's default, which
every user or client id without a quota of its own then has, each on its own. The commands
are Kafka's AlterClientQuotas and DescribeClientQuotas, sent through kafka-python's admin
connection, so they work against Kafka as well (as `kafka-configs --entity-type clients`).
"""

from __future__ import annotations

import argparse
import sys
from typing import Any

KEYS = {"producer_byte_rate": "producer-byte-rate", "consumer_byte_rate": "consumer-byte-rate"}


def add_parser(sub: argparse._SubParsersAction, default_bootstrap: str) -> None:  # type: ignore[type-arg]
    quotas = sub.add_parser(
        "quotas", help="set, remove and list client quotas (produce and fetch byte rates)"
    )
    quotas.add_argument("--bootstrap-server", help=f"a running coordinator (default {default_bootstrap})")
    quotas.add_argument(
        "--command-config", help="client security settings (Kafka names) as a properties file"
    )
    actions = quotas.add_subparsers(dest="action", required=True)
    set_ = actions.add_parser("set", help="set an entity's byte-rate quotas (bytes per second)")
    _entity_arguments(set_)
    for option in KEYS.values():
        set_.add_argument(f"--{option}", type=int, metavar="BYTES_PER_SECOND")
    remove = actions.add_parser("remove", help="remove an entity's quotas (both unless one is named)")
    _entity_arguments(remove)
    for option in KEYS.values():
        remove.add_argument(f"--{option}", action="store_true")
    _entity_arguments(actions.add_parser("list", help="quotas, of one entity or of all"))
    quotas.set_defaults(func=run, default_bootstrap=default_bootstrap)


def _entity_arguments(parser: argparse.ArgumentParser) -> None:
    for kind in ("user", "client-id"):
        which = parser.add_mutually_exclusive_group()
        which.add_argument(f"--{kind}", metavar="NAME")
        which.add_argument(f"--{kind}-default", action="store_true", help=f"the default {kind}")


def _entity(args: argparse.Namespace) -> list[tuple[str, str | None]]:
    entity: list[tuple[str, str | None]] = []
    for kind, name, default in (("user", args.user, args.user_default),
                                ("client-id", args.client_id, args.client_id_default)):  # fmt: skip
        if name is not None or default:
            entity.append((kind, name))
    return entity


def _describe(pairs: list[tuple[str, str | None]]) -> str:
    ordered = sorted(pairs, key=lambda pair: pair[0] != "user")  # user first, as Kafka prints them
    return " ".join(f"{kind}={'<default>' if name is None else name}" for kind, name in ordered)


def run(args: argparse.Namespace) -> int:
    from kafka.protocol.admin.client_quotas import AlterClientQuotasRequest, DescribeClientQuotasRequest

    from .admin_command import run_admin_command, send_request

    entity = _entity(args)
    if args.action != "list" and not entity:
        print(
            "error: name an entity: --user/--user-default and/or --client-id/--client-id-default",
            file=sys.stderr,
        )
        return 2
    if args.action == "set":
        ops = [(key, getattr(args, key), False) for key in KEYS if getattr(args, key) is not None]
    elif args.action == "remove":
        named = [key for key in KEYS if getattr(args, key)]
        ops = [(key, 0, True) for key in named or KEYS]
    if args.action != "list" and not ops:
        print("error: name a quota: --producer-byte-rate and/or --consumer-byte-rate", file=sys.stderr)
        return 2

    def action(admin: Any) -> None:
        if args.action == "list":
            component = DescribeClientQuotasRequest.ComponentData
            filters = [component(entity_type=k, match_type=1 if n is None else 0, match=n) for k, n in entity]
            answer = send_request(admin, DescribeClientQuotasRequest(components=filters, strict=False))
            if answer.error_code:
                raise ValueError(answer.error_message or f"error code {answer.error_code}")
            for entry in answer.entries or []:
                pairs = [(e.entity_type, e.entity_name) for e in entry.entity]
                values = ", ".join(f"{v.key}={v.value:.0f}" for v in entry.values)
                print(f"{_describe(pairs)}\t{values}")
            return
        entry = AlterClientQuotasRequest.EntryData
        request = AlterClientQuotasRequest(
            entries=[entry(
                entity=[entry.EntityData(entity_type=k, entity_name=n) for k, n in entity],
                ops=[entry.OpData(key=key, value=float(value), remove=remove) for key, value, remove in ops],
            )],
            validate_only=False,
        )  # fmt: skip
        result = send_request(admin, request).entries[0]
        if result.error_code:
            raise ValueError(f"{_describe(entity)}: {result.error_message or result.error_code}")
        print(f"{'Set' if args.action == 'set' else 'Removed'} quotas of {_describe(entity)}.")

    return run_admin_command(args.bootstrap_server or args.default_bootstrap, action, args.command_config)

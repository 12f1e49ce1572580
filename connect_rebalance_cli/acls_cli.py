"""`connect-rebalance acls ...`: ACLs of a coordinator that runs an authorizer.

    acls add (--allow-principal P | --deny-principal P)... --operation OP... RESOURCE
    acls remove [--allow-principal P | --deny-principal P]... [--operation OP]... RESOURCE
    acls list [RESOURCE] [--principal P]

    RESOURCE: --topic NAME | --group NAME | --transactional-id NAME | --cluster,
              with --resource-pattern-type literal|prefixed (list and remove: also any, match)

The options are those of Kafka's `kafka-acls.sh`, so an operator's habits and scripts carry
over: hosts default to `*`, `--allow-host`/`--deny-host` narrow them; operations are Kafka's
names (Read, Write, Create, Delete, Alter, Describe, ClusterAction, DescribeConfigs,
AlterConfigs, IdempotentWrite, All). It runs CreateAcls / DescribeAcls / DeleteAcls through
kafka-python's admin client; `--command-config` carries the client's own security settings
(a super user's, since only they may change ACLs).
"""

from __future__ import annotations

import argparse
import itertools
from collections.abc import Iterable
from typing import Any

CLUSTER_NAME = "kafka-cluster"  # the one cluster resource's name, as in Kafka


def add_parser(sub: argparse._SubParsersAction, default_bootstrap: str) -> None:  # type: ignore[type-arg]
    acls = sub.add_parser("acls", help="add, remove and list ACLs (as Kafka's kafka-acls.sh)")
    acls.add_argument("--bootstrap-server", help=f"a running coordinator (default {default_bootstrap})")
    acls.add_argument("--command-config", help="client security settings (Kafka names) as a properties file")
    actions = acls.add_subparsers(dest="action", required=True)
    for name, text in (("add", "add ACLs"), ("remove", "remove the ACLs that match"), ("list", "list ACLs")):
        action = actions.add_parser(name, help=text)
        resource = action.add_mutually_exclusive_group(required=name != "list")
        resource.add_argument("--topic", metavar="NAME")
        resource.add_argument("--group", metavar="NAME")
        resource.add_argument("--transactional-id", metavar="NAME")
        resource.add_argument("--cluster", action="store_true", help="the cluster itself")
        patterns = ["literal", "prefixed"] + ([] if name == "add" else ["any", "match"])
        action.add_argument(
            "--resource-pattern-type", choices=patterns, default="literal" if name == "add" else None,
            help="default: literal (add), any (list, remove)",
        )  # fmt: skip
        if name == "list":
            action.add_argument("--principal", help="only this principal's ACLs (e.g. User:alice)")
            continue
        action.add_argument("--allow-principal", action="append", default=[], metavar="TYPE:NAME")
        action.add_argument("--deny-principal", action="append", default=[], metavar="TYPE:NAME")
        action.add_argument("--allow-host", action="append", default=[], metavar="HOST", help="default *")
        action.add_argument("--deny-host", action="append", default=[], metavar="HOST", help="default *")
        action.add_argument("--operation", action="append", default=[], metavar="OP", type=_operation)
    acls.set_defaults(func=run, default_bootstrap=default_bootstrap)


def _operation(text: str) -> Any:
    """Kafka's operation names (Read, DescribeConfigs, ...), in any case."""
    from kafka.admin import ACLOperation

    wanted = text.replace("-", "").replace("_", "").upper()
    for operation in ACLOperation:
        if operation.name.replace("_", "") == wanted and operation.name not in ("UNKNOWN", "ANY"):
            return operation
    raise argparse.ArgumentTypeError(f"unknown operation {text!r}")


def _principal(option: str, text: str) -> str:
    kind, _, name = text.partition(":")
    if not kind or not name:
        raise ValueError(f"{option} {text!r}: a principal is TYPE:NAME, e.g. User:alice")
    return text


def _resource(args: argparse.Namespace) -> tuple[Any, str | None]:
    from kafka.admin import ResourceType

    if args.topic is not None:
        return ResourceType.TOPIC, args.topic
    if args.group is not None:
        return ResourceType.GROUP, args.group
    if args.transactional_id is not None:
        return ResourceType.TRANSACTIONAL_ID, args.transactional_id
    if args.cluster:
        return ResourceType.CLUSTER, CLUSTER_NAME
    return ResourceType.ANY, None


def _entries(args: argparse.Namespace) -> list[tuple[str, str, Any]]:
    """(principal, host, permission) for each principal and host the options name."""
    from kafka.admin import ACLPermissionType

    out = []
    for permission, principals, hosts, option in (
        (ACLPermissionType.ALLOW, args.allow_principal, args.allow_host, "--allow-principal"),
        (ACLPermissionType.DENY, args.deny_principal, args.deny_host, "--deny-principal"),
    ):
        for principal, host in itertools.product(principals, hosts or ["*"]):
            out.append((_principal(option, principal), host, permission))
    return out


def describe(acl: Any) -> str:
    """One binding on one line, as `kafka-acls.sh --list` shows its parts."""
    pattern = acl.resource_pattern
    return "\t".join((
        pattern.resource_type.name, pattern.pattern_type.name, pattern.resource_name,
        acl.principal, acl.host, acl.operation.name, acl.permission_type.name,
    ))  # fmt: skip


def run(args: argparse.Namespace) -> int:
    from .admin_command import run_admin_command

    def action(admin: Any) -> None:
        {"add": _add, "remove": _remove, "list": _list}[args.action](admin, args)

    return run_admin_command(args.bootstrap_server or args.default_bootstrap, action, args.command_config)


def _pattern(args: argparse.Namespace, resource_type: Any) -> Any:
    from kafka.admin import ACLResourcePatternType, ResourcePattern, ResourcePatternFilter

    kind, name = resource_type
    pattern = ACLResourcePatternType[(args.resource_pattern_type or "any").upper()]
    if args.action == "add":
        return ResourcePattern(kind, name, pattern)
    return ResourcePatternFilter(kind, name, pattern)


def _add(admin: Any, args: argparse.Namespace) -> None:
    from kafka.admin import ACL

    entries = _entries(args)
    if not entries:
        raise ValueError("add needs --allow-principal or --deny-principal")
    if not args.operation:
        raise ValueError("add needs --operation")
    pattern = _pattern(args, _resource(args))
    acls = [ACL(p, h, op, perm, pattern) for (p, h, perm), op in itertools.product(entries, args.operation)]
    result = admin.create_acls(acls)
    _refused(result["failed"])
    for acl in result["succeeded"]:
        print(f"Added {describe(acl)}")


def _remove(admin: Any, args: argparse.Namespace) -> None:
    from kafka.admin import ACLFilter, ACLOperation, ACLPermissionType
    from kafka.errors import NoError

    pattern = _pattern(args, _resource(args))
    entries = _entries(args) or [(None, None, ACLPermissionType.ANY)]
    if not (args.allow_host or args.deny_host):
        entries = [(principal, None, permission) for principal, _, permission in entries]
    operations = args.operation or [ACLOperation.ANY]
    filters = [
        ACLFilter(p, h, op, perm, pattern) for (p, h, perm), op in itertools.product(entries, operations)
    ]
    removed = []
    for _, matching, error in admin.delete_acls(filters):
        if error is not NoError:
            _refused([error])
        removed.extend(matching)
    for acl in removed:
        print(f"Removed {describe(acl)}")
    if not removed:
        print("No ACL matched.")


def _list(admin: Any, args: argparse.Namespace) -> None:
    from kafka.admin import ACLFilter, ACLOperation, ACLPermissionType
    from kafka.errors import NoError

    principal = _principal("--principal", args.principal) if args.principal else None
    query = ACLFilter(
        principal, None, ACLOperation.ANY, ACLPermissionType.ANY, _pattern(args, _resource(args))
    )
    acls, error = admin.describe_acls(query)
    if error is not NoError:
        _refused([error])
    for acl in sorted(acls, key=describe):
        print(describe(acl))


def _refused(errors: Iterable[Any]) -> None:
    for error in errors:
        raise ValueError(f"refused: {getattr(error, 'description', '') or error}")

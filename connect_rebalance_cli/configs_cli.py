"""`connect-rebalance configs ...`: a group's or the broker's configs, as Kafka's kafka-configs.

    configs --entity-type groups --entity-name G --describe [--all]
    configs --entity-type groups --entity-name G --alter --add-config k1=v1,k2=v2 --delete-config k3
    configs --entity-type brokers --entity-name 1 | --entity-default --describe | --alter ...

`--describe` prints the configs set on the entity itself (`--all`: every config, defaults
included), one `  name=value sensitive=... synonyms={SOURCE:name=value}` line each, under
`Dynamic configs for group G are:`.
`--alter` sets and deletes configs with one IncrementalAlterConfigs, refusing to delete a
config the entity does not have, and prints `Completed updating config for group G.`.

Groups' configs are KIP-848's dynamic group configuration (docs/protocol.md): a consumer
group's `consumer.*`, a connect group's `connect.*`. Brokers' are the dynamic broker configs
(docs/operations.md), of the broker (`--entity-name`, its node id) or of the cluster-wide
default (`--entity-default`); a list value is written `name=[a,b]`, as kafka-configs reads it.
The requests are Kafka's, sent through kafka-python's admin connection, so the command works
against Kafka as well. A topic's configs are `connect-rebalance topics alter` and
`describe`'s.
"""

from __future__ import annotations

import argparse
import sys
from typing import Any

# Entity type -> (config resource type, the DescribeConfigs source of the entity's own values).
ENTITY_TYPES = {"groups": (32, 8), "brokers": (4, 2)}
DEFAULT_BROKER_SOURCE = 3  # the cluster-wide default's own values (`--entity-default`)
SOURCES = {
    1: "DYNAMIC_TOPIC_CONFIG", 2: "DYNAMIC_BROKER_CONFIG", 3: "DYNAMIC_DEFAULT_BROKER_CONFIG",
    4: "STATIC_BROKER_CONFIG", 5: "DEFAULT_CONFIG", 6: "DYNAMIC_BROKER_LOGGER_CONFIG",
    7: "DYNAMIC_CLIENT_METRICS_CONFIG", 8: "DYNAMIC_GROUP_CONFIG",
}  # fmt: skip
SET, DELETE = 0, 1
EXAMPLES = """\
examples:
  configs --entity-type groups --entity-name my-workers --alter --add-config connect.session.timeout.ms=60000
  configs --entity-type groups --entity-name orders-app --alter --delete-config consumer.heartbeat.interval.ms
  configs --entity-type groups --entity-name my-workers --describe --all
  configs --entity-type brokers --entity-default --alter --add-config log.retention.ms=86400000
  configs --entity-type brokers --entity-name 1 --alter --add-config log.cleanup.policy=[delete,compact]
"""


def add_parser(sub: argparse._SubParsersAction, default_bootstrap: str) -> None:  # type: ignore[type-arg]
    configs = sub.add_parser(
        "configs",
        help="describe and alter a group's or the broker's configs (as kafka-configs)",
        description="Describe and alter a group's or the broker's configs, as Kafka's kafka-configs does.",
        epilog=EXAMPLES,
    )
    configs.add_argument("--bootstrap-server", help=f"a running coordinator (default {default_bootstrap})")
    configs.add_argument(
        "--command-config", help="client security settings (Kafka names) as a properties file"
    )
    configs.add_argument("--entity-type", required=True, choices=sorted(ENTITY_TYPES))
    entity = configs.add_mutually_exclusive_group(required=True)
    entity.add_argument("--entity-name", help="the group (it need not exist) or the broker's node id")
    entity.add_argument(
        "--entity-default", action="store_true", help="brokers: the cluster-wide default of every broker"
    )
    action = configs.add_mutually_exclusive_group(required=True)
    action.add_argument("--describe", action="store_true", help="list the entity's configs")
    action.add_argument("--alter", action="store_true", help="set and/or delete configs")
    configs.add_argument("--all", action="store_true", help="--describe: every config, defaults included")
    configs.add_argument("--add-config", metavar="K1=V1,K2=V2", help="--alter: configs to set")
    configs.add_argument("--delete-config", metavar="K1,K2", help="--alter: configs to delete")
    configs.set_defaults(func=run, default_bootstrap=default_bootstrap)


def parse_added(text: str) -> dict[str, str]:
    """`k1=v1,k2=[a,b]` -> {k1: v1, k2: "a,b"}, as kafka-configs reads `--add-config`: a
    comma inside square brackets belongs to a list value."""
    added = {}
    pairs, depth, start = [], 0, 0
    for i, char in enumerate(text):
        depth += {"[": 1, "]": -1}.get(char, 0)
        if char == "," and depth == 0:
            pairs.append(text[start:i])
            start = i + 1
    pairs.append(text[start:])
    for pair in filter(None, (p.strip() for p in pairs)):
        name, sep, value = pair.partition("=")
        if not sep or not name.strip():
            raise ValueError(f"--add-config expects name=value pairs separated by commas, got {pair!r}")
        value = value.strip()
        if value.startswith("[") and value.endswith("]"):
            value = ",".join(item.strip() for item in value[1:-1].split(","))
        added[name.strip()] = value
    return added


def _entity(args: argparse.Namespace) -> tuple[str, str, int]:
    """The resource name, how the output names the entity, and its own values' source."""
    resource_source = ENTITY_TYPES[args.entity_type][1]
    if args.entity_default:
        if args.entity_type != "brokers":
            raise ValueError("--entity-default applies to --entity-type brokers only")
        return "", "brokers in the cluster", DEFAULT_BROKER_SOURCE
    return args.entity_name, f"{args.entity_type[:-1]} {args.entity_name}", resource_source


def run(args: argparse.Namespace) -> int:
    from .admin_command import run_admin_command

    if args.alter and not args.add_config and not args.delete_config:
        print("error: --alter needs --add-config and/or --delete-config", file=sys.stderr)
        return 2
    try:
        name, shown, own_source = _entity(args)
    except ValueError as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 2

    def action(admin: Any) -> None:
        if args.alter:
            _alter(admin, args.entity_type, name, own_source, args.add_config or "", args.delete_config or "")
            print(f"Completed updating {'default ' if args.entity_default else ''}config for {shown}.")
            return
        heading = "Default" if args.entity_default else "All" if args.all else "Dynamic"
        print(f"{heading} configs for {shown} are:")
        for entry in _described(admin, args.entity_type, name, own_source, args.all):
            synonyms = ", ".join(
                f"{SOURCES.get(s.source, s.source)}:{s.name}={s.value}" for s in entry.synonyms
            )
            print(f"  {entry.name}={entry.value} sensitive={str(bool(entry.is_sensitive)).lower()} "
                  f"synonyms={{{synonyms}}}")  # fmt: skip

    return run_admin_command(args.bootstrap_server or args.default_bootstrap, action, args.command_config)


def _described(admin: Any, entity_type: str, name: str, own_source: int, every: bool) -> list[Any]:
    """The entity's configs, with synonyms: those it sets itself, or (`every`) all of them."""
    from kafka.protocol.admin.configs import DescribeConfigsRequest

    from .admin_command import send_request

    resource_type = ENTITY_TYPES[entity_type][0]
    resource = DescribeConfigsRequest.DescribeConfigsResource
    request = DescribeConfigsRequest(
        resources=[resource(resource_type=resource_type, resource_name=name, configuration_keys=None)],
        include_synonyms=True,
        include_documentation=False,
    )
    [result] = send_request(admin, request).results
    if result.error_code:
        raise ValueError(
            f"cannot describe the configs of {entity_type[:-1]} {name!r}: {result.error_message}"
        )
    return sorted(
        (entry for entry in result.configs if every or entry.config_source == own_source),
        key=lambda entry: entry.name,
    )


def _alter(admin: Any, entity_type: str, name: str, own_source: int, added: str, deleted: str) -> None:
    """One IncrementalAlterConfigs: SET each added config, DELETE each deleted one, which the
    entity must have (kafka-configs refuses `Invalid config(s)` otherwise)."""
    from kafka.protocol.admin.configs import IncrementalAlterConfigsRequest

    from .admin_command import send_request

    to_delete = [n.strip() for n in deleted.split(",") if n.strip()]
    if to_delete:
        own = {entry.name for entry in _described(admin, entity_type, name, own_source, every=False)}
        missing = [n for n in to_delete if n not in own]
        if missing:
            raise ValueError(f"Invalid config(s): {','.join(missing)}")
    changes = [(n, SET, v) for n, v in parse_added(added).items()] + [(n, DELETE, None) for n in to_delete]
    resource = IncrementalAlterConfigsRequest.AlterConfigsResource
    config = resource.AlterableConfig
    request = IncrementalAlterConfigsRequest(resources=[resource(
        resource_type=ENTITY_TYPES[entity_type][0], resource_name=name,
        configs=[config(name=n, config_operation=op, value=v) for n, op, v in changes],
    )], validate_only=False)  # fmt: skip
    [result] = send_request(admin, request).responses
    if result.error_code:
        raise ValueError(f"cannot alter the configs of {entity_type[:-1]} {name!r}: {result.error_message}")

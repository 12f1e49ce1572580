"""`connect-rebalance topics ...`: topic administration through kafka-python's admin client.

`list` and `describe` print what kafka-topics prints, or with `--output json` a JSON array:
one object per topic (`describe`'s with its partitions, one object each, and its configs).
"""

from __future__ import annotations

import argparse
import uuid
from typing import Any

from kafka import KafkaAdminClient, KafkaConsumer, TopicPartition
from kafka.admin import ConfigResource, ConfigResourceType, NewTopic

from coordinator.broker import kafka_uuid_string
from coordinator.storage.topic_store import INTERNAL_TOPICS

from .admin_command import run_admin_command
from .tables import print_json

TOPIC_ALREADY_EXISTS = 36


def _parse_configs(pairs: list[str]) -> dict[str, str]:
    configs = {}
    for pair in pairs:
        name, sep, value = pair.partition("=")
        if not sep:
            raise ValueError(f"--config expects name=value, got {pair!r}")
        configs[name] = value
    return configs


def described(admin: KafkaAdminClient, bootstrap: str, name: str) -> dict[str, Any]:
    """A topic as `describe` shows it: id, partitions with their leaders and offsets, and the
    configs set on the topic itself (kafka-python's default filter keeps only those)."""
    [topic] = admin.describe_topics([name])
    if topic["error_code"]:
        raise ValueError(f"topic {name!r}: error {topic['error_code']}")
    listed = sorted(topic["partitions"], key=lambda p: p["partition_index"])
    tps = [TopicPartition(name, p["partition_index"]) for p in listed]
    consumer = KafkaConsumer(bootstrap_servers=bootstrap, enable_auto_commit=False)
    try:
        earliest, latest = consumer.beginning_offsets(tps), consumer.end_offsets(tps)
    finally:
        consumer.close()
    explicit = admin.describe_configs([ConfigResource(ConfigResourceType.TOPIC, name)])["topic"][name]
    partitions = [
        {"partition": tp.partition, "leader": p["leader_id"], "replicas": list(p["replica_nodes"]),
         "isr": list(p["isr_nodes"]), "earliest_offset": earliest[tp], "latest_offset": latest[tp]}
        for tp, p in zip(tps, listed, strict=True)
    ]  # fmt: skip
    return {
        "topic": name, "topic_id": kafka_uuid_string(uuid.UUID(topic["topic_id"])),
        "partition_count": len(partitions), "replication_factor": 1,
        "configs": {key: entry["value"] for key, entry in sorted(explicit.items())}, "partitions": partitions,
    }  # fmt: skip


def _print_described(topic: dict[str, Any]) -> None:
    """kafka-topics --describe's lines, with each partition's offsets after its ISR."""
    print(f"Topic: {topic['topic']}\tTopicId: {topic['topic_id']}\tPartitionCount: {topic['partition_count']}"
          f"\tReplicationFactor: {topic['replication_factor']}")  # fmt: skip
    for p in topic["partitions"]:
        print(
            f"\tPartition: {p['partition']}\tLeader: {p['leader']}\tReplicas: {p['replicas']}"
            f"\tIsr: {p['isr']}\tOffsets: {p['earliest_offset']}..{p['latest_offset']}"
        )
    if topic["configs"]:
        print("\tConfigs: " + ",".join(f"{key}={value}" for key, value in topic["configs"].items()))


def _alter(admin: KafkaAdminClient, args: argparse.Namespace) -> None:
    """More partitions (CreatePartitions) and config changes (IncrementalAlterConfigs: SET and
    DELETE), as kafka-topics --alter and kafka-configs --alter do them."""
    from kafka.protocol.admin.configs import IncrementalAlterConfigsRequest

    from .admin_command import send_request

    if args.partitions is None and not args.config and not args.delete_config:
        raise ValueError("nothing to alter: give --partitions, --config or --delete-config")
    if args.partitions is not None:
        [result] = admin.create_partitions({args.name: args.partitions}, raise_errors=False).results
        if result.error_code:
            raise ValueError(f"cannot add partitions to {args.name!r}: {result.error_message}")
        print(f"Topic {args.name} has {args.partitions} partitions.")
    changes = [(name, 0, value) for name, value in _parse_configs(args.config).items()]
    changes += [(name, 1, None) for name in args.delete_config]
    if changes:
        resource = IncrementalAlterConfigsRequest.AlterConfigsResource
        config = resource.AlterableConfig
        request = IncrementalAlterConfigsRequest(resources=[resource(
            resource_type=ConfigResourceType.TOPIC, resource_name=args.name,
            configs=[config(name=n, config_operation=op, value=v) for n, op, v in changes],
        )], validate_only=False)  # fmt: skip
        [result] = send_request(admin, request).responses
        if result.error_code:
            raise ValueError(f"cannot alter the configs of {args.name!r}: {result.error_message}")
        print(f"Altered the configs of topic {args.name}.")


def run(args: argparse.Namespace) -> int:
    return run_admin_command(args.bootstrap_server, lambda admin: _dispatch(admin, args))


def _dispatch(admin: KafkaAdminClient, args: argparse.Namespace) -> None:
    if args.action == "list":
        names = [
            n for n in sorted(admin.list_topics()) if not (args.exclude_internal and n in INTERNAL_TOPICS)
        ]
        if args.output == "json":
            print_json([{"topic": name, "internal": name in INTERNAL_TOPICS} for name in names])
        else:
            for name in names:
                print(name)
    elif args.action == "create":
        topic = NewTopic(
            args.name, args.partitions, args.replication_factor, topic_configs=_parse_configs(args.config)
        )
        [result] = admin.create_topics([topic], raise_errors=False)["topics"]
        if result["error_code"] == TOPIC_ALREADY_EXISTS and args.if_not_exists:
            print(f"Topic {args.name} exists already.")
        elif result["error_code"]:
            raise ValueError(f"cannot create topic {args.name!r}: {result['error_message']}")
        else:
            print(f"Created topic {args.name}.")
    elif args.action == "alter":
        _alter(admin, args)
    elif args.action == "describe":
        topic = described(admin, args.bootstrap_server, args.name)
        if args.output == "json":
            print_json([topic])
        else:
            _print_described(topic)
    elif args.action == "delete":
        [result] = admin.delete_topics([args.name], raise_errors=False)["topics"]
        if result["error_code"]:
            raise ValueError(f"cannot delete topic {args.name!r}: {result['error_message']}")
        print(f"Deleted topic {args.name}.")


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

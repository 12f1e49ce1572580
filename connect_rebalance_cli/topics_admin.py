"""The operations behind `connect-rebalance topics` (topics_cli.py), through kafka-python's
admin client: apart from the command's options, so that building the command line (which
every `connect-rebalance` command does, a coordinator's or a worker's start too) does not
load the Kafka clients and the coordinator's topic store.
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

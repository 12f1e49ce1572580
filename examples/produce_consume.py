"""A consumer group on the coordinator the workers use: produce, then consume as a group.

    connect-rebalance coordinator -c examples/server.properties &
    python examples/produce_consume.py --bootstrap-server 127.0.0.1:9092
    connect-rebalance groups --bootstrap-server 127.0.0.1:9092 describe example

The consumer subscribes with `group.protocol=consumer` (KIP-848: the coordinator assigns the
partitions, no rebalance barrier) or `--group-protocol classic`, reads what was produced
from its group's committed offsets on, commits, and prints where the group stands. Run it
again and it reads only the new records.
"""

from __future__ import annotations

import argparse
import time

from confluent_kafka import Consumer, Producer


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--bootstrap-server", default="127.0.0.1:9092")
    parser.add_argument("--topic", default="example-events")
    parser.add_argument("--group", default="example")
    parser.add_argument("--group-protocol", choices=("consumer", "classic"), default="consumer")
    parser.add_argument("--count", type=int, default=10)
    args = parser.parse_args()

    producer = Producer(
        {"bootstrap.servers": args.bootstrap_server, "enable.idempotence": True, "compression.type": "zstd"}
    )
    for i in range(args.count):
        producer.produce(args.topic, key=f"key-{i % 3}", value=f"event {i}")
    producer.flush(30)
    print(f"produced {args.count} records to {args.topic}")

    consumer = Consumer(
        {
            "bootstrap.servers": args.bootstrap_server,
            "group.id": args.group,
            "group.protocol": args.group_protocol,
            "auto.offset.reset": "earliest",
            "enable.auto.commit": False,
        }
    )

    def assigned(_: Consumer, partitions: list) -> None:  # type: ignore[type-arg]
        print(f"group {args.group} ({args.group_protocol} protocol) assigned partitions "
              f"{sorted(p.partition for p in partitions)}")  # fmt: skip

    consumer.subscribe([args.topic], on_assign=assigned)
    seen, deadline = 0, time.monotonic() + 60
    while seen < args.count and time.monotonic() < deadline:
        message = consumer.poll(1)
        if message is None or message.error():
            continue
        print(f"partition {message.partition()} offset {message.offset()}: {message.value().decode()}")
        seen += 1
    committed = sorted(consumer.commit(asynchronous=False) or [] if seen else [], key=lambda tp: tp.partition)
    where = ", ".join(f"partition {tp.partition} at {tp.offset}" for tp in committed)
    print(f"consumed {seen} records; committed {where}")
    consumer.close()


if __name__ == "__main__":
    main()

"""Produce to and consume from a running coordinator with confluent-kafka.

connect-rebalance coordinator -c examples/server.properties &
python examples/produce_consume.py --bootstrap-server 127.0.0.1:9092
"""

from __future__ import annotations

import argparse

from confluent_kafka import Consumer, Producer, TopicPartition


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--bootstrap-server", default="127.0.0.1:9092")
    parser.add_argument("--topic", default="example-events")
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
        {"bootstrap.servers": args.bootstrap_server, "group.id": "example", "enable.auto.commit": False}
    )
    metadata = consumer.list_topics(args.topic, timeout=10).topics[args.topic]
    consumer.assign([TopicPartition(args.topic, p, 0) for p in metadata.partitions])
    seen = 0
    while seen < args.count:
        message = consumer.poll(5)
        if message is None:
            break
        print(f"partition {message.partition()} offset {message.offset()}: {message.value().decode()}")
        seen += 1
    consumer.close()


if __name__ == "__main__":
    main()

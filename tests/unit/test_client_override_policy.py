"""Connector client overrides (KIP-458) under the worker's `connector.client.config.override.policy`:
Kafka's policies and messages, what this runtime applies to each client (and the refusal,
with why, of what it would not), and where the applied settings go: TopicIngest's Spark
options and kafka-python consumer, the task output's connection and compression."""

from __future__ import annotations

from typing import Any

import pytest
from kafka.record.default_records import DefaultRecordBatch

from coordinator.configs.coordinator import ConfigError
from workers.config.connector_clients import ConnectorSettingsRefused, connector_clients, connector_problems
from workers.config.worker import WorkerConfig
from workers.connectors.topic_ingest import TopicIngest, source_options
from workers.connectors.verifiable import VerifiableSource
from workers.runtime.output_connections import OutputConnections
from workers.spark.partition_reads import librdkafka_settings
from workers.spark.topic_source import consumer_options
from workers.storage.fenced_output import Outgoing, TaskOutput

pytestmark = pytest.mark.unit
BASE = {"bootstrap.servers": "localhost:9092", "group.id": "g", "config.storage.topic": "c",
        "offset.storage.topic": "o", "status.storage.topic": "s"}  # fmt: skip
SOURCE = {"name": "seq", "connector.class": "VerifiableSource", "topic": "out"}
INGEST = {"name": "ingest", "connector.class": "TopicIngest", "topics": "orders", "output.path": "/tmp/x"}
CREATING = {"topic.creation.default.partitions": "3", "topic.creation.default.replication.factor": "-1"}
JAAS = 'org.apache.kafka.common.security.plain.PlainLoginModule required username="c" password="s";'


def worker(policy: str | None = None, **settings: str) -> WorkerConfig:
    chosen = {} if policy is None else {"connector.client.config.override.policy": policy}
    return WorkerConfig.from_settings({**BASE, **chosen, **settings})


def refusals(plugin: Any, config: dict[str, str], on: WorkerConfig) -> dict[str, str]:
    return {p.name: p.message for p in connector_problems(plugin, config, on)}


def test_the_policy_is_kafkas_all_by_default_and_named_by_alias_or_class() -> None:
    assert worker().connector_client_config_override_policy == "All"
    package = "org.apache.kafka.connect.connector.policy."
    for given, policy in (("None", "None"), ("PrincipalConnectorClientConfigOverridePolicy", "Principal"),
                          (f"{package}AllConnectorClientConfigOverridePolicy", "All")):  # fmt: skip
        assert worker(given).connector_client_config_override_policy == policy
    with pytest.raises(ConfigError, match="connector.client.config.override.policy"):
        worker("Everything")


def test_each_policy_refuses_what_kafkas_refuses_with_its_message() -> None:
    config = {
        **SOURCE,
        "producer.override.linger.ms": "5",
        "producer.override.sasl.jaas.config": JAAS,
        "producer.override.security.protocol": "SASL_PLAINTEXT",
        "producer.override.sasl.mechanism": "PLAIN",
    }
    assert refusals(VerifiableSource, config, worker("None")) == {
        f"producer.override.{name}": f"The 'None' policy does not allow '{name}' to be overridden in the "
        "connector configuration."
        for name in ("linger.ms", "sasl.jaas.config", "security.protocol", "sasl.mechanism")
    }
    assert refusals(VerifiableSource, config, worker("Principal")) == {
        "producer.override.linger.ms": "The 'Principal' policy does not allow 'linger.ms' to be overridden "
        "in the connector configuration."
    }, "a connector's own principal is allowed"
    assert refusals(
        VerifiableSource, {**SOURCE, "producer.override.sasl.jaas.config": JAAS}, worker("Principal")
    )
    assert list(refusals(VerifiableSource, config, worker("All"))) == ["producer.override.linger.ms"]


def test_an_override_this_runtime_would_not_apply_is_refused_saying_why() -> None:
    on = worker()
    asked = {
        **SOURCE,
        "producer.override.linger.ms": "5",
        "producer.override.acks": "1",
        "producer.override.compression.type": "brotli",
        "producer.override.bootstrap.servers": "elsewhere:9092",
        "consumer.override.fetch.max.bytes": "1024",
        "admin.override.client.id": "creator",
    }
    found = refusals(VerifiableSource, asked, on)
    assert found == {
        "producer.override.linger.ms": "Invalid value 5 for configuration producer.override.linger.ms: task "
        "records are written one request at a time with the source offset they move the task to, through "
        "the task's fence on the worker's cluster: only the producer's security settings, client.id, "
        "compression.type apply here",
        "producer.override.acks": "Invalid value 1 for configuration producer.override.acks: task output is "
        "always written with acks=all",
        "producer.override.compression.type": "Invalid value brotli for configuration producer.override."
        "compression.type: String must be one of: none, gzip, snappy, lz4, zstd",
        "producer.override.bootstrap.servers": "Invalid value elsewhere:9092 for configuration producer."
        "override.bootstrap.servers: task records and their source offsets are written to the worker's "
        "cluster, where the task's fence is",
        "consumer.override.fetch.max.bytes": "Invalid value 1024 for configuration consumer.override.fetch."
        "max.bytes: this connector's tasks read no topics, so they have no consumer",
        "admin.override.client.id": "Invalid value creator for configuration admin.override.client.id: the "
        "connector's admin client only creates the topics its tasks write to, and this config asks for no "
        "topic creation (topic.creation.*)",
    }
    applied = {
        **SOURCE,
        **CREATING,
        "producer.override.acks": "all",
        "producer.override.compression.type": "zstd",
        "producer.override.client.id": "seq-writer",
        "admin.override.request.timeout.ms": "5000",
    }
    assert refusals(VerifiableSource, applied, on) == {}
    ingest = refusals(TopicIngest, {**INGEST, "consumer.override.fetch.max.bytes": "x",
                                    "consumer.override.group.id": "mine", "producer.override.acks": "all",
                                    "consumer.override.sasl.mechanism": "PLAIN"}, on)  # fmt: skip
    assert ingest == {
        "consumer.override.fetch.max.bytes": "Invalid value x for configuration consumer.override.fetch.max."
        "bytes: Not a number of type INT",
        "consumer.override.group.id": "Invalid value mine for configuration consumer.override.group.id: the "
        "connector's consumer reads its partitions with no group, its offsets kept in the task's "
        "checkpoint: only its security settings, client.id, fetch.min.bytes, fetch.max.wait.ms, "
        "fetch.max.bytes, max.partition.fetch.bytes, check.crcs apply here",
        "producer.override.acks": "Invalid value all for configuration producer.override.acks: this "
        "connector's tasks write no records to Kafka, so they have no producer or admin client",
        "consumer.override.sasl.mechanism": "Invalid client security settings: consumer.override.sasl."
        "mechanism is set but consumer.override.security.protocol=PLAINTEXT uses no SASL",
    }
    with pytest.raises(ConnectorSettingsRefused, match="consumer.override.group.id"):
        connector_clients(TopicIngest, {**INGEST, "consumer.override.group.id": "mine"}, on)


def test_topic_ingests_consumer_overrides_reach_its_spark_options_and_kafka_python_consumer() -> None:
    on = worker(**{"consumer.security.protocol": "SASL_PLAINTEXT", "consumer.sasl.mechanism": "PLAIN",
                   "consumer.sasl.jaas.config": JAAS.replace('"c"', '"worker"')})  # fmt: skip
    config = {
        **INGEST,
        "consumer.override.sasl.jaas.config": JAAS,
        "consumer.override.fetch.max.bytes": "1048576",
        "consumer.override.client.id": "ingest-reader",
    }
    consumer = connector_clients(TopicIngest, config, on).consumer
    task_config = {**TopicIngest().task_configs(config, 2)[1]}
    options = source_options(task_config, "localhost:9092", consumer)
    assert {k: v for k, v in options.items() if k.startswith("kafka.")} == {
        "kafka.security.protocol": "SASL_PLAINTEXT",
        "kafka.sasl.mechanism": "PLAIN",
        "kafka.sasl.jaas.config": JAAS,
        "kafka.fetch.max.bytes": "1048576",
        "kafka.client.id": "ingest-reader",
    }, "the worker's consumer.* with the connector's overrides over them"
    assert (options["subscribe"], options["share"]) == ("orders", "1/2")
    kwargs = consumer_options(
        {k.removeprefix("kafka."): v for k, v in options.items() if k.startswith("kafka.")}
    )
    assert kwargs == {
        "client_id": "ingest-reader",
        "fetch_max_bytes": 1048576,
        "security_protocol": "SASL_PLAINTEXT",
        "sasl_mechanism": "PLAIN",
        "sasl_plain_username": "c",
        "sasl_plain_password": "s",
    }
    with pytest.raises(ValueError, match="'group.id' is not supported"):
        consumer_options({"group.id": "x"})
    assert consumer_options({})["client_id"] == "topic-spark-source"
    # The Python workers' librdkafka consumer takes the same settings by librdkafka's names.
    given = {k.removeprefix("kafka."): v for k, v in options.items() if k.startswith("kafka.")}
    read = librdkafka_settings("localhost:9092", given, True)
    assert {k: read.get(k) for k in ("client.id", "fetch.max.bytes", "security.protocol", "sasl.mechanisms",
                                 "sasl.username", "sasl.password", "auto.offset.reset")} == {
        "client.id": "ingest-reader", "fetch.max.bytes": 1048576, "security.protocol": "SASL_PLAINTEXT",
        "sasl.mechanisms": "PLAIN", "sasl.username": "c", "sasl.password": "s", "auto.offset.reset": "error",
    }  # fmt: skip


def test_tls_versions_librdkafka_cannot_be_held_to_are_refused_for_topic_ingests_consumers() -> None:
    """librdkafka (TopicIngest's Python workers) has no setting for TLS versions: a narrower
    range than its TLS 1.2 and 1.3 is refused, not ignored, for the worker and a connector."""
    narrow = {"security.protocol": "SSL", "ssl.enabled.protocols": "TLSv1.3"}
    try:
        worker(**{f"consumer.{k}": v for k, v in narrow.items()})
        refused = ""
    except ValueError as exc:
        refused = str(exc)
    assert "ssl.enabled.protocols and ssl.protocol: librdkafka" in refused, "the worker starts"
    assert worker(**{f"producer.{k}": v for k, v in narrow.items()})  # the producer is not librdkafka
    problems = refusals(TopicIngest, {**INGEST, **{f"consumer.override.{k}": v for k, v in narrow.items()}},
                        worker())  # fmt: skip
    assert "librdkafka speaks TLSv1.2 and TLSv1.3" in problems["consumer.override.security.protocol"]


def test_a_producer_identity_override_gets_its_own_shared_output_connection() -> None:
    on = worker()
    outputs = OutputConnections("localhost:9092", "w1-task-output", on.client_security("producer."))
    plain = connector_clients(VerifiableSource, SOURCE, on).producer
    named = connector_clients(VerifiableSource, {**SOURCE, "producer.override.client.id": "seq-writer"}, on)
    compressed = connector_clients(
        VerifiableSource, {**SOURCE, "producer.override.compression.type": "gzip"}, on
    )
    assert outputs.for_producer(plain) is outputs.default
    assert outputs.for_producer(compressed.producer) is outputs.default, (
        "compression is the run's, not the link's"
    )
    own = outputs.for_producer(named.producer)
    assert own is not outputs.default and own.client_id == "seq-writer"
    assert outputs.for_producer(dict(named.producer)) is own, "connectors asking the same share it"


class Taking:
    """A connection that takes every write, keeping the batches it was sent."""

    def __init__(self) -> None:
        self.batches: list[bytes] = []

    async def partition_of(self, record: Outgoing) -> int:
        return 0

    async def request(self, api_key: int, version: int, fields: dict[str, Any]) -> dict[str, Any]:
        self.batches += [p["records"] for t in fields["topic_data"] for p in t["partition_data"]]
        return {"responses": [{"name": t["name"], "partition_responses": [{"index": 0, "error_code": 0}]}
                              for t in fields["topic_data"]]}  # fmt: skip


async def test_a_runs_batches_are_compressed_as_its_producer_override_says() -> None:
    connection = Taking()
    output = TaskOutput(connection, "g-seq-0", 7, 0, codec=4)  # type: ignore[arg-type]
    # (a batch that compression would not make smaller is sent as it is, as kafka-python does)
    await output.write([Outgoing("out", b"k", b"v" * 100), Outgoing("offsets", b"seq", b'{"seq": 1}' * 20)])
    batches = [DefaultRecordBatch(batch) for batch in connection.batches]
    assert [b.compression_type for b in batches] == [4, 4], "zstd, the records and their offset alike"
    assert [r.value for r in batches[0]] == [b"v" * 100]

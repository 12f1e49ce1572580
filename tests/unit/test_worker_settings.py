"""Worker settings as Kafka Connect users write them: converters and what they write, the
settings that change nothing here (a warning each), those refused, and every problem of a
file reported at once, for the worker and for the coordinator alike."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from connect_rebalance.properties import ConfigError, read_properties
from coordinator.configs.coordinator import CoordinatorConfig
from workers.config.inapplicable import sort_out
from workers.config.worker import WorkerConfig
from workers.plugins.converters import ConversionError, Converter, converter_problems, record_converters

pytestmark = pytest.mark.unit
REQUIRED = {"bootstrap.servers": "h:9092", "group.id": "g", "config.storage.topic": "c",
            "offset.storage.topic": "o", "status.storage.topic": "s"}  # fmt: skip
VALUE = {"id": 7, "name": "x", "price": 1.5, "ok": True, "tags": ["a"], "raw": b"\x00\x01"}


def test_each_converter_writes_what_kafka_connects_would() -> None:
    json_with = Converter("JsonConverter")
    assert json.loads(json_with.from_data("k")) == {
        "schema": {"type": "string", "optional": False},
        "payload": "k",
    }
    envelope = json.loads(json_with.from_data(VALUE))
    assert envelope["payload"] == {
        "id": 7,
        "name": "x",
        "price": 1.5,
        "ok": True,
        "tags": ["a"],
        "raw": "AAE=",
    }
    assert [(f["field"], f["type"]) for f in envelope["schema"]["fields"]] == [
        ("id", "int64"), ("name", "string"), ("price", "double"), ("ok", "boolean"), ("tags", "array"),
        ("raw", "bytes"),
    ]  # fmt: skip
    assert json.loads(Converter("JsonConverter", schemas=False).from_data(VALUE))["raw"] == "AAE="
    assert Converter("JsonConverter", schemas=False).from_data(None) is None
    assert Converter("StringConverter").from_data("é") == "é".encode()
    assert Converter("StringConverter", encoding="latin-1").from_data("é") == b"\xe9"
    assert Converter("ByteArrayConverter").from_data(b"\x00") == b"\x00"
    with pytest.raises(
        ConversionError, match="ByteArrayConverter is not compatible with objects of type dict"
    ):
        Converter("ByteArrayConverter").from_data(VALUE)


def test_a_connectors_converters_override_the_workers_and_unset_ones_keep_todays_bytes() -> None:
    worker = {"key.converter": "org.apache.kafka.connect.json.JsonConverter",
              "value.converter": "org.apache.kafka.connect.json.JsonConverter",
              "value.converter.schemas.enable": "false"}  # fmt: skip
    key, value = record_converters(worker, {"key.converter": "StringConverter"})
    assert (key, value) == (Converter("StringConverter"), Converter("JsonConverter", schemas=False))
    key, value = record_converters({}, {})
    assert key.from_data("seq-0") == b"seq-0" and json.loads(value.from_data({"a": 1})) == {"a": 1}
    assert converter_problems({"value.converter": "io.confluent.connect.avro.AvroConverter",
                               "key.converter.schemas.enable": "true"}) == [
        ("key.converter.schemas.enable",
         "key.converter is not set, so there is no converter to take schemas.enable"),
        ("value.converter", "io.confluent.connect.avro.AvroConverter is not a converter here: use one of "
                            "StringConverter, ByteArrayConverter, JsonConverter"),
    ]  # fmt: skip


def test_settings_that_change_nothing_warn_and_those_that_would_are_refused() -> None:
    warnings, refusals, handled = sort_out({
        "offset.flush.interval.ms": "10000", "metrics.context.team": "a", "header.converter":
        "org.apache.kafka.connect.storage.SimpleHeaderConverter",
        "connector.client.config.override.allowlist": "linger.ms",
        "inter.worker.signature.algorithm": "HmacSHA512", "bootstrap.servers": "x:1",
    })  # fmt: skip
    assert [w.split(" changes nothing")[0] for w in warnings] == ["offset.flush.interval.ms=10000",
                                                                   "metrics.context.team=a"]  # fmt: skip
    assert [name for name, _ in refusals] == ["connector.client.config.override.allowlist",
                                              "inter.worker.signature.algorithm"]  # fmt: skip
    assert "bootstrap.servers" not in handled and "connector.client.config.override.allowlist" in handled


def test_every_problem_of_a_file_is_reported_at_once(tmp_path: Path) -> None:
    with pytest.raises(ConfigError) as worker:
        WorkerConfig.from_settings({**REQUIRED, "sesion.timeout.ms": "1", "heartbeat.interval.ms": "soon",
                                    "status.storage.replication.factor": "0"})  # fmt: skip
    assert worker.value.problems == [
        "unknown setting 'sesion.timeout.ms' (did you mean 'session.timeout.ms'?)",
        "invalid value '0' for 'status.storage.replication.factor': must be -1 (the coordinator's default) "
        "or at least 1",
        "invalid value 'soon' for 'heartbeat.interval.ms': Input should be a valid integer, unable to parse "
        "string as an integer",
    ]
    with pytest.raises(ConfigError) as coordinator:
        CoordinatorConfig.from_settings({"log.retention.hour": "1", "num.partitions": "x", "node.id": "-1"})
    assert [p.split(":")[0] for p in coordinator.value.problems] == [
        "unknown setting 'log.retention.hour' (did you mean 'log.retention.ms'?)",
        "invalid value '-1' for 'node.id'",
        "invalid value 'x' for 'num.partitions'",
    ]


def test_properties_files_read_in_all_of_javas_syntax(tmp_path: Path) -> None:
    path = tmp_path / "worker.properties"
    path.write_text("# comment\n! also\nbootstrap.servers localhost:9092\ngroup.id: g\n"
                    "plugin.path=/a,\\\n    /b\nname=caf\\u00e9\n")  # fmt: skip
    assert read_properties(path) == {"bootstrap.servers": "localhost:9092", "group.id": "g",
                                     "plugin.path": "/a,/b", "name": "café"}  # fmt: skip

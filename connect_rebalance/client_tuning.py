"""Kafka client settings other than security that this project's Kafka clients take.

A connector may set these for its own clients (`consumer.override.*`, `admin.override.*`,
workers.config.client_overrides), by Kafka's names; each is passed to kafka-python as its keyword
argument, or to librdkafka by its name there (TopicIngest's reads). Only settings a client
here really uses are listed: a consumer that reads without a group has no use for
`group.id` or `auto.commit.*`, so a name not listed is refused where the settings are
checked (and `kafka_python_tuning` and `librdkafka_tuning` refuse it too, rather than drop it).
"""

from __future__ import annotations

import re
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any

_INTEGER = re.compile(r"[+-]?[0-9]+")
# Kafka's producer `compression.type` values and their record batch codecs: a connector's
# `producer.override.compression.type` compresses its tasks' batches.
COMPRESSION_CODECS = {"none": 0, "gzip": 1, "snappy": 2, "lz4": 3, "zstd": 4}


def _non_negative(kind: str, most: int | None = None, why: str = "") -> Callable[[str], int]:
    """Kafka's INT or LONG at least 0 (and at most `most`, for `why`), with its messages."""

    def parse(value: str) -> int:
        if not _INTEGER.fullmatch(value.strip()):
            raise ValueError(f"Not a number of type {kind}")
        if int(value) < 0:
            raise ValueError("Value must be at least 0")
        if most is not None and int(value) > most:
            raise ValueError(f"Value must be no more than {most} ({why})")
        return int(value)

    return parse


def _boolean(value: str) -> bool:
    if value.strip().lower() not in ("true", "false"):
        raise ValueError("Expected value to be either true or false")
    return value.strip().lower() == "true"


def _text(value: str) -> str:
    return value.strip()


@dataclass(frozen=True)
class Tuning:
    """A setting's kafka-python keyword argument, how its value is read (ValueError: why not),
    and its librdkafka name where a librdkafka client takes it."""

    kwarg: str
    parse: Callable[[str], Any]
    librdkafka: str = ""


CONSUMER: dict[str, Tuning] = {
    "client.id": Tuning("client_id", _text, "client.id"),
    "fetch.min.bytes": Tuning("fetch_min_bytes", _non_negative("INT"), "fetch.min.bytes"),
    # Less than the request timeout, as kafka-python requires (TopicIngest looks its partitions
    # up with requests of 30 s).
    "fetch.max.wait.ms": Tuning(
        "fetch_max_wait_ms",
        _non_negative("INT", 29999, "it must be shorter than the requests' 30 s timeout"),
        "fetch.wait.max.ms",
    ),
    "fetch.max.bytes": Tuning("fetch_max_bytes", _non_negative("INT"), "fetch.max.bytes"),
    "max.partition.fetch.bytes": Tuning(
        "max_partition_fetch_bytes", _non_negative("INT"), "max.partition.fetch.bytes"
    ),
    "check.crcs": Tuning("check_crcs", _boolean, "check.crcs"),
}
ADMIN: dict[str, Tuning] = {
    "client.id": Tuning("client_id", _text),
    "request.timeout.ms": Tuning("request_timeout_ms", _non_negative("INT")),
}


def tuning_problem(table: Mapping[str, Tuning], name: str, value: str) -> str | None:
    """Why `value` is no value of `name` (a name of `table`), or None."""
    try:
        table[name].parse(value)
    except ValueError as exc:
        return str(exc)
    return None


def kafka_python_tuning(settings: Mapping[str, str], table: Mapping[str, Tuning]) -> dict[str, Any]:
    """kafka-python keyword arguments for `settings` (names of `table`); ValueError names one
    that is not in it or has a bad value."""
    return {table[name].kwarg: value for name, value in _parsed(settings, table).items()}


def librdkafka_tuning(settings: Mapping[str, str], table: Mapping[str, Tuning]) -> dict[str, Any]:
    """librdkafka's configuration for `settings` (names of `table` a librdkafka client takes);
    ValueError names one that is not among them or has a bad value."""
    return {
        table[name].librdkafka: value for name, value in _parsed(settings, table, librdkafka=True).items()
    }


def _parsed(
    settings: Mapping[str, str], table: Mapping[str, Tuning], librdkafka: bool = False
) -> dict[str, Any]:
    parsed = {}
    for name, value in settings.items():
        if name not in table or (librdkafka and not table[name].librdkafka):
            raise ValueError(f"client setting {name!r} is not supported here")
        problem = tuning_problem(table, name, value)
        if problem is not None:
            raise ValueError(f"Invalid value {value} for configuration {name}: {problem}")
        parsed[name] = table[name].parse(value)
    return parsed

"""Converters: how a task's records become the bytes written to a topic, as Kafka Connect's.

A task that writes to topics hands over its keys and values as data (str, bytes, int,
float, bool, dict, list or None); the converter named by `key.converter` / `value.converter`
serializes them, the worker's unless the connector's config names its own:

- `StringConverter`: text as UTF-8 (other data as its JSON text);
- `ByteArrayConverter`: bytes as they are, anything else refused (as Kafka's DataException);
- `JsonConverter`: JSON, inside Kafka Connect's `{"schema", "payload"}` envelope when
  `schemas.enable` is true (its default, as in Kafka), with a schema inferred from the data
  (struct, string, int64, double, boolean, bytes, array).

Settings under a converter's prefix (`value.converter.schemas.enable=false`) go to it; one
it does not have is refused, naming it. With no converter named anywhere (Kafka Connect
requires one), keys are written as strings and values as JSON without schemas.
"""

from __future__ import annotations

import base64
import json
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from connect_rebalance.properties import did_you_mean

KAFKA_PACKAGES = {
    "StringConverter": "org.apache.kafka.connect.storage.StringConverter",
    "ByteArrayConverter": "org.apache.kafka.connect.converters.ByteArrayConverter",
    "JsonConverter": "org.apache.kafka.connect.json.JsonConverter",
}
DEFAULTS = {"key.converter": "StringConverter", "value.converter": "JsonConverter"}
SETTING_PREFIXES = tuple(DEFAULTS)  # `key.converter`, `value.converter` and the settings under them
DEFAULT_SETTINGS = {"value.converter": {"schemas.enable": "false"}}  # when no converter is named
SETTINGS_OF = {"StringConverter": {"encoding"}, "ByteArrayConverter": set(),
               "JsonConverter": {"schemas.enable", "schemas.cache.size", "decimal.format",
                                 "replace.null.with.default"}}  # fmt: skip


class ConversionError(ValueError):
    """The data cannot be written by this converter (Kafka Connect's DataException)."""


@dataclass(frozen=True)
class Converter:
    kind: str  # StringConverter, ByteArrayConverter or JsonConverter
    schemas: bool = True  # JsonConverter's schemas.enable
    encoding: str = "utf-8"  # StringConverter's encoding

    def from_data(self, value: Any) -> bytes | None:
        if value is None:
            return None if self.kind != "JsonConverter" or not self.schemas else _json(_envelope(None))
        if self.kind == "ByteArrayConverter":
            if not isinstance(value, bytes | bytearray):
                raise ConversionError(
                    f"ByteArrayConverter is not compatible with objects of type {type(value).__name__}"
                )
            return bytes(value)
        if self.kind == "StringConverter":
            if isinstance(value, bytes | bytearray):
                return bytes(value)
            return (value if isinstance(value, str) else json.dumps(_plain(value))).encode(self.encoding)
        return _json(_envelope(value) if self.schemas else _plain(value))


def converter_name(value: str) -> str | None:
    """The converter a class name means (Kafka's full name or the short one), or None."""
    short = value.strip().rpartition(".")[2]
    if short in KAFKA_PACKAGES and value.strip() in (short, KAFKA_PACKAGES[short]):
        return short
    return None


def converter_problems(settings: Mapping[str, str]) -> list[tuple[str, str]]:
    """(setting, problem) for each converter setting that names no converter or that its
    converter does not have; settings other than the converters' are not looked at."""
    problems = []
    for which in DEFAULTS:
        named = settings.get(which)
        kind = converter_name(named) if named is not None else None
        if named is not None and kind is None:
            problems.append(
                (which, f"{named} is not a converter here: use one of {', '.join(KAFKA_PACKAGES)}")
            )
            continue
        for name, value in settings.items():
            if not name.startswith(which + "."):
                continue
            setting = name[len(which) + 1 :]
            if kind is None:
                problems.append((name, f"{which} is not set, so there is no converter to take {setting}"))
            elif setting not in SETTINGS_OF[kind]:
                problems.append(
                    (name, f"{kind} has no setting {setting!r}{did_you_mean(setting, SETTINGS_OF[kind])}")
                )
            elif setting == "schemas.enable" and value.strip().lower() not in ("true", "false"):
                problems.append((name, f"{value!r} is not true or false"))
    return problems


def record_converters(worker: Mapping[str, str], connector: Mapping[str, str]) -> tuple[Converter, Converter]:
    """The key and value converters of a connector's tasks: the connector's own where it
    names one (with its own prefixed settings), else the worker's, else the defaults."""
    return _converter("key.converter", worker, connector), _converter("value.converter", worker, connector)


def _converter(which: str, worker: Mapping[str, str], connector: Mapping[str, str]) -> Converter:
    source = connector if which in connector else worker
    if which in source:
        kind = converter_name(source[which]) or DEFAULTS[which]
        settings = {k[len(which) + 1 :]: v for k, v in source.items() if k.startswith(which + ".")}
    else:
        kind, settings = DEFAULTS[which], DEFAULT_SETTINGS.get(which, {})
    return Converter(
        kind,
        schemas=settings.get("schemas.enable", "true").strip().lower() == "true",
        encoding=settings.get("encoding", "utf-8"),
    )


def _json(value: Any) -> bytes:
    return json.dumps(value, separators=(",", ":")).encode()


def _plain(value: Any) -> Any:
    """JSON-ready data: bytes as base64 text, as JsonConverter writes a BYTES value."""
    if isinstance(value, bytes | bytearray):
        return base64.b64encode(value).decode()
    if isinstance(value, Mapping):
        return {str(k): _plain(v) for k, v in value.items()}
    if isinstance(value, list | tuple):
        return [_plain(v) for v in value]
    return value


def _envelope(value: Any) -> dict[str, Any]:
    return {"schema": _schema(value), "payload": _plain(value)}


def _schema(value: Any) -> dict[str, Any] | None:
    """Kafka Connect's JSON schema of a value, inferred (every field required but nulls)."""
    if value is None:
        return None
    if isinstance(value, bool):
        return {"type": "boolean", "optional": False}
    if isinstance(value, int):
        return {"type": "int64", "optional": False}
    if isinstance(value, float):
        return {"type": "double", "optional": False}
    if isinstance(value, str):
        return {"type": "string", "optional": False}
    if isinstance(value, bytes | bytearray):
        return {"type": "bytes", "optional": False}
    if isinstance(value, list | tuple):
        items = _schema(value[0]) if value else {"type": "string", "optional": True}
        return {"type": "array", "items": items, "optional": False}
    if isinstance(value, Mapping):
        fields = []
        for name, item in value.items():
            schema = _schema(item) or {"type": "string", "optional": True}
            fields.append({"field": str(name), **schema})
        return {"type": "struct", "fields": fields, "optional": False}
    raise ConversionError(f"JsonConverter cannot write objects of type {type(value).__name__}")

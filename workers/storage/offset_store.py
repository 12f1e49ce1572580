"""Source offsets, as the offset topic says they are (Kafka Connect's offset backing store).

Kafka Connect keys a source offset by `[connector, partition]` as JSON and keeps the latest
value per key in a compacted topic; every worker follows the topic. A run of a task reads its
offsets only after it has begun its fence (fenced_output.py) and read the topic to its end,
so it sees exactly what its task's earlier runs landed; it writes them beside its records,
through the fence, never through the worker's own producer.
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from typing import Any

from workers.storage.config_state import encode_json
from workers.storage.fenced_output import Outgoing
from workers.storage.topic_log import TopicLog


def offset_key(connector: str, partition: Mapping[str, Any]) -> str:
    return json.dumps([connector, dict(partition)], separators=(",", ":"), sort_keys=True)


class OffsetStore:
    def __init__(self, log_of: Any) -> None:
        """`log_of(handler)` makes the offset topic's TopicLog, which feeds `handler`."""
        self.offsets: dict[str, dict[str, Any]] = {}
        self.log: TopicLog = log_of(self._on_record)

    def _on_record(
        self, key: bytes | None, value: bytes | None, partition: int, offset: int, timestamp_ms: int = 0
    ) -> None:
        if key is None:
            return
        if value is None:
            self.offsets.pop(key.decode(), None)
        else:
            self.offsets[key.decode()] = json.loads(value)

    async def read(self, connector: str, partition: Mapping[str, Any]) -> Mapping[str, Any] | None:
        """The offset stored last, once everything written before this call has been read."""
        await self.log.read_to_end()
        return self.offsets.get(offset_key(connector, partition))

    def record(self, connector: str, partition: Mapping[str, Any], offset: Mapping[str, Any]) -> Outgoing:
        """The record that stores `offset`, to write beside the records it accounts for."""
        key = offset_key(connector, partition)
        return Outgoing(self.log.topic, key.encode(), encode_json(dict(offset)))

    def stored(self, connector: str, partition: Mapping[str, Any], offset: Mapping[str, Any]) -> None:
        """`offset` landed: known at once, before the offset topic is read back."""
        self.offsets[offset_key(connector, partition)] = dict(offset)

    async def alter(
        self, connector: str, changes: list[tuple[Mapping[str, Any], Mapping[str, Any] | None]]
    ) -> None:
        """KIP-875: each partition's offset set (None: removed, so its task starts afresh),
        written to the offset topic, and known here at once."""
        for partition, offset in changes:
            key = offset_key(connector, partition)
            await self.log.write(key.encode(), None if offset is None else encode_json(dict(offset)))
            if offset is None:
                self.offsets.pop(key, None)
            else:
                self.offsets[key] = dict(offset)

    async def reset(self, connector: str) -> None:
        """KIP-875: every stored offset of the connector removed."""
        await self.log.read_to_end()
        await self.alter(connector, [(entry["partition"], None) for entry in self.of_connector(connector)])

    def of_connector(self, name: str) -> list[dict[str, Any]]:
        """Every stored offset of the connector, as `GET /connectors/{name}/offsets` lists them."""
        found = []
        for key, value in sorted(self.offsets.items()):
            connector, partition = json.loads(key)
            if connector == name:
                found.append({"partition": partition, "offset": value})
        return found

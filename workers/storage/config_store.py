"""The config topic: followed into a `ConfigState`, and written through here alone.

Kafka Connect's config backing store. Every worker follows the topic; only the leader writes
it (REST writes on a follower are forwarded to the leader, task configs are sent to it), and
what it writes is built by config_state.py, which alone knows the topic's keys. Each record
read is handed on as the `ConfigChange` it made, with whether the work to assign (or a
target state) changed, which is what starts a rebalance.
"""

from __future__ import annotations

import asyncio
from collections.abc import Callable

from workers.storage import config_state as records
from workers.storage.config_state import ConfigChange, ConfigState, Record, decode_json
from workers.storage.session_key import SessionKey
from workers.storage.topic_log import Handler, TopicLog

ChangeListener = Callable[[ConfigChange, bool], None]  # the change, and whether the work changed


class ConfigStore:
    def __init__(self, log_of: Callable[[Handler], TopicLog], on_change: ChangeListener) -> None:
        """`log_of(handler)` makes the config topic's TopicLog, which feeds `handler`."""
        self.state = ConfigState()
        self._on_change = on_change
        self.log = log_of(self._on_record)

    def _on_record(
        self, key: bytes | None, value: bytes | None, partition: int, offset: int, timestamp_ms: int = 0
    ) -> None:
        if key is None:
            return
        state = self.state
        before = state.work(), dict(state.target_states)
        change = state.apply(key.decode(), decode_json(value), offset)
        self._on_change(change, (state.work(), state.target_states) != before)

    async def read_to_end(self) -> None:
        """Until every record written before this call has been read (and applied)."""
        await self.log.read_to_end()

    async def put_connector(
        self, name: str, config: dict[str, str], initial_state: str | None = None
    ) -> None:
        """A new or replaced connector configuration; a new connector's initial target state
        first, so that it never runs when created PAUSED or STOPPED."""
        if initial_state is not None and initial_state != records.STARTED:
            await self._write(records.target_state_record(name, initial_state))
        await self._write(records.connector_record(name, config))

    async def delete_connector(self, name: str) -> None:
        await self._write(records.connector_record(name, None))
        await self._write(records.target_state_record(name, None))

    async def put_target_state(self, name: str, state: str) -> None:
        await self._write(records.target_state_record(name, state))

    async def request_restart(self, name: str, include_tasks: bool, only_failed: bool) -> None:
        """Kafka Connect's restart request: the workers running the connector act on it."""
        await self._write(records.restart_record(name, include_tasks, only_failed))

    async def put_task_configs(self, name: str, configs: list[dict[str, str]]) -> None:
        """A connector's task configs, then the commit record that makes them visible; nothing
        if they are what the topic holds already."""
        await self.read_to_end()
        if configs == self.state.tasks.get(name):
            return
        # Sent together (one producer, in order; a thousand tasks' configs take batches, not
        # a round trip each); the commit record goes once all are in.
        await asyncio.gather(*(self._write(record) for record in records.task_config_records(name, configs)))
        await self._write(records.commit_record(name, len(configs)))

    async def drop_task_configs(self, name: str) -> None:
        """A stopped connector has no tasks (Kafka Connect commits zero task configs)."""
        await self._write(records.commit_record(name, 0))

    async def put_logger_level(self, namespace: str, level: str) -> None:
        await self._write(records.logger_level_record(namespace, level))

    async def put_session_key(self, key: SessionKey) -> None:
        await self._write(records.session_key_record(key))

    async def close(self) -> None:
        await self.log.close()

    async def _write(self, record: Record) -> None:
        await self.log.write(*record)

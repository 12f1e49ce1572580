"""One run of a task's writes and source-offset reads, through the task's fence.

The run's fence begins at the run's first read or write (InitFencedProducer), so before the
task reads where its earlier runs stopped: from then on nothing of those runs can land.
Records and the source offset they move the task to are written together, in one request.
Tasks that neither read offsets nor write records (Spark tasks, which keep both in their
checkpoints) begin no fence.
"""

from __future__ import annotations

import asyncio
from collections.abc import Mapping
from typing import Any

from workers.runtime.task_topics import TaskTopics
from workers.storage.fenced_output import Outgoing, OutputConnection, TaskOutput
from workers.storage.offset_store import OffsetStore

SourceOffset = tuple[Mapping[str, Any], Mapping[str, Any]]  # (source partition, offset)


class TaskWrites:
    def __init__(
        self,
        connection: OutputConnection,
        fence: str,
        connector: str,
        offsets: OffsetStore,
        compression: str = "none",
        topics: TaskTopics | None = None,
    ) -> None:
        """`compression`: the run's batches' (Kafka's names); `topics`: the topics the run
        writes to are created first, if its connector asks for that."""
        self.connection, self.fence, self.connector, self.offsets = connection, fence, connector, offsets
        self.compression, self.topics = compression, topics
        self._output: asyncio.Future[TaskOutput] | None = None

    async def read_offset(self, partition: Mapping[str, Any]) -> Mapping[str, Any] | None:
        await self._begun()
        return await self.offsets.read(self.connector, partition)

    async def send(
        self, topic: str, key: bytes | None, value: bytes | None, source: SourceOffset | None = None
    ) -> None:
        """Write one record and, with `source`, the offset it moves the task to: both or neither."""
        output = await self._begun()
        if self.topics is not None:
            await self.topics.ensure(topic)
        records = [Outgoing(topic, key, value)]
        if source is not None:
            records.append(self.offsets.record(self.connector, *source))
        await output.write(records)
        if source is not None:
            self.offsets.stored(self.connector, *source)

    async def write_offset(self, partition: Mapping[str, Any], offset: Mapping[str, Any]) -> None:
        await (await self._begun()).write([self.offsets.record(self.connector, partition, offset)])
        self.offsets.stored(self.connector, partition, offset)

    async def close(self) -> None:
        """Once this returns, nothing more of the run is in flight."""
        if self._output is not None and self._output.done() and not self._output.exception():
            await self._output.result().close()

    async def _begun(self) -> TaskOutput:
        if self._output is None:
            self._output = asyncio.ensure_future(self.connection.begin_run(self.fence, self.compression))
        return await asyncio.shield(self._output)

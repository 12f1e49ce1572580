"""A verifiable source: numbered records whose order proves who ran each task, and when.

Each task writes `{"connector", "task", "seq", "worker", "run", "at"}` records keyed
`<connector>-<task>` to `topic` (as its converters write them: by default a string key and
a JSON value), `throughput` records per second (0: none, the task only
runs). With `keys.per.task` above 1, each record takes one of that many keys at random
(`<connector>-<task>-<n>`), so a task's records spread over the topic's partitions, as a
real source's do. `run` names one start of the task (a new one each time it is started, on any
worker) and `at` is when that run wrote the record (wall clock, ms), taken while it runs,
however late the record lands. It keeps its next sequence number as its source offset, so
a task that moves to another worker carries on where it stopped. Reading the topic back,
a task's records must have consecutive sequence numbers, and the time spans of its runs
(first to last `at`) never overlap unless two ran at once.
"""

from __future__ import annotations

import asyncio
import contextlib
import random
import time
import uuid
from collections.abc import Mapping
from typing import Any

from workers.plugins.api import ConfigDef, Connector, Task, TaskContext, non_negative_int, positive_int


class VerifiableSourceTask(Task):
    def __init__(self) -> None:
        self._running: asyncio.Task[None] | None = None
        self.seq = 0
        self.sent = 0
        self.run = uuid.uuid4().hex[:12]

    async def start(self, config: Mapping[str, str], context: TaskContext) -> None:
        self.context = context
        self.topic = config["topic"]
        self.rate = int(config.get("throughput", "10"))
        self.keys = int(config.get("keys.per.task", "1"))
        self.partition = {"task": context.task}
        stored = await context.read_offset(self.partition)
        self.seq = int(stored["seq"]) if stored else 0
        self._running = asyncio.create_task(self._produce())

    async def _produce(self) -> None:
        if self.rate <= 0:
            return
        send = self.context.send
        assert send is not None
        name = f"{self.context.connector}-{self.context.task}"
        try:
            while True:
                value = {"connector": self.context.connector, "task": self.context.task, "seq": self.seq,
                         "worker": self.context.worker_id, "run": self.run,
                         "at": round(time.time() * 1000, 3)}  # fmt: skip
                # The record and the offset after it, together: the next run starts right after it.
                key = name if self.keys == 1 else f"{name}-{random.randrange(self.keys)}"
                await send(self.topic, key, value, source=(self.partition, {"seq": self.seq + 1}))
                self.seq += 1
                self.sent += 1
                await asyncio.sleep(1 / self.rate)
        except asyncio.CancelledError:
            raise
        except Exception as exc:  # noqa: BLE001 - any failure is the task's FAILED state
            self.context.fail(exc)

    async def stop(self) -> None:
        if self._running is not None:
            self._running.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await self._running

    def progress(self) -> dict[str, Any]:
        return {"seq": self.seq, "sent": self.sent, "rows": self.sent}


class VerifiableSource(Connector):
    type = "source"
    task_class = VerifiableSourceTask
    config_defs = [
        ConfigDef("topic", required=True, documentation="Where the records go."),
        ConfigDef("throughput", "INT", default="10", validate=non_negative_int,
                  documentation="Records per second per task (0: none)."),
        ConfigDef("keys.per.task", "INT", default="1", validate=positive_int,
                  documentation="Distinct keys each task writes, at random (above 1: over partitions)."),
    ]  # fmt: skip

    def task_configs(self, config: Mapping[str, str], max_tasks: int) -> list[dict[str, str]]:
        shared = {"topic": config["topic"], "throughput": config.get("throughput", "10")}
        if "keys.per.task" in config:
            shared["keys.per.task"] = config["keys.per.task"]
        return [dict(shared) for _ in range(max_tasks)]

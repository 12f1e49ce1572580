"""Statuses of connectors and tasks, and workers' presence, as the status topic says them.

Kafka Connect's status backing store: each worker reports the state (RUNNING, PAUSED, STOPPED,
FAILED with its trace, UNASSIGNED) of what it runs, at its generation, and every worker follows
the topic. A report from another worker at an older generation than the one recorded is out of
date (its former owner's UNASSIGNED landing after the new owner's RUNNING, or a worker cut off
meanwhile) and is neither kept nor written (Kafka Connect's `putSafe`), so a status names who
runs the item now, whichever worker is asked. A worker's own report is known to it at once;
its earlier reports of the same item, read back from the topic after it, do not undo it (a
task stopped and started again within a few milliseconds read as STOPPED until the topic
caught up).

Active topics (KIP-558): `status-topic-<topic>:connector-<connector>` records the first time a
connector's task writes to or reads from a topic, until the connector's topics are reset
(tombstones); every worker follows them, so any worker answers `GET .../topics`.

Presence records (`status-worker-<id>`) are this project's: `UP` with the worker's REST url
(and, on the connect protocol, its member id) when it starts, `LEFT` when it leaves for good.
They tell the computing worker a crash from a departure, a bounce from a new worker, and map a
classic member's url to its worker id.
"""

from __future__ import annotations

import asyncio
import json
import logging
import time
from collections.abc import Callable, Mapping
from typing import Any

from connect_rebalance.work import CONNECTOR, Work
from workers.config.worker import url_host_port
from workers.storage.config_state import encode_json
from workers.storage.topic_log import Handler, TopicLog

log = logging.getLogger(__name__)
PRESENCE_PREFIX = "status-worker-"
TOPIC_PREFIX, TOPIC_SEPARATOR = "status-topic-", ":connector-"
UNKNOWN = {"state": "UNASSIGNED", "worker_id": ""}
# Told of each status and presence record kept, with its timestamp (wall-clock s): the timeline.
StatusListener = Callable[[str, Mapping[str, Any], float], None]


def topic_key(connector: str, topic: str) -> bytes:
    """An active topic's record key, as Kafka Connect's status store writes it."""
    return f"{TOPIC_PREFIX}{topic}{TOPIC_SEPARATOR}{connector}".encode()


def item_of_key(key: str) -> Work | None:
    """The connector or task a status key names (None: a presence or topic record)."""
    if key.startswith("status-connector-"):
        return (key.removeprefix("status-connector-"), CONNECTOR)
    if key.startswith("status-task-"):
        name, _, index = key.removeprefix("status-task-").rpartition("-")
        if index.isdigit():
            return (name, int(index))
    return None


def status_key(item: Work) -> str:
    name, task = item
    return f"status-connector-{name}" if task == CONNECTOR else f"status-task-{name}-{task}"


class StatusStore:
    def __init__(self, log_of: Callable[[Handler], TopicLog], worker_id: str) -> None:
        """`log_of(handler)` makes the status topic's TopicLog, which feeds `handler`."""
        self.worker_id = worker_id
        self.statuses: dict[str, dict[str, Any]] = {}
        self._unread: dict[str, int] = {}  # this worker's writes of a key not read back yet
        self.topics: dict[str, dict[str, dict[str, Any]]] = {}  # connector -> topic -> its record
        self.listeners: list[StatusListener] = []
        self.log = log_of(self._on_record)

    def _on_record(
        self, key: bytes | None, value: bytes | None, partition: int, offset: int, timestamp_ms: int = 0
    ) -> None:
        if key is None:
            return
        name = key.decode()
        if name.startswith(TOPIC_PREFIX):
            self._on_topic(name, value)
            return
        if value is None:
            self.statuses.pop(name, None)
            return
        status = json.loads(value)
        if status.get("worker_id") == self.worker_id and self._read_back(name):
            return  # this worker reported the key again since: what it knows is newer
        if not name.startswith(PRESENCE_PREFIX) and _stale(status, self.statuses.get(name)):
            return
        self.statuses[name] = status
        for listener in self.listeners:
            listener(name, status, timestamp_ms / 1000)

    def _read_back(self, key: str) -> bool:
        """One of this worker's writes of `key` came back; True if a later one is on its way."""
        unread = self._unread.get(key, 0) - 1
        if unread > 0:
            self._unread[key] = unread
        else:
            self._unread.pop(key, None)
        return unread > 0

    async def read_to_end(self) -> None:
        await self.log.read_to_end()

    def report(self, item: Work, state: str, trace: str | None, generation: int) -> None:
        """This worker's status of `item` at `generation`: known here at once, written in the
        background (a status is reported, not waited for: stopping must not wait on it)."""
        key = status_key(item)
        value = {"state": state, "trace": trace, "worker_id": self.worker_id, "generation": generation}
        if _stale(value, self.statuses.get(key)):
            return  # another worker reported it at a newer generation: it runs it now
        self.statuses[key] = value
        self._unread[key] = self._unread.get(key, 0) + 1
        write = asyncio.ensure_future(self.log.write(key.encode(), encode_json(value)))
        write.add_done_callback(lambda done: self._settled(key, done))

    def _settled(self, key: str, write: asyncio.Future[Any]) -> None:
        if write.cancelled() or write.exception() is not None:
            self._read_back(key)  # it never comes back
            _log_failure(write)

    def _on_topic(self, key: str, value: bytes | None) -> None:
        topic, separator, connector = key[len(TOPIC_PREFIX) :].rpartition(TOPIC_SEPARATOR)
        if not separator:
            return
        if value is None:
            self.topics.get(connector, {}).pop(topic, None)
        else:
            self.topics.setdefault(connector, {})[topic] = json.loads(value).get("topic", {})

    def record_topic(self, connector: str, topic: str, task: int) -> None:
        """A topic the connector's task uses: written once (in the background), and known here
        at once; every later call for it is a dictionary lookup (a source calls it per record)."""
        if topic in self.topics.get(connector, {}):
            return
        value = {
            "name": topic,
            "connector": connector,
            "task": task,
            "discoverTimestamp": int(time.time() * 1000),
        }
        self.topics.setdefault(connector, {})[topic] = value
        write = asyncio.ensure_future(
            self.log.write(topic_key(connector, topic), encode_json({"topic": value}))
        )
        write.add_done_callback(_log_failure)

    def active_topics(self, connector: str) -> list[str]:
        return sorted(self.topics.get(connector, {}))

    async def reset_topics(self, connector: str) -> None:
        """Forget the connector's topics: a tombstone for each (until a task uses one again)."""
        for topic in self.active_topics(connector):
            self.topics[connector].pop(topic, None)
            await self.log.write(topic_key(connector, topic), None)

    async def announce(self, state: str, url: str, member_id: str | None) -> None:
        """This worker's presence, `UP` or `LEFT` (awaited: it must land before what follows)."""
        key = f"{PRESENCE_PREFIX}{self.worker_id}"
        value = {"state": state, "worker_id": self.worker_id, "url": url}
        if member_id is not None:
            value["member_id"] = member_id
        self.statuses[key] = value
        await self.log.write(key.encode(), encode_json(value))

    def status_of(self, item: Work) -> dict[str, Any]:
        """The item's last status, UNASSIGNED on no worker if none was reported."""
        return self.statuses.get(status_key(item), UNKNOWN)

    def reported(self, item: Work) -> bool:
        return status_key(item) in self.statuses

    def owners(self) -> dict[Work, str]:
        """The worker each connector and task last reported RUNNING on."""
        owners: dict[Work, str] = {}
        for key, value in self.statuses.items():
            if value.get("state") != "RUNNING" or not value.get("worker_id"):
                continue
            item = item_of_key(key)
            if item is not None:
                owners[item] = value["worker_id"]
        return owners

    def incarnations(self) -> dict[str, str]:
        """Worker id -> the member id its latest `UP` presence record names (connect protocol)."""
        return {
            worker: value["member_id"]
            for worker, value in self._presence()
            if value.get("state") == "UP" and value.get("member_id")
        }

    def tasks_still_running(self, connector: str) -> list[int]:
        """The connector's tasks whose last status is RUNNING or PAUSED on a worker that has not
        left: they may still be stopping after their configs went (a stop, a smaller tasks.max),
        and may still commit a batch or an offset."""
        left, prefix = self.left_workers(), f"status-task-{connector}-"
        return sorted(
            int(key.removeprefix(prefix))
            for key, value in self.statuses.items()
            if key.startswith(prefix) and key.removeprefix(prefix).isdigit()
            and value.get("state") in ("RUNNING", "PAUSED") and value.get("worker_id") not in left
        )  # fmt: skip

    def left_workers(self) -> set[str]:
        """Workers that left for good (their last presence record says LEFT)."""
        return {worker for worker, value in self._presence() if value.get("state") == "LEFT"}

    def worker_ids_by_url(self) -> dict[str, str]:
        """REST url -> worker id, from the presence records."""
        return {value["url"]: worker for worker, value in self._presence() if value.get("url")}

    def worker_id_of_url(self, url: str) -> str:
        """A classic member's worker id: the presence records', else Kafka Connect's host:port."""
        return self.worker_ids_by_url().get(url, url_host_port(url))

    def worker_url(self, worker_id: str, scheme: str) -> str:
        """A worker's REST url: from its presence record, else its id with `scheme`."""
        by_id = {worker: url for url, worker in self.worker_ids_by_url().items()}
        return by_id.get(worker_id, f"{scheme}://{worker_id}")

    async def close(self) -> None:
        await self.log.close()

    def _presence(self) -> list[tuple[str, Mapping[str, Any]]]:
        return [
            (key.removeprefix(PRESENCE_PREFIX), value)
            for key, value in self.statuses.items()
            if key.startswith(PRESENCE_PREFIX)
        ]


def _stale(status: Mapping[str, Any], current: Mapping[str, Any] | None) -> bool:
    """A report from another worker at an older generation than the one recorded."""
    if current is None or status.get("worker_id") == current.get("worker_id"):
        return False
    return int(status.get("generation", -1)) < int(current.get("generation", -1))


def _log_failure(future: asyncio.Future[Any]) -> None:
    if not future.cancelled() and future.exception() is not None:
        log.warning("status write failed: %s", future.exception())

"""Topics on disk: names, persistent topic ids, partition counts, configs and their logs.

Layout under the data directory:
    topics/<name>/topic.json      {"name", "topic_id", "partitions", "configs"} (atomic writes)
    topics/<name>/<partition>/    that partition's segments
A topic is deleted by renaming its directory into `deleted/` first (atomic), then removing
it, so a crash never leaves half a topic behind.
"""

from __future__ import annotations

import asyncio
import re
import shutil
import uuid
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path

from connect_rebalance.errors import ErrorCode, KafkaApiError
from coordinator.storage.files import fsync_dir, read_json, write_json_atomically
from coordinator.storage.partition_log import LogSettings, PartitionLog

LEGAL_TOPIC_NAME = re.compile(r"[a-zA-Z0-9._-]+")
MAX_TOPIC_NAME_LENGTH = 249
MAX_PARTITIONS = 10000
# Topics the coordinator writes itself: clients may read them but not write, grow or delete them.
INTERNAL_TOPICS = frozenset({"__consumer_offsets"})


def validate_topic_name(name: str | None) -> str:
    if not name:
        raise KafkaApiError(ErrorCode.INVALID_TOPIC_EXCEPTION, "topic name is empty")
    if name in (".", ".."):
        raise KafkaApiError(ErrorCode.INVALID_TOPIC_EXCEPTION, f"topic name {name!r} is not allowed")
    if len(name) > MAX_TOPIC_NAME_LENGTH:
        raise KafkaApiError(
            ErrorCode.INVALID_TOPIC_EXCEPTION, f"topic name is longer than {MAX_TOPIC_NAME_LENGTH} characters"
        )
    # fullmatch: `$` would also match before a trailing newline, and names become directories.
    if not LEGAL_TOPIC_NAME.fullmatch(name):
        raise KafkaApiError(
            ErrorCode.INVALID_TOPIC_EXCEPTION,
            f"topic name {name!r} has characters other than ASCII letters, digits, '.', '_' and '-'",
        )
    return name


@dataclass
class Topic:
    name: str
    topic_id: uuid.UUID
    configs: dict[str, str]
    directory: Path
    partitions: list[PartitionLog] = field(default_factory=list)

    @property
    def is_internal(self) -> bool:
        return self.name in INTERNAL_TOPICS

    def describe(self) -> dict[str, object]:
        return {
            "name": self.name,
            "topic_id": str(self.topic_id),
            "partitions": len(self.partitions),
            "configs": self.configs,
        }


class TopicStore:
    def __init__(
        self,
        root: Path,
        settings_for: Callable[[dict[str, str]], LogSettings],
        max_partitions: int = 2**31 - 1,
    ) -> None:
        """`max_partitions`: `max.broker.partitions`, what the topics may hold in all."""
        self.root = root
        self.max_partitions = max_partitions
        self.topics_dir = root / "topics"
        self.deleted_dir = root / "deleted"
        self._settings_for = settings_for
        self.topics: dict[str, Topic] = {}
        # Names whose files are being made on a thread (`create_off_loop`): taken until then.
        self._creating: dict[str, int] = {}  # name -> its partitions
        self._by_id: dict[uuid.UUID, Topic] = {}
        # Bumped whenever a topic appears, disappears or grows: readers of the metadata (the
        # group coordinator's subscriptions) know at a glance whether to look again.
        self.version = 0

    def open(self) -> None:
        self.topics_dir.mkdir(parents=True, exist_ok=True)
        if self.deleted_dir.exists():
            shutil.rmtree(self.deleted_dir)
        for directory in self.topics_dir.iterdir():
            if directory.is_dir() and not (directory / "topic.json").exists():
                # A create that never finished: topic.json is written last, so nothing was promised.
                shutil.rmtree(directory, ignore_errors=True)
        for meta in sorted(self.topics_dir.glob("*/topic.json")):
            data = read_json(meta)
            topic = Topic(data["name"], uuid.UUID(data["topic_id"]), dict(data["configs"]), meta.parent)
            settings = self._settings_for(topic.configs)
            topic.partitions = [
                PartitionLog.open(meta.parent / str(p), settings) for p in range(int(data["partitions"]))
            ]
            self._add(topic)

    def close(self) -> None:
        for topic in self.topics.values():
            for partition in topic.partitions:
                partition.close()

    def _add(self, topic: Topic) -> None:
        self.topics[topic.name] = topic
        self._by_id[topic.topic_id] = topic
        self.version += 1

    def get(self, name: str) -> Topic | None:
        return self.topics.get(name)

    def by_id(self, topic_id: uuid.UUID | None) -> Topic | None:
        return self._by_id.get(topic_id) if topic_id is not None else None

    def partition(self, name: str, index: int) -> PartitionLog:
        topic = self.topics.get(name)
        if topic is None or not 0 <= index < len(topic.partitions):
            raise KafkaApiError(ErrorCode.UNKNOWN_TOPIC_OR_PARTITION, f"{name}-{index} does not exist")
        return topic.partitions[index]

    def check_new_topic(self, name: str, partitions: int) -> None:
        validate_topic_name(name)
        if name in self.topics or name in self._creating:
            raise KafkaApiError(ErrorCode.TOPIC_ALREADY_EXISTS, f"topic {name!r} already exists")
        if "." in name or "_" in name:  # metric names cannot tell the two apart: Kafka refuses
            unified = name.replace(".", "_")
            for existing in (*self.topics, *self._creating):
                if existing.replace(".", "_") == unified:
                    raise KafkaApiError(
                        ErrorCode.INVALID_TOPIC_EXCEPTION,
                        f"Topic '{name}' collides with existing topic: {existing}",
                    )
        if not 1 <= partitions <= MAX_PARTITIONS:
            raise KafkaApiError(
                ErrorCode.INVALID_PARTITIONS,
                f"number of partitions must be 1..{MAX_PARTITIONS}, not {partitions}",
            )
        self._check_room(partitions)

    def partition_count(self) -> int:
        """Partitions the topics hold, and those being made."""
        return sum(len(t.partitions) for t in self.topics.values()) + sum(self._creating.values())

    def _check_room(self, more: int) -> None:
        held = self.partition_count()
        if held + more > self.max_partitions:
            raise KafkaApiError(
                ErrorCode.POLICY_VIOLATION,
                f"{more} more partitions would make {held + more}, over max.broker.partitions="
                f"{self.max_partitions}",
            )

    def create(self, name: str, partitions: int, configs: dict[str, str]) -> Topic:
        """Make a topic at once, for a few partitions (auto-creation, the internal topic)."""
        self.check_new_topic(name, partitions)
        topic = self._make(name, partitions, configs)
        self._add(topic)
        return topic

    async def create_off_loop(self, name: str, partitions: int, configs: dict[str, str]) -> Topic:
        """Make a topic with its files made on a thread: 10,000 partitions are 10,000
        directories and files, which would hold every other client up meanwhile. The name is
        taken from the start; the topic is seen, whole, once its files are all made."""
        self.check_new_topic(name, partitions)
        self._creating[name] = partitions
        try:
            topic = await asyncio.to_thread(self._make, name, partitions, configs)
        finally:
            del self._creating[name]
        self._add(topic)
        return topic

    def _make(self, name: str, partitions: int, configs: dict[str, str]) -> Topic:
        """The topic's directory, partitions and topic.json (written last: what `open` trusts)."""
        directory = self.topics_dir / name
        shutil.rmtree(directory, ignore_errors=True)  # left by a create that failed part-way
        directory.mkdir(parents=True)
        topic = Topic(name, uuid.uuid4(), dict(configs), directory)
        settings = self._settings_for(topic.configs)
        try:
            for p in range(partitions):
                topic.partitions.append(PartitionLog.open(directory / str(p), settings))
            self._write_meta(topic)
            fsync_dir(self.topics_dir)
        except OSError as exc:
            for partition in topic.partitions:
                partition.close()
            shutil.rmtree(directory, ignore_errors=True)
            raise KafkaApiError(
                ErrorCode.KAFKA_STORAGE_ERROR, f"cannot create topic {name!r}: {exc}"
            ) from exc
        return topic

    def update_configs(self, name: str, configs: dict[str, str]) -> Topic:
        """Set explicit configs of an existing topic (over the ones it has), durably, and apply
        them to its partitions' logs from their next append."""
        return self.replace_configs(name, {**self.topics[name].configs, **configs})

    def replace_configs(self, name: str, configs: dict[str, str]) -> Topic:
        """Make `configs` the topic's explicit configs (the others take their defaults again),
        durably, and apply them to its partitions' logs: appends and rolls follow them at
        once, retention and compaction from their next round."""
        topic = self.topics.get(name)
        if topic is None:  # deleted meanwhile
            raise KafkaApiError(ErrorCode.UNKNOWN_TOPIC_OR_PARTITION, f"topic {name!r} does not exist")
        before, topic.configs = topic.configs, dict(configs)
        try:
            self._write_meta(topic)
        except OSError as exc:
            topic.configs = before
            raise KafkaApiError(
                ErrorCode.KAFKA_STORAGE_ERROR, f"cannot write the configs of topic {name!r}: {exc}"
            ) from exc
        self._apply_settings(topic)
        return topic

    def refresh_settings(self) -> None:
        """Give every topic's partitions the settings their configs now resolve to: after
        the topic defaults changed (dynamic broker configs)."""
        for topic in list(self.topics.values()):
            self._apply_settings(topic)

    def _apply_settings(self, topic: Topic) -> None:
        settings = self._settings_for(topic.configs)
        for partition in topic.partitions:
            partition.settings = settings

    @staticmethod
    def _write_meta(topic: Topic) -> None:
        """topic.json: name, id, partition count and explicit configs, what `open` reads."""
        write_json_atomically(topic.directory / "topic.json", topic.describe())

    def check_partition_increase(self, name: str, total: int) -> Topic:
        topic = self.existing_user_topic(name)
        if not len(topic.partitions) < total <= MAX_PARTITIONS:
            raise KafkaApiError(
                ErrorCode.INVALID_PARTITIONS,
                f"topic {name!r} has {len(topic.partitions)} partitions; the new count must be larger "
                f"and at most {MAX_PARTITIONS}, not {total}",
            )
        self._check_room(total - len(topic.partitions))
        return topic

    async def add_partitions(self, name: str, total: int) -> Topic:
        """Grow a topic, its new partitions' files made on a thread (see `create_off_loop`)."""
        topic = self.check_partition_increase(name, total)
        settings = self._settings_for(topic.configs)
        first = len(topic.partitions)
        added = await asyncio.to_thread(
            lambda: [PartitionLog.open(topic.directory / str(p), settings) for p in range(first, total)]
        )
        if len(topic.partitions) != first or self.topics.get(name) is not topic:  # changed meanwhile
            for partition in added:
                partition.close()
            raise KafkaApiError(ErrorCode.INVALID_PARTITIONS, f"topic {name!r} changed while it was growing")
        topic.partitions.extend(added)
        self.version += 1
        self._write_meta(topic)
        return topic

    def existing_user_topic(self, name: str) -> Topic:
        topic = self.topics.get(name)
        if topic is None:
            raise KafkaApiError(ErrorCode.UNKNOWN_TOPIC_OR_PARTITION, f"topic {name!r} does not exist")
        if topic.is_internal:
            raise KafkaApiError(ErrorCode.INVALID_TOPIC_EXCEPTION, f"{name} is internal to the coordinator")
        return topic

    def delete(self, name: str) -> Topic:
        topic = self.existing_user_topic(name)
        self.deleted_dir.mkdir(exist_ok=True)
        graveyard = self.deleted_dir / topic.topic_id.hex  # names can be 249 characters; ids are short
        topic.directory.rename(graveyard)
        fsync_dir(self.topics_dir)
        for partition in topic.partitions:
            partition.close()
            partition.wake_waiters()
        shutil.rmtree(graveyard, ignore_errors=True)
        del self.topics[name]
        del self._by_id[topic.topic_id]
        self.version += 1
        return topic

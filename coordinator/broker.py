"""The broker's state: data directory, cluster identity, topics and producer ids.

This is what request handlers act on. It owns the data directory exclusively (a lock file
stops a second coordinator from opening it) and runs the periodic work Kafka's log manager
does: retention and time-based flushing.
"""

from __future__ import annotations

import asyncio
import base64
import contextlib
import errno
import fcntl
import logging
import os
import time
import uuid
from pathlib import Path
from typing import TYPE_CHECKING

from connect_rebalance.errors import ErrorCode, KafkaApiError
from coordinator.configs.broker import DynamicBrokerConfigs
from coordinator.configs.coordinator import CoordinatorConfig
from coordinator.configs.topics import log_settings
from coordinator.storage.files import read_json, write_json_atomically
from coordinator.storage.partition_log import now_ms
from coordinator.storage.producer_fences import ProducerFences
from coordinator.storage.segment import Segment
from coordinator.storage.topic_store import Topic, TopicStore, validate_topic_name

if TYPE_CHECKING:
    from coordinator.quotas.rates import Throttles
    from coordinator.security.authorizer import StandardAuthorizer
    from coordinator.security.store import SecurityStore

log = logging.getLogger(__name__)

PRODUCER_ID_BLOCK = 1000
# How often partitions are checked against their flush.ms; only those due are fsynced.
FLUSH_SCHEDULER_INTERVAL_MS = 100
IDLE_RATES_CHECK_MS = 60_000  # how often quota rates with nothing left in their window are dropped


def kafka_uuid_string(value: uuid.UUID) -> str:
    """Kafka prints ids (cluster id, topic ids) as 22-character URL-safe base64."""
    return base64.urlsafe_b64encode(value.bytes).rstrip(b"=").decode()


class DataDirectoryLocked(RuntimeError):
    pass


def lock_data_dir(data_dir: Path) -> int:
    """Take the data directory for this process alone (a lock file); returns the lock's fd."""
    data_dir.mkdir(parents=True, exist_ok=True)
    fd = os.open(data_dir / ".lock", os.O_RDWR | os.O_CREAT, 0o644)
    try:
        fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
    except BlockingIOError as exc:
        os.close(fd)
        raise DataDirectoryLocked(f"{data_dir} is in use by another coordinator") from exc
    return fd


class ProducerIdAllocator:
    """Hands out producer ids that are never reused, even across crashes.

    The upper bound of the current block is persisted before any id in it is handed out.
    """

    def __init__(self, path: Path) -> None:
        self.path = path
        self._next = read_json(path)["block_end"] if path.exists() else 0
        self._block_end = self._next

    def allocate(self) -> int:
        if self._next >= self._block_end:
            self._block_end = self._next + PRODUCER_ID_BLOCK
            write_json_atomically(self.path, {"block_end": self._block_end})
        pid = self._next
        self._next += 1
        return pid


class Broker:
    def __init__(self, config: CoordinatorConfig) -> None:
        # The settings from the properties file, and those with the dynamic broker configs
        # (AlterConfigs on the BROKER resource) merged in, which everything else reads.
        self.static_config = config
        self.config = config
        self.dynamic_configs = DynamicBrokerConfigs()
        self.data_dir = Path(config.log_dirs)
        self.node_id = config.node_id
        self.cluster_id = ""
        self.topics = TopicStore(
            self.data_dir, lambda explicit: log_settings(explicit, self.config), config.max_broker_partitions
        )
        self.producer_ids: ProducerIdAllocator | None = None
        self.fences: ProducerFences | None = None  # fenced producers' epochs (InitFencedProducer)
        # What Metadata tells clients to connect to; the server fills in a port bound as 0.
        self.advertised_address: tuple[str, int] = config.advertised
        self._lock_fd: int | None = None
        self._tasks: list[asyncio.Task[None]] = []
        self._compaction_wanted = asyncio.Event()  # set by compaction_due: the cleaner runs now
        # SCRAM credentials and ACLs, and the authorizer when authorizer.class.name names one.
        self.security: SecurityStore | None = None
        self.authorizer: StandardAuthorizer | None = None
        # Client quotas' measured byte rates, set with the security store that holds the bounds.
        self.throttles: Throttles | None = None

    # -- lifecycle ------------------------------------------------------------------------

    def open(self) -> None:
        self._lock_fd = lock_data_dir(self.data_dir)
        meta = self.data_dir / "meta.json"
        if meta.exists():
            self.cluster_id = read_json(meta)["cluster_id"]
        else:
            self.cluster_id = kafka_uuid_string(uuid.uuid4())
            write_json_atomically(meta, {"cluster_id": self.cluster_id, "format": 1})
        self.producer_ids = ProducerIdAllocator(self.data_dir / "producer_ids.json")
        self.fences = ProducerFences(self.data_dir / "producer_fences.jsonl", self.producer_ids.allocate)
        self._load_dynamic_configs()
        self.topics.open()

    # -- dynamic broker configs -------------------------------------------------------------

    @property
    def _dynamic_configs_path(self) -> Path:
        return self.data_dir / "broker_configs.json"

    def _load_dynamic_configs(self) -> None:
        """The dynamic broker configs a previous run was given, over the properties file."""
        path = self._dynamic_configs_path
        if not path.exists():
            return
        stored = read_json(path)
        dynamic = DynamicBrokerConfigs(dict(stored["broker"]), dict(stored["default"]))
        try:
            self.config = dynamic.applied_to(self.static_config)
        except KafkaApiError as exc:
            raise RuntimeError(f"{path}: {exc.message}; remove the config from it to start") from exc
        self.dynamic_configs = dynamic
        log.info("dynamic broker configs: %s", {**dynamic.default, **dynamic.own})

    def replace_dynamic_configs(self, dynamic: DynamicBrokerConfigs, config: CoordinatorConfig) -> None:
        """Make `dynamic` the broker's dynamic configs and `config` (the properties file's
        settings with them merged in, broker_configs.changed) its config: durably first, then
        applied to every topic's partitions, whose appends and rolls follow at once and
        retention and compaction from their next round. Blocking: run it off the loop."""
        try:
            write_json_atomically(
                self._dynamic_configs_path, {"broker": dynamic.own, "default": dynamic.default}
            )
        except OSError as exc:
            raise KafkaApiError(
                ErrorCode.KAFKA_STORAGE_ERROR, f"cannot write the broker's configs: {exc}"
            ) from exc
        self.dynamic_configs, self.config = dynamic, config
        self.topics.refresh_settings()

    def start_background(self) -> None:
        self._tasks.append(
            asyncio.create_task(
                self._every(self.config.log_retention_check_interval_ms, self.enforce_retention)
            )
        )
        self._tasks.append(asyncio.create_task(self._flush_scheduler()))
        self._tasks.append(asyncio.create_task(self._every(IDLE_RATES_CHECK_MS, self.forget_idle_rates)))
        self._tasks.append(
            asyncio.create_task(
                self._every(self.config.log_cleaner_backoff_ms, self.compact_logs, self._compaction_wanted)
            )
        )

    async def close(self) -> None:
        for task in self._tasks:
            task.cancel()
        for task in self._tasks:
            with contextlib.suppress(asyncio.CancelledError):
                await task
        self._tasks.clear()
        self.flush_all()
        self.topics.close()
        if self.fences is not None:
            self.fences.close()
        if self._lock_fd is not None:
            os.close(self._lock_fd)
            self._lock_fd = None

    async def _every(self, interval_ms: int, work, wake: asyncio.Event | None = None) -> None:  # type: ignore[no-untyped-def]
        """Run `work` every `interval_ms`, or as soon as `wake` is set."""
        while True:
            if wake is None:
                await asyncio.sleep(interval_ms / 1000)
            else:
                with contextlib.suppress(TimeoutError):
                    await asyncio.wait_for(wake.wait(), interval_ms / 1000)
                wake.clear()
            try:
                done = work()
                if done is not None:  # work that runs off the event loop
                    await done
            except Exception:  # periodic work must not stop; the next round tries again
                log.exception("periodic %s failed", getattr(work, "__name__", work))

    def forget_idle_rates(self) -> None:
        if self.throttles is not None:
            self.throttles.forget_idle(now_ms())

    def compaction_due(self) -> None:
        """A log is ready for compaction now (`__consumer_offsets`, whose size is what a
        restart replays, says so as it rolls): the cleaner does not wait out its backoff."""
        self._compaction_wanted.set()

    def enforce_retention(self) -> None:
        now = now_ms()
        for topic in list(self.topics.topics.values()):
            for index, partition in enumerate(topic.partitions):
                deleted = partition.enforce_retention(now)
                if deleted:
                    log.info("retention deleted %d segment(s) of %s-%d", deleted, topic.name, index)

    async def _flush_scheduler(self) -> None:
        """fsync partitions whose flush.ms has passed, on a thread so serving goes on."""
        while True:
            await asyncio.sleep(FLUSH_SCHEDULER_INTERVAL_MS / 1000)
            now = now_ms()
            due = [
                partition.begin_flush()
                for topic in self.topics.topics.values()
                for partition in topic.partitions
                if partition.flush_due(now)
            ]
            if due:
                await asyncio.to_thread(_fsync_segments, due)

    async def compact_logs(self) -> None:
        """Compact each partition that sealed a segment since its last compaction, on a thread:
        rewriting 100 MB of `__consumer_offsets` takes seconds, which the event loop must not
        wait for. Appends and reads of the partition go on meanwhile (`PartitionLog.compact`
        takes its lock only to swap the cleaned segments in)."""
        now = now_ms()
        for topic in list(self.topics.topics.values()):
            for index, partition in enumerate(topic.partitions):
                if partition.needs_compaction():
                    started = time.monotonic()
                    try:
                        freed = await asyncio.to_thread(partition.compact, now)
                    except Exception:  # one bad partition must not stop the cleaning of the others
                        log.exception("compaction of %s-%d failed", topic.name, index)
                        continue
                    took_ms = round((time.monotonic() - started) * 1000)
                    if freed is None:
                        log.info(
                            "compaction of %s-%d given up after %d ms: closed", topic.name, index, took_ms
                        )
                    else:
                        log.info(
                            "compacted %s-%d in %d ms: %d bytes freed", topic.name, index, took_ms, freed
                        )

    def flush_all(self) -> None:
        for topic in self.topics.topics.values():
            for partition in topic.partitions:
                partition.flush()

    # -- topics ---------------------------------------------------------------------------

    def topic_for_request(self, name: str, allow_auto_create: bool) -> Topic:
        """The named topic, auto-created if the broker and the request allow it."""
        topic = self.topics.get(name)
        if topic is not None:
            return topic
        validate_topic_name(name)
        if not (allow_auto_create and self.config.auto_create_topics_enable):
            raise KafkaApiError(ErrorCode.UNKNOWN_TOPIC_OR_PARTITION, f"topic {name!r} does not exist")
        log.info("auto-creating topic %s with %d partition(s)", name, self.config.num_partitions)
        return self.topics.create(name, self.config.num_partitions, {})


def _fsync_segments(segments: list[Segment]) -> None:
    for segment in segments:
        try:
            segment.flush()
        except OSError as exc:
            if exc.errno not in (errno.EBADF, errno.ENOENT):  # closed, or its topic deleted, meanwhile
                log.error("fsync of %s failed: %s", segment.log_path, exc)

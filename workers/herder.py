"""The herder: runs the connectors and tasks a worker is assigned, from the cluster's config.

Kafka Connect's DistributedHerder, on the connect group protocol:
- the config topic is followed into a `ConfigState`; the worker that computed the group's
  current target is the *leader*: it reports config changes to the group through its
  assignor metadata (the config offset), which starts a new group epoch, so a new or
  deleted connector, or new task configs, lead to one new target — a burst of changes
  within the debounce window leads to one;
- assignment and revocation come from the membership (`on_assigned` / `on_revoked` in
  Kafka Connect's words): revoked work is stopped before the heartbeat that acknowledges it;
  assigned work is started once the config has been read up to the offset the target was
  computed from;
- only the leader writes the config topic: REST writes made on a follower are forwarded to
  it, and a connector's owner sends the task configs its connector generated to it
  (`internal_requests`, signed with the session key the leader keeps in the config topic),
  and the leader writes them with their commit record, as Kafka Connect's leader does;
- statuses (RUNNING, PAUSED, STOPPED, FAILED with trace, UNASSIGNED) go to the status topic
  and source offsets to the offset topic.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import logging
import time
import traceback
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from connect_rebalance.connect_protocol import NO_ERROR, ConnectAssignment, encode_assignment
from connect_rebalance.protocol.connect_group import ClientAssignor, InstalledMember
from connect_rebalance.work import CONNECTOR, Work, work_of

from . import assignors, lost_work
from .config_state import PAUSED, STARTED, STOPPED, ConfigState, decode_json, encode_json
from .connect_membership import Assignment, ConnectMembership, InstallPlan
from .fenced_output import OutputConnection, TaskFenced, fence_id
from .internal_requests import send_task_configs
from .offset_store import OffsetStore
from .plugins import Connector, Task, TaskContext, find_plugin
from .session_key import RECORD_KEY as SESSION_KEY_RECORD
from .session_key import SessionKey
from .spark_runtime import SparkRuntime
from .spark_task import SparkTask
from .task_writes import TaskWrites
from .topic_log import TopicLog, ensure_topics
from .worker_config import WorkerConfig, url_host_port

if TYPE_CHECKING:
    from .classic_membership import ClassicMembership

log = logging.getLogger(__name__)
PRESENCE_PREFIX = "status-worker-"  # status-topic records: a worker's UP or LEFT
CONFIG_QUIET_S = 1.0  # config changes closer than this are one burst (one rebalance)
CONFIG_BURST_MAX_S = 5.0  # ... up to this long
LEFT_WRITE_TIMEOUT_S = 2.0  # the LEFT presence record, when stopping; the coordinator may be gone


@dataclass
class LeaderInfo:
    """What the computing worker tells every worker with its target (assignment metadata)."""

    leader: str = ""
    leader_url: str = ""
    config_offset: int = 0
    delay_ms: int = 0
    assignor: str = ""  # the assignor that computed the target (classic: the embedded protocol)

    def encode(self) -> bytes:
        return json.dumps(self.__dict__).encode()

    @classmethod
    def decode(cls, data: bytes) -> LeaderInfo:
        """What the computing worker sent; fields this worker does not know are left out."""
        try:
            fields = json.loads(data) if data else {}
            return cls(**{k: v for k, v in fields.items() if k in cls.__dataclass_fields__})
        except (ValueError, TypeError, AttributeError):
            return cls()


@dataclass
class Running:
    """A connector or task this worker runs (or holds, paused)."""

    item: Work
    instance: Connector | Task | None = None
    state: str = "UNASSIGNED"
    trace: str | None = None
    config: dict[str, str] = field(default_factory=dict)
    writes: TaskWrites | None = None  # a task run's records and offsets, through its fence


class Herder:
    def __init__(self, config: WorkerConfig) -> None:
        self.config = config
        self.worker_id = config.worker_id
        self.state = ConfigState()
        self.statuses: dict[str, dict[str, Any]] = {}
        self.running: dict[Work, Running] = {}
        self.leader = LeaderInfo()
        self.reason = 0
        self.ready = asyncio.Event()
        self.kafka_cluster_id = ""  # the coordinator's, read at start (GET / reports it)
        self.started_by_connector: dict[str, int] = {}
        self.stopped_by_connector: dict[str, int] = {}
        self._config_changed = asyncio.Event()
        self._announced_offset: int | None = None  # the config offset the last burst ended at
        self._announced_connectors: set[str] = set()  # the connectors at that offset
        self._placed: set[str] = set()  # connectors new at that offset (their tasks are due next)
        self._tasks: list[asyncio.Task[Any]] = []
        self._lock = asyncio.Lock()  # one lifecycle change at a time
        # The computing worker's memory: who last ran each item, and work held for lost workers.
        self._memory = lost_work.ComputingMemory()
        self._rebalance_timer: asyncio.TimerHandle | None = None
        self._key_keeper: asyncio.Future[None] | None = None  # the leader's session-key renewal
        self._background: set[asyncio.Future[None]] = set()
        self._senders: dict[str, asyncio.Future[None]] = {}  # task configs on their way to the leader
        self._assigned: dict[Work, int] = {}  # times each item was assigned or revoked
        # One SparkSession per worker for every Spark task (started in `start` if warm-up is on).
        self.spark = SparkRuntime(
            config.spark_master, config.spark_settings, config.checkpoint_dir,
            config.task_shutdown_graceful_timeout_ms, self.worker_id,
        )  # fmt: skip
        bootstrap, security = config.bootstrap_servers, config.client_security()
        self.config_log = TopicLog(
            bootstrap, config.config_storage_topic, self._on_config, self.worker_id, security
        )
        self.status_log = TopicLog(
            bootstrap, config.status_storage_topic, self._on_status, self.worker_id, security
        )
        self.offset_store = OffsetStore(
            lambda handler: TopicLog(
                bootstrap, config.offset_storage_topic, handler, self.worker_id, security
            )
        )
        self.offset_log = self.offset_store.log
        # Tasks' records and source offsets, fenced by epoch, connected as `producer.*` says (the
        # whole of their security, as in Kafka Connect).
        self.output = OutputConnection(
            bootstrap, f"{self.worker_id}-task-output", config.client_security("producer.")
        )
        # TLS of this worker's calls to other workers' REST APIs (forwards, task configs).
        rest_tls = config.rest_tls
        self.rest_client_tls = rest_tls.client_context() if rest_tls is not None else None
        self.membership: ConnectMembership | ClassicMembership
        if config.group_protocol == "classic":
            from .classic_membership import ClassicMembership

            self.membership = ClassicMembership.for_worker(
                config, self, self._snapshot, self.plan_classic_target
            )
        else:
            self.membership = ConnectMembership(
                bootstrap, config.group_id, config.member_id, config.rest_url, self, self._compute,
                self._assignors, rebalance_timeout_ms=config.rebalance_timeout_ms,
                session_timeout_ms=config.session_timeout_ms, security=security,
            )  # fmt: skip

    # -- start and stop -------------------------------------------------------------------

    async def start(self) -> None:
        config = self.config
        bootstrap, admin = config.bootstrap_servers, config.client_security("admin.")
        topics = {
            config.config_storage_topic: 1,
            config.status_storage_topic: 5,
            config.offset_storage_topic: 25,
        }
        self.kafka_cluster_id = await asyncio.to_thread(ensure_topics, bootstrap, topics, security=admin)
        # The three logs are read side by side: a joining worker's start-up is part of its join.
        await asyncio.gather(*(t.start() for t in (self.config_log, self.status_log, self.offset_log)))
        self._announced_offset = self.state.offset  # what this worker joins with
        self._announced_connectors = set(self.state.connectors)
        await self._write_presence("UP")  # before joining: a bounce is not a departure
        self.membership_run = asyncio.create_task(self.membership.run())  # ends only by leaving or refusal
        self._tasks.append(self.membership_run)
        self._tasks.append(asyncio.create_task(self._report_config_changes()))
        if self.config.spark_session_warmup:
            self._warming = asyncio.create_task(asyncio.to_thread(self.spark.warm))
        self.ready.set()

    async def stop(self) -> None:
        """Leave the group for good: every connector and task stops and moves at once."""
        # Said before leaving, so the computing worker hands the work out without a delay.
        with contextlib.suppress(Exception):
            await asyncio.wait_for(self._write_presence("LEFT"), LEFT_WRITE_TIMEOUT_S)
        await self.membership.leave()
        for task in [*self._tasks, *self._background]:
            task.cancel()
        await asyncio.gather(*self._tasks, *self._background, return_exceptions=True)
        closing = [t.close() for t in (self.config_log, self.status_log, self.offset_log)]
        closing += [self.output.close(), asyncio.to_thread(self.spark.close)]
        for result in await asyncio.gather(*closing, return_exceptions=True):
            if isinstance(result, Exception):  # the coordinator may be gone: closing goes on
                log.warning("closing: %s", result)

    # -- the config topic -----------------------------------------------------------------

    def _on_config(self, key: bytes | None, value: bytes | None, partition: int, offset: int) -> None:
        if key is None:
            return
        name = key.decode()
        before = self.state.work(), dict(self.state.target_states)
        config_before = None
        if name.startswith("connector-"):
            config_before = self.state.connectors.get(name[len("connector-") :])
        committed = name[len("commit-") :] if name.startswith("commit-") else None
        tasks_before = self.state.tasks.get(committed) if committed is not None else None
        self.state.apply(name, decode_json(value), offset)
        if committed is not None and self.state.tasks.get(committed) != tasks_before:
            asyncio.ensure_future(self._restart_reconfigured_tasks(committed))
        if (self.state.work(), self.state.target_states) != before:
            self._config_changed.set()
        if name.startswith("connector-") and config_before is not None:
            connector = name[len("connector-") :]
            changed = self.state.connectors.get(connector) not in (None, config_before)
            if changed and (connector, CONNECTOR) in self.running:
                asyncio.ensure_future(self._reconfigure(connector))
        if name.startswith("restart-connector-") and value is not None:
            connector, request = name[len("restart-connector-") :], json.loads(value)
            asyncio.ensure_future(self._restart_connector(connector, request))
        if name.startswith("target-state-"):
            connector = name[len("target-state-") :]
            for item in [i for i in self.running if i[0] == connector]:
                asyncio.ensure_future(self._apply_target_state(item))

    async def _report_config_changes(self) -> None:
        """The leader tells the group when the work changed: once per burst of changes.

        A burst (a script creating connectors one after another, connectors writing their
        task configs) ends once the config topic has been quiet for CONFIG_QUIET_S and every
        connector placed by the previous announcement has written its task configs, or after
        CONFIG_BURST_MAX_S; only then is the new config offset announced (connect protocol:
        in the assignor metadata, which starts a new epoch; classic: a rejoin). Waiting for
        the placed connectors' task configs makes their tasks one epoch, however the
        workers' heartbeats and connector starts are spread in time.
        """
        loop = asyncio.get_running_loop()
        while True:
            await self._config_changed.wait()
            until = loop.time() + CONFIG_BURST_MAX_S
            while True:
                self._config_changed.clear()
                quiet = min(CONFIG_QUIET_S, until - loop.time())
                if quiet <= 0:
                    break
                try:
                    await asyncio.wait_for(self._config_changed.wait(), quiet)
                except TimeoutError:
                    if not self._tasks_pending():
                        break
                    with contextlib.suppress(TimeoutError):  # a placed connector's tasks are due
                        await asyncio.wait_for(self._config_changed.wait(), until - loop.time())
            self._placed = set(self.state.connectors) - self._announced_connectors
            self._announced_connectors = set(self.state.connectors)
            self._announced_offset = self.state.offset
            if self.is_leader():
                self.membership.heartbeat_now()

    def _tasks_pending(self) -> bool:
        """A connector the last announcement placed has not written its task configs yet."""
        state = self.state
        return any(
            name in state.connectors and name not in state.tasks and state.target_state(name) != STOPPED
            for name in self._placed
        )

    def is_leader(self) -> bool:
        return bool(self.leader.leader) and self.leader.leader == self.membership.member_id

    async def _snapshot(self) -> tuple[frozenset[Work], int]:
        """The config read to its end: what a classic group's leader assigns from."""
        await self.config_log.read_to_end()
        return self.state.work(), self.state.offset

    def _assignors(self) -> list[ClientAssignor]:
        """The client assignors `connect.protocol` offers, each with this worker's metadata."""
        metadata = json.dumps(
            {
                "url": self.config.rest_url,
                "worker_id": self.worker_id,
                "config_offset": self._reported_offset(),
            }
        ).encode()
        version = assignors.METADATA_VERSION
        return [
            ClientAssignor(name, version, version, version, metadata, self.reason)
            for name in assignors.offered(self.config.connect_protocol)
        ]

    def _reported_offset(self) -> int:
        # Followers keep reporting the offset they joined with, so only the leader's changes
        # start new epochs, and the leader's only once a burst of changes is over.
        if self.is_leader() or not self.leader.leader:
            announced = self._announced_offset
            self._last_reported = self.state.offset if announced is None else announced
        return getattr(self, "_last_reported", self.state.offset)

    # -- computing the target (when chosen) -----------------------------------------------

    async def _compute(self, prepared: dict[str, Any]) -> InstallPlan:
        """The target by the assignor the coordinator selected: incremental (sticky and balanced,
        a lost worker's work held for the scheduled delay) or eager (dealt out afresh)."""
        await self.config_log.read_to_end()
        await self.status_log.read_to_end()
        work = self.state.work()
        by_url = self._worker_ids_by_url()
        members = {m["member_id"]: _worker_id_of(m, by_url) for m in prepared["members"]}
        current = {m["member_id"]: work_of(m["target_connectors_and_tasks"]) for m in prepared["members"]}
        # A worker restarted before its old member's session expired is in the group twice:
        # the member its latest presence record names is the live one, and takes over the
        # old one's work (which the coordinator hands over once the old session expires).
        incarnation = self._incarnations()
        stale = {m for m, worker in members.items() if incarnation.get(worker, m) != m}
        live = {m: worker for m, worker in members.items() if m not in stale}
        assignor = prepared["assignor_name"]
        target, delay_ms = await self.plan_target(
            live, {m: current[m] for m in live}, work, prepared["assignment_epoch"], prepared["group_epoch"],
            assignor,
        )  # fmt: skip
        target.update(dict.fromkeys(stale, frozenset()))
        self._schedule_rebalance(delay_ms / 1000 if delay_ms else None)
        info = LeaderInfo(self.config.member_id, self.config.rest_url, self.state.offset, delay_ms, assignor)
        classic = {
            m["member_id"]: m["assignor"]["metadata_version"] for m in prepared["members"] if _is_classic(m)
        }
        declared = frozenset().union(*target.values()) if target else frozenset()
        return InstallPlan(declared, [
            InstalledMember(m, items, assignors.METADATA_VERSION, info.encode()) if m not in classic
            else InstalledMember(m, items, classic[m], _classic_header(classic[m], info))
            for m, items in target.items()
        ])  # fmt: skip

    async def plan_target(
        self,
        members: Mapping[str, str],
        current: Mapping[str, frozenset[Work]],
        work: frozenset[Work],
        previous_epoch: int,
        epoch: int,
        assignor: str = assignors.SESSIONED,
    ) -> tuple[dict[str, frozenset[Work]], int]:
        """Each member's target for `epoch` by `assignor` (members map member id -> worker id)
        and, while a lost worker's work is held, the milliseconds until its delay ends (else 0).
        Both protocols' computing worker uses it: the connect group's, and a classic group's
        leader for incremental cooperative assignments."""
        await self.status_log.read_to_end()  # who left on purpose, who ran what
        memory = self._memory
        memory.recall(previous_epoch, epoch)
        now = time.monotonic()
        target, memory.held = assignors.plan(
            assignor, members, current, work, {**self._status_owners(), **memory.last_owner},
            self._left_workers(), memory.held, now, self.config.scheduled_rebalance_max_delay_ms / 1000,
        )  # fmt: skip
        for member, items in target.items():
            memory.last_owner.update(dict.fromkeys(items, members[member]))
        deadline = memory.held.next_deadline()
        return target, 0 if deadline is None else max(1, int((deadline - now) * 1000))

    async def plan_classic_target(
        self,
        urls: Mapping[str, str],
        owned: Mapping[str, frozenset[Work]],
        work: frozenset[Work],
        generation: int,
    ) -> tuple[dict[str, frozenset[Work]], int]:
        """`plan_target` for a classic group's leader, whose members (member id -> REST url)
        are known by url only: the presence records say which worker id (`worker.id`, which
        may differ from the url) each url belongs to; Kafka Connect's host:port otherwise."""
        await self.status_log.read_to_end()
        by_url = self._worker_ids_by_url()
        members = {m: by_url.get(url, url_host_port(url)) for m, url in urls.items()}
        return await self.plan_target(members, owned, work, generation - 1, generation)

    def worker_url(self, worker_id: str) -> str:
        """A worker's REST url: from its presence record, else its id with this worker's scheme."""
        by_id = {worker: url for url, worker in self._worker_ids_by_url().items()}
        return by_id.get(worker_id, f"{self.config.rest_url.split('://', 1)[0]}://{worker_id}")

    def _worker_ids_by_url(self) -> dict[str, str]:
        """REST url -> worker id, from the presence records (for members known by url only)."""
        return {
            value["url"]: key.removeprefix(PRESENCE_PREFIX)
            for key, value in self.statuses.items()
            if key.startswith(PRESENCE_PREFIX) and value.get("url")
        }

    def _schedule_rebalance(self, after_s: float | None) -> None:
        """When held work's delay ends, a new assignor reason starts a new group epoch."""
        if self._rebalance_timer is not None:
            self._rebalance_timer.cancel()
            self._rebalance_timer = None
        if after_s is None:
            return

        def due() -> None:
            self._rebalance_timer = None
            self.reason += 1
            log.info("the scheduled rebalance is due: assignor reason %d", self.reason)
            if isinstance(self.membership, ConnectMembership):
                self.membership.heartbeat_now()

        self._rebalance_timer = asyncio.get_running_loop().call_later(max(after_s, 0) + 0.05, due)

    def _status_owners(self) -> dict[Work, str]:
        """The worker each connector and task last reported RUNNING on (the status topic)."""
        owners: dict[Work, str] = {}
        for key, value in self.statuses.items():
            if value.get("state") != "RUNNING" or not value.get("worker_id"):
                continue
            if key.startswith("status-connector-"):
                owners[(key.removeprefix("status-connector-"), CONNECTOR)] = value["worker_id"]
            elif key.startswith("status-task-"):
                name, _, index = key.removeprefix("status-task-").rpartition("-")
                if index.isdigit():
                    owners[(name, int(index))] = value["worker_id"]
        return owners

    def _incarnations(self) -> dict[str, str]:
        """Worker id -> the member id its latest `UP` presence record names (connect protocol)."""
        return {
            key.removeprefix(PRESENCE_PREFIX): value["member_id"]
            for key, value in self.statuses.items()
            if key.startswith(PRESENCE_PREFIX) and value.get("state") == "UP" and value.get("member_id")
        }

    def _left_workers(self) -> set[str]:
        return {
            key.removeprefix(PRESENCE_PREFIX)
            for key, value in self.statuses.items()
            if key.startswith(PRESENCE_PREFIX) and value.get("state") == "LEFT"
        }

    async def _write_presence(self, state: str) -> None:
        """`UP` when this worker starts, `LEFT` when it leaves for good (awaited: it must land first)."""
        key = f"{PRESENCE_PREFIX}{self.worker_id}"
        value = {"state": state, "worker_id": self.worker_id, "url": self.config.rest_url}
        if self.config.group_protocol == "connect":
            value["member_id"] = self.config.member_id
        self.statuses[key] = value
        await self.status_log.write(key.encode(), encode_json(value))

    # -- assignment and revocation (the membership's listener) -----------------------------

    async def start_work(self, work: frozenset[Work], assignment: Assignment) -> None:
        self.leader = LeaderInfo.decode(assignment.metadata)
        keeping = self._key_keeper is not None and not self._key_keeper.done()
        if self.signs_requests and self.is_leader() and not keeping:
            self._key_keeper = self._spawn(self._keep_session_key())
        assigned = {item: self._reassigned(item) for item in work}
        if self.state.offset < self.leader.config_offset:
            await self.config_log.read_to_end()
        if any(self._is_spark_task(item) for item in work):
            # The SparkSession may take tens of seconds to start: wait outside the lock, so a
            # revocation (or the watchdog) meanwhile is not held up behind it.
            with contextlib.suppress(Exception):  # a task's start reports it, with its trace
                await asyncio.to_thread(self.spark.session)
        async with self._lock:
            # Skipped: revoked (or assigned anew) while this start waited.
            starting = [item for item in sorted(work) if self._assigned.get(item) == assigned[item]]
            for item in starting:
                self.running[item] = Running(item)
            # Lightweight connectors and tasks start together (their status writes share
            # batches: a thousand tasks start in a fraction of the session, so the lock is
            # free again before a revocation needs it); Spark queries start one at a time.
            spark = [item for item in starting if self._is_spark_task(item)]
            await asyncio.gather(*(self._start(item) for item in starting if item not in spark))
            for item in spark:
                await self._start(item)

    def _reassigned(self, item: Work) -> int:
        """A new assignment or revocation of `item`: starts waiting for an older one skip it."""
        self._assigned[item] = self._assigned.get(item, 0) + 1
        return self._assigned[item]

    def _is_spark_task(self, item: Work) -> bool:
        config = self.state.connectors.get(item[0])
        plugin = find_plugin(config.get("connector.class", "")) if config and item[1] != CONNECTOR else None
        return plugin is not None and issubclass(plugin.task_class, SparkTask)

    async def stop_work(self, work: frozenset[Work]) -> None:
        for item in work:
            self._reassigned(item)
        async with self._lock:
            await asyncio.gather(*(self._stop(item, "UNASSIGNED") for item in work if item in self.running))
            for item in work:
                self.running.pop(item, None)

    async def _start(self, item: Work) -> None:
        runner = self.running[item]
        name, task = item
        if task != CONNECTOR and int(task) >= len(self.state.tasks.get(name, [])):
            # Its config is gone (the connector was stopped, or now has fewer tasks): the
            # rebalance the change starts revokes it; configs committed first start it
            # (_restart_reconfigured_tasks). Starting it now would fail with no config.
            runner.state = "UNASSIGNED"
            return
        target = self.state.target_state(name)
        if target in (PAUSED, STOPPED):
            runner.state = target if task == CONNECTOR or target == PAUSED else "UNASSIGNED"
            await self._write_status(item, runner.state)
            return
        try:
            if task == CONNECTOR:
                await self._start_connector(runner)
            else:
                await self._start_task(runner)
            runner.state, runner.trace = "RUNNING", None
            self.started_by_connector[name] = self.started_by_connector.get(name, 0) + 1
        except Exception as exc:  # noqa: BLE001 - a plugin's failure is its FAILED state
            runner.state, runner.trace = "FAILED", "".join(traceback.format_exception(exc))
            log.warning("%s failed to start: %s", item, exc)
        await self._write_status(item, runner.state, runner.trace)

    async def _start_connector(self, runner: Running) -> None:
        name = runner.item[0]
        config = self.state.connectors[name]
        plugin = find_plugin(config["connector.class"])
        if plugin is None:
            raise ValueError(f"no connector plugin named {config['connector.class']!r}")
        connector = plugin()
        runner.instance, runner.config = connector, dict(config)
        await self._write_task_configs(name, connector, config)

    async def _write_task_configs(self, name: str, connector: Connector, config: Mapping[str, str]) -> None:
        wanted = connector.task_configs(config, int(config.get("tasks.max", "1")))
        if self.state.target_state(name) == STOPPED:
            wanted = []
        if wanted == self.state.tasks.get(name):
            return
        if self.is_leader() or not self.leader.leader_url:
            await self.put_task_configs(name, wanted)
            return
        # Sent in the background (the leader may be moving; this start must not wait on it),
        # replacing configs of this connector still on their way.
        previous = self._senders.pop(name, None)
        if previous is not None:
            previous.cancel()
        self._senders[name] = self._spawn(send_task_configs(self, name, wanted))

    async def put_task_configs(self, name: str, configs: list[dict[str, str]]) -> None:
        """The leader's write of a connector's task configs (its own connector's, or those a
        worker running the connector sent it)."""
        await self.config_log.read_to_end()
        if configs == self.state.tasks.get(name):
            return
        # Sent together (one producer, in order; a thousand tasks' configs take batches, not
        # a round trip each); the commit record that makes them visible goes once all are in.
        await asyncio.gather(*(
            self.config_log.write(f"task-{name}-{i}".encode(), encode_json({"properties": task_config}))
            for i, task_config in enumerate(configs)
        ))  # fmt: skip
        await self.config_log.write(f"commit-{name}".encode(), encode_json({"tasks": len(configs)}))

    @property
    def signs_requests(self) -> bool:
        """Requests between workers are signed on the connect protocol and on `sessioned`."""
        return self.config.group_protocol == "connect" or self.config.connect_protocol == "sessioned"

    async def _keep_session_key(self) -> None:
        """While this worker leads, a session key younger than `inter.worker.key.ttl.ms` is in
        the config topic."""
        ttl_ms = self.config.inter_worker_key_ttl_ms
        while True:
            await self.config_log.read_to_end()
            if not self.is_leader():
                return
            now_ms = int(time.time() * 1000)
            key = self.state.session_key
            if key is None or key.expired(now_ms, ttl_ms):
                key = SessionKey.new(now_ms)
                await self.config_log.write(SESSION_KEY_RECORD.encode(), encode_json(key.record()))
            await asyncio.sleep(max(key.created_ms + ttl_ms - now_ms, 0) / 1000)

    def _spawn(self, work: Any) -> asyncio.Future[None]:
        """Runs `work` in the background, keeping a reference and logging its failure."""
        future = asyncio.ensure_future(work)
        self._background.add(future)

        def done(f: asyncio.Future[None]) -> None:
            self._background.discard(f)
            if not f.cancelled() and f.exception() is not None:
                log.warning("%s failed: %s", work, f.exception())

        future.add_done_callback(done)
        return future

    async def _start_task(self, runner: Running) -> None:
        name, index = runner.item
        connector_config = self.state.connectors[name]
        plugin = find_plugin(connector_config["connector.class"])
        if plugin is None:
            raise ValueError(f"no connector plugin named {connector_config['connector.class']!r}")
        task_config = self.state.tasks[name][index]
        task = plugin.task_class()
        writes = TaskWrites(self.output, fence_id(self.config.group_id, name, index), name, self.offset_store)
        runner.instance, runner.config, runner.writes = task, task_config, writes
        context = TaskContext(
            name, index, self.worker_id, self.config.bootstrap_servers,
            read_offset=writes.read_offset, write_offset=writes.write_offset, send=writes.send,
            fail=lambda exc: asyncio.ensure_future(self._failed(runner, task, exc)),
            extra={"worker_config": self.config, "spark": self.spark},
        )  # fmt: skip
        await task.start(task_config, context)

    async def _stop(self, item: Work, state: str, report: bool = True) -> None:
        runner = self.running.get(item)
        if runner is None:
            return
        if isinstance(runner.instance, Task):
            try:
                if getattr(runner.instance, "bounded_stop", False):
                    await runner.instance.stop()  # returns only once the work has stopped
                else:
                    await asyncio.wait_for(
                        runner.instance.stop(), self.config.task_shutdown_graceful_timeout_ms / 1000
                    )
            except Exception:  # noqa: BLE001 - a plugin's failure to stop must not stop the worker
                log.exception("%s did not stop cleanly", item)
        if runner.writes is not None:
            await runner.writes.close()  # nothing of this run is in flight from here on
            runner.writes = None
        if runner.instance is not None:
            self.stopped_by_connector[item[0]] = self.stopped_by_connector.get(item[0], 0) + 1
        runner.instance = None
        runner.state = state
        if report:
            await self._write_status(item, state)

    async def _failed(self, runner: Running, task: Task, exc: BaseException) -> None:
        if self.running.get(runner.item) is not runner or runner.instance is not task:
            return  # a run already stopped: what it reports is not the task's state
        if isinstance(exc, TaskFenced):
            # A newer run of the task began elsewhere (this worker was cut off, and its session
            # gave the task away): this run stops, and says nothing of the task's state.
            log.warning("%s stops: %s", runner.item, exc)
            async with self._lock:
                if self.running.get(runner.item) is runner and runner.instance is task:
                    await self._stop(runner.item, "UNASSIGNED", report=False)
            return
        runner.state, runner.trace = "FAILED", "".join(traceback.format_exception(exc))
        await self._write_status(runner.item, "FAILED", runner.trace)

    async def _reconfigure(self, name: str) -> None:
        """A running connector's config changed: restart it; it may produce new task configs."""
        async with self._lock:
            item = (name, CONNECTOR)
            if item in self.running:
                await self._stop(item, "UNASSIGNED")
                await self._start(item)

    async def _restart_reconfigured_tasks(self, name: str) -> None:
        """New task configs were committed: a task of the connector running here with another
        config is restarted with its new one, as Kafka Connect does (a task no longer wanted
        is revoked by the rebalance the change starts), and one assigned here while it had no
        config (its connector resumed after a stop) starts."""
        async with self._lock:
            configs = self.state.tasks.get(name, [])
            for item in sorted(i for i in self.running if i[0] == name and i[1] != CONNECTOR):
                runner = self.running[item]
                index = int(item[1])
                started = runner.instance is not None and runner.state in ("RUNNING", "FAILED")
                idle = runner.instance is None and runner.state == "UNASSIGNED"
                if idle and index < len(configs) and self.state.target_state(name) == STARTED:
                    await self._start(item)
                if started and index < len(configs) and runner.config != configs[index]:
                    await self._stop(item, "RESTARTING")
                    await self._start(item)

    async def _apply_target_state(self, item: Work) -> None:
        async with self._lock:
            runner = self.running.get(item)
            if runner is None:
                return
            target = self.state.target_state(item[0])
            if target in (PAUSED, STOPPED) and runner.state == "RUNNING":
                await self._stop(item, PAUSED if target == PAUSED else "STOPPED")
                if item[1] == CONNECTOR and target == STOPPED:
                    await self.config_log.write(f"commit-{item[0]}".encode(), encode_json({"tasks": 0}))
            elif target not in (PAUSED, STOPPED) and runner.state in (PAUSED, "STOPPED"):
                await self._start(item)

    async def _restart_connector(self, connector: str, request: dict[str, Any]) -> None:
        """A restart request (Kafka Connect's `restart-connector-<name>` record): owners act."""
        include_tasks, only_failed = bool(request.get("include-tasks")), bool(request.get("only-failed"))
        for item in sorted(i for i in self.running if i[0] == connector):
            wanted = item[1] == CONNECTOR or include_tasks
            if wanted and (not only_failed or self.running[item].state == "FAILED"):
                await self.restart(item)

    async def restart(self, item: Work) -> None:
        async with self._lock:
            if item in self.running:
                await self._stop(item, "RESTARTING")
                await self._start(item)

    # -- statuses and offsets -------------------------------------------------------------

    def _on_status(self, key: bytes | None, value: bytes | None, partition: int, offset: int) -> None:
        if key is None:
            return
        name = key.decode()
        if value is None:
            self.statuses.pop(name, None)
            return
        status = json.loads(value)
        if not name.startswith(PRESENCE_PREFIX) and _stale(status, self.statuses.get(name)):
            return
        self.statuses[name] = status

    async def _write_status(self, item: Work, state: str, trace: str | None = None) -> None:
        name, task = item
        key = f"status-connector-{name}" if task == CONNECTOR else f"status-task-{name}-{task}"
        value = {
            "state": state,
            "trace": trace,
            "worker_id": self.worker_id,
            "generation": self.membership.epoch,
        }
        if _stale(value, self.statuses.get(key)):
            # Kafka Connect's putSafe: another worker reported the item at a newer generation
            # (it runs it now); what this one says of it, cut off meanwhile, is out of date.
            return
        self.statuses[key] = value
        # Not awaited: a status is reported, not waited for (stopping must not wait on it).
        write = asyncio.ensure_future(self.status_log.write(key.encode(), encode_json(value)))
        write.add_done_callback(_log_failure)

    # -- what the REST API reads ----------------------------------------------------------

    def connector_status(self, name: str) -> dict[str, Any] | None:
        if name not in self.state.connectors:
            return None
        own = self.statuses.get(f"status-connector-{name}", {"state": "UNASSIGNED", "worker_id": ""})
        tasks = []
        for i in range(len(self.state.tasks.get(name, []))):
            status = self.statuses.get(f"status-task-{name}-{i}", {"state": "UNASSIGNED", "worker_id": ""})
            entry = {"id": i, "state": status["state"], "worker_id": status["worker_id"]}
            if status.get("trace"):
                entry["trace"] = status["trace"]
            runner = self.running.get((name, i))
            if runner is not None and isinstance(runner.instance, Task) and runner.instance.progress():
                entry["progress"] = runner.instance.progress()  # known to the worker running it
            tasks.append(entry)
        connector = {"state": own["state"], "worker_id": own["worker_id"]}
        if own.get("trace"):
            connector["trace"] = own["trace"]
        plugin = find_plugin(self.state.connectors[name].get("connector.class", ""))
        return {
            "name": name,
            "connector": connector,
            "tasks": tasks,
            "type": plugin.type if plugin else "unknown",
        }


def _is_classic(member: Mapping[str, Any]) -> bool:
    """A prepared member speaking the classic protocol (online migration): its assignor metadata
    is Kafka Connect's WorkerState bytes, not this project's JSON."""
    return not bytes((member.get("assignor") or {}).get("metadata") or b"{}").startswith(b"{")


def _classic_header(version: int, info: LeaderInfo) -> bytes:
    """What the computing worker installs for a classic worker in the group (online migration):
    an embedded assignment whose header says what a classic leader would; the coordinator
    fills in its assigned and revoked deltas."""
    return encode_assignment(
        ConnectAssignment(
            version, NO_ERROR, info.leader, info.leader_url, info.config_offset, delay_ms=info.delay_ms
        )
    )


def _worker_id_of(member: Mapping[str, Any], by_url: Mapping[str, str]) -> str:
    """A member's worker id, from its assignor metadata, or its url through the presence records."""
    try:
        return str(json.loads((member.get("assignor") or {}).get("metadata") or b"{}")["worker_id"])
    except (ValueError, KeyError, TypeError):  # a classic worker's WorkerState bytes are not JSON
        url = str(member.get("url", ""))
        return by_url.get(url, url_host_port(url))


def _stale(status: dict[str, Any], current: dict[str, Any] | None) -> bool:
    """A connector's or task's status from another worker at an older generation than the one
    recorded: its former owner's report (UNASSIGNED on revocation) landing after the new
    owner's RUNNING. Ignored, so the status names who runs it now."""
    if current is None or status.get("worker_id") == current.get("worker_id"):
        return False
    return int(status.get("generation", -1)) < int(current.get("generation", -1))


def _log_failure(future: asyncio.Future[Any]) -> None:
    if not future.cancelled() and future.exception() is not None:
        log.warning("status write failed: %s", future.exception())

"""The herder: wires a worker's pieces together, as Kafka Connect's DistributedHerder does, and
is what the REST API's requests are answered from (herder_api.py, Kafka Connect's `Herder`
interface).

The pieces, each in its module:
- the config topic, followed and written (`ConfigStore`; only the leader writes it: REST
  writes made on a follower are forwarded to the leader, and a connector's owner sends the
  task configs its connector generated to it, `internal_requests`, signed with the session
  key the leader keeps in the config topic);
- statuses and presence (`StatusStore`), source offsets (`OffsetStore`), and tasks' fenced
  output (`fenced_output`);
- running what is assigned (`TaskRunner`, Kafka Connect's `Worker`);
- computing the group's target when this worker is chosen (`TargetPlanner`);
- the membership of either group protocol, whose listener this is: assigned work is started
  once the config has been read up to the offset the target was computed from; revoked work
  is stopped before the heartbeat that acknowledges it.

What is the herder's own: reacting to config changes (a changed connector config, new task
configs, a target state, a restart request) by telling the task runner, and, while this
worker leads, the leader's duties (`leader_duties`: announcing bursts of config changes to
the group, keeping the session key fresh).
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import logging
import ssl
import time
from collections.abc import Callable, Coroutine
from functools import partial
from typing import Any

from connect_rebalance.protocol.connect_group import ClientAssignor
from connect_rebalance.work import CONNECTOR, Work
from workers.config.worker import WorkerConfig
from workers.distributed.assignor import assignors
from workers.distributed.internal_requests import send_task_configs
from workers.distributed.leader_duties import ConfigAnnouncer, keep_session_key
from workers.distributed.leader_planning import TargetPlanner
from workers.distributed.membership.classic import ClassicMembership
from workers.distributed.membership.connect import ConnectMembership
from workers.distributed.membership.leader_info import LeaderInfo
from workers.distributed.membership.machine import Assignment, MemberState
from workers.observe.cluster_watch import ClusterWatch
from workers.observe.loggers import Loggers, level_number
from workers.plugins.registry import Plugins
from workers.runtime.output_connections import OutputConnections
from workers.runtime.task_runner import TaskRunner
from workers.spark.runtime import SparkRuntime
from workers.storage.config_state import Changed, ConfigChange, ConfigState
from workers.storage.config_store import ConfigStore
from workers.storage.offset_store import OffsetStore
from workers.storage.session_key import SessionKey
from workers.storage.status_store import StatusStore
from workers.storage.topic_log import Handler, TopicLog, ensure_topics

log = logging.getLogger(__name__)
LEFT_WRITE_TIMEOUT_S = 2.0  # the LEFT presence record, when stopping; the coordinator may be gone
# A leaving worker's Spark tasks run on until the workers taking them over have prepared them,
# for at most this long (then it leaves, and they start cold): SIGTERM stops a worker in time.
LEAVE_HANDOFF_S = 10.0


# How a worker follows one of its topics: (topic, handler of each record) -> its log.
LogFactory = Callable[[str, Handler], TopicLog]


class Herder:
    def __init__(
        self, config: WorkerConfig, logs: LogFactory | None = None, plugins: Plugins | None = None
    ) -> None:
        """`logs`: the worker's topics on the cluster (TopicLog) unless given (in-process tests);
        `plugins`: those the worker found at start, or those installed beside this process."""
        self.config = config
        self.plugins = plugins if plugins is not None else Plugins.installed()
        self.leader = LeaderInfo()
        self.reason = 0  # the assignor reason: a new one starts a new epoch (connect)
        self.leaving = False  # handing its work over before it leaves (connect)
        self.stopping = False  # shutting down: REST takes no more writes (503)
        self.ready = asyncio.Event()
        self.loggers = Loggers()  # /admin/loggers
        # Set once the config topic was read to its end at start: cluster-wide log levels
        # written before are history (as in Kafka Connect), those read after are applied.
        self._config_caught_up = False
        self.kafka_cluster_id = ""  # the coordinator's, read at start (GET / reports it)
        self._tasks: list[asyncio.Task[Any]] = []
        self._key_keeper: asyncio.Future[None] | None = None  # the leader's session-key renewal
        self._background: set[asyncio.Future[None]] = set()
        self._senders: dict[str, asyncio.Future[None]] = {}  # task configs on their way to the leader
        bootstrap, security = config.bootstrap_servers, config.client_security()
        logs = logs or (lambda topic, on: TopicLog(bootstrap, topic, on, config.worker_id, security))
        self.configs = ConfigStore(partial(logs, config.config_storage_topic), self._on_config_change)
        self.announcer = ConfigAnnouncer(self.state, self.is_leader, lambda: self.membership.heartbeat_now())
        self.statuses = StatusStore(partial(logs, config.status_storage_topic), config.worker_id)
        self.offsets = OffsetStore(partial(logs, config.offset_storage_topic))
        # Tasks' records and source offsets, fenced by epoch, connected as `producer.*` says (the
        # whole of their security, as in Kafka Connect), or as their connector's producer overrides say.
        self.outputs = OutputConnections(
            bootstrap, f"{config.worker_id}-task-output", config.client_security("producer.")
        )
        # One SparkSession per worker for every Spark task (started in `start` if warm-up is on).
        self.spark = SparkRuntime(
            config.spark_master, config.spark_settings, config.checkpoint_dir,
            config.task_shutdown_graceful_timeout_ms, config.worker_id, self.plugins.import_paths,
        )  # fmt: skip
        self.runner = TaskRunner(
            config, self.state, self.statuses, self.offsets, self.outputs, self.spark,
            lambda: self.membership.epoch, self._send_task_configs, self.plugins,
        )  # fmt: skip
        self.planner = TargetPlanner(config, self.configs, self.statuses, self._rebalance_due, self.plugins)
        # TLS of this worker's calls to other workers' REST APIs (forwards, task configs).
        self._client_tls = config.rest_tls.client_context() if config.rest_tls is not None else None
        self.membership: ConnectMembership | ClassicMembership
        if config.group_protocol == "classic":
            self.membership = ClassicMembership(
                bootstrap, config.group_id, config.rest_url, self, self._snapshot, lambda: self.state.offset,
                self.planner.plan_classic, connect_protocol=config.connect_protocol,
                client_id=f"connect-{config.worker_id}", session_timeout_ms=config.session_timeout_ms,
                rebalance_timeout_ms=config.rebalance_timeout_ms,
                heartbeat_interval_ms=config.heartbeat_interval_ms, security=security,
            )  # fmt: skip
        else:
            self.membership = ConnectMembership(
                bootstrap, config.group_id, config.member_id, config.rest_url, self, self.planner.compute,
                self._assignors, rebalance_timeout_ms=config.rebalance_timeout_ms,
                session_timeout_ms=config.session_timeout_ms, security=security,
                quick_heartbeats=self.awaits_moved_work,
            )  # fmt: skip

        # The connect group's timeline and the tasks' rows/s, for the web view and /metrics.
        self.watch = ClusterWatch(
            self.statuses, lambda: self.membership.epoch, self._task_rows, bootstrap=bootstrap,
            group_id=config.group_id, connect_protocol=config.group_protocol == "connect", security=security,
        )  # fmt: skip

    def _task_rows(self) -> dict[Work, float]:
        return {item: float(p["rows"]) for item, p in self.runner.task_progress() if "rows" in p}

    @property
    def state(self) -> ConfigState:
        return self.configs.state

    # -- start and stop -------------------------------------------------------------------

    async def start(self) -> None:
        config = self.config
        topics = {
            config.config_storage_topic: (1, config.config_storage_replication_factor),
            config.status_storage_topic: (
                config.status_storage_partitions,
                config.status_storage_replication_factor,
            ),
            config.offset_storage_topic: (
                config.offset_storage_partitions,
                config.offset_storage_replication_factor,
            ),
        }
        self.kafka_cluster_id = await asyncio.to_thread(
            ensure_topics, config.bootstrap_servers, topics, security=config.client_security("admin.")
        )
        # The three logs are read side by side: a joining worker's start-up is part of its join.
        await asyncio.gather(*(store.log.start() for store in (self.configs, self.statuses, self.offsets)))
        self._config_caught_up = True
        self.announcer.joined()
        await self._announce("UP")  # before joining: a bounce is not a departure
        warm = None
        if self.config.spark_session_warmup:
            warm = asyncio.create_task(asyncio.to_thread(self.spark.warm))
            self._tasks.append(warm)
        # Ends only by leaving or refusal.
        self.membership_run = asyncio.create_task(self._join(warm if self._holds_spark_tasks() else None))
        self._tasks += [self.membership_run, asyncio.create_task(self.announcer.run())]
        self._tasks.append(asyncio.create_task(self.watch.run()))
        self.ready.set()

    def _holds_spark_tasks(self) -> bool:
        """Whether the config names Spark tasks, work this worker may be given when it joins."""
        return any(self.runner.is_spark_connector(name) for name, tasks in self.state.tasks.items() if tasks)

    async def _join(self, warm: asyncio.Task[None] | None) -> None:
        """Take part in the group; with Spark tasks in the config and the session warming, only
        once it is warm. A task the group moves here for balance keeps running where it is
        until then, instead of waiting here, stopped, for the session (seconds to tens of
        seconds: the handoff gap of a join). With none (a new cluster), the worker joins at once."""
        if warm is not None:
            log.info("joining the group once the Spark session is ready: tasks moved here start at once")
            await asyncio.wait({warm})  # its failure is the runtime's state: the worker joins anyway
        await self.membership.run()

    async def stop(self) -> None:
        """Leave the group for good: every connector and task stops and moves at once."""
        self.stopping = True
        # Said before leaving, so the computing worker hands the work out without a delay.
        with contextlib.suppress(Exception):
            await asyncio.wait_for(self._announce("LEFT"), LEFT_WRITE_TIMEOUT_S)
        await self._hand_over()
        await self.membership.leave()
        await self.runner.prepared.cancel_all()
        self.planner.close()
        for task in [*self._tasks, *self._background]:
            task.cancel()
        await asyncio.gather(*self._tasks, *self._background, return_exceptions=True)
        closing = [store.log.close() for store in (self.configs, self.statuses, self.offsets)]
        closing += [self.outputs.close(), asyncio.to_thread(self.spark.close)]
        for result in await asyncio.gather(*closing, return_exceptions=True):
            if isinstance(result, Exception):  # the coordinator may be gone: closing goes on
                log.warning("closing: %s", result)

    async def _hand_over(self) -> None:
        """On `connect`, before leaving: the Spark tasks that can be prepared elsewhere run on
        until the workers taking them over have prepared them (warm_handoff.py), and are then
        revoked as in any rebalance; at most LEAVE_HANDOFF_S."""
        if self.config.group_protocol != "connect" or not self._joined() or not self.runner.runs_preparable():
            return
        self.leaving = True  # said in the assignor metadata, with a new reason: a new target
        self._new_reason()
        loop = asyncio.get_running_loop()
        deadline = loop.time() + LEAVE_HANDOFF_S
        # Until handed over, or the coordinator stops answering (then nobody can take them).
        while self.runner.runs_preparable() and loop.time() < deadline and self._joined():
            await asyncio.sleep(0.05)
        if self.runner.runs_preparable():
            log.warning("leaving with Spark tasks not yet prepared elsewhere within %.0f s", LEAVE_HANDOFF_S)

    def _joined(self) -> bool:
        return self.membership.state in (MemberState.STABLE, MemberState.RECONCILING)

    async def _announce(self, state: str) -> None:
        member = self.config.member_id if self.config.group_protocol == "connect" else None
        await self.statuses.announce(state, self.config.rest_url, member)

    # -- the config topic -----------------------------------------------------------------

    def _on_config_change(self, change: ConfigChange, work_changed: bool) -> None:
        if work_changed:
            self.announcer.changed()
        runner, name = self.runner, change.connector
        if change.kind == Changed.TASKS and change.replaced:
            self._spawn(runner.follow_task_configs(name))
        elif change.kind == Changed.CONNECTOR and change.replaced and (name, CONNECTOR) in runner.running:
            self._spawn(runner.reconfigure(name))
        elif change.kind == Changed.RESTART:
            self._spawn(runner.restart_connector(name, change.include_tasks, change.only_failed))
        elif change.kind == Changed.TARGET_STATE:
            self._spawn(runner.follow_target_state(name))
        elif change.kind == Changed.DELETED:
            self.watch.timeline.forget(name, time.time())
        elif change.kind == Changed.LOGGER_LEVEL and self._config_caught_up and level_number(change.level):
            affected = self.loggers.set_level(name, change.level)
            log.info("log level of %s set to %s cluster-wide (%d loggers)", name, change.level, len(affected))

    # -- the group ------------------------------------------------------------------------

    def is_leader(self) -> bool:
        return bool(self.leader.leader) and self.leader.leader == self.membership.member_id

    def leader_url(self) -> str | None:
        """Where config writes go: the leader's REST url, or None when this worker takes them."""
        return None if self.is_leader() or not self.leader.leader_url else self.leader.leader_url

    async def _snapshot(self) -> tuple[frozenset[Work], int]:
        """The config read to its end: what a classic group's leader assigns from."""
        await self.configs.read_to_end()
        return self.state.work(), self.state.offset

    def _assignors(self) -> list[ClientAssignor]:
        """The client assignors `connect.protocol` offers, each with this worker's metadata."""
        config, offset = self.config, self.announcer.reported_offset(bool(self.leader.leader))
        metadata = json.dumps({
            "url": config.rest_url, "worker_id": config.worker_id, "config_offset": offset,
            # this worker prepares work moving to it, and what it has prepared (warm_handoff.py)
            "warms": True, "warmed": sorted(self.runner.prepared.warmed), "leaving": self.leaving,
        }).encode()  # fmt: skip
        version = assignors.METADATA_VERSION
        return [
            ClientAssignor(name, version, version, version, metadata, self.reason)
            for name in assignors.offered(config.connect_protocol)
        ]

    def _warmed(self) -> None:
        """A preparation is over: the assignor metadata says so, with a new reason (a new epoch,
        whose target moves the prepared work here)."""
        self._new_reason()

    def awaits_moved_work(self) -> bool:
        """Prepared work is reported warmed and not assigned yet: the old owner may let it go
        any moment, so heartbeats come quickly until it is here (warm_handoff.py)."""
        return bool(self.runner.prepared.warmed)

    def _rebalance_due(self) -> None:
        """Held work's delay ended: a new assignor reason starts a new group epoch."""
        self._new_reason()
        log.info("the scheduled rebalance is due: assignor reason %d", self.reason)

    def _new_reason(self) -> None:
        """A new assignor reason, sent at once: the coordinator starts a new group epoch."""
        self.reason += 1
        self.membership.heartbeat_now()

    # -- assignment and revocation (the membership's listener) -----------------------------

    async def start_work(self, work: frozenset[Work], assignment: Assignment) -> None:
        self.leader = LeaderInfo.decode(assignment.metadata)
        # Work moving here from another worker is prepared while that worker still runs it.
        self.runner.prepare(self.leader.warm_work(), assignment.work, self._warmed)
        keeping = self._key_keeper is not None and not self._key_keeper.done()
        if self.signs_requests() and self.is_leader() and not keeping:
            keeping_for = self.config.inter_worker_key_ttl_ms
            self._key_keeper = self._spawn(keep_session_key(self.configs, self.is_leader, keeping_for))

        async def config_read() -> None:
            if self.state.offset < self.leader.config_offset:
                await self.configs.read_to_end()

        await self.runner.start(work, config_read)

    async def stop_work(self, work: frozenset[Work], at_once: bool = False) -> None:
        await self.runner.stop(work, at_once)

    # -- task configs and the session key (the leader writes them) -------------------------

    async def _send_task_configs(self, name: str, configs: list[dict[str, str]]) -> None:
        """A connector running here generated `configs`: the leader writes them."""
        if self.leader_url() is None:
            await self.put_task_configs(name, configs)
            return
        # Sent in the background (the leader may be moving; this start must not wait on it),
        # replacing configs of this connector still on their way.
        previous = self._senders.pop(name, None)
        if previous is not None:
            previous.cancel()
        self._senders[name] = self._spawn(send_task_configs(self, name, configs))

    async def put_task_configs(self, name: str, configs: list[dict[str, str]]) -> None:
        """The leader's write of a connector's task configs (its own connector's, or those a
        worker running the connector sent it)."""
        await self.configs.put_task_configs(name, configs)

    def runs_connector(self, name: str) -> bool:
        return (name, CONNECTOR) in self.runner.running

    def client_tls(self) -> ssl.SSLContext | None:
        """TLS of this worker's calls to other workers' REST APIs (forwards, task configs)."""
        return self._client_tls

    async def read_config(self) -> None:
        await self.configs.read_to_end()

    def signs_requests(self) -> bool:
        """Requests between workers are signed on the connect protocol and on `sessioned`."""
        return self.config.group_protocol == "connect" or self.config.connect_protocol == "sessioned"

    def session_key(self) -> SessionKey | None:
        return self.state.session_key

    def _spawn(self, work: Coroutine[Any, Any, None]) -> asyncio.Future[None]:
        """Runs `work` in the background, keeping a reference and logging its failure."""
        future = asyncio.ensure_future(work)
        self._background.add(future)

        def done(f: asyncio.Future[None]) -> None:
            self._background.discard(f)
            if not f.cancelled() and f.exception() is not None:
                log.warning("%s failed: %s", work, f.exception())

        future.add_done_callback(done)
        return future

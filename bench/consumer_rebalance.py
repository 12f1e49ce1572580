"""What a rebalance costs a consumer group: the consumer protocol (KIP-848) against the classic
protocol with the eager (range) and the cooperative-sticky assignor.

For groups of 10, 50 and 100 consumers (10 partitions per consumer), four events:
- join:  one more consumer joins a stable group;
- leave: one consumer leaves gracefully (LeaveGroup; a heartbeat with epoch -1);
- crash: one consumer stops without a word; the coordinator notices after its session timeout;
- stuck: one consumer stops polling just as another joins: it keeps heartbeating from its
  background thread but never revokes (consumer protocol) or rejoins (classic), until its
  rebalance timeout (max.poll.interval.ms) removes it, or the client leaves on its own when
  that long has passed without a poll (consumer protocol, as librdkafka and Java do).
and for each
- settled: time from the event until every partition is held by exactly one consuming
  member, evenly, with no member mid-rebalance (checked against the coordinator's view);
- stable: until the coordinator calls the group Stable (consumer groups: every member has
  heartbeated at the new epoch, including those whose partitions did not change);
- partitions paused: partitions that stopped being consumed at some moment (no consuming
  member held them), and the partition-seconds they spent so;
- members stopped: members other than the one the event is about that held nothing at some
  moment, i.e. stopped consuming altogether;
- newcomer waited: until a joining member held its first partition;
- rounds and requests: generations (classic) or group epochs (consumer) the event cost, and
  group requests (heartbeats, joins, syncs, leaves) per member until settled.

Members are simulated at the protocol level, as the clients behave: classic members revoke
everything before rejoining (eager) or only what the leader moved, rejoining at once to
hand it over (cooperative); the elected leader runs range or a sticky cooperative assignor;
consumer-protocol members apply each assignment at once and acknowledge a revocation at
once. They run two ways:
- on a virtual clock: the pure coordinator core in this process, Kafka's default timings
  (heartbeat.interval.ms 3 s for classic, 5 s from the coordinator for consumer groups;
  session timeouts 45 s; rebalance timeout max.poll.interval.ms 300 s), each case several
  times with the event at another moment of the heartbeat cycle, averaged;
- over TCP, join and leave (crash and stuck are bounded by the 45 s session and 300 s
  rebalance timeouts, which the virtual clock covers exactly): a coordinator process and one
  connection per member, members as asyncio callbacks of this process on the same machine.

    python bench/consumer_rebalance.py [--sizes 10 50 100] [--trials 3] [--tcp-sizes 10 100]
                                       [--no-tcp] [--update-readme]

Prints a table, saves bench/results/consumer_rebalance.json and .png; `--update-readme`
puts the headline table into README.md between its bench markers.
"""

from __future__ import annotations

import argparse
import asyncio
import heapq
import itertools
import json
import random
import sys
import tempfile
import textwrap
import time
import uuid
from collections.abc import Callable
from dataclasses import dataclass, field
from functools import partial
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from kafka.protocol.consumer.metadata import (  # noqa: E402
    ConsumerProtocolAssignment,
    ConsumerProtocolSubscription,
)

from bench.readme_table import update_readme  # noqa: E402
from connect_rebalance.processes import CoordinatorProcess  # noqa: E402
from connect_rebalance.protocol import codec  # noqa: E402
from connect_rebalance.protocol.api_keys import ApiKey  # noqa: E402
from connect_rebalance.protocol.client import ProtocolClient  # noqa: E402
from coordinator.configs.coordinator import CoordinatorConfig  # noqa: E402
from coordinator.groups.coordinator import GroupCoordinator  # noqa: E402
from coordinator.groups.requests import GroupRequest  # noqa: E402

TOPIC = "events"
MEMBER_ID_REQUIRED, REBALANCE_IN_PROGRESS = 79, 27
UNKNOWN_MEMBER_ID, ILLEGAL_GENERATION, FENCED_MEMBER_EPOCH = 25, 22, 110
PROTOCOLS = ("consumer", "classic-eager", "classic-cooperative")
EVENTS = ("join", "leave", "crash", "stuck")
PARTITIONS_PER_MEMBER = 10
RESULTS = ROOT / "bench" / "results" / "consumer_rebalance.json"


@dataclass(frozen=True)
class Timings:
    """Client and coordinator timings in ms (Kafka's defaults on the virtual clock)."""

    classic_heartbeat: int = 3000
    session: int = 45000
    rebalance: int = 300000


def topic_id(name: str) -> str:
    return str(uuid.uuid5(uuid.NAMESPACE_OID, name))


class OneTopic:
    """The metadata view the core needs for consumer groups: one topic, a fixed size."""

    def __init__(self, partitions: int) -> None:
        self.partitions = partitions

    def topic_id(self, name: str) -> str | None:
        return topic_id(name) if name == TOPIC else None

    def partition_count(self, tid: str) -> int | None:
        return self.partitions if tid == topic_id(TOPIC) else None

    def names(self) -> list[str]:
        return [TOPIC]

    version = 0  # the topic never changes

    def name_of(self, tid: str) -> str | None:
        return TOPIC if tid == topic_id(TOPIC) else None


# -- transports: how members reach the coordinator and keep time ---------------------------


class VirtualNet:
    """The pure core in this process; time moves only from one event or deadline to the next."""

    def __init__(self, partitions: int) -> None:
        sizes = {TOPIC: partitions}
        # The coordinator's defaults (adaptive heartbeats, offloaded targets), as a user runs it.
        settings = CoordinatorConfig.from_settings({}).group_settings()
        self.core = GroupCoordinator(settings, sizes.get, topics_view=OneTopic(partitions))
        self.now_ms = 0
        self.queue: list[tuple[int, int, Callable[[], None]]] = []
        self.ids = itertools.count(1)
        self.waiting: dict[int, Callable[[dict[str, Any]], None]] = {}
        self.requests = 0

    def now(self) -> float:
        return self.now_ms / 1000

    def later(self, delay_ms: float, action: Callable[[], None]) -> None:
        heapq.heappush(self.queue, (self.now_ms + int(delay_ms), next(self.ids), action))

    def send(self, client_id: str, api_key: int, version: int, fields: dict[str, Any], answered) -> None:  # type: ignore[no-untyped-def]
        request_id = next(self.ids)
        self.waiting[request_id] = answered
        self.requests += 1
        body = codec.build_request(api_key, version, fields)
        request = GroupRequest(request_id, api_key, version, body, client_id, "/127.0.0.1")
        self._deliver(self.core.handle(request, self.now_ms))

    def close(self, client_id: str) -> None:
        """A crashed member's connection: nothing to do, its answers are dropped by the member."""

    def _deliver(self, outcome: Any) -> None:
        for request_id, fields in outcome.replies.items():
            answered = self.waiting.pop(request_id, None)
            if answered is not None:
                self.later(0, partial(answered, fields))
        for computation in outcome.effects:  # an offloaded target: its result comes back at once
            self.later(0, partial(self._computed, computation))

    def _computed(self, computation: Any) -> None:
        self._deliver(self.core.target_computed(computation, computation.run(), self.now_ms))

    def step(self) -> None:
        deadline = self.core.next_deadline()
        if not self.queue and deadline is None:
            raise RuntimeError("nothing left to happen")
        if deadline is not None and (not self.queue or deadline <= self.queue[0][0]):
            self.now_ms = max(self.now_ms, deadline)
            self._deliver(self.core.on_timer(self.now_ms))
            return
        self.now_ms, _, action = heapq.heappop(self.queue)
        action()

    def call(self, api_key: int, version: int, fields: dict[str, Any]) -> dict[str, Any]:
        """A request answered at once (describing a group)."""
        answers: list[dict[str, Any]] = []
        self.send("bench-admin", api_key, version, fields, answers.append)
        self.requests -= 1
        while not answers:
            self.step()
        return answers[0]

    def run_until(self, done: Callable[[], bool], limit_s: float) -> None:
        start = self.now_ms
        while not done():
            self.step()
            if self.now_ms - start > limit_s * 1000:
                raise RuntimeError("the group did not settle")


class TcpNet:
    """A coordinator process; one connection per member; callbacks on this asyncio loop."""

    def __init__(self, bootstrap: str) -> None:
        self.bootstrap = bootstrap
        self.clients: dict[str, ProtocolClient] = {}
        self.tasks: set[asyncio.Task[None]] = set()
        self.requests = 0
        self.failures: list[BaseException] = []

    def now(self) -> float:
        return time.monotonic()

    def later(self, delay_ms: float, action: Callable[[], None]) -> None:
        asyncio.get_running_loop().call_later(delay_ms / 1000, self._guarded, action)

    def _guarded(self, action: Callable[[], None]) -> None:
        try:
            action()
        except Exception as exc:  # surfaced by run_until
            self.failures.append(exc)

    def send(self, client_id: str, api_key: int, version: int, fields: dict[str, Any], answered) -> None:  # type: ignore[no-untyped-def]
        self.requests += 1

        async def exchange() -> None:
            client = self.clients.get(client_id)
            if client is None:
                client = self.clients[client_id] = await ProtocolClient.connect(self.bootstrap, client_id)
            try:
                answer = await client.request(api_key, version, fields)
            except ConnectionError:
                return
            self._guarded(partial(answered, answer))

        task = asyncio.create_task(exchange())
        self.tasks.add(task)
        task.add_done_callback(self.tasks.discard)

    def close(self, client_id: str) -> None:
        client = self.clients.pop(client_id, None)
        if client is not None:
            task = asyncio.create_task(client.close())
            self.tasks.add(task)
            task.add_done_callback(self.tasks.discard)

    async def run_until(self, done: Callable[[], bool], limit_s: float) -> None:
        deadline = time.monotonic() + limit_s
        while not done():
            if self.failures:
                raise self.failures[0]
            if time.monotonic() > deadline:
                raise RuntimeError("the group did not settle")
            await asyncio.sleep(0.005)

    async def shutdown(self) -> None:
        for client in list(self.clients.values()):
            await client.close()
        for task in list(self.tasks):
            task.cancel()
        await asyncio.gather(*self.tasks, return_exceptions=True)


# -- what the group consumes: holdings, pauses, settling -----------------------------------


@dataclass
class Window:
    """What happened between an event and the group settling again."""

    started: float
    subjects: set[str]
    paused: set[int] = field(default_factory=set)
    paused_seconds: float = 0.0
    stopped: set[str] = field(default_factory=set)
    last_change: float = 0.0
    first_held: dict[str, float] = field(default_factory=dict)  # subjects: when they first held some


class Ledger:
    """Who holds which partition, who is consuming, and the window being measured."""

    def __init__(self, net: VirtualNet | TcpNet, partitions: int, group: str, topic: str) -> None:
        self.net, self.partitions, self.group, self.topic = net, partitions, group, topic
        self.holders: dict[int, set[str]] = {p: set() for p in range(partitions)}
        self.members: dict[str, Member] = {}
        self.paused_since: dict[int, float] = {p: 0.0 for p in range(partitions)}
        self.window: Window | None = None
        self.dirty = True

    def consuming(self, name: str) -> bool:
        member = self.members[name]
        return member.alive and not member.stuck and not member.gone

    def _flowing(self, p: int) -> bool:
        return any(self.consuming(m) for m in self.holders[p])

    def recheck(self, partitions: set[int] | range) -> None:
        now = self.net.now()
        for p in partitions:
            flowing = self._flowing(p)
            if flowing and p in self.paused_since:
                since = self.paused_since.pop(p)
                if self.window is not None:
                    self.window.paused_seconds += now - max(since, self.window.started)
            elif not flowing and p not in self.paused_since:
                self.paused_since[p] = now
                if self.window is not None:
                    self.window.paused.add(p)
        self.dirty = True

    def changed(self, member: Member, before: set[int], after: set[int]) -> None:
        for p in before - after:
            self.holders[p].discard(member.name)
        for p in after - before:
            self.holders[p].add(member.name)
        if self.window is not None:
            self.window.last_change = self.net.now()
            if not after and member.name not in self.window.subjects and self.consuming(member.name):
                self.window.stopped.add(member.name)
            if after and member.name in self.window.subjects:
                self.window.first_held.setdefault(member.name, self.window.last_change)
        self.recheck(before ^ after)

    def open_window(self, subjects: set[str]) -> None:
        now = self.net.now()
        self.window = Window(now, subjects, last_change=now)
        self.window.paused |= set(self.paused_since)

    def settled(self) -> bool:
        """Every partition held by exactly one consuming member, evenly, nobody mid-rebalance."""
        if not self.dirty:
            return False
        self.dirty = False
        active = [m for m in self.members.values() if self.consuming(m.name)]
        if not active or any(m.busy() for m in active):
            return False
        if any(sum(1 for h in self.holders[p] if self.consuming(h)) != 1 for p in range(self.partitions)):
            return False
        sizes = [len(m.owned) for m in active]
        if max(sizes) - min(sizes) > 1:
            return False
        self.dirty = True  # still settled next time unless something changes
        return True

    def close_window(self) -> Window:
        assert self.window is not None
        now = self.net.now()
        for since in self.paused_since.values():
            self.window.paused_seconds += now - max(since, self.window.started)
        window, self.window = self.window, None
        return window


# -- members -------------------------------------------------------------------------------


class Member:
    """One consumer as its client library behaves; subclasses speak one protocol."""

    def __init__(self, name: str, net: VirtualNet | TcpNet, ledger: Ledger, timings: Timings) -> None:
        self.name, self.net, self.ledger, self.timings = name, net, ledger, timings
        self.owned: set[int] = set()
        self.alive, self.stuck, self.gone = True, False, False
        self.round = 0  # the generation or member epoch it last saw
        self._beat = 0  # heartbeat loop token: a new loop cancels the old one
        self._busy = True
        ledger.members[name] = self

    def hold(self, partitions: set[int]) -> None:
        before, self.owned = self.owned, set(partitions)
        if before != self.owned:
            self.ledger.changed(self, before, self.owned)

    def send(self, api_key: int, version: int, fields: dict[str, Any], answered) -> None:  # type: ignore[no-untyped-def]
        def if_alive(answer: dict[str, Any]) -> None:
            if self.alive and not self.gone:
                answered(answer)

        self.net.send(self.name, api_key, version, fields, if_alive)

    def beat_in(self, delay_ms: float) -> None:
        self._beat += 1
        token = self._beat
        self.net.later(delay_ms, lambda: self._beat == token and self.alive and not self.gone and self.beat())

    def crash(self) -> None:
        self.alive = False
        self.net.close(self.name)
        self.ledger.recheck(set(self.owned))

    def get_stuck(self) -> None:
        self.stuck = True
        self.ledger.recheck(set(self.owned))
        self.net.later(self.timings.rebalance, self.poll_interval_exceeded)

    def poll_interval_exceeded(self) -> None:
        """max.poll.interval.ms without a poll: what the client itself does then."""

    def removed(self) -> None:
        """The coordinator no longer knows this stuck member: it is out of the picture."""
        self.gone = True
        self.hold(set())

    def start(self) -> None:
        raise NotImplementedError

    def leave(self) -> None:
        raise NotImplementedError

    def busy(self) -> bool:
        """Joining, rebalancing (classic) or with a revocation not yet acknowledged (consumer)."""
        return self._busy

    def set_busy(self, busy: bool) -> None:
        if busy != self._busy:
            self._busy = busy
            self.ledger.dirty = True

    def beat(self) -> None:
        raise NotImplementedError


class ConsumerMember(Member):
    """A `group.protocol=consumer` member: ConsumerGroupHeartbeat v1, member id of its own."""

    def __init__(self, index: int, net: VirtualNet | TcpNet, ledger: Ledger, timings: Timings) -> None:
        super().__init__(f"m{index:03d}", net, ledger, timings)
        self.member_id = str(uuid.UUID(int=index + 1))  # ordered like the names
        self.epoch = 0
        self.topic_id: str | None = None  # learnt from the first assignment

    def start(self) -> None:
        self.beat()

    def beat(self) -> None:
        joining = self.epoch == 0
        owned = [{"topic_id": self.topic_id, "partitions": sorted(self.owned)}] if self.topic_id else []
        self.send(ApiKey.CONSUMER_GROUP_HEARTBEAT, 1, {
            "group_id": self.ledger.group, "member_id": self.member_id, "member_epoch": self.epoch,
            "instance_id": None, "rack_id": None,
            "rebalance_timeout_ms": self.timings.rebalance if joining else -1,
            "subscribed_topic_names": [self.ledger.topic] if joining else None,
            "subscribed_topic_regex": None, "server_assignor": None, "topic_partitions": owned,
        }, self.answered)  # fmt: skip

    def answered(self, answer: dict[str, Any]) -> None:
        error = answer["error_code"]
        if error in (UNKNOWN_MEMBER_ID, FENCED_MEMBER_EPOCH):
            if self.stuck:
                self.removed()
                return
            self.hold(set())  # lost: rejoin from scratch
            self.epoch = 0
            self.set_busy(True)
            self.beat()
            return
        if error != 0:
            raise RuntimeError(f"{self.name}: heartbeat error {error}: {answer.get('error_message')}")
        self.epoch = answer["member_epoch"]
        self.round = max(self.round, self.epoch)
        interval = answer["heartbeat_interval_ms"]
        if answer["assignment"] is None or self.stuck:
            self.set_busy(False)
            self.beat_in(interval)
            return
        for assigned in answer["assignment"]["topic_partitions"]:
            self.topic_id = str(assigned["topic_id"])
        target = {p for t in answer["assignment"]["topic_partitions"] for p in t["partitions"]}
        revoked = self.owned - target
        self.hold(target)
        self.set_busy(bool(revoked))
        self.beat_in(0 if revoked else interval)  # a revocation is acknowledged at once

    def poll_interval_exceeded(self) -> None:
        """librdkafka and the Java consumer leave the group on their own when the application
        has not polled for max.poll.interval.ms, whether or not they were asked to revoke."""
        if self.alive and not self.gone:
            self.leave()
            self.removed()

    def leave(self) -> None:
        self.hold(set())
        self.send(ApiKey.CONSUMER_GROUP_HEARTBEAT, 1, {
            "group_id": self.ledger.group, "member_id": self.member_id, "member_epoch": -1,
            "instance_id": None,
            "rack_id": None, "rebalance_timeout_ms": -1, "subscribed_topic_names": None,
            "subscribed_topic_regex": None, "server_assignor": None, "topic_partitions": None,
        }, lambda _: None)  # fmt: skip
        self.gone = True


def subscription(topic: str, owned: set[int]) -> bytes:
    owned_partitions = [{"topic": topic, "partitions": sorted(owned)}] if owned else []
    return bytes(
        ConsumerProtocolSubscription(
            version=1, topics=[topic], user_data=None, owned_partitions=owned_partitions
        ).encode(header=True)
    )


def assignment(topic: str, partitions: list[int]) -> bytes:
    return bytes(
        ConsumerProtocolAssignment(
            version=0,
            assigned_partitions=[{"topic": topic, "partitions": sorted(partitions)}],
            user_data=None,
        ).encode(header=True)
    )


def assigned_in(data: bytes) -> set[int]:
    if not data:
        return set()
    decoded = ConsumerProtocolAssignment.decode(data, header=True)
    return {p for tp in decoded.assigned_partitions for p in tp.partitions}


def range_plan(members: list[str], partitions: int) -> dict[str, list[int]]:
    base, extra = divmod(partitions, len(members))
    plan, start = {}, 0
    for i, m in enumerate(sorted(members)):
        count = base + (1 if i < extra else 0)
        plan[m] = list(range(start, start + count))
        start += count
    return plan


def cooperative_plan(owned: dict[str, set[int]], partitions: int) -> dict[str, list[int]]:
    """Sticky balanced target; a partition still owned by another member is held back this
    round (its owner revokes it and rejoins; the next round hands it over)."""
    members = sorted(owned)
    base, extra = divmod(partitions, len(members))
    by_owned = sorted(members, key=lambda m: (-len(owned[m]), m))
    quota = {m: base + (1 if i < extra else 0) for i, m in enumerate(by_owned)}
    target = {m: sorted(owned[m])[: quota[m]] for m in members}
    taken = {p for ps in target.values() for p in ps}
    pool = [p for p in range(partitions) if p not in taken]
    for m in members:
        need = quota[m] - len(target[m])
        target[m].extend(pool[:need])
        del pool[:need]
    owner = {p: m for m, ps in owned.items() for p in ps}
    return {m: [p for p in ps if owner.get(p, m) == m] for m, ps in target.items()}


class ClassicMember(Member):
    """A classic-protocol member: JoinGroup v5 / SyncGroup v3 / Heartbeat v3 / LeaveGroup v3."""

    def __init__(
        self, index: int, net: VirtualNet | TcpNet, ledger: Ledger, timings: Timings, cooperative: bool
    ) -> None:
        super().__init__(f"m{index:03d}", net, ledger, timings)
        self.cooperative = cooperative
        self.member_id = ""
        self.generation = -1
        self.set_busy(True)

    def start(self) -> None:
        self.join()

    def join(self) -> None:
        self.set_busy(True)
        if not self.cooperative:
            self.hold(set())  # eager: everything is revoked before rejoining
        self.send(ApiKey.JOIN_GROUP, 5, {
            "group_id": self.ledger.group, "session_timeout_ms": self.timings.session,
            "rebalance_timeout_ms": self.timings.rebalance, "member_id": self.member_id,
            "group_instance_id": None, "protocol_type": "consumer",
            "protocols": [{"name": "cooperative-sticky" if self.cooperative else "range",
                           "metadata": subscription(self.ledger.topic, self.owned)}],
        }, self.joined)  # fmt: skip

    def joined(self, answer: dict[str, Any]) -> None:
        error = answer["error_code"]
        if error == MEMBER_ID_REQUIRED:
            self.member_id = answer["member_id"]
            self.join()
            return
        if error == UNKNOWN_MEMBER_ID:
            self.member_id = ""
            self.join()
            return
        if error != 0:
            raise RuntimeError(f"{self.name}: JoinGroup error {error}")
        self.generation = answer["generation_id"]
        self.round = max(self.round, self.generation)
        plan: dict[str, list[int]] = {}
        if answer["leader"] == self.member_id:
            metadata = {m["member_id"]: m["metadata"] for m in answer["members"]}
            if self.cooperative:
                owned = {}
                for member_id, data in metadata.items():
                    decoded = ConsumerProtocolSubscription.decode(data, header=True)
                    owned[member_id] = {p for tp in decoded.owned_partitions or [] for p in tp.partitions}
                plan = cooperative_plan(owned, self.ledger.partitions)
            else:
                plan = range_plan(list(metadata), self.ledger.partitions)
        self.send(ApiKey.SYNC_GROUP, 3, {
            "group_id": self.ledger.group, "generation_id": self.generation, "member_id": self.member_id,
            "group_instance_id": None,
            "assignments": [{"member_id": m, "assignment": assignment(self.ledger.topic, ps)}
                            for m, ps in plan.items()],
        }, self.synced)  # fmt: skip

    def synced(self, answer: dict[str, Any]) -> None:
        error = answer["error_code"]
        if error == REBALANCE_IN_PROGRESS:
            self.join()
            return
        if error in (UNKNOWN_MEMBER_ID, ILLEGAL_GENERATION):
            self.lost(error)
            return
        if error != 0:
            raise RuntimeError(f"{self.name}: SyncGroup error {error}")
        given = assigned_in(answer["assignment"])
        revoked = self.owned - given
        self.hold(given)
        if self.cooperative and revoked:
            self.join()  # hand the revoked partitions over in a second round
            return
        self.set_busy(False)
        self.beat_in(self.timings.classic_heartbeat)

    def lost(self, error: int) -> None:
        self.hold(set())
        if error == UNKNOWN_MEMBER_ID:
            self.member_id = ""
        self.join()

    def beat(self) -> None:
        if self._busy and not self.stuck:
            return
        self.send(ApiKey.HEARTBEAT, 3, {
            "group_id": self.ledger.group, "generation_id": self.generation, "member_id": self.member_id,
            "group_instance_id": None,
        }, self.beaten)  # fmt: skip

    def beaten(self, answer: dict[str, Any]) -> None:
        error = answer["error_code"]
        if self.stuck:  # its background thread heartbeats; nobody polls, so nobody rejoins
            if error in (UNKNOWN_MEMBER_ID, ILLEGAL_GENERATION):
                self.removed()
            else:
                self.beat_in(self.timings.classic_heartbeat)
            return
        if error == REBALANCE_IN_PROGRESS:
            self.join()
        elif error in (UNKNOWN_MEMBER_ID, ILLEGAL_GENERATION):
            self.lost(error)
        elif error != 0:
            raise RuntimeError(f"{self.name}: Heartbeat error {error}")
        else:
            self.beat_in(self.timings.classic_heartbeat)

    def leave(self) -> None:
        self.hold(set())
        self.send(ApiKey.LEAVE_GROUP, 3, {
            "group_id": self.ledger.group,
            "members": [{"member_id": self.member_id, "group_instance_id": None}],
        }, lambda _: None)  # fmt: skip
        self.gone = True


# -- scenarios -----------------------------------------------------------------------------


def make_member(
    protocol: str, index: int, net: VirtualNet | TcpNet, ledger: Ledger, timings: Timings
) -> Member:
    if protocol == "consumer":
        return ConsumerMember(index, net, ledger, timings)
    return ClassicMember(index, net, ledger, timings, cooperative=protocol == "classic-cooperative")


class Scenario:
    """One group, one protocol, one event; the same steps on either transport."""

    def __init__(
        self,
        protocol: str,
        size: int,
        event: str,
        net: VirtualNet | TcpNet,
        timings: Timings,
        topic: str,
        trial: int = 0,
    ) -> None:
        self.protocol, self.size, self.event, self.net, self.timings = protocol, size, event, net, timings
        self.ledger = Ledger(net, size * PARTITIONS_PER_MEMBER, f"bench-{protocol}-{size}-{event}", topic)
        self.members = [make_member(protocol, i, net, self.ledger, timings) for i in range(size)]
        self.rng = random.Random(f"{protocol}-{size}-{event}-{trial}")

    def form(self) -> None:
        """Members start spread over a heartbeat interval, as a deployment's consumers do."""
        for member in self.members:
            self.net.later(self.rng.uniform(0, 1000), member.start)

    def trigger(self) -> None:
        last = self.members[-1]  # highest member id: the uniform assignor takes from it first
        subjects: set[str] = set()
        self.newcomer: Member | None = None
        if self.event in ("join", "stuck"):
            newcomer = make_member(self.protocol, self.size, self.net, self.ledger, self.timings)
            self.newcomer = newcomer
            self.members.append(newcomer)
            subjects.add(newcomer.name)
        if self.event != "join":
            subjects.add(last.name)
        self.rounds_before = max(m.round for m in self.members)
        self.requests_before = self.net.requests
        self.ledger.open_window(subjects)
        if self.event in ("join", "stuck"):
            newcomer.start()
        if self.event == "leave":
            last.leave()
        elif self.event == "crash":
            last.crash()
        elif self.event == "stuck":
            last.get_stuck()

    def describe_request(self) -> tuple[int, int, dict[str, Any]]:
        if self.protocol == "consumer":
            fields = {"group_ids": [self.ledger.group], "include_authorized_operations": False}
            return ApiKey.CONSUMER_GROUP_DESCRIBE, 0, fields
        return (
            ApiKey.DESCRIBE_GROUPS,
            5,
            {"groups": [self.ledger.group], "include_authorized_operations": False},
        )

    def coordinator_agrees(self, answer: dict[str, Any]) -> str:
        """Checks a describe answer against what the members hold; returns the group's state."""
        group = answer["groups"][0]
        holding = {m.member_id: m.owned for m in self.members if self.ledger.consuming(m.name)}
        if self.protocol == "consumer":
            described = {
                m["member_id"]: {p for t in m["assignment"]["topic_partitions"] for p in t["partitions"]}
                for m in group["members"]
            }
            assert described == holding, "the coordinator's assignments differ from what members hold"
        else:
            assert {m["member_id"] for m in group["members"]} == set(holding), "the coordinator has others"
        return group["group_state"]

    def result(self) -> dict[str, Any]:
        window = self.ledger.close_window()
        self.started = window.started
        staying = [m for m in self.members if self.ledger.consuming(m.name)]
        return {
            "protocol": self.protocol,
            "size": self.size,
            "event": self.event,
            "partitions": self.ledger.partitions,
            "settled_s": round(window.last_change - window.started, 3),
            "partitions_paused": len(window.paused),
            "paused_partition_s": round(window.paused_seconds, 1),
            "members_stopped": len(window.stopped),
            "newcomer_waited_s": (
                round(window.first_held[self.newcomer.name] - window.started, 3) if self.newcomer else None
            ),
            "rounds": max(m.round for m in self.members) - self.rounds_before,
            "requests_per_member": round((self.net.requests - self.requests_before) / len(staying), 2),
        }


def run_virtual(protocol: str, size: int, event: str, trial: int) -> dict[str, Any]:
    net = VirtualNet(size * PARTITIONS_PER_MEMBER)
    scenario = Scenario(protocol, size, event, net, Timings(), TOPIC, trial)
    scenario.form()
    net.run_until(scenario.ledger.settled, 600)
    steady = (net.requests, net.now())
    triggered: list[tuple[int, float]] = []
    net.later(scenario.rng.uniform(10_000, 15_000),
              lambda: triggered.append((net.requests, net.now())) or scenario.trigger())  # fmt: skip
    net.run_until(lambda: bool(triggered), 60)  # the event at a random moment of a stable group
    wall = time.perf_counter()
    net.run_until(scenario.ledger.settled, 900)
    scenario.coordinator_agrees(net.call(*scenario.describe_request()))
    result = scenario.result()
    # Consumption has settled; the coordinator calls the group Stable once every member has
    # heartbeated at the new epoch (consumer groups) or synced (classic). Asked after every
    # step: the state can only change when something happens.
    net.run_until(lambda: net.call(*scenario.describe_request())["groups"][0]["group_state"] == "Stable", 60)
    result["stable_s"] = round(net.now() - scenario.started, 2)
    result["wall_s"] = round(time.perf_counter() - wall, 2)
    result["steady_requests_per_s"] = rate(steady, triggered[0])
    return result


def rate(start: tuple[int, float], end: tuple[int, float]) -> float:
    """Requests per second the coordinator answered between two (requests, seconds) readings:
    a stable group's heartbeats, what its heartbeat intervals cost."""
    return round((end[0] - start[0]) / max(end[1] - start[1], 1e-9), 1)


async def run_tcp(bootstrap: str, protocol: str, size: int, event: str, timings: Timings) -> dict[str, Any]:
    net = TcpNet(bootstrap)
    scenario = Scenario(protocol, size, event, net, timings, f"{TOPIC}-{size}")
    admin = await ProtocolClient.connect(bootstrap, "bench-admin")
    try:
        scenario.form()
        await net.run_until(scenario.ledger.settled, 120)
        steady = (net.requests, net.now())
        # Longer than a classic heartbeat interval, so the stable group's rate covers a round.
        await asyncio.sleep(scenario.rng.uniform(3.5, 4.5))
        before = (net.requests, net.now())
        scenario.trigger()
        await net.run_until(scenario.ledger.settled, 120)
        result = scenario.result()
        state = scenario.coordinator_agrees(await admin.request(*scenario.describe_request()))
        deadline = time.monotonic() + 60
        while state != "Stable" and time.monotonic() < deadline:
            await asyncio.sleep(0.05)
            state = (await admin.request(*scenario.describe_request()))["groups"][0]["group_state"]
        assert state == "Stable", f"the group is still {state}"
        result["stable_s"] = round(time.monotonic() - scenario.started, 2)
        result["steady_requests_per_s"] = rate(steady, before)
        return result
    finally:
        await admin.close()
        for member in scenario.members:
            if member.alive and not member.gone:
                member.leave()
        await asyncio.sleep(0.2)
        await net.shutdown()


def averaged(trials: list[dict[str, Any]]) -> dict[str, Any]:
    """One case over several trials (the event at other moments of the heartbeat cycle): means,
    the slowest settling, and every trial."""
    first = trials[0]
    result = {k: first[k] for k in ("protocol", "size", "event", "partitions")}
    for key in ("settled_s", "stable_s", "partitions_paused", "paused_partition_s", "members_stopped",
                "rounds", "requests_per_member", "steady_requests_per_s"):  # fmt: skip
        result[key] = round(sum(t[key] for t in trials) / len(trials), 2)
    result["settled_max_s"] = max(t["settled_s"] for t in trials)
    waits = [t["newcomer_waited_s"] for t in trials if t["newcomer_waited_s"] is not None]
    result["newcomer_waited_s"] = round(sum(waits) / len(waits), 2) if waits else None
    result["trials"] = trials
    return result


def create_topics(bootstrap: str, sizes: list[int]) -> None:
    from confluent_kafka.admin import AdminClient, NewTopic

    admin = AdminClient({"bootstrap.servers": bootstrap})
    topics = [NewTopic(f"{TOPIC}-{size}", size * PARTITIONS_PER_MEMBER, 1) for size in sizes]
    for future in admin.create_topics(topics).values():
        future.result(30)


# -- output --------------------------------------------------------------------------------

LABELS = {"consumer": "consumer (KIP-848)", "classic-eager": "classic eager (range)",
          "classic-cooperative": "classic cooperative-sticky"}  # fmt: skip


def table(results: list[dict[str, Any]], clock: str) -> list[str]:
    lines = [
        f"| members | event | protocol | settled ({clock}) | stable ({clock}) | partitions paused "
        f"| paused partition-s | members stopped | newcomer waited ({clock}) | rounds | requests/member "
        "| heartbeats/s, stable group |",
        "|---:|---|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|",
    ]
    for r in results:
        waited = "" if r["newcomer_waited_s"] is None else f"{r['newcomer_waited_s']:.1f}"
        lines.append(
            f"| {r['size']} | {r['event']} | {LABELS[r['protocol']]} | {r['settled_s']:.1f} "
            f"| {r['stable_s']:.1f} "
            f"| {r['partitions_paused']:g} / {r['partitions']} | {r['paused_partition_s']:,.0f} "
            f"| {r['members_stopped']:g} | {waited} | {r['rounds']:g} | {r['requests_per_member']:.1f} "
            f"| {r.get('steady_requests_per_s', 0):,.0f} |"
        )
    return lines


def plot(results: list[dict[str, Any]], out: Path) -> None:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    sizes = sorted({r["size"] for r in results})
    found = {(r["protocol"], r["size"], r["event"]): r for r in results}
    rows = [("settled_s", "settled (s)", "linear"), ("partitions_paused", "partitions paused", "log"),
            ("members_stopped", "members that stopped consuming", "linear"),
            ("newcomer_waited_s", "newcomer waited (s)", "linear")]  # fmt: skip
    figure, axes = plt.subplots(len(rows), len(EVENTS), figsize=(4 * len(EVENTS), 3 * len(rows)))
    width = 0.8 / len(PROTOCOLS)
    for column, event in enumerate(EVENTS):
        for row, (key, label, scale) in enumerate(rows):
            ax = axes[row][column]
            for i, protocol in enumerate(PROTOCOLS):
                cases = [found[(protocol, s, event)] for s in sizes if (protocol, s, event) in found]
                values = [case[key] or 0 for case in cases]
                ax.bar([x + i * width for x in range(len(values))], values, width, label=LABELS[protocol])
            ax.set_xticks([x + width for x in range(len(sizes))], [f"{s} members" for s in sizes])
            ax.set_title(f"{event}: {label}", fontsize=10)
            ax.set_yscale(scale)
            if key == "newcomer_waited_s" and event not in ("join", "stuck"):
                ax.text(0.5, 0.5, "nobody joins", ha="center", transform=ax.transAxes)
    handles, labels = axes[0][0].get_legend_handles_labels()
    figure.legend(handles, labels, loc="lower center", ncol=len(PROTOCOLS))
    figure.suptitle("One event in a consumer group: virtual clock, Kafka's default timings")
    figure.tight_layout(rect=(0, 0.04, 1, 1))
    figure.savefig(out, dpi=100)


def readme_block(results: dict[str, Any]) -> str:
    """The README's figures: the largest size on the virtual clock and over TCP, from the JSON."""
    size = max(results["sizes"])
    lines = [
        f"Virtual clock, {size} members, {size * results['partitions_per_member']} partitions, mean of "
        f"{results['trials']} runs (the event at random moments of the heartbeat cycle):",
        "",
        *table([r for r in results["virtual_clock"] if r["size"] == size], "s"),
    ]
    tcp = [r for r in results.get("tcp", []) if r["size"] == size]
    if tcp:
        where = "a coordinator process; the members share this 2-core machine"
        lines += ["", f"Over TCP, {size} members ({where}), one run:", ""]
        lines += table(tcp, "s, wall")
    others = ", ".join(str(s) for s in results["sizes"] if s != size)
    tcp_others = ", ".join(str(s) for s in sorted({r["size"] for r in results.get("tcp", [])}) if s != size)
    note = (
        "The coordinator's defaults: consumer-group heartbeat intervals adapt to its load (a 250 ms "
        "floor up to 5 s, within 2,000 heartbeats/s; 500 ms while a member has reconciliation "
        "pending) and targets are computed off the event loop (bumps within 100 ms share one "
        "computation); Kafka's clients' defaults: 3 s classic heartbeats, 45 s sessions, 300 s "
        "max.poll.interval.ms. The virtual "
        "clock has no network or processing time, so an eager rebalance costs there only the waiting; "
        "over TCP it costs its round trips too."
    )
    if others or tcp_others:
        sizes = "; ".join(x for x in (others, tcp_others and f"over TCP {tcp_others}") if x)
        note += f" Other sizes ({sizes} members): `bench/results/consumer_rebalance.json` and `.png`."
    return "\n".join(lines) + "\n\n" + textwrap.fill(note, 90)


def main() -> int:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--sizes", type=int, nargs="+", default=[10, 50, 100])
    parser.add_argument("--trials", type=int, default=3, help="virtual-clock runs per case, averaged")
    parser.add_argument("--tcp-sizes", type=int, nargs="+", default=[10, 100])
    parser.add_argument("--no-tcp", action="store_true", help="only the virtual clock")
    parser.add_argument("--update-readme", action="store_true")
    args = parser.parse_args()
    results: dict[str, Any] = {
        "sizes": args.sizes,
        "partitions_per_member": PARTITIONS_PER_MEMBER,
        "trials": args.trials,
    }
    results["virtual_clock"] = []
    for size in args.sizes:
        for event in EVENTS:
            for protocol in PROTOCOLS:
                trials = [run_virtual(protocol, size, event, trial) for trial in range(args.trials)]
                result = averaged(trials)
                results["virtual_clock"].append(result)
                print(f"virtual {size:4} {event:6} {protocol:20} settled {result['settled_s']:7.1f}s "
                      f"(max {result['settled_max_s']:.1f}s)  paused {result['partitions_paused']:6.1f}  "
                      f"stopped {result['members_stopped']:5.1f}  "
                      f"({sum(t['wall_s'] for t in trials):.1f}s)", flush=True)  # fmt: skip
    print("\n".join(["", "Virtual clock:", *table(results["virtual_clock"], "s")]))
    if not args.no_tcp:
        results["tcp"] = []
        timings = Timings()
        with tempfile.TemporaryDirectory(prefix="bench-consumer-") as tmp:
            coordinator = CoordinatorProcess(
                Path(tmp) / "data", {"group.initial.rebalance.delay.ms": "300"}
            ).start()
            try:
                create_topics(coordinator.bootstrap, args.tcp_sizes)
                for size in args.tcp_sizes:
                    for event in ("join", "leave"):
                        for protocol in PROTOCOLS:
                            result = asyncio.run(
                                run_tcp(coordinator.bootstrap, protocol, size, event, timings)
                            )
                            results["tcp"].append(result)
                            print(f"tcp {size:4} {event:6} {protocol:20} settled {result['settled_s']:6.2f}s",
                                  flush=True)  # fmt: skip
            finally:
                coordinator.stop()
        print("\n".join(["", "Over TCP:", *table(results["tcp"], "s, wall")]))
    RESULTS.parent.mkdir(parents=True, exist_ok=True)
    RESULTS.write_text(json.dumps(results, indent=2) + "\n")
    plot(results["virtual_clock"], RESULTS.with_suffix(".png"))
    print(f"saved {RESULTS.relative_to(ROOT)} and {RESULTS.with_suffix('.png').relative_to(ROOT)}")
    if args.update_readme:
        update_readme("consumer_rebalance", readme_block(results))
        print("updated README.md")
    return 0


if __name__ == "__main__":
    sys.exit(main())

"""How many heartbeats one coordinator process answers, how fast, and whether a big group
forming stalls everyone else.

Four measurements against coordinator processes, in one run:
(a) a stable consumer group of 1,000 members (10 topics of 200 partitions, every member
    subscribed to all): the members join with raw ConsumerGroupHeartbeat v1 and reconcile
    until the coordinator calls the group Stable; then the load generator sends each
    member's heartbeat at its current epoch (every optional field null, as clients send
    them once nothing changed) from 32 connections with 4 requests in flight each, cycling
    through the members;
(b) a stable connect group of 100 workers (100 connectors of 10 tasks), the same way with
    ConnectGroupHeartbeat;
(c) ApiVersions v3 with the same generator: the rate at which the server answers its
    cheapest request, the request path's ceiling; (a) and (b) are given as ratios of it;
(d) no stall: 20 members of a small probe group heartbeat every 100 ms each (from a
    process of their own, one connection each) while a 2,000-member consumer group with
    heterogeneous subscriptions (200 topics of 10 partitions, each member subscribed to 20
    of them) joins all at once and reconciles at the intervals the coordinator returns, as
    fast as it lets it; the probe's heartbeat latencies, how long until the big group is
    Stable, its group epoch then and how many target computations it cost (the
    coordinator's /metrics).

The generator is cheap on purpose: frames are encoded before the clock starts, answers are
checked by their error code's bytes only, and each connection is a bare asyncio Protocol.
Its CPU share is printed beside the coordinator's, so a reader can tell which one was the
limit. Latency is from a frame's write to its answer's arrival at the generator.

    python bench/heartbeats.py [--seconds 5] [--members 1000] [--workers 100]
                               [--skip-stall] [--baseline] [--update-readme]

Prints a table and saves bench/results/heartbeats.json (`--baseline`: heartbeats_baseline.json,
shown beside the latest figures); `--update-readme` renders the README block.
"""

from __future__ import annotations

import argparse
import asyncio
import collections
import json
import multiprocessing
import os
import platform
import random
import sys
import tempfile
import time
import urllib.request
import uuid
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from bench.connect_group import TcpCluster, all_work  # noqa: E402 - the sibling bench's simulated workers
from bench.readme_table import update_readme  # noqa: E402
from connect_rebalance.processes import CoordinatorProcess  # noqa: E402
from connect_rebalance.protocol import codec  # noqa: E402
from connect_rebalance.protocol.api_keys import ApiKey  # noqa: E402
from connect_rebalance.protocol.client import ProtocolClient  # noqa: E402
from connect_rebalance.protocol.codec import RequestHeader  # noqa: E402
from connect_rebalance.protocol.connect_group import heartbeat_fields as connect_heartbeat  # noqa: E402
from connect_rebalance.protocol.consumer_group import (  # noqa: E402
    ConsumerGroupApi,
    heartbeat_fields,
    partitions_of,
)

RESULTS = ROOT / "bench" / "results" / "heartbeats.json"
BASELINE = ROOT / "bench" / "results" / "heartbeats_baseline.json"
CONSUMER_GROUP, CONNECT_GROUP, BIG_GROUP, PROBE_GROUP = "bench-hb", "bench-connect", "bench-forming", "probe"
# Error codes sit at fixed offsets of the answers (after the size prefix): ApiVersions has
# header v0 and starts with ErrorCode; the flexible heartbeats have header v1 (correlation id,
# empty tagged fields) and start with ThrottleTimeMs.
ERROR_AT = {ApiKey.API_VERSIONS: 4, ApiKey.CONSUMER_GROUP_HEARTBEAT: 9, ApiKey.CONNECT_GROUP_HEARTBEAT: 9}


def frame(api_key: int, version: int, fields: dict[str, Any], client_id: str = "bench") -> bytes:
    """A request frame, encoded once. A member's frames carry the client id it joined with (a
    changed client id is a changed member profile, which the coordinator records)."""
    body = codec.build_request(api_key, version, fields)
    return codec.encode_request_frame(RequestHeader(api_key, version, 1, client_id), body)


# -- the load generator --------------------------------------------------------------------


@dataclass
class LoadRun:
    """What the connections of one load run share: the switches and the tallies."""

    sending: bool = True
    recording: bool = False
    answered: int = 0
    errors: int = 0
    first_error: int = 0
    latencies: list[float] = field(default_factory=list)


class LoadConnection(asyncio.Protocol):
    """One connection: keeps `depth` frames in flight, cycling through its own frames; an
    answer releases the next frame, written together with the others released by the same read."""

    def __init__(self, frames: list[bytes], depth: int, error_at: int, run: LoadRun) -> None:
        self.frames, self.depth, self.error_at, self.run = frames, depth, error_at, run
        self.next = 0
        self.sent: collections.deque[float] = collections.deque()
        self.buffer = bytearray()
        self.transport: asyncio.Transport | None = None
        self.lost = asyncio.get_running_loop().create_future()

    def connection_made(self, transport: asyncio.BaseTransport) -> None:
        self.transport = transport  # type: ignore[assignment]

    def connection_lost(self, exc: Exception | None) -> None:
        if not self.lost.done():
            self.lost.set_result(exc)

    def _take(self, now: float) -> bytes:
        chosen = self.frames[self.next]
        self.next = (self.next + 1) % len(self.frames)
        self.sent.append(now)
        return chosen

    def start(self) -> None:
        assert self.transport is not None
        now = time.perf_counter()
        self.transport.write(b"".join(self._take(now) for _ in range(self.depth)))

    def data_received(self, data: bytes) -> None:
        buffer, run, sent, error_at = self.buffer, self.run, self.sent, self.error_at
        buffer += data
        now = time.perf_counter()
        out = []
        pos, size_of = 0, len(buffer)
        while size_of - pos >= 4:
            end = pos + 4 + int.from_bytes(buffer[pos : pos + 4], "big")
            if end > size_of:
                break
            error = int.from_bytes(buffer[pos + 4 + error_at : pos + 6 + error_at], "big", signed=True)
            latency = now - sent.popleft()
            run.answered += 1
            if run.recording:
                run.latencies.append(latency)
                if error:
                    run.errors += 1
                    run.first_error = run.first_error or error
            if run.sending:
                out.append(self._take(now))
            pos = end
        del buffer[:pos]
        if out and self.transport is not None:
            self.transport.write(b"".join(out))


def cpu_seconds(pid: int) -> float:
    """User + system CPU time of a process (all its threads), from /proc."""
    fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


def percentile(ordered: list[float], q: float) -> float:
    return ordered[min(len(ordered) - 1, int(q * len(ordered)))] if ordered else 0.0


async def load(
    bootstrap: str,
    frames: list[bytes],
    api_key: int,
    coordinator_pid: int,
    connections: int = 32,
    depth: int = 4,
    warmup: float = 1.0,
    seconds: float = 5.0,
) -> dict[str, Any]:
    """Closed-loop load: `connections` x `depth` requests in flight; figures over `seconds`
    after `warmup`. Frame i goes out on connection i % connections."""
    host, port = bootstrap.rsplit(":", 1)
    run = LoadRun()
    loop = asyncio.get_running_loop()
    pipes: list[LoadConnection] = []
    for i in range(connections):
        mine = frames[i::connections] or frames[:1]
        _, pipe = await loop.create_connection(
            lambda mine=mine: LoadConnection(mine, depth, ERROR_AT[api_key], run), host, int(port)
        )
        pipes.append(pipe)
    for pipe in pipes:
        pipe.start()
    await asyncio.sleep(warmup)
    run.recording = True
    answered, wall, own, theirs = (
        run.answered,
        time.perf_counter(),
        time.process_time(),
        cpu_seconds(coordinator_pid),
    )
    await asyncio.sleep(seconds)
    run.recording = False
    answered = run.answered - answered
    wall = time.perf_counter() - wall
    own, theirs = time.process_time() - own, cpu_seconds(coordinator_pid) - theirs
    run.sending = False
    deadline = time.monotonic() + 10
    while any(p.sent for p in pipes) and time.monotonic() < deadline:
        await asyncio.sleep(0.01)
    unanswered = sum(len(p.sent) for p in pipes)
    for pipe in pipes:
        assert pipe.transport is not None
        pipe.transport.close()
    latencies = sorted(run.latencies)
    return {
        "connections": connections,
        "in_flight": connections * depth,
        "answered": answered,
        "per_second": round(answered / wall),
        "errors": run.errors,
        "first_error": run.first_error,
        "unanswered_at_end": unanswered,
        "p50_ms": round(percentile(latencies, 0.50) * 1000, 2),
        "p99_ms": round(percentile(latencies, 0.99) * 1000, 2),
        "max_ms": round(latencies[-1] * 1000, 2) if latencies else 0.0,
        "generator_cpu": round(own / wall, 2),
        "coordinator_cpu": round(theirs / wall, 2),
    }


# -- consumer groups: joining and reconciling with raw ConsumerGroupHeartbeat v1 ----------------


@dataclass
class ConsumerMember:
    member_id: str
    topics: list[str]
    epoch: int = 0
    owned: frozenset[tuple[str, int]] = frozenset()
    joined: bool = False
    heartbeats: int = 0
    latencies: list[float] = field(default_factory=list)


async def reconcile(
    api: ConsumerGroupApi, group: str, member: ConsumerMember, stop: asyncio.Event, cap_ms: float
) -> None:
    """Heartbeat as a client does: join, apply each assignment at once and report what it
    owns, come back after the interval the coordinator returns (at once after a revocation)."""
    while not stop.is_set():
        extra: dict[str, Any] = {"owned": member.owned}
        if member.epoch == 0:  # joining, or joined before the group's first target: all fields
            extra.update(topics=member.topics, rebalance_timeout_ms=60_000, owned=frozenset())
        answer = await api.heartbeat(group, member.member_id, member.epoch, **extra)
        member.heartbeats += 1
        if answer["error_code"] != 0:
            raise RuntimeError(f"{member.member_id}: {answer['error_code']} {answer['error_message']}")
        member.joined, member.epoch = True, answer["member_epoch"]
        delay = min(answer["heartbeat_interval_ms"], cap_ms)
        if answer["assignment"] is not None:
            given = partitions_of(answer["assignment"]["topic_partitions"])
            if member.owned - given:
                delay = 0
            member.owned = given
        with_stop = asyncio.ensure_future(stop.wait())
        await asyncio.wait([with_stop], timeout=delay / 1000)
        with_stop.cancel()


async def group_state(admin: ProtocolClient, group: str) -> str:
    answer = await admin.request(ApiKey.LIST_GROUPS, 5, {"states_filter": [], "types_filter": []})
    return next((g["group_state"] for g in answer["groups"] if g["group_id"] == group), "Dead")


class ConsumerFleet:
    """Members of one consumer group, multiplexed over a few connections."""

    def __init__(self, bootstrap: str, group: str, members: list[ConsumerMember], connections: int) -> None:
        self.bootstrap, self.group, self.members, self.connections = bootstrap, group, members, connections
        self.clients: list[ProtocolClient] = []
        self.tasks: list[asyncio.Task[None]] = []
        self.stop = asyncio.Event()

    def client_id(self, index: int) -> str:
        """The client id member `index` speaks with (that of its connection)."""
        return f"{self.group}-{index % self.connections}"

    def heartbeat_frames(self) -> list[bytes]:
        """Each member's settled heartbeat at its current epoch, as it would send it."""
        return [
            frame(
                ApiKey.CONSUMER_GROUP_HEARTBEAT,
                1,
                heartbeat_fields(self.group, m.member_id, m.epoch),
                self.client_id(i),
            )
            for i, m in enumerate(self.members)
        ]

    async def start(self, cap_ms: float = 1000) -> None:
        for i in range(self.connections):
            self.clients.append(await ProtocolClient.connect(self.bootstrap, self.client_id(i)))
        for i, member in enumerate(self.members):
            api = ConsumerGroupApi(self.clients[i % self.connections])
            self.tasks.append(asyncio.create_task(reconcile(api, self.group, member, self.stop, cap_ms)))

    async def wait_stable(self, admin: ProtocolClient, timeout: float, poll: float = 0.25) -> float:
        started = time.perf_counter()
        while time.perf_counter() - started < timeout:
            failed = [t for t in self.tasks if t.done()]
            if failed:
                raise RuntimeError(f"a member stopped: {failed[0].exception()!r}")
            if all(m.joined for m in self.members) and await group_state(admin, self.group) == "Stable":
                return time.perf_counter() - started
            await asyncio.sleep(poll)
        raise RuntimeError(f"{self.group} not Stable after {timeout:.0f} s")

    async def halt(self) -> None:
        """Stop heartbeating (each member's request in flight is answered first)."""
        self.stop.set()
        await asyncio.gather(*self.tasks)

    async def leave(self) -> None:
        for i, member in enumerate(self.members):
            api = ConsumerGroupApi(self.clients[i % self.connections])
            self.tasks[i] = asyncio.create_task(api.heartbeat(self.group, member.member_id, -1))  # type: ignore[arg-type]
        await asyncio.gather(*self.tasks)

    async def close(self) -> None:
        for task in self.tasks:
            task.cancel()
        await asyncio.gather(*self.tasks, return_exceptions=True)
        for client in self.clients:
            await client.close()


async def create_topics(bootstrap: str, topics: dict[str, int]) -> None:
    client = await ProtocolClient.connect(bootstrap, "bench-admin")
    try:
        names = list(topics)
        for start in range(0, len(names), 50):
            answer = await client.request(19, 4, {
                "topics": [{"name": n, "num_partitions": topics[n], "replication_factor": 1,
                            "assignments": [], "configs": []} for n in names[start : start + 50]],
                "timeout_ms": 60_000, "validate_only": False,
            })  # fmt: skip
            bad = [t for t in answer["topics"] if t["error_code"] not in (0, 36)]
            if bad:
                raise RuntimeError(f"CreateTopics: {bad[0]}")
    finally:
        await client.close()


async def wait_empty(admin: ProtocolClient, group: str, timeout: float = 60) -> None:
    deadline = time.monotonic() + timeout
    while await group_state(admin, group) not in ("Empty", "Dead"):
        if time.monotonic() > deadline:
            raise RuntimeError(f"{group} did not empty")
        await asyncio.sleep(0.1)


# -- (a), (b), (c) ---------------------------------------------------------------------------


async def api_versions_ceiling(bootstrap: str, pid: int, seconds: float) -> dict[str, Any]:
    fields = {"client_software_name": "bench", "client_software_version": "1.0"}
    return await load(
        bootstrap, [frame(ApiKey.API_VERSIONS, 3, fields)], ApiKey.API_VERSIONS, pid, seconds=seconds
    )


async def stable_consumer_group(bootstrap: str, pid: int, members: int, seconds: float) -> dict[str, Any]:
    # 2 partitions per member (each partition is two open files in the coordinator).
    topics = {f"hb-{t}": max(1, members // 5) for t in range(10)}
    await create_topics(bootstrap, topics)
    admin = await ProtocolClient.connect(bootstrap, "bench-admin")
    fleet = ConsumerFleet(
        bootstrap, CONSUMER_GROUP,
        [ConsumerMember(str(uuid.UUID(int=i + 1)), sorted(topics)) for i in range(members)], 32,
    )  # fmt: skip
    try:
        await fleet.start()
        formed = await fleet.wait_stable(admin, timeout=600)
        await fleet.halt()
        frames = fleet.heartbeat_frames()
        result = await load(bootstrap, frames, ApiKey.CONSUMER_GROUP_HEARTBEAT, pid, seconds=seconds)
        result["still_stable"] = await group_state(admin, CONSUMER_GROUP) == "Stable"
        result["members"], result["partitions"], result["formed_s"] = (
            members,
            sum(topics.values()),
            round(formed, 1),
        )
        await fleet.leave()
        await wait_empty(admin, CONSUMER_GROUP)
        return result
    finally:
        await fleet.close()
        await admin.close()


async def stable_connect_group(bootstrap: str, pid: int, workers: int, seconds: float) -> dict[str, Any]:
    work = all_work(100, 10)
    admin = await ProtocolClient.connect(bootstrap, "bench-admin")
    cluster = TcpCluster(bootstrap, work)
    try:
        for i in range(workers):
            await cluster.add(f"w{i:03d}")
        await cluster.wait_settled(admin)
        epochs = {name: worker.epoch for name, (worker, _) in cluster.workers.items()}
        await cluster.close()
        frames = [
            frame(ApiKey.CONNECT_GROUP_HEARTBEAT, 0, connect_heartbeat(CONNECT_GROUP, name, epoch), name)
            for name, epoch in epochs.items()
        ]
        result = await load(bootstrap, frames, ApiKey.CONNECT_GROUP_HEARTBEAT, pid, seconds=seconds)
        result["still_stable"] = await group_state(admin, CONNECT_GROUP) == "Stable"
        result["workers"], result["items"] = workers, len(work)
        for name in epochs:
            await admin.request(ApiKey.CONNECT_GROUP_HEARTBEAT, 0, connect_heartbeat(CONNECT_GROUP, name, -1))
        await wait_empty(admin, CONNECT_GROUP)
        return result
    finally:
        await cluster.close()
        await admin.close()


# -- (d) the probe, in a process of its own ------------------------------------------------------


def probe_process(bootstrap: str, frames: list[bytes], period: float, stop: Any, results: Any) -> None:
    """Each frame is one probe member's heartbeat on a connection of its own, sent every
    `period` s (or as soon as the previous answer came, if that took longer)."""

    async def member(host: str, port: int, heartbeat: bytes) -> list[tuple[float, float, int]]:
        reader, writer = await asyncio.open_connection(host, port)
        seen: list[tuple[float, float, int]] = []  # (sent at, latency, error)
        try:
            next_at = time.perf_counter()
            while not stop.is_set():
                sent = time.perf_counter()
                writer.write(heartbeat)
                size = int.from_bytes(await reader.readexactly(4), "big")
                answer = await reader.readexactly(size)
                now = time.perf_counter()
                seen.append((sent, now - sent, int.from_bytes(answer[9:11], "big", signed=True)))
                next_at = max(next_at + period, now)
                await asyncio.sleep(next_at - now)
        finally:
            writer.close()
        return seen

    async def run() -> list[list[tuple[float, float, int]]]:
        host, port = bootstrap.rsplit(":", 1)
        return await asyncio.gather(*(member(host, int(port), f) for f in frames))

    results.put(asyncio.run(run()))


class Probe:
    """`probe_process` started in a process of its own; `finish` stops it and returns what it saw
    ((sent at, latency, error) per heartbeat, per member); `kill` for a run cut short."""

    def __init__(self, bootstrap: str, frames: list[bytes], period: float = 0.1) -> None:
        context = multiprocessing.get_context("spawn")
        self.stop, self.results = context.Event(), context.Queue()
        self.process = context.Process(
            target=probe_process, args=(bootstrap, frames, period, self.stop, self.results)
        )
        self.process.start()

    async def finish(self) -> list[list[tuple[float, float, int]]]:
        self.stop.set()
        seen = await asyncio.get_running_loop().run_in_executor(None, self.results.get, True, 60)
        self.process.join(10)
        return seen  # type: ignore[no-any-return]

    def kill(self) -> None:
        self.stop.set()
        if self.process.is_alive():
            self.process.kill()


async def close_all(probing: Probe | None, *closing: Any) -> None:
    """After a run, cut short or not: fleets and clients closed, a probe still running killed."""
    for item in closing:
        await item.close()
    if probing is not None:
        probing.kill()


async def forming_without_stall(members: int, seconds_before: float) -> dict[str, Any]:
    topics = {f"t{t:03d}": 10 for t in range(200)}
    with tempfile.TemporaryDirectory() as tmp:
        coordinator = CoordinatorProcess(Path(tmp) / "data").start()
        try:
            return await _forming(coordinator, topics, members, seconds_before)
        finally:
            coordinator.stop()


async def _forming(
    coordinator: CoordinatorProcess, topics: dict[str, int], members: int, seconds_before: float
) -> dict[str, Any]:
    bootstrap = coordinator.bootstrap
    await create_topics(bootstrap, {**topics, "probe": 20})
    admin = await ProtocolClient.connect(bootstrap, "bench-admin")
    probe = ConsumerFleet(
        bootstrap, PROBE_GROUP, [ConsumerMember(f"probe-{i:02d}", ["probe"]) for i in range(20)], 20
    )
    rng = random.Random(848)
    names = sorted(topics)
    big = ConsumerFleet(
        bootstrap, BIG_GROUP,
        [ConsumerMember(str(uuid.UUID(int=i + 1)), sorted(rng.sample(names, 20))) for i in range(members)],
        100,
    )  # fmt: skip
    probing = None
    try:
        await probe.start()
        await probe.wait_stable(admin, timeout=60)
        await probe.halt()
        frames = probe.heartbeat_frames()
        probing = Probe(bootstrap, frames)
        await asyncio.sleep(seconds_before)
        started = time.perf_counter()
        await big.start(cap_ms=float("inf"))
        stable_s = await big.wait_stable(admin, timeout=600)
        await asyncio.sleep(1.0)
        seen = await probing.finish()
        epoch = await big_group_epoch(admin)
        computations = target_computations(coordinator.admin_url, BIG_GROUP)
        await big.halt()
    finally:
        await close_all(probing, big, probe, admin)
    during = sorted(lat for member in seen for sent, lat, _ in member if sent >= started)
    all_probes = [s for member in seen for s in member]
    return {
        "members": members,
        "topics": len(topics),
        "partitions": sum(topics.values()),
        "topics_per_member": 20,
        "stable_s": round(stable_s, 1),
        "group_epoch": epoch,
        "target_computations": computations,
        "joining_heartbeats": sum(m.heartbeats for m in big.members),
        "probe_members": len(frames),
        "probe_heartbeats_during": len(during),
        "probe_errors": sum(1 for s in all_probes if s[2]),
        "probe_p50_ms": round(percentile(during, 0.5) * 1000, 1),
        "probe_p99_ms": round(percentile(during, 0.99) * 1000, 1),
        "probe_max_ms": round(during[-1] * 1000, 1) if during else 0.0,
        "probe_expected_during": round(len(frames) * (stable_s + 1.0) / 0.1),
        # When the slowest probe heartbeats were sent (s after the big group began to join), and
        # how long each took (ms): the ten slowest over 50 ms.
        "probe_slowest": sorted(
            (
                (round(sent - started, 2), round(lat * 1000))
                for member in seen
                for sent, lat, _ in member
                if sent >= started and lat > 0.05
            ),
            key=lambda s: -s[1],
        )[:10],  # fmt: skip
    }


async def big_group_epoch(admin: ProtocolClient) -> int:
    answer = await admin.request(69, 0, {"group_ids": [BIG_GROUP], "include_authorized_operations": False})
    return int(answer["groups"][0]["group_epoch"])


def target_computations(admin_url: str, group: str) -> int | None:
    """The coordinator's count of target computations for the group (admin /metrics)."""
    with urllib.request.urlopen(f"{admin_url}/metrics", timeout=10) as response:
        text = response.read().decode()
    for line in text.splitlines():
        if (
            line.startswith("connect_rebalance_group_target_computations_total{")
            and f'group="{group}"' in line
        ):
            return int(float(line.rsplit(" ", 1)[1]))
    return None


# -- output --------------------------------------------------------------------------------


def ratios(results: dict[str, Any]) -> None:
    ceiling = results["api_versions"]["per_second"]
    for key in ("consumer", "connect"):
        results[key]["ratio_to_ceiling"] = round(results[key]["per_second"] / ceiling, 2)


def _figures(r: dict[str, Any] | None) -> dict[str, str]:
    if r is None:
        return {}
    return {
        "rate": f"{r['per_second']:,}",
        "latency": f"{r['p50_ms']:.1f} / {r['p99_ms']:.1f} / {r['max_ms']:.1f}",
        "cpu": f"{r['coordinator_cpu'] / r['per_second'] * 1e6:.0f}",
        "ratio": f"{r['ratio_to_ceiling']:.2f}" if "ratio_to_ceiling" in r else "",
    }


def render(results: dict[str, Any], baseline: dict[str, Any] | None) -> str:
    """The README block: this run, the baseline (before) beside it when one is saved, the goals."""
    before = baseline or {}
    columns = ("before", "now") if baseline else ("now",)
    lines = [
        "| stable group, over TCP | | " + " | ".join(columns) + " | goal |",
        "|---|---|" + "---:|" * len(columns) + "---|",
    ]
    rows = (
        (f"ConsumerGroupHeartbeat v1, {results['consumer']['members']:,} members", "consumer",
         {"rate": "20,000", "latency": "p99 < 20", "ratio": ">= 0.5"}),
        (f"ConnectGroupHeartbeat, {results['connect']['workers']} workers", "connect", {}),
        ("ApiVersions v3: the cheapest request", "api_versions", {}),
    )  # fmt: skip
    measures = (("rate", "answered/s"), ("latency", "p50 / p99 / max ms"),
                ("cpu", "coordinator CPU µs per answer"), ("ratio", "/ ApiVersions answered/s"))  # fmt: skip
    for label, key, goals in rows:
        figures = {"before": _figures(before.get(key)), "now": _figures(results.get(key))}
        for i, (measure, name) in enumerate(measures):
            if not any(figures[c].get(measure) for c in columns):
                continue
            cells = " | ".join(figures[c].get(measure, "") for c in columns)
            lines.append(f"| {label if i == 0 else ''} | {name} | {cells} | {goals.get(measure, '')} |")
    c = results["consumer"]
    lines.append("")
    lines.append(
        f"{c['in_flight']} requests in flight on {c['connections']} connections, frames encoded "
        f"beforehand; during the consumer run the load generator used {c['generator_cpu']:.0%} of a "
        f"core and the coordinator {c['coordinator_cpu']:.0%}. {results['environment']}; the "
        "machine is shared, so rates follow the CPU the coordinator got: the CPU per answer "
        "compares runs better."
    )
    stall, stall_before = results.get("stall"), before.get("stall")
    if stall:
        lines += [
            "",
            f"A {stall['members']:,}-member consumer group forming (heterogeneous subscriptions: "
            f"{stall['topics']} topics of {stall['partitions'] // stall['topics']} partitions, "
            f"{stall['topics_per_member']} per member) while {stall['probe_members']} members of "
            "another group heartbeat every 100 ms:",
            "",
            "| | " + ("before | now |" if stall_before else "now |") + " goal |",
            "|---|" + ("---:|---:|" if stall_before else "---:|") + "---|",
        ]
        for label, key, unit, goal in (
            ("probe heartbeat p99", "probe_p99_ms", " ms", "< 50 ms"),
            ("probe heartbeat max", "probe_max_ms", " ms", "< 200 ms"),
            ("probe heartbeats sent while forming (all answered)", "probe_heartbeats_during", "", ""),
            ("time until the big group is Stable", "stable_s", " s", ""),
            ("its group epoch then", "group_epoch", "", ""),
            ("target computations", "target_computations", "", "bounded, not one per join"),
        ):
            values = [stall_before, stall] if stall_before else [stall]
            cells = " | ".join("" if v is None or v.get(key) is None else f"{v[key]:,}{unit}" for v in values)
            lines.append(f"| {label} | {cells} | {goal} |")
    return "\n".join(lines)


def readme_block(results: dict[str, Any]) -> str:
    """The README block from this run's JSON and the saved baseline beside it."""
    return render(results, json.loads(BASELINE.read_text()) if BASELINE.exists() else None)


def environment() -> str:
    return f"{os.cpu_count()} cores, Python {platform.python_version()}"


async def tcp_runs(args: argparse.Namespace) -> dict[str, Any]:
    results: dict[str, Any] = {"environment": environment()}
    with tempfile.TemporaryDirectory() as tmp:
        coordinator = CoordinatorProcess(Path(tmp) / "data").start()
        try:
            assert coordinator.process is not None
            pid = coordinator.process.pid
            results["api_versions"] = await api_versions_ceiling(coordinator.bootstrap, pid, args.seconds)
            print(f"ApiVersions: {results['api_versions']}", flush=True)
            results["consumer"] = await stable_consumer_group(
                coordinator.bootstrap, pid, args.members, args.seconds
            )
            print(f"consumer: {results['consumer']}", flush=True)
            results["connect"] = await stable_connect_group(
                coordinator.bootstrap, pid, args.workers, args.seconds
            )
            print(f"connect: {results['connect']}", flush=True)
        finally:
            coordinator.stop()
    ratios(results)
    if not args.skip_stall:
        results["stall"] = await forming_without_stall(args.forming_members, 2.0)
        print(f"stall: {results['stall']}", flush=True)
    return results


def main() -> int:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--seconds", type=float, default=5.0, help="measured window per load run")
    parser.add_argument("--members", type=int, default=1000)
    parser.add_argument("--workers", type=int, default=100)
    parser.add_argument("--forming-members", type=int, default=2000)
    parser.add_argument("--skip-stall", action="store_true", help="skip the no-stall measurement (d)")
    parser.add_argument("--baseline", action="store_true", help=f"save as {BASELINE.name}")
    parser.add_argument("--update-readme", action="store_true")
    args = parser.parse_args()
    results = asyncio.run(tcp_runs(args))
    target = BASELINE if args.baseline else RESULTS
    target.parent.mkdir(parents=True, exist_ok=True)
    target.write_text(json.dumps(results, indent=2) + "\n")
    table = render(results, None) if args.baseline else readme_block(results)
    print(table)
    print(f"saved {target.relative_to(ROOT)}")
    if args.update_readme:
        update_readme("heartbeats", table)
    return 0


if __name__ == "__main__":
    sys.exit(main())

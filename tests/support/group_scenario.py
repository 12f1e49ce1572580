"""Consumer-group scenarios with real member processes and continuous production.

`MemberFleet` starts and stops `tests.support.group_member` processes and reads what each
one consumed (and committed). `ContinuousProducer` writes numbered records at a steady
pace from a thread with an idempotent producer. Tests combine them and then check that
every produced record was consumed exactly once across all members.
"""

from __future__ import annotations

import json
import signal
import subprocess
import sys
import threading
import time
from collections import Counter
from pathlib import Path

from confluent_kafka import ConsumerGroupTopicPartitions, Producer, TopicPartition
from confluent_kafka.admin import AdminClient, NewTopic

from connect_rebalance.processes import CoordinatorProcess
from tests.support.wire import RawConnection
from workers.harness.cluster import metrics

OFFSET_COMMIT = 8


def create_topic(bootstrap: str, name: str, partitions: int, config: dict[str, str] | None = None) -> None:
    admin = AdminClient({"bootstrap.servers": bootstrap})
    for future in admin.create_topics([NewTopic(name, partitions, 1, config=config or {})]).values():
        future.result(30)


def groups_describe(bootstrap: str, group: str, *view: str) -> str:
    """What `connect-rebalance groups describe GROUP [--members|--state] [--verbose]` prints, as
    an operator runs it."""
    result = subprocess.run(
        [sys.executable, "-m", "connect_rebalance_cli.cli", "groups", "--bootstrap-server", bootstrap,
         "describe", group, *view],
        capture_output=True, text=True, timeout=60,
    )  # fmt: skip
    assert result.returncode == 0, result.stderr
    return result.stdout


def wait_until(predicate, timeout: float, what: str, interval: float = 0.05) -> None:  # type: ignore[no-untyped-def]
    deadline = time.monotonic() + timeout
    while not predicate():
        if time.monotonic() > deadline:
            raise AssertionError(f"timed out after {timeout:.0f}s waiting for {what}")
        time.sleep(interval)


def group_epoch(coordinator: CoordinatorProcess, group: str, kind: str) -> int:
    """The group's epoch (classic groups: generation), as the coordinator's /metrics report it."""
    samples = metrics(coordinator.admin_url)
    return int(samples[f'connect_rebalance_group_epoch{{group="{group}",type="{kind}"}}'])


def member_id_of(bootstrap: str, group: str, client_id: str) -> str:
    """The member id of the group's member with `client_id`, as an admin client describes it."""
    admin = AdminClient({"bootstrap.servers": bootstrap})
    described = admin.describe_consumer_groups([group])[group].result(30)
    [member] = [m for m in described.members if m.client_id == client_id]
    return str(member.member_id)


def stale_commit(bootstrap: str, group: str, member_id: str, epoch: int, topic: str, partition: int) -> int:
    """What a member that slept through a rebalance sends: an OffsetCommit (v9) of offset 0 at its
    old generation (classic) or member epoch (consumer groups). Returns the partition's error code."""
    connection = RawConnection(bootstrap)
    try:
        answer = connection.request(OFFSET_COMMIT, 9, {
            "group_id": group, "generation_id_or_member_epoch": epoch, "member_id": member_id,
            "group_instance_id": None,
            "topics": [{"name": topic, "partitions": [{
                "partition_index": partition, "committed_offset": 0, "committed_leader_epoch": -1,
                "committed_metadata": ""}]}],
        })  # fmt: skip
    finally:
        connection.close()
    return int(answer.topics[0].partitions[0].error_code)


def committed_offset(bootstrap: str, group: str, topic: str, partition: int) -> int:
    admin = AdminClient({"bootstrap.servers": bootstrap})
    wanted = ConsumerGroupTopicPartitions(group, [TopicPartition(topic, partition)])
    return int(admin.list_consumer_group_offsets([wanted])[group].result(30).topic_partitions[0].offset)


class ContinuousProducer:
    def __init__(self, bootstrap: str, topic: str, total: int, per_second: int) -> None:
        self.bootstrap, self.topic, self.total, self.per_second = bootstrap, topic, total, per_second
        self.acknowledged = 0
        self.errors: list[str] = []
        self._running = threading.Event()
        self._running.set()
        self._finishing = threading.Event()
        self._thread = threading.Thread(target=self._run, daemon=True)

    def start(self) -> ContinuousProducer:
        self._thread.start()
        return self

    def _run(self) -> None:
        producer = Producer({"bootstrap.servers": self.bootstrap, "enable.idempotence": True, "linger.ms": 5})

        def delivered(err, msg) -> None:  # type: ignore[no-untyped-def]
            if err is not None:
                self.errors.append(str(err))
            else:
                self.acknowledged += 1

        started = time.monotonic()
        produced = 0
        for i in range(self.total):
            if self._finishing.is_set():
                break
            if not self._running.is_set():
                producer.flush(60)
                paused_at = time.monotonic()
                self._running.wait()
                started += time.monotonic() - paused_at
            producer.produce(self.topic, key=str(i).encode(), value=str(i).encode(), on_delivery=delivered)
            produced = i + 1
            producer.poll(0)
            ahead = (i + 1) / self.per_second - (time.monotonic() - started)
            if ahead > 0:
                time.sleep(ahead)  # pacing the load, not waiting for a result
        producer.flush(60)
        self.total = produced

    def finish(self) -> int:
        """End production early (a test that produces until its scenario is over); then `join`
        checks that every record produced so far was acknowledged. Returns how many there are."""
        self._finishing.set()
        self._running.set()
        self.join()
        return self.total

    def pause(self) -> int:
        """Stop producing (after in-flight records are acknowledged); returns the count so far."""
        self._running.clear()
        acknowledged = -1
        while acknowledged != self.acknowledged:  # settled: nothing more is being acknowledged
            acknowledged = self.acknowledged
            time.sleep(0.2)
        return acknowledged

    def resume(self) -> None:
        self._running.set()

    def join(self, timeout: float = 120) -> None:
        self._thread.join(timeout)
        assert not self._thread.is_alive(), "producer did not finish"
        assert not self.errors, self.errors[:5]
        assert self.acknowledged == self.total


class MemberFleet:
    def __init__(
        self,
        workdir: Path,
        bootstrap: str,
        group: str,
        topic: str,
        client: str,
        assignor: str,
        session_timeout_ms: int = 10000,
    ) -> None:
        self.workdir, self.bootstrap, self.group, self.topic = workdir, bootstrap, group, topic
        self.client, self.assignor, self.session_timeout_ms = client, assignor, session_timeout_ms
        self.processes: dict[str, subprocess.Popen[bytes]] = {}

    def start(self, name: str, instance_id: str | None = None) -> None:
        command = [
            sys.executable, "-m", "tests.support.group_member", "--client", self.client,
            "--assignor", self.assignor, "--bootstrap", self.bootstrap, "--group", self.group,
            "--topic", self.topic, "--out", str(self.workdir / f"{self.group}-{name}.jsonl"),
            "--client-id", name, "--session-timeout-ms", str(self.session_timeout_ms),
        ] + (["--instance-id", instance_id] if instance_id else [])  # fmt: skip
        log = open(self.workdir / f"{self.group}-{name}.log", "ab")  # noqa: SIM115 - the child owns it
        self.processes[name] = subprocess.Popen(command, stdout=log, stderr=log)
        log.close()

    def stop(self, name: str, timeout: float = 60) -> None:
        """Graceful: the member leaves the group, committing what it consumed."""
        process = self.processes.pop(name)
        process.send_signal(signal.SIGTERM)
        process.wait(timeout)
        assert process.returncode == 0, (self.workdir / f"{self.group}-{name}.log").read_text()[-2000:]

    def kill(self, name: str) -> None:
        process = self.processes.pop(name)
        process.kill()
        process.wait(10)

    def stop_all(self) -> None:
        for name in list(self.processes):
            self.stop(name)

    def kill_all(self) -> None:
        for name in list(self.processes):
            self.kill(name)

    def consumed_at_least(self, count: int) -> bool:
        """For wait_until: progress so far; a member that died fails the test with its log."""
        for name, process in self.processes.items():
            if process.poll() is not None:
                log = (self.workdir / f"{self.group}-{name}.log").read_text()[-3000:]
                raise AssertionError(f"member {name} exited with {process.returncode}:\n{log}")
        return len(set(self.consumed())) >= count

    def held_events(self, name: str) -> list[dict]:
        """The member's rebalance callbacks so far, in order: {"e", "ps", "t"} (see group_member)."""
        path = self.workdir / f"{self.group}-{name}.jsonl.held"
        lines = path.read_text().splitlines() if path.exists() else []
        return [json.loads(line) for line in lines if line.endswith("}")]

    def holding(self, name: str, at: float = float("inf")) -> set[int]:
        """The partitions the member held at wall time `at` (now by default), by its callbacks."""
        held: set[int] = set()
        for event in self.held_events(name):
            if event["t"] > at:
                break
            if event["e"] == "assigned":
                held |= set(event["ps"])
            else:
                held = set() if event["e"] == "stopped" else held - set(event["ps"])
        return held

    def records(self, name: str) -> list[dict]:
        """What the member consumed (and committed), in order: {"p", "o", "v", "t"}."""
        path = self.workdir / f"{self.group}-{name}.jsonl"
        lines = path.read_text().splitlines() if path.exists() else []
        return [json.loads(line) for line in lines if line.endswith("}")]

    def consumed(self) -> list[str]:
        values = []
        for path in sorted(self.workdir.glob(f"{self.group}-*.jsonl")):
            for line in path.read_text().splitlines():
                if line.endswith("}"):
                    values.append(json.loads(line)["v"])
        return values


def assert_exactly_once(consumed: list[str], total: int) -> None:
    counts = Counter(consumed)
    duplicated = {v: c for v, c in counts.items() if c > 1}
    missing = set(map(str, range(total))) - set(counts)
    assert not duplicated, (
        f"{len(duplicated)} records consumed more than once, e.g. {list(duplicated.items())[:5]}"
    )
    assert not missing, f"{len(missing)} records never consumed, e.g. {sorted(missing, key=int)[:5]}"

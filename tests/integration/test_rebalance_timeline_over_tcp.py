"""The rebalance timeline over TCP against a coordinator process, as an operator reads it from
the admin port: a consumer group (members driven by the project's protocol client, so the test
knows to the millisecond when each rebalance began and ended) joined, left and losing a member
to its session timeout, and a connect group where a joining worker takes one task. Each entry
names its trigger and the moved items, and its time to balance is within 10% of what the test
measured; `/metrics` (parsed by prometheus_client) agrees with the timeline; an unknown group
is a JSON 404; `connect-rebalance groups timeline` prints it."""

from __future__ import annotations

import json
import subprocess
import sys
import time
import urllib.error
import urllib.parse
import urllib.request
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from prometheus_client.parser import text_string_to_metric_families

from connect_rebalance.processes import CoordinatorProcess, connect_timings
from connect_rebalance.protocol.api_keys import ApiKey
from connect_rebalance.protocol.consumer_group import heartbeat_fields, partitions_of
from tests.support.connect_driver import ConnectDriver, TcpTransport
from tests.support.group_scenario import create_topic

pytestmark = pytest.mark.integration

GROUP = "team/orders app"  # a '/' and a blank: the admin URL carries it percent-encoded
SESSION_MS = 2000
HOLD_S = 0.8  # how long the test keeps a member from heartbeating, so that a rebalance lasts


@pytest.fixture
def coordinator(tmp_path: Path) -> Iterator[CoordinatorProcess]:
    settings = {
        **connect_timings(SESSION_MS, 500),
        "group.consumer.assignor.offload.enable": "false",  # a join's answer carries its target
        "group.consumer.session.timeout.ms": str(SESSION_MS),
        "group.consumer.min.session.timeout.ms": str(SESSION_MS),
        "group.consumer.heartbeat.interval.ms": "500",
        "group.consumer.min.heartbeat.interval.ms": "500",
    }
    process = CoordinatorProcess(tmp_path / "data", settings).start()
    try:
        yield process
    finally:
        process.kill()


def timeline(coordinator: CoordinatorProcess, group: str) -> dict[str, Any]:
    url = f"{coordinator.admin_url}/groups/{urllib.parse.quote(group, safe='')}/timeline"
    with urllib.request.urlopen(url, timeout=10) as reply:
        return json.loads(reply.read())  # type: ignore[no-any-return]


def moves(entry: dict[str, Any]) -> dict[str, tuple[set[str], set[str]]]:
    return {m["member"]: (set(m["revoked"]), set(m["assigned"])) for m in entry["members"]}


def causes(entry: dict[str, Any]) -> list[tuple[str, str]]:
    return [(t["cause"], t["member"]) for t in entry["triggers"]]


def midpoint(request: Any) -> float:
    """When the coordinator handled `request()`, as well as the test can tell: halfway between
    sending it and reading the answer (a loaded machine's round trip is not the rebalance's)."""
    sent = time.monotonic()
    request()
    return (sent + time.monotonic()) / 2


def within_ten_percent(entry: dict[str, Any], measured_s: float) -> None:
    reported = entry["time_to_balance_ms"] / 1000
    assert abs(reported - measured_s) <= 0.1 * measured_s, (
        f"the timeline says {reported:.3f} s to balance, the test measured {measured_s:.3f} s"
    )


class Member:
    """A KIP-848 consumer on its own connection: it heartbeats when the test says so and
    reports owning exactly what it was last assigned (it revokes at once)."""

    def __init__(self, transport: TcpTransport, name: str) -> None:
        self.transport, self.name = transport, name
        self.epoch, self.owned = 0, frozenset[tuple[str, int]]()
        self.last_beat = 0.0

    def beat(self, epoch: int | None = None, **fields: Any) -> dict[str, Any]:
        fields.setdefault("owned", self.owned)
        answer = self.transport.request(
            ApiKey.CONSUMER_GROUP_HEARTBEAT, 1,
            heartbeat_fields(GROUP, self.name, self.epoch if epoch is None else epoch, **fields),
        )  # fmt: skip
        assert answer["error_code"] == 0, answer
        self.last_beat = time.monotonic()
        self.epoch = answer["member_epoch"]
        if answer["assignment"] is not None:
            self.owned = partitions_of(answer["assignment"]["topic_partitions"])
        return answer

    def join(self) -> dict[str, Any]:
        return self.beat(0, topics=["orders"], rebalance_timeout_ms=30000, owned=[])

    def leave(self) -> None:
        self.transport.request(ApiKey.CONSUMER_GROUP_HEARTBEAT, 1, heartbeat_fields(GROUP, self.name, -1))


def described(transport: TcpTransport) -> dict[str, Any]:
    answer = transport.request(ApiKey.CONSUMER_GROUP_DESCRIBE, 0, {
        "group_ids": [GROUP], "include_authorized_operations": False,
    })  # fmt: skip
    return answer["groups"][0]  # type: ignore[no-any-return]


def stays_unbalanced(state: Any, seconds: float) -> None:
    """For `seconds`, the group is never Stable: a member has yet to heartbeat its part."""
    until = time.monotonic() + seconds
    while time.monotonic() < until:
        assert state() != "Stable", "the group balanced before the member the test held back heartbeated"
        time.sleep(0.02)


def names(items: frozenset[tuple[str, int]]) -> set[str]:
    return {f"orders-{partition}" for _, partition in items}


def test_a_consumer_groups_join_leave_and_session_expiry_are_on_its_timeline_and_in_metrics(
    coordinator: CoordinatorProcess, transports: list[TcpTransport]
) -> None:
    create_topic(coordinator.bootstrap, "orders", 6)
    transports += [TcpTransport(coordinator.bootstrap, f"member-{n}") for n in "ABCD"]
    a, b, c = (Member(t, n) for t, n in zip(transports, "ABC", strict=False))
    state = lambda: described(transports[3])["group_state"]  # noqa: E731
    a.join()
    a.beat()
    assert len(a.owned) == 6 and state() == "Stable"

    # Given A holds all six partitions, when B joins, then A gives three up and B takes them.
    started = midpoint(b.join)
    stays_unbalanced(state, HOLD_S)
    a.beat()  # told to revoke three
    a.beat()  # revoked them: at the new epoch
    measured = midpoint(b.beat) - started  # given them
    assert state() == "Stable" and len(b.owned) == 3
    joined = timeline(coordinator, GROUP)["rebalances"][-1]
    assert causes(joined) == [("join", "B")]
    assert moves(joined) == {"A": (names(b.owned), set()), "B": (set(), names(b.owned))}
    within_ten_percent(joined, measured)

    # When B leaves, A is given its three back.
    b_had = b.owned
    started = midpoint(b.leave)
    stays_unbalanced(state, HOLD_S)
    measured = midpoint(a.beat) - started
    assert state() == "Stable" and len(a.owned) == 6
    left = timeline(coordinator, GROUP)["rebalances"][-1]
    assert causes(left) == [("leave", "B")]
    assert moves(left) == {"B": (names(b_had), set()), "A": (set(), names(b_had))}
    within_ten_percent(left, measured)

    # When C joins and then falls silent, its session expires and A gets its partitions back.
    c.join()
    a.beat()
    a.beat()
    c.beat()
    assert state() == "Stable" and len(c.owned) == 3
    c_had, expires = c.owned, c.last_beat + SESSION_MS / 1000
    still_there = time.monotonic()  # C was a member when a describe last said so
    while True:
        sent = time.monotonic()
        if "C" not in {m["member_id"] for m in described(transports[3])["members"]}:
            break
        still_there = time.monotonic()
        assert still_there < expires + 2, "C's session never expired"
        if still_there - a.last_beat > 0.4 and still_there < expires - 0.3:
            a.beat()  # A heartbeats on, but not across C's expiry: the test measures from it
        time.sleep(0.01)
    started = (still_there + sent) / 2  # C expired between the two describes
    stays_unbalanced(state, HOLD_S)
    measured = midpoint(a.beat) - started
    assert state() == "Stable" and len(a.owned) == 6
    view = timeline(coordinator, GROUP)
    expired = view["rebalances"][-1]
    assert causes(expired) == [("session expiry", "C")]
    assert moves(expired) == {"C": (names(c_had), set()), "A": (set(), names(c_had))}
    within_ten_percent(expired, measured)

    metrics_match_the_timeline(coordinator, view["rebalances"])


def metrics_match_the_timeline(coordinator: CoordinatorProcess, entries: list[dict[str, Any]]) -> None:
    with urllib.request.urlopen(f"{coordinator.admin_url}/metrics", timeout=10) as reply:
        families = {f.name: f for f in text_string_to_metric_families(reply.read().decode())}

    def sample(family: str, name: str, **labels: str) -> float:
        found = [s.value for s in families[family].samples if s.name == name and s.labels == labels]
        assert len(found) == 1, (family, name, labels, families[family].samples)
        return found[0]

    balance = "connect_rebalance_group_time_to_balance_seconds"
    assert sample(balance, f"{balance}_count", type="consumer") == len(entries)
    assert sample(balance, f"{balance}_sum", type="consumer") == pytest.approx(
        sum(e["time_to_balance_ms"] for e in entries) / 1000
    )
    for bound in ("0.05", "0.5", "1.0", "+Inf"):
        within = sum(1 for e in entries if e["time_to_balance_ms"] / 1000 <= float(bound))
        assert sample(balance, f"{balance}_bucket", type="consumer", le=bound) == within
    paused = "connect_rebalance_group_paused"
    group = {"group": GROUP, "type": "consumer"}
    assert sample(paused, f"{paused}_total", **group) == sum(e["paused"] for e in entries) == 12
    last = "connect_rebalance_group_last_rebalance_paused"
    assert sample(last, last, **group) == entries[-1]["paused"] == 3
    bumps = "connect_rebalance_consumer_group_rebalance"
    assert sample(bumps, f"{bumps}_total") == sum(e["to_epoch"] - e["from_epoch"] for e in entries)
    by_state = "connect_rebalance_consumer_group_count"
    assert sample(by_state, by_state, state="Stable") == 1
    assert sample(by_state, by_state, state="Reconciling") == 0
    count = "connect_rebalance_group_count"
    assert sample(count, count, protocol="consumer") == 1


def test_a_connect_join_that_moves_one_task_is_on_the_timeline_and_printed_by_the_cli(
    coordinator: CoordinatorProcess, transports: list[TcpTransport]
) -> None:
    transports.append(TcpTransport(coordinator.bootstrap))
    d = ConnectDriver(transports[0])
    d.join("W1")
    d.compute("W1", {"W1": "AC0 AT0 AT1"})
    d.beat("W1")
    assert d.describe()["group_state"] == "Stable"

    # Given W1 runs connector A and its two tasks, when W2 joins, then task A-1 moves to W2.
    started = midpoint(lambda: d.join("W2"))
    stays_unbalanced(lambda: d.describe()["group_state"], HOLD_S)
    assert d.beat("W1")["should_compute_assignment"]
    d.compute("W1", {"W1": "AC0 AT0", "W2": "AT1"})
    d.beat("W1")  # told to stop A-1
    d.beat("W1")  # stopped it
    measured = midpoint(lambda: d.beat("W2")) - started  # runs it
    assert d.describe()["group_state"] == "Stable"
    entry = timeline(coordinator, "connect-cluster")["rebalances"][-1]
    assert causes(entry) == [("join", "W2")]
    assert moves(entry) == {"W1": ({"A-1"}, set()), "W2": (set(), {"A-1"})}
    assert entry["paused"] == 1
    within_ten_percent(entry, measured)

    printed = subprocess.run(
        [sys.executable, "-m", "connect_rebalance_cli.cli", "groups", "timeline", "connect-cluster",
         "--admin-url", coordinator.admin_url],
        capture_output=True, text=True, timeout=60,
    )  # fmt: skip
    assert printed.returncode == 0, printed.stderr
    last = printed.stdout.splitlines()[-1]
    assert last.startswith(f"{entry['from_epoch']} → {entry['to_epoch']}"), printed.stdout
    assert "join W2" in last and "W1 revoked A-1" in last and "W2 assigned A-1" in last, last
    assert f"+{entry['time_to_balance_ms'] / 1000:.2f} s balanced" in last, last


def test_an_unknown_group_is_a_json_404_and_the_cli_says_so(coordinator: CoordinatorProcess) -> None:
    url = f"{coordinator.admin_url}/groups/{urllib.parse.quote('no such/group', safe='')}/timeline"
    try:
        with urllib.request.urlopen(url, timeout=10) as reply:
            status, body = reply.status, reply.read()
    except urllib.error.HTTPError as refused:
        status, body = refused.code, refused.read()
    assert status == 404, f"answered {status}: {body!r}"
    assert json.loads(body) == {"error_code": 404, "message": "Group no such/group not found."}
    printed = subprocess.run(
        [sys.executable, "-m", "connect_rebalance_cli.cli", "groups", "timeline", "no such/group",
         "--admin-url", coordinator.admin_url],
        capture_output=True, text=True, timeout=60,
    )  # fmt: skip
    assert printed.returncode == 1
    assert printed.stderr.strip() == "error: Group no such/group not found."

"""Records are the only way group state changes: for any sequence of requests and deadlines, the
state built live equals the state a restart rebuilds by replaying the records written.

Members of every kind act in random order on a virtual clock: classic consumers and
consumer-protocol members share one group (so it converts back and forth: online migration),
connect workers compute and install targets, members commit offsets, sessions expire. After
each step the groups as the log holds them (classic groups once a rebalance has ended) and the
committed offsets must be what replaying the records gives.
"""

from __future__ import annotations

from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from connect_rebalance.consumer_protocol import encode_assignment, encode_subscription
from connect_rebalance.errors import ErrorCode
from connect_rebalance.protocol.api_keys import ApiKey
from coordinator.groups.settings import GroupSettings
from tests.support.connect_driver import ConnectDriver
from tests.support.group_harness import GroupHarness
from tests.support.group_state import persisted, replayed

pytestmark = pytest.mark.unit
GROUP, WORKERS = "mixed", "workers"
PARTITIONS = 6


class Actors:
    """Simple, well-behaved clients: each applies what it is told at once."""

    def __init__(self, h: GroupHarness) -> None:
        self.h = h
        self.epochs: dict[str, int] = {}  # consumer-protocol members
        self.owned: dict[str, list[int]] = {}
        self.classic: dict[str, tuple[str, int]] = {}  # name -> (member id, generation)
        self.connect = ConnectDriver(lambda key, fields: h.call(key, 0, **fields), group_id=WORKERS)

    # -- consumer protocol ------------------------------------------------------------------

    def consumer(self, name: str, op: str) -> None:
        h, epoch = self.h, self.epochs.get(name)
        if op == "leave" and epoch is not None:
            h.consumer_heartbeat(name, -1, group_id=GROUP)
            self._forget(name)
            return
        if op == "commit":
            if epoch is None:  # a simple commit, as an admin or a standalone consumer makes
                self._commit("", -1, 9, group_id=f"standalone-{name}")
            else:
                self._commit(name, epoch, 9)
            return
        if epoch is None:
            answer = h.consumer_heartbeat(name, 0, topics=["orders"], owned={}, rebalance_timeout_ms=20000,
                                          group_id=GROUP)  # fmt: skip
        else:
            answer = h.consumer_heartbeat(name, epoch, owned={"orders": self.owned[name]}, group_id=GROUP)
        if answer["error_code"] != ErrorCode.NONE:
            self._forget(name)
            return
        self.epochs[name] = answer["member_epoch"]
        if answer["assignment"] is not None:
            self.owned[name] = [
                p for tp in answer["assignment"]["topic_partitions"] for p in tp["partitions"]
            ]
        self.owned.setdefault(name, [])

    def _forget(self, name: str) -> None:
        self.epochs.pop(name, None)
        self.owned.pop(name, None)

    def _commit(self, member_id: str, generation: int, version: int, group_id: str = GROUP) -> None:
        self.h.call(
            ApiKey.OFFSET_COMMIT, version, group_id=group_id, generation_id_or_member_epoch=generation,
            member_id=member_id, group_instance_id=None, topics=[{"name": "orders", "partitions": [
                {"partition_index": 0, "committed_offset": generation, "committed_leader_epoch": -1,
                 "committed_metadata": ""}]}],
        )  # fmt: skip

    # -- classic protocol -------------------------------------------------------------------

    def classic_member(self, name: str, op: str) -> None:
        h = self.h
        member_id, generation = self.classic.get(name, ("", -1))
        if op == "leave" and member_id:
            h.send(
                ApiKey.LEAVE_GROUP,
                3,
                group_id=GROUP,
                members=[{"member_id": member_id, "group_instance_id": None}],
            )
            self.classic.pop(name)
            return
        if op == "commit" and member_id:
            self._commit(member_id, generation, 8)
            return
        if (
            op == "beat"
            and member_id
            and h.heartbeat(member_id, generation, group_id=GROUP) == ErrorCode.NONE
        ):
            return
        protocols = [("range", encode_subscription(["orders"]))]
        request = h.join(member_id, client_id=name, group_id=GROUP, protocols=protocols)
        answer = h.answer(request)
        if answer is not None and answer["error_code"] == ErrorCode.MEMBER_ID_REQUIRED:
            request = h.join(answer["member_id"], client_id=name, group_id=GROUP, protocols=protocols)
            answer = h.answer(request)
        if answer is None or answer["error_code"] != ErrorCode.NONE:
            self.classic.pop(name, None)
            return
        member_id, generation = answer["member_id"], answer["generation_id"]
        self.classic[name] = (member_id, generation)
        deal = {}
        if answer["leader"] == member_id:  # the leader deals the partitions out round-robin
            members = sorted(m["member_id"] for m in answer["members"])
            deal = {m: encode_assignment([("orders", p) for p in range(PARTITIONS) if p % len(members) == i])
                    for i, m in enumerate(members)}  # fmt: skip
        h.sync(member_id, generation, deal, group_id=GROUP)

    # -- connect workers --------------------------------------------------------------------

    def worker(self, name: str, op: str) -> None:
        d = self.connect
        if op == "leave" and name in d.epoch:
            d.leave(name)
            d.epoch.pop(name)
            return
        answer = d.beat(name) if name in d.epoch else d.join(name)
        if answer["error_code"] != ErrorCode.NONE:
            d.epoch.pop(name, None)
            return
        if answer.get("should_compute_assignment"):
            prepared = d.prepare(name)
            if prepared["error_code"] == ErrorCode.NONE:
                workers = sorted(m["member_id"] for m in prepared["members"])
                items = ["AC0", "AT0", "AT1", "AT2", "BC0"]
                plan = {w: " ".join(items[i :: len(workers)]) for i, w in enumerate(workers)}
                d.install(name, prepared["group_epoch"], plan)


STEP = st.tuples(
    st.sampled_from(["consumer", "classic", "worker"]),
    st.sampled_from(["a", "b", "c"]),
    st.sampled_from(["beat", "beat", "beat", "leave", "commit"]),
    st.sampled_from([0, 0, 0, 700, 5000, 20000]),
)


def check(h: GroupHarness) -> None:
    live, rebuilt = persisted(h.core), persisted(replayed(h))
    settled = {g for g, group in h.core.groups.items() if group.type_name != "classic" or g in live["groups"]}
    assert {g: v for g, v in rebuilt["groups"].items() if g in settled} == live["groups"]
    assert rebuilt["offsets"] == live["offsets"]


@settings(max_examples=120, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(steps=st.lists(STEP, max_size=40))
def test_the_state_built_live_is_the_state_replay_rebuilds(steps: list[tuple[str, str, str, int]]) -> None:
    h = GroupHarness(GroupSettings(initial_rebalance_delay_ms=0, connect_session_timeout_ms=10000),
                     topics={"orders": PARTITIONS})  # fmt: skip
    actors = Actors(h)
    act = {"consumer": actors.consumer, "classic": actors.classic_member, "worker": actors.worker}
    for kind, name, op, wait in steps:
        act[kind](f"{kind}-{name}", op)
        h.advance(wait)
        check(h)


def test_a_mixed_group_converts_both_ways_and_replay_follows() -> None:
    """A fixed run through both conversions, so the property above is known to cover them."""
    h = GroupHarness(GroupSettings(initial_rebalance_delay_ms=0), topics={"orders": PARTITIONS})
    actors = Actors(h)
    seen: list[Any] = []
    script = [("classic", "a", "beat"), ("classic", "b", "beat"), ("classic", "a", "beat"),
              ("consumer", "a", "beat"), ("classic", "a", "beat"), ("consumer", "a", "beat"),
              ("consumer", "a", "leave"), ("classic", "a", "beat"), ("classic", "b", "commit")]  # fmt: skip
    for kind, name, op in script:
        {"consumer": actors.consumer, "classic": actors.classic_member}[kind](f"{kind}-{name}", op)
        seen.append(h.core.groups[GROUP].type_name)
        check(h)
    assert seen[2] == "classic" and "consumer" in seen and seen[-1] == "classic", seen

"""Drive the pure group coordinator with real decoded requests and a virtual clock."""

from __future__ import annotations

import itertools
import uuid
from typing import Any

from connect_rebalance.errors import ErrorCode
from connect_rebalance.protocol import codec
from connect_rebalance.protocol.api_keys import ApiKey
from coordinator.groups.coordinator import GroupCoordinator
from coordinator.groups.records import Record
from coordinator.groups.requests import GroupRequest, Outcome
from coordinator.groups.settings import GroupSettings


def consumer_subscription(topics: list[str]) -> bytes:
    """Member metadata as a Kafka consumer sends it for the `consumer` protocol type."""
    from kafka.protocol.consumer.metadata import ConsumerProtocolSubscription

    return bytes(ConsumerProtocolSubscription(version=0, topics=topics, user_data=None).encode(header=True))


class StaticTopics:
    """A fixed metadata view: topic names, deterministic topic ids, partition counts."""

    def __init__(self, topics: dict[str, int]) -> None:
        self.counts = topics

    def topic_id(self, name: str) -> str | None:
        return str(uuid.uuid5(uuid.NAMESPACE_OID, name)) if name in self.counts else None

    def partition_count(self, topic_id: str) -> int | None:
        return next((n for name, n in self.counts.items() if self.topic_id(name) == topic_id), None)

    def names(self) -> list[str]:
        return sorted(self.counts)

    @property
    def version(self) -> int:
        """The view changes whenever a test changes its topics (the dict is shared)."""
        return hash(tuple(sorted(self.counts.items())))

    def name_of(self, topic_id: str) -> str | None:
        return next((name for name in self.counts if self.topic_id(name) == topic_id), None)


class GroupHarness:
    """A coordinator core, a clock, and every record and answer it produced."""

    def __init__(self, settings: GroupSettings | None = None, topics: dict[str, int] | None = None) -> None:
        self.topics = dict(topics or {"orders": 12})
        counter = itertools.count(1)
        self.metadata = StaticTopics(self.topics)
        self.core = GroupCoordinator(
            settings or GroupSettings(initial_rebalance_delay_ms=0),
            self.topics.get,
            member_id_factory=lambda client_id: f"{client_id}-{next(counter)}",
            topics_view=self.metadata,
        )
        self.now = 0
        self.records: list[Record] = []
        self.answers: dict[int, dict[str, Any]] = {}
        self._ids = itertools.count(1)
        self._api_of: dict[int, tuple[int, int]] = {}
        # While set, writing an outcome's records fails, as a full or broken disk would.
        self.failing_writes: str | None = None
        self.effects: list[Any] = []  # work the core asked for and the test has not run yet
        self.computations = 0  # how many the test ran

    def _absorb(self, outcome: Outcome, own_request: int | None = None) -> None:
        if self.failing_writes is not None and outcome.records:
            self.core.write_failed(
                outcome, self._api_of.get, ErrorCode.COORDINATOR_NOT_AVAILABLE, self.failing_writes, self.now,
                own_request,
            )  # fmt: skip
        self.records.extend(outcome.records)
        self.effects.extend(outcome.effects)
        for request_id, fields in outcome.replies.items():
            # Every answer must encode at its request's version, as the server will send it.
            api_key, version = self._api_of[request_id]
            codec.encode_response_frame(
                api_key, version, request_id, codec.build_response(api_key, version, fields)
            )
        self.answers.update(outcome.replies)

    def send(self, api_key: int, version: int, client_id: str = "client", **fields: Any) -> int:
        """Send a request; returns its id. `answer(id)` says whether it has been answered."""
        request_id = next(self._ids)
        self._api_of[request_id] = (api_key, version)
        body = codec.build_request(api_key, version, fields)
        self._absorb(
            self.core.handle(
                GroupRequest(request_id, api_key, version, body, client_id, "/127.0.0.1"), self.now
            ),
            request_id,
        )
        return request_id

    def delete_topic(self, name: str, tell_the_groups: bool = True) -> None:
        """The topic goes from the cluster; the core hears of it as DeleteTopics tells it
        (unless `tell_the_groups` is False: a crash came in between)."""
        del self.topics[name]
        if tell_the_groups:
            self._absorb(self.core.topics_deleted({name}, self.now))

    def run_effects(self) -> None:
        """Run the computations the core asked for, as the IO shell does, and hand back results."""
        while self.effects:
            effect = self.effects.pop(0)
            self.computations += 1
            self._absorb(self.core.target_computed(effect, effect.run(), self.now))

    def answer(self, request_id: int) -> dict[str, Any] | None:
        return self.answers.get(request_id)

    def call(self, api_key: int, version: int, client_id: str = "client", **fields: Any) -> dict[str, Any]:
        request_id = self.send(api_key, version, client_id, **fields)
        answer = self.answer(request_id)
        assert answer is not None, "the request was parked, not answered"
        return answer

    def advance(self, ms: int) -> None:
        """Move the clock, firing every deadline on the way, in order."""
        target = self.now + ms
        while True:
            deadline = self.core.next_deadline()
            if deadline is None or deadline > target:
                break
            self.now = max(self.now, deadline)
            self._absorb(self.core.on_timer(self.now))
        self.now = target

    # -- classic protocol conveniences ------------------------------------------------------

    def join(
        self,
        member_id: str = "",
        client_id: str = "client",
        version: int = 5,
        protocols=None,
        session_timeout_ms: int = 10000,
        rebalance_timeout_ms: int = 30000,
        group_id: str = "g",
        instance_id: str | None = None,
        protocol_type: str = "consumer",
    ) -> int:
        protocols = protocols if protocols is not None else [("range", b"meta-" + client_id.encode())]
        return self.send(
            ApiKey.JOIN_GROUP, version, client_id, group_id=group_id, session_timeout_ms=session_timeout_ms,
            rebalance_timeout_ms=rebalance_timeout_ms, member_id=member_id, group_instance_id=instance_id,
            protocol_type=protocol_type, protocols=[{"name": n, "metadata": m} for n, m in protocols],
        )  # fmt: skip

    def sync(
        self,
        member_id: str,
        generation: int,
        assignments: dict[str, bytes] | None = None,
        group_id: str = "g",
        version: int = 3,
        instance_id: str | None = None,
    ) -> int:
        return self.send(
            ApiKey.SYNC_GROUP, version, group_id=group_id, generation_id=generation, member_id=member_id,
            group_instance_id=instance_id,
            assignments=[{"member_id": m, "assignment": a} for m, a in (assignments or {}).items()],
        )  # fmt: skip

    def heartbeat(
        self, member_id: str, generation: int, group_id: str = "g", instance_id: str | None = None
    ) -> int:
        answer = self.call(
            ApiKey.HEARTBEAT,
            3,
            group_id=group_id,
            generation_id=generation,
            member_id=member_id,
            group_instance_id=instance_id,
        )
        return answer["error_code"]

    def consumer_heartbeat(
        self,
        member_id: str,
        epoch: int,
        topics: list[str] | None = None,
        owned: dict[str, list[int]] | None = None,
        group_id: str = "cg",
        version: int = 1,
        rebalance_timeout_ms: int = -1,
        instance_id: str | None = None,
        regex: str | None = None,
        assignor: str | None = None,
    ) -> dict[str, Any]:
        """A ConsumerGroupHeartbeat; `owned` maps topic names to the partitions the member owns."""
        partitions = None
        if owned is not None:
            partitions = [{"topic_id": self.metadata.topic_id(t), "partitions": p} for t, p in owned.items()]
        return self.call(
            68,
            version,
            group_id=group_id,
            member_id=member_id,
            member_epoch=epoch,
            instance_id=instance_id,
            rack_id=None,
            rebalance_timeout_ms=rebalance_timeout_ms,
            subscribed_topic_names=topics,
            subscribed_topic_regex=regex,
            server_assignor=assignor,
            topic_partitions=partitions,
        )

    def assigned(self, answer: dict[str, Any]) -> dict[str, list[int]]:
        """Topic name -> partitions of a heartbeat answer's assignment."""
        names = {self.metadata.topic_id(n): n for n in self.topics}
        return {names[str(t["topic_id"])]: t["partitions"] for t in answer["assignment"]["topic_partitions"]}

    def assigned_or_none(self, answer: dict[str, Any]) -> dict[str, list[int]]:
        """As `assigned`, with no assignment in the answer (it did not change) read as none."""
        return {} if answer["assignment"] is None else self.assigned(answer)

    def form_group(
        self, count: int, group_id: str = "g", prefix: str = "c", session_timeout_ms: int = 10000
    ) -> list[str]:
        """`count` dynamic members join (v5, with MEMBER_ID_REQUIRED) and sync; returns their ids."""
        protocols = [("range", consumer_subscription(sorted(self.topics)))]
        member_ids = []
        for i in range(count):
            first = self.answer(
                self.join(
                    client_id=f"{prefix}{i}",
                    group_id=group_id,
                    protocols=protocols,
                    session_timeout_ms=session_timeout_ms,
                )
            )
            assert first is not None and first["error_code"] == 79  # MEMBER_ID_REQUIRED
            member_ids.append(first["member_id"])
        joins = [
            self.join(
                m,
                client_id=f"{prefix}{i}",
                group_id=group_id,
                protocols=protocols,
                session_timeout_ms=session_timeout_ms,
            )
            for i, m in enumerate(member_ids)
        ]
        self.advance(0)
        answers = [self.answer(j) for j in joins]
        assert all(a is not None and a["error_code"] == 0 for a in answers), answers[:3]
        generation = answers[0]["generation_id"]
        leader = answers[0]["leader"]
        syncs = [self.sync(m, generation, group_id=group_id) for m in member_ids if m != leader]
        self.sync(leader, generation, {m: f"assign-{m}".encode() for m in member_ids}, group_id=group_id)
        assert all(self.answer(s)["error_code"] == 0 for s in syncs)
        return member_ids

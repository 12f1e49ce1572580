"""The session key that signs requests between workers (Kafka Connect's record and headers)."""

from __future__ import annotations

import pytest

from coordinator.configs.coordinator import ConfigError
from workers.config.worker import WorkerConfig
from workers.storage.config_state import ConfigState
from workers.storage.session_key import (
    ALGORITHM_HEADER,
    MAX_AGE_MS,
    SIGNATURE_HEADER,
    TIMESTAMP_HEADER,
    SeenSignatures,
    SessionKey,
    task_configs_path,
)

pytestmark = pytest.mark.unit
NOW = 1_700_000_000_000
PATH = task_configs_path("orders")


def test_a_signed_request_checks_and_any_other_is_refused_with_kafka_connects_status() -> None:
    key = SessionKey.new(1_000)
    body = b'[{"topic": "t"}]'
    signed = key.headers("POST", PATH, body, NOW)
    assert key.check("POST", PATH, body, signed, NOW) is None
    assert key.check("POST", PATH, b'[{"topic": "u"}]', signed, NOW) == (
        403,
        "Internal request contained invalid signature.",
    )
    assert SessionKey.new(1_000).check("POST", PATH, body, signed, NOW)[0] == 403  # type: ignore[index]
    assert key.check("POST", PATH, body, {}, NOW) == (400, "Internal request missing required signature")
    wrong = {**signed, ALGORITHM_HEADER: "HmacMD5"}
    assert key.check("POST", PATH, body, wrong, NOW)[0] == 400  # type: ignore[index]
    assert set(signed) == {SIGNATURE_HEADER, ALGORITHM_HEADER, TIMESTAMP_HEADER}


def test_the_signature_covers_method_path_and_time_so_a_replay_elsewhere_or_later_is_refused() -> None:
    key = SessionKey.new(1_000)
    body = b'[{"topic": "t"}]'
    signed = key.headers("POST", PATH, body, NOW)
    other_connector = key.check("POST", task_configs_path("victim"), body, signed, NOW)
    assert other_connector == (403, "Internal request contained invalid signature.")
    assert key.check("PUT", PATH, body, signed, NOW)[0] == 403  # type: ignore[index]
    moved_clock = {**signed, TIMESTAMP_HEADER: str(NOW + 1)}  # the timestamp is signed too
    assert key.check("POST", PATH, body, moved_clock, NOW)[0] == 403  # type: ignore[index]
    late = key.check("POST", PATH, body, signed, NOW + MAX_AGE_MS + 1)
    assert late is not None and late[0] == 403 and "replay" in late[1]
    assert key.check("POST", PATH, body, signed, NOW + MAX_AGE_MS) is None
    # Every spelling of one name is one path: the name is percent-encoded, `/` included.
    assert task_configs_path("a/b") == "/connectors/a%2Fb/tasks" != task_configs_path("a%2Fb")


def test_a_signature_is_accepted_once() -> None:
    key, seen = SessionKey.new(1_000), SeenSignatures()
    first, second = (key.headers("POST", PATH, b"[]", NOW + i) for i in (0, 1))
    assert seen.first_use(first, NOW) and not seen.first_use(first, NOW + 10)
    assert seen.first_use(second, NOW + 10)
    # Forgotten once too old to pass the clock check anyway.
    assert seen.first_use(first, NOW + MAX_AGE_MS + 1)


def test_the_config_topic_record_round_trips_and_the_latest_key_counts() -> None:
    state = ConfigState()
    first, second = SessionKey.new(1_000), SessionKey.new(2_000)
    state.apply("session-key", first.record(), 0)
    assert state.session_key == first
    state.apply("session-key", second.record(), 1)
    assert state.session_key == second and state.offset == 2
    assert not second.expired(2_000 + 3_599_999, 3_600_000) and second.expired(2_000 + 3_600_000, 3_600_000)
    assert state.work() == frozenset()  # a key is not work


def test_inter_worker_key_ttl_is_validated_by_name() -> None:
    base = {"bootstrap.servers": "localhost:9092", "group.id": "g", "config.storage.topic": "c",
            "offset.storage.topic": "o", "status.storage.topic": "s"}  # fmt: skip
    with pytest.raises(ConfigError, match="inter.worker.key.ttl.ms"):
        WorkerConfig.from_settings({**base, "inter.worker.key.ttl.ms": "10"})
    assert WorkerConfig.from_settings(base).inter_worker_key_ttl_ms == 3_600_000

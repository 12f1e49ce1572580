"""The session key that signs requests between workers (Kafka Connect's record and headers)."""

from __future__ import annotations

import pytest

from coordinator.config import ConfigError
from workers.config_state import ConfigState
from workers.session_key import ALGORITHM_HEADER, SIGNATURE_HEADER, SessionKey
from workers.worker_config import WorkerConfig

pytestmark = pytest.mark.unit


def test_a_signed_body_checks_and_any_other_is_refused_with_kafka_connects_status() -> None:
    key = SessionKey.new(1_000)
    body = b'[{"topic": "t"}]'
    assert key.check(body, key.headers(body)) is None
    assert key.check(b'[{"topic": "u"}]', key.headers(body)) == (
        403,
        "Internal request contained invalid signature.",
    )
    assert SessionKey.new(1_000).check(body, key.headers(body))[0] == 403  # type: ignore[index]
    assert key.check(body, {}) == (400, "Internal request missing required signature")
    wrong = {**key.headers(body), ALGORITHM_HEADER: "HmacMD5"}
    assert key.check(body, wrong)[0] == 400  # type: ignore[index]
    assert set(key.headers(body)) == {SIGNATURE_HEADER, ALGORITHM_HEADER}


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

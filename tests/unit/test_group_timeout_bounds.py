"""Session and heartbeat settings of consumer and connect groups lie within their bounds."""

from __future__ import annotations

import pytest

from connect_rebalance.processes import connect_timings
from coordinator.configs.coordinator import ConfigError, CoordinatorConfig

pytestmark = pytest.mark.unit


def test_kafka_defaults_are_valid_and_bounded_as_kafka_bounds_them() -> None:
    config = CoordinatorConfig.from_settings({})
    settings = config.kafka_settings()
    assert settings["group.consumer.min.session.timeout.ms"] == "45000"
    assert settings["group.consumer.max.session.timeout.ms"] == "60000"
    assert settings["group.consumer.min.heartbeat.interval.ms"] == "5000"
    assert settings["group.consumer.max.heartbeat.interval.ms"] == "15000"


@pytest.mark.parametrize(
    ("settings", "message"),
    [
        ({"group.consumer.session.timeout.ms": "44999"}, "group.consumer.session.timeout.ms is 44999"),
        ({"group.consumer.session.timeout.ms": "60001"}, "group.consumer.max.session.timeout.ms"),
        ({"group.consumer.heartbeat.interval.ms": "4999"}, "group.consumer.min.heartbeat.interval.ms"),
        (
            {"group.consumer.min.session.timeout.ms": "70000"},
            "is above group.consumer.max.session.timeout.ms",
        ),
        (
            {"group.consumer.min.session.timeout.ms": "1000", "group.consumer.session.timeout.ms": "5000"},
            "group.consumer.heartbeat.interval.ms (5000) must be less than",
        ),
        ({"group.connect.session.timeout.ms": "3000"}, "group.connect.min.session.timeout.ms"),
        ({"group.min.session.timeout.ms": "2000000"}, "is above group.max.session.timeout.ms"),
    ],
)
def test_values_outside_their_bounds_fail_naming_the_settings(settings: dict[str, str], message: str) -> None:
    with pytest.raises(ConfigError, match=message.replace("(", r"\(").replace(")", r"\)")):
        CoordinatorConfig.from_settings(settings)


def test_short_sessions_are_allowed_once_the_bounds_are_lowered() -> None:
    config = CoordinatorConfig.from_settings(connect_timings(3000, 500))
    assert (config.group_connect_session_timeout_ms, config.group_connect_heartbeat_interval_ms) == (
        3000,
        500,
    )
    lowered = CoordinatorConfig.from_settings({
        "group.consumer.min.session.timeout.ms": "6000", "group.consumer.session.timeout.ms": "6000",
        "group.consumer.min.heartbeat.interval.ms": "1000", "group.consumer.heartbeat.interval.ms": "1000",
    })  # fmt: skip
    assert lowered.group_settings().consumer_session_timeout_ms == 6000

"""The connection limits' rule, as Kafka has it: per address (with overrides) and in all;
a refusal is logged once per address until a connection ends."""

from __future__ import annotations

import logging

import pytest

from coordinator.configs.coordinator import parse_overrides
from coordinator.network.connection_limits import ConnectionLimits

pytestmark = pytest.mark.unit


def test_connections_are_limited_per_address_with_overrides_and_in_all(
    caplog: pytest.LogCaptureFixture,
) -> None:
    limits = ConnectionLimits(total=5, per_ip=2, overrides=parse_overrides("10.0.0.9:3, 10.0.0.8:0"))
    assert [limits.admit("10.0.0.1") for _ in range(3)] == [True, True, False]
    assert [limits.admit("10.0.0.9") for _ in range(4)] == [True, True, True, False]
    assert not limits.admit("10.0.0.8")  # an override of 0: none from there
    assert not limits.admit("10.0.0.2")  # 5 in all
    limits.release("10.0.0.9")
    assert limits.admit("10.0.0.2") and not limits.admit("10.0.0.3")
    assert limits.count == 5


def test_a_refusal_is_logged_once_per_address_until_a_connection_ends(
    caplog: pytest.LogCaptureFixture,
) -> None:
    limits = ConnectionLimits(total=1)
    with caplog.at_level(logging.INFO, logger="coordinator.network.connection_limits"):
        assert limits.admit("10.0.0.1")
        for _ in range(100):
            limits.admit("10.0.0.2")
        limits.release("10.0.0.1")
        assert limits.admit("10.0.0.1")
        limits.admit("10.0.0.2")
    refusals = [r.getMessage() for r in caplog.records]
    assert len(refusals) == 2, refusals
    assert "configured maximum of 1 connections (max.connections)" in refusals[0]


def test_overrides_that_are_not_host_count_are_refused_with_the_entry() -> None:
    for bad in ("10.0.0.1", "10.0.0.1:many", ":3"):
        with pytest.raises(ValueError, match="is not host:count"):
            parse_overrides(bad)

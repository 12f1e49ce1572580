"""Client quotas' pure core: which quota applies (KIP-55's precedence), who shares a measured
rate, the entities and values Kafka refuses, Describe's filters, and the throttle time an
excess earns, on a virtual clock."""

from __future__ import annotations

import pytest

from connect_rebalance.errors import ErrorCode, KafkaApiError
from coordinator.quotas.entities import (
    CONSUMER_BYTE_RATE,
    MATCH_ANY,
    MATCH_DEFAULT,
    MATCH_EXACT,
    PRODUCER_BYTE_RATE,
    QuotaSettings,
    QuotaTags,
    checked_value,
    entity_of,
)
from coordinator.quotas.rates import SampledRate, Throttles
from coordinator.security.records import ClientQuotaRecord, decode_security_record, encode_security_record

pytestmark = pytest.mark.unit

ALICE_APP = entity_of([("user", "alice"), ("client-id", "app")])
ALICE_ANY_CLIENT = entity_of([("user", "alice"), ("client-id", None)])
ALICE = entity_of([("user", "alice")])
ANY_USER_APP = entity_of([("user", None), ("client-id", "app")])
ANY_USER_ANY_CLIENT = entity_of([("user", None), ("client-id", None)])
ANY_USER = entity_of([("user", None)])
APP = entity_of([("client-id", "app")])
ANY_CLIENT = entity_of([("client-id", None)])
KIP_55_ORDER = [
    ALICE_APP,
    ALICE_ANY_CLIENT,
    ALICE,
    ANY_USER_APP,
    ANY_USER_ANY_CLIENT,
    ANY_USER,
    APP,
    ANY_CLIENT,
]


def test_the_most_specific_quota_applies_in_kip_55s_order() -> None:
    settings = QuotaSettings()
    for rank, entity in enumerate(KIP_55_ORDER):
        settings.apply(entity, PRODUCER_BYTE_RATE, 1000.0 + rank)
    for rank, entity in enumerate(KIP_55_ORDER):
        applying = settings.applying(PRODUCER_BYTE_RATE, "alice", "app")
        assert applying is not None and applying[0] == 1000.0 + rank, entity
        settings.apply(entity, PRODUCER_BYTE_RATE, None)  # the next one in the order takes over
    assert settings.applying(PRODUCER_BYTE_RATE, "alice", "app") is None
    assert settings.values == {}


def test_a_quota_on_one_key_does_not_bound_the_other() -> None:
    settings = QuotaSettings()
    settings.apply(APP, PRODUCER_BYTE_RATE, 500.0)
    assert settings.applying(CONSUMER_BYTE_RATE, "alice", "app") is None
    assert settings.applying(PRODUCER_BYTE_RATE, "bob", "other") is None


def test_a_default_quota_is_had_by_each_client_alone_and_a_named_one_is_shared_by_its_users() -> None:
    settings = QuotaSettings()
    settings.apply(ANY_CLIENT, PRODUCER_BYTE_RATE, 100.0)
    settings.apply(APP, PRODUCER_BYTE_RATE, 200.0)
    settings.apply(ANY_USER, CONSUMER_BYTE_RATE, 300.0)
    assert settings.applying(PRODUCER_BYTE_RATE, "alice", "one") == (100.0, QuotaTags("", "one"))
    assert settings.applying(PRODUCER_BYTE_RATE, "bob", "two") == (100.0, QuotaTags("", "two"))
    assert settings.applying(PRODUCER_BYTE_RATE, "alice", "app") == (200.0, QuotaTags("", "app"))
    assert settings.applying(PRODUCER_BYTE_RATE, "bob", "app") == (200.0, QuotaTags("", "app"))
    assert settings.applying(CONSUMER_BYTE_RATE, "bob", "app") == (300.0, QuotaTags("bob", ""))


def test_clients_under_a_default_quota_are_measured_apart() -> None:
    settings = QuotaSettings()
    settings.apply(ANY_CLIENT, PRODUCER_BYTE_RATE, 1000.0)
    throttles = Throttles(settings, samples=2, window_ms=1000)
    assert throttles.record(PRODUCER_BYTE_RATE, "u", "one", 900, 0) == 0
    assert throttles.record(PRODUCER_BYTE_RATE, "u", "two", 900, 0) == 0  # its own rate, not one's
    assert throttles.record(PRODUCER_BYTE_RATE, "u", "one", 900, 10) > 0


@pytest.mark.parametrize(
    ("pairs", "message"),
    [
        ([], "empty"),
        ([("group", "g")], "Unhandled client quota entity type: group"),
        ([("user", "a"), ("user", "b")], "Duplicate entity type"),
        ([("ip", "1.2.3.4"), ("user", "a")], "cannot be combined"),
        ([("client-id", "")], "must not be empty"),
    ],
)
def test_entities_kafka_refuses_are_refused_with_a_message(pairs, message: str) -> None:
    with pytest.raises(KafkaApiError) as refused:
        entity_of(pairs)
    assert refused.value.code == ErrorCode.INVALID_REQUEST and message in refused.value.message


@pytest.mark.parametrize(
    ("entity", "key", "value", "message"),
    [
        (APP, "request_percentage", 50.0, "request-time quotas are not supported"),
        (APP, "controller_mutation_rate", 5.0, "not supported"),
        (entity_of([("ip", None)]), "connection_creation_rate", 5.0, "not supported"),
        (APP, "producer_rate", 5.0, "Invalid configuration key producer_rate"),
        (entity_of([("ip", "10.0.0.1")]), PRODUCER_BYTE_RATE, 5.0, "cannot be set for an ip entity"),
        (APP, PRODUCER_BYTE_RATE, 1.5, "whole number"),
        (APP, CONSUMER_BYTE_RATE, 0.0, "must be positive"),
    ],
)
def test_values_we_would_not_enforce_are_refused_by_name(
    entity, key: str, value: float, message: str
) -> None:
    with pytest.raises(KafkaApiError) as refused:
        checked_value(entity, key, value)
    assert refused.value.code == ErrorCode.INVALID_REQUEST and message in refused.value.message


def test_describe_filters_match_a_name_the_default_or_any_and_strict_takes_only_exact_shapes() -> None:
    settings = QuotaSettings()
    for entity in KIP_55_ORDER:
        settings.apply(entity, PRODUCER_BYTE_RATE, 1.0)
    assert set(settings.matching([("client-id", MATCH_EXACT, "app")], strict=True)) == {APP}
    assert set(settings.matching([("client-id", MATCH_EXACT, "app")], strict=False)) == {
        APP,
        ALICE_APP,
        ANY_USER_APP,
    }
    assert set(settings.matching([("user", MATCH_DEFAULT, None)], strict=False)) == {
        ANY_USER,
        ANY_USER_APP,
        ANY_USER_ANY_CLIENT,
    }
    assert set(
        settings.matching([("user", MATCH_ANY, None), ("client-id", MATCH_DEFAULT, None)], strict=True)
    ) == {ALICE_ANY_CLIENT, ANY_USER_ANY_CLIENT}
    assert len(settings.matching([], strict=False)) == len(KIP_55_ORDER)
    with pytest.raises(KafkaApiError, match="Unknown match type"):
        settings.matching([("user", 7, None)], strict=False)


def test_a_rate_is_measured_over_at_least_the_window_less_one_sample() -> None:
    rate = SampledRate(samples=11, window_ms=1000)
    rate.record(10_000, 0)
    assert rate.measure(0) == (1000.0, 10_000)  # a first burst is spread over 10 s, not 0
    for second in range(1, 30):
        rate.record(1000, second * 1000)
    bytes_per_second, window = rate.measure(29_000)
    assert 10_000 <= window <= 11_000 and 900 <= bytes_per_second <= 1100


def test_an_excess_earns_the_time_that_brings_the_rate_back_to_its_bound() -> None:
    settings = QuotaSettings()
    settings.apply(APP, PRODUCER_BYTE_RATE, 1000.0)
    throttles = Throttles(settings, samples=11, window_ms=1000)
    assert throttles.record(PRODUCER_BYTE_RATE, "u", "app", 10_000, 0) == 0  # exactly the bound
    throttle = throttles.record(PRODUCER_BYTE_RATE, "u", "app", 5_000, 0)
    # 15,000 bytes over 10 s is 1,500 B/s: half over the bound, so half the window more.
    assert throttle == 5_000
    # The measured window is never under 10 s, so a burst at the start is still over the bound
    # after the throttle time, as in Kafka; quiet until it leaves the window, the rate is within.
    assert throttles.record(PRODUCER_BYTE_RATE, "u", "app", 0, throttle) > 0
    assert throttles.record(PRODUCER_BYTE_RATE, "u", "app", 0, 11_000) == 0
    # A huge excess earns a silence as long as it takes, with no upper bound (as in Kafka).
    assert throttles.record(PRODUCER_BYTE_RATE, "u", "app", 10**7, 11_000) >= 9_000_000


def test_a_throttled_fetch_does_not_count_its_bytes() -> None:
    settings = QuotaSettings()
    settings.apply(APP, CONSUMER_BYTE_RATE, 1000.0)
    throttles = Throttles(settings, samples=2, window_ms=1000)
    assert throttles.record(CONSUMER_BYTE_RATE, "u", "app", 5000, 0, keep_if_throttled=False) > 0
    assert throttles.record(CONSUMER_BYTE_RATE, "u", "app", 500, 1, keep_if_throttled=False) == 0


def test_idle_rates_are_forgotten() -> None:
    settings = QuotaSettings()
    settings.apply(ANY_CLIENT, PRODUCER_BYTE_RATE, 1000.0)
    throttles = Throttles(settings, samples=2, window_ms=1000)
    for n in range(100):
        throttles.record(PRODUCER_BYTE_RATE, "u", f"client-{n}", 10, 0)
    throttles.forget_idle(1000)
    assert len(throttles._rates) == 100
    throttles.forget_idle(2000)
    assert throttles._rates == {}


@pytest.mark.parametrize("value", [2048.0, None])
def test_a_quota_record_reads_back_as_written(value: float | None) -> None:
    record = ClientQuotaRecord(ANY_USER_APP, CONSUMER_BYTE_RATE, value)
    assert decode_security_record(*encode_security_record(record)) == record

"""Re-authentication (KIP-368) in the SASL state of one connection, on a virtual clock, and
where `connections.max.reauth.ms` comes from."""

from __future__ import annotations

import asyncio

import pytest

from connect_rebalance.scram import new_credential
from coordinator.configs.coordinator import ConfigError, CoordinatorConfig
from coordinator.security.sasl import AuthenticationFailed, SaslState, session_lifetime_ms
from coordinator.security.settings import max_reauth_ms_by_mechanism

pytestmark = pytest.mark.unit

CREDENTIALS = {
    (user, "SCRAM-SHA-512"): new_credential("SCRAM-SHA-512", f"{user}-secret") for user in ("alice", "bob")
}
MECHANISMS = ("PLAIN", "SCRAM-SHA-512")


def lookup(user: str, mechanism: str):  # type: ignore[no-untyped-def]
    return CREDENTIALS.get((user, mechanism))


def plain(state: SaslState, user: str, password: str | None = None) -> str | None:
    """A PLAIN exchange: SaslHandshake's mechanism, then the one token; the user it authenticated."""
    state.choose("PLAIN", lookup)
    _, authenticated = asyncio.run(state.step(f"\0{user}\0{password or user + '-secret'}".encode(), lookup))
    return authenticated


def test_the_session_lifetime_is_the_setting_or_the_credentials_own_whichever_ends_first() -> None:
    assert session_lifetime_ms(0) is None and session_lifetime_ms(-5) is None
    assert session_lifetime_ms(2000) == 2000
    assert session_lifetime_ms(2000, 500) == 500 and session_lifetime_ms(0, 500) == 500
    assert session_lifetime_ms(2000, 9000) == 2000
    assert session_lifetime_ms(2000, -1) == 0  # a credential already past its end


def test_a_session_with_a_lifetime_expires_and_may_reauthenticate_once_a_second() -> None:
    state = SaslState(MECHANISMS, {"PLAIN": 1500})
    assert plain(state, "alice") == "alice" and state.complete
    assert state.start_session(now=10.0) == 1500
    assert not state.expired(11.5) and state.expired(11.6)
    assert state.may_reauthenticate(10.1)  # no re-authentication yet: at once
    state.begin_reauthentication("User:alice", now=10.1)
    assert not state.complete and not state.expired(12.0)  # nothing expires mid-exchange
    assert plain(state, "alice") == "alice"
    assert state.start_session(now=10.2) == 1500 and not state.expired(11.6) and state.expired(11.8)
    assert not state.may_reauthenticate(11.0)  # within a second of the last start
    assert state.may_reauthenticate(11.1)


def test_without_a_lifetime_a_session_never_expires_nor_reauthenticates() -> None:
    state = SaslState(MECHANISMS, {"PLAIN": 0})
    plain(state, "alice")
    assert state.start_session(now=0.0) == 0
    assert not state.expired(1e9) and not state.may_reauthenticate(1e9)


def refusal(state: SaslState, user: str, password: str | None = None) -> str:
    """Why the exchange as `user` failed (or that it did not)."""
    try:
        plain(state, user, password)
    except AuthenticationFailed as failure:
        return str(failure)
    return "authenticated"


def reauthenticating(lifetimes: dict[str, int]) -> SaslState:
    """alice authenticated with PLAIN at 0 s, re-authenticating at 0.5 s."""
    state = SaslState(MECHANISMS, lifetimes)
    plain(state, "alice")
    state.start_session(now=0.0)
    state.begin_reauthentication("User:alice", now=0.5)
    return state


def test_a_reauthentication_must_keep_the_principal_and_the_mechanism() -> None:
    state = reauthenticating({"PLAIN": 1500})
    assert (
        refusal(state, "bob") == "Cannot change principals during re-authentication from User.alice: User.bob"
    )
    assert not state.complete
    assert refusal(reauthenticating({"PLAIN": 1500}), "alice", "wrong") == (
        "Authentication failed during re-authentication due to invalid credentials with SASL mechanism PLAIN"
    )
    state = reauthenticating({"PLAIN": 1500})
    state.choose("SCRAM-SHA-512", lookup)
    assert state.bad_mechanism == (
        "SASL mechanism 'SCRAM-SHA-512' requested by client is not supported for re-authentication of "
        "mechanism 'PLAIN'"
    )


def test_connections_max_reauth_ms_is_found_per_listener_and_mechanism_as_kafka_finds_it() -> None:
    config = CoordinatorConfig.from_settings(
        {"listeners": "SASL_PLAINTEXT://127.0.0.1:0,INTERNAL://127.0.0.1:0",
         "listener.security.protocol.map": "SASL_PLAINTEXT:SASL_PLAINTEXT,INTERNAL:SASL_PLAINTEXT",
         "sasl.enabled.mechanisms": "PLAIN,SCRAM-SHA-512",
         "connections.max.reauth.ms": "60000",
         "listener.name.internal.connections.max.reauth.ms": "30000",
         "listener.name.internal.scram-sha-512.connections.max.reauth.ms": "5000"}
    )  # fmt: skip
    assert max_reauth_ms_by_mechanism(config, "SASL_PLAINTEXT") == {"PLAIN": 60000, "SCRAM-SHA-512": 60000}
    assert max_reauth_ms_by_mechanism(config, "INTERNAL") == {"PLAIN": 30000, "SCRAM-SHA-512": 5000}
    assert config.kafka_settings()["connections.max.reauth.ms"] == "60000"  # described as a setting
    assert CoordinatorConfig.from_settings({}).connections_max_reauth_ms == 0  # Kafka's default: off
    with pytest.raises(ConfigError, match="must be a whole number"):
        CoordinatorConfig.from_settings(
            {"listeners": "SASL_PLAINTEXT://127.0.0.1:0", "sasl.enabled.mechanisms": "PLAIN",
             "listener.name.sasl_plaintext.plain.connections.max.reauth.ms": "soon"}
        )  # fmt: skip

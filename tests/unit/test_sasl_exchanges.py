"""The SASL exchanges in-process: SCRAM (RFC 5802) between the project's client and the
coordinator's server side, PLAIN against stored SCRAM credentials, and the refusals."""

from __future__ import annotations

import pytest

from connect_rebalance.scram import ScramClient, new_credential
from coordinator.security.sasl import AuthenticationFailed, ScramServerExchange, check_plain

pytestmark = pytest.mark.unit

CREDENTIALS = {("alice", m): new_credential(m, "alice-secret") for m in ("SCRAM-SHA-256", "SCRAM-SHA-512")}


def lookup(user: str, mechanism: str):  # type: ignore[no-untyped-def]
    return CREDENTIALS.get((user, mechanism))


@pytest.mark.parametrize("mechanism", ["SCRAM-SHA-256", "SCRAM-SHA-512"])
def test_scram_authenticates_the_right_password_and_both_sides_prove_it(mechanism: str) -> None:
    client, server = ScramClient(mechanism, "alice", "alice-secret"), ScramServerExchange(mechanism, lookup)
    server_final = server.step(client.final_message(server.step(client.first_message())))
    client.verify_server_final(server_final)  # the server knew the credential
    assert server.finished and server.user == "alice"


def test_scram_refuses_a_wrong_password_an_unknown_user_and_a_replayed_nonce() -> None:
    wrong, server = (
        ScramClient("SCRAM-SHA-512", "alice", "guess"),
        ScramServerExchange("SCRAM-SHA-512", lookup),
    )
    with pytest.raises(AuthenticationFailed, match="invalid credentials with SASL mechanism SCRAM-SHA-512"):
        server.step(wrong.final_message(server.step(wrong.first_message())))
    with pytest.raises(AuthenticationFailed, match="invalid credentials"):
        ScramServerExchange("SCRAM-SHA-512", lookup).step(
            ScramClient("SCRAM-SHA-512", "bob", "x").first_message()
        )
    first = ScramClient("SCRAM-SHA-512", "alice", "alice-secret")
    other = ScramServerExchange("SCRAM-SHA-512", lookup)
    final = first.final_message(ScramServerExchange("SCRAM-SHA-512", lookup).step(first.first_message()))
    other.step(first.first_message())
    with pytest.raises(AuthenticationFailed, match="nonce"):
        other.step(final)  # a final message made for another exchange
    with pytest.raises(AuthenticationFailed):
        ScramServerExchange("SCRAM-SHA-512", lookup).step(b"n,,n=alice,r=abc,tokenauth=true")
    with pytest.raises(AuthenticationFailed):
        ScramServerExchange("SCRAM-SHA-512", lookup).step(b"\xff\xfe")


def test_plain_checks_the_password_against_the_stored_scram_credential() -> None:
    assert check_plain(b"\x00alice\x00alice-secret", lookup) == "alice"
    assert check_plain(b"alice\x00alice\x00alice-secret", lookup) == "alice"
    for token, words in [
        (b"\x00alice\x00wrong", "invalid credentials with SASL mechanism PLAIN"),
        (b"\x00bob\x00alice-secret", "invalid credentials"),
        (b"mallory\x00alice\x00alice-secret", "authorization id"),
        (b"\x00\x00pw", "username not specified"),
        (b"just-one-token", "expected 3 tokens"),
    ]:
        with pytest.raises(AuthenticationFailed, match=words):
            check_plain(token, lookup)

"""SaslHandshake and SaslAuthenticate: the SASL exchange of a connection (security/sasl.py).

On listeners without SASL, and once a connection has authenticated, both answer
ILLEGAL_SASL_STATE as Kafka's broker does, except the SaslHandshake that the server lets
start a re-authentication (KIP-368, security/sasl.py). A failed handshake or exchange is the
connection's last answer; a successful exchange answers the session's lifetime (v1+).
"""

from __future__ import annotations

import asyncio
from typing import Any

from connect_rebalance.errors import ErrorCode
from connect_rebalance.protocol.api_keys import ApiKey
from coordinator.apis.registry import RequestContext, handles
from coordinator.security.sasl import (
    AuthenticationFailed,
    CredentialLookup,
    store_lookup,
)


def _lookup(ctx: RequestContext) -> CredentialLookup:
    return store_lookup(ctx.broker.security)


@handles(ApiKey.SASL_HANDSHAKE, 0, 1)
async def sasl_handshake(ctx: RequestContext, request: Any) -> dict[str, Any]:
    session = ctx.session
    if session is None or session.sasl is None or session.sasl.complete or session.sasl.mechanism:
        enabled = list(session.sasl.enabled) if session is not None and session.sasl is not None else []
        if session is not None and session.sasl is not None and not session.sasl.complete:
            session.close_after_response = True  # a second handshake on one connection
        return {"error_code": ErrorCode.ILLEGAL_SASL_STATE, "mechanisms": enabled}
    state = session.sasl
    mechanism = request.mechanism
    if mechanism not in state.enabled:
        session.close_after_response = True
        return {"error_code": ErrorCode.UNSUPPORTED_SASL_MECHANISM, "mechanisms": list(state.enabled)}
    state.choose(mechanism, _lookup(ctx))
    state.raw_tokens = ctx.version == 0
    return {"error_code": 0, "mechanisms": list(state.enabled)}


@handles(ApiKey.SASL_AUTHENTICATE, 0, 2)
async def sasl_authenticate(ctx: RequestContext, request: Any) -> dict[str, Any]:
    session = ctx.session
    answer: dict[str, Any] = {
        "error_code": 0,
        "error_message": None,
        "auth_bytes": b"",
        "session_lifetime_ms": 0,
    }
    if session is None or session.sasl is None:
        return answer | {
            "error_code": ErrorCode.ILLEGAL_SASL_STATE,
            "error_message": "no SASL exchange is under way on this connection",
        }
    if session.sasl.complete:
        return answer | {
            "error_code": ErrorCode.ILLEGAL_SASL_STATE,
            "error_message": "SaslAuthenticate request received after successful authentication",
        }
    state = session.sasl
    if state.mechanism is None:
        session.close_after_response = True
        return answer | {
            "error_code": ErrorCode.ILLEGAL_SASL_STATE,
            "error_message": "Unexpected SaslAuthenticate before SaslHandshake",
        }
    try:
        answer["auth_bytes"], user = await state.step(bytes(request.auth_bytes or b""), _lookup(ctx))
    except AuthenticationFailed as failure:
        session.close_after_response = True
        return answer | {"error_code": ErrorCode.SASL_AUTHENTICATION_FAILED, "error_message": str(failure)}
    if user is not None:
        session.principal = f"User:{user}"
        answer["session_lifetime_ms"] = state.start_session(asyncio.get_running_loop().time())
    return answer

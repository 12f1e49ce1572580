"""Signed requests between workers: Kafka Connect's session key.

Task configs are written by the leader only; a worker running a connector sends the configs
its connector generated to the leader (`POST /connectors/{name}/tasks`). That endpoint must
not take configs from anyone who can reach the REST port, so, as Kafka Connect does with
`connect.protocol=sessioned`, the leader writes a random key to the config topic (record
`session-key`) and every internal request carries an HMAC of its body under that key in
`X-Connect-Authorization`. The leader writes a new key when the current one is older than
`inter.worker.key.ttl.ms`.
"""

from __future__ import annotations

import base64
import hashlib
import hmac
import secrets
from dataclasses import dataclass
from typing import Any

ALGORITHM = "HmacSHA256"
SIGNATURE_HEADER = "X-Connect-Authorization"
ALGORITHM_HEADER = "X-Connect-Request-Signature-Algorithm"
RECORD_KEY = "session-key"


@dataclass(frozen=True)
class SessionKey:
    key: bytes
    created_ms: int

    @classmethod
    def new(cls, now_ms: int) -> SessionKey:
        return cls(secrets.token_bytes(32), now_ms)

    @classmethod
    def from_record(cls, value: dict[str, Any]) -> SessionKey:
        """Kafka Connect's record: {"key": base64, "algorithm": ..., "creation-timestamp": ms}."""
        return cls(base64.b64decode(value["key"]), int(value["creation-timestamp"]))

    def record(self) -> dict[str, Any]:
        return {
            "key": base64.b64encode(self.key).decode(),
            "algorithm": ALGORITHM,
            "creation-timestamp": self.created_ms,
        }

    def expired(self, now_ms: int, ttl_ms: int) -> bool:
        return now_ms >= self.created_ms + ttl_ms

    def headers(self, body: bytes) -> dict[str, str]:
        """The headers that sign `body`."""
        return {SIGNATURE_HEADER: self._sign(body), ALGORITHM_HEADER: ALGORITHM}

    def check(self, body: bytes, headers: Any) -> tuple[int, str] | None:
        """None if `headers` sign `body` under this key; else Kafka Connect's status and message."""
        signature, algorithm = headers.get(SIGNATURE_HEADER), headers.get(ALGORITHM_HEADER)
        if not signature or not algorithm:
            return 400, "Internal request missing required signature"
        if algorithm != ALGORITHM:
            return 400, f"Internal request signature uses an unsupported algorithm: {algorithm}"
        if not hmac.compare_digest(signature, self._sign(body)):
            return 403, "Internal request contained invalid signature."
        return None

    def _sign(self, body: bytes) -> str:
        return base64.b64encode(hmac.new(self.key, body, hashlib.sha256).digest()).decode()

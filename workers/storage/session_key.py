"""Signed requests between workers: Kafka Connect's session key.

Task configs are written by the leader only; a worker running a connector sends the configs
its connector generated to the leader (`POST /connectors/{name}/tasks`). That endpoint must
not take configs from anyone who can reach the REST port, so, as Kafka Connect does with
`connect.protocol=sessioned`, the leader writes a random key to the config topic (record
`session-key`) and every internal request carries an HMAC of its body under that key in
`X-Connect-Authorization`. The leader writes a new key when the current one is older than
`inter.worker.key.ttl.ms`.

Kafka Connect signs the body only, so a signed request could be replayed to another
connector (`POST /connectors/other/tasks` with the same body) or at any later time while
the key lives. Here the signature covers the method, the canonical path (the connector's
name percent-encoded, so every spelling of one name signs alike), the sender's clock
(`X-Connect-Request-Timestamp`, milliseconds) and the body. The receiver refuses a
signature made more than `MAX_AGE_MS` from its own clock, and one it has already
accepted (`SeenSignatures`): a captured request is good once, for one connector, for a
minute.
"""

from __future__ import annotations

import base64
import hashlib
import hmac
import secrets
from dataclasses import dataclass
from typing import Any
from urllib.parse import quote

ALGORITHM = "HmacSHA256"
SIGNATURE_HEADER = "X-Connect-Authorization"
ALGORITHM_HEADER = "X-Connect-Request-Signature-Algorithm"
TIMESTAMP_HEADER = "X-Connect-Request-Timestamp"
RECORD_KEY = "session-key"
MAX_AGE_MS = 60_000  # a signature older (or newer) than this, by the receiver's clock, is refused


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

    def headers(self, method: str, path: str, body: bytes, now_ms: int) -> dict[str, str]:
        """The headers that sign this request, made at `now_ms`."""
        return {
            SIGNATURE_HEADER: self._sign(method, path, str(now_ms), body),
            ALGORITHM_HEADER: ALGORITHM,
            TIMESTAMP_HEADER: str(now_ms),
        }

    def check(self, method: str, path: str, body: bytes, headers: Any, now_ms: int) -> tuple[int, str] | None:
        """None if `headers` sign this request under this key, recently; else the status and
        message (Kafka Connect's where it has one: 400 missing or unsupported, 403 invalid)."""
        signature, algorithm = headers.get(SIGNATURE_HEADER), headers.get(ALGORITHM_HEADER)
        timestamp = headers.get(TIMESTAMP_HEADER)
        if not signature or not algorithm or not timestamp:
            return 400, "Internal request missing required signature"
        if algorithm != ALGORITHM:
            return 400, f"Internal request signature uses an unsupported algorithm: {algorithm}"
        if not hmac.compare_digest(signature, self._sign(method, path, timestamp, body)):
            return 403, "Internal request contained invalid signature."
        if not timestamp.isdigit() or abs(now_ms - int(timestamp)) > MAX_AGE_MS:
            return 403, (
                f"Internal request signature was made at {timestamp}, more than {MAX_AGE_MS} ms "
                f"from this worker's clock ({now_ms}): refused as a replay"
            )
        return None

    def _sign(self, method: str, path: str, timestamp: str, body: bytes) -> str:
        signed = f"{method.upper()}\n{path}\n{timestamp}\n".encode() + body
        return base64.b64encode(hmac.new(self.key, signed, hashlib.sha256).digest()).decode()


def task_configs_path(connector: str) -> str:
    """The internal endpoint's canonical path, as it is signed (the name percent-encoded)."""
    return f"/connectors/{quote(connector, safe='')}/tasks"


class SeenSignatures:
    """Signatures a receiver has accepted within `MAX_AGE_MS`: a second use is a replay."""

    def __init__(self) -> None:
        self._seen: dict[str, int] = {}  # signature -> its timestamp

    def first_use(self, headers: Any, now_ms: int) -> bool:
        """Records the (already checked) signature in `headers`; False if it was seen before."""
        self._seen = {s: t for s, t in self._seen.items() if abs(now_ms - t) <= MAX_AGE_MS}
        signature = headers[SIGNATURE_HEADER]
        if signature in self._seen:
            return False
        self._seen[signature] = int(headers[TIMESTAMP_HEADER])
        return True

"""A raw Kafka-protocol connection for tests that need exact bytes on the wire."""

from __future__ import annotations

import socket
import struct
from collections.abc import Sequence
from typing import Any

from connect_rebalance.protocol import codec
from connect_rebalance.protocol.api_keys import ApiKey
from connect_rebalance.protocol.codec import RequestHeader


class RawConnection:
    def __init__(self, bootstrap: str, timeout: float = 10.0) -> None:
        host, port = bootstrap.rsplit(":", 1)
        self.sock = socket.create_connection((host, int(port)), timeout=timeout)
        self._correlation = 0

    def close(self) -> None:
        self.sock.close()

    def send_raw(self, data: bytes) -> None:
        self.sock.sendall(data)

    def receive_frame(self) -> bytes | None:
        """The next response frame without its size prefix, or None if the server closed."""
        prefix = self._read_exactly(4)
        if prefix is None:
            return None
        (size,) = struct.unpack(">i", prefix)
        return self._read_exactly(size)

    def _read_exactly(self, count: int) -> bytes | None:
        chunks = b""
        while len(chunks) < count:
            try:
                chunk = self.sock.recv(count - len(chunks))
            except ConnectionResetError:
                return None
            if not chunk:
                return None
            chunks += chunk
        return chunks

    def is_closed_by_server(self) -> bool:
        return self.receive_frame() is None

    def request(self, api_key: int, version: int, fields: dict[str, Any]) -> Any:
        response = self.request_or_closed(api_key, version, fields)
        assert response is not None, "server closed the connection"
        return response

    def request_or_closed(self, api_key: int, version: int, fields: dict[str, Any]) -> Any | None:
        """The answer, or None if the server closed the connection instead."""
        self._correlation += 1
        header = RequestHeader(api_key, version, self._correlation, "raw-test")
        body = codec.build_request(api_key, version, fields)
        try:
            self.send_raw(codec.encode_request_frame(header, body))
        except (BrokenPipeError, ConnectionResetError):
            return None
        frame = self.receive_frame()
        if frame is None:
            return None
        correlation, response = codec.decode_response_body(api_key, version, frame)
        assert correlation == self._correlation
        return response

    def fetch(
        self,
        topic: str,
        offsets: Sequence[tuple[int, int]],
        max_bytes: int = 1 << 24,
        partition_max_bytes: int = 1 << 24,
    ) -> list[bytes]:
        """One Fetch (v11, no wait) of `topic`'s partitions from the given (partition, offset)
        pairs, in that order: each partition's records, as the answer carries them."""
        answer = self.request(ApiKey.FETCH, 11, {
            "replica_id": -1, "max_wait_ms": 0, "min_bytes": 0, "max_bytes": max_bytes, "isolation_level": 0,
            "session_id": 0, "session_epoch": -1, "rack_id": "", "forgotten_topics_data": [],
            "topics": [{"topic": topic, "partitions": [
                {"partition": partition, "current_leader_epoch": -1, "fetch_offset": offset,
                 "log_start_offset": -1, "partition_max_bytes": partition_max_bytes}
                for partition, offset in offsets]}],
        })  # fmt: skip
        parts = answer.responses[0].partitions
        assert [p.error_code for p in parts] == [0] * len(offsets), f"fetch errors {parts}"
        return [bytes(p.records or b"") for p in parts]

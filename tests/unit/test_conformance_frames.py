"""Every request frame captured from real clients decodes, and re-encodes to the same bytes.

The frames come from kafka-python, aiokafka, confluent-kafka (classic and consumer group
protocols) and kcat. Re-encoding may only drop bytes that trail the message (librdkafka
appends some to Metadata v13; Kafka ignores them, and so do we).
"""

from __future__ import annotations

import pytest

from connect_rebalance.protocol import codec
from tests.support.frames import FRAMES_DIR, captured_frames, request_bytes

pytestmark = pytest.mark.unit
FRAMES = captured_frames()


def test_the_captured_frames_are_present() -> None:
    assert len(FRAMES) >= 90, f"expected the captured frames under {FRAMES_DIR}"
    clients = {p.parent.name for p in FRAMES}
    assert clients == {"kafka-python", "aiokafka", "confluent-classic", "confluent-consumer", "kcat"}


@pytest.mark.parametrize("path", FRAMES, ids=lambda p: f"{p.parent.name}/{p.stem}")
def test_captured_frame_decodes_and_reencodes(path) -> None:  # type: ignore[no-untyped-def]
    frame = request_bytes(path)
    header, offset = codec.parse_request_header(frame)
    api_key, version = (int(x) for x in path.stem.replace("_v", "_").split("_")[0:3:2])
    assert (header.api_key, header.api_version) == (api_key, version)
    request = codec.decode_request_body(header, frame, offset)
    reencoded = codec.encode_request_frame(header, request)[4:]
    assert frame.startswith(reencoded), "re-encoding changed the message"
    assert len(frame) - len(reencoded) <= 3

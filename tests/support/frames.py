"""The request frames captured from real clients (tests/fixtures/conformance-frames)."""

from __future__ import annotations

import struct
from pathlib import Path

FRAMES_DIR = Path(__file__).resolve().parents[1] / "fixtures" / "conformance-frames"


def captured_frames() -> list[Path]:
    return sorted(FRAMES_DIR.glob("*/*.bin"))


def request_bytes(path: Path) -> bytes:
    """The request without its size prefix (files may be stored with or without one)."""
    data = path.read_bytes()
    if len(data) >= 4 and struct.unpack(">i", data[:4])[0] == len(data) - 4:
        return data[4:]
    return data

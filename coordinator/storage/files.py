"""Small durable-file primitives shared by the storage modules."""

from __future__ import annotations

import ctypes
import ctypes.util
import json
import os
from pathlib import Path
from typing import Any

_FALLOC_FL_KEEP_SIZE = 1
_libc = ctypes.CDLL(ctypes.util.find_library("c"), use_errno=True)
_fallocate = getattr(_libc, "fallocate", None)
if _fallocate is not None:
    _fallocate.argtypes = [ctypes.c_int, ctypes.c_int, ctypes.c_longlong, ctypes.c_longlong]


def fsync_dir(path: Path) -> None:
    fd = os.open(path, os.O_RDONLY)
    try:
        os.fsync(fd)
    finally:
        os.close(fd)


def write_atomically(path: Path, data: bytes) -> None:
    """Replace `path` with `data` so that a crash leaves either the old or the new file."""
    tmp = path.with_name(path.name + ".tmp")
    with open(tmp, "wb") as handle:
        handle.write(data)
        handle.flush()
        os.fsync(handle.fileno())
    os.replace(tmp, path)
    fsync_dir(path.parent)


def write_json_atomically(path: Path, value: Any) -> None:
    write_atomically(path, json.dumps(value, indent=2, sort_keys=True).encode())


def read_json(path: Path) -> Any:
    return json.loads(path.read_text())


def reserve_blocks(fd: int, offset: int, length: int) -> bool:
    """Give the file `length` bytes of disk from `offset` without changing its size (Linux's
    fallocate with FALLOC_FL_KEEP_SIZE): writes into that range then succeed on a full disk.
    False where the filesystem or the platform cannot, or the disk has no room left already;
    the file is then simply written as any other. Truncating the file to its size gives back
    what was not used."""
    if _fallocate is None or length <= 0:
        return False
    return bool(_fallocate(fd, _FALLOC_FL_KEEP_SIZE, offset, length) == 0)

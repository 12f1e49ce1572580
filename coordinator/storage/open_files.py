"""The segment files held open: at most a bound, the least recently used closed first.

A partition costs a file descriptor only while it is used: 100,000 partitions would otherwise
hold 100,000 descriptors or more, past the usual `ulimit -n`, and a topic of 10,000 partitions
failed to be created at all with "Too many open files". Segments ask for their file each time
they read or write it (`use`); a file in use is pinned, so closing the least recently used one
never takes a descriptor another thread is reading or writing through (nor lets the number be
reused for another file under its feet). A closed file is opened again on its next use: the
cost is one open(2), a few microseconds, against the page cache.

The bound is half the process's soft RLIMIT_NOFILE (sockets and the rest take the other half),
at least 64. Kafka keeps every segment of every partition open and asks operators for a large
`ulimit -n` instead.
"""

from __future__ import annotations

import errno
import os
import resource
import threading
from collections import OrderedDict
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path


def default_capacity() -> int:
    soft, _ = resource.getrlimit(resource.RLIMIT_NOFILE)
    if soft == resource.RLIM_INFINITY:
        soft = 1 << 20
    return max(64, soft // 2)


class _Open:
    __slots__ = ("fd", "pins", "forgotten")

    def __init__(self, fd: int) -> None:
        self.fd = fd
        self.pins = 0
        self.forgotten = False  # closed by its owner while pinned: the last unpin closes it


class OpenFiles:
    def __init__(self, capacity: int) -> None:
        self.capacity = capacity
        self._lock = threading.Lock()
        self._open: OrderedDict[Path, _Open] = OrderedDict()

    def __len__(self) -> int:
        return len(self._open)

    @contextmanager
    def use(self, path: Path) -> Iterator[int]:
        """The file's descriptor, open (read-write) for the duration of the `with`."""
        with self._lock:
            entry = self._open.get(path)
            if entry is None:
                entry = _Open(os.open(path, os.O_RDWR))
                self._open[path] = entry
                self._close_least_recent()
            else:
                self._open.move_to_end(path)
            entry.pins += 1
        try:
            yield entry.fd
        finally:
            with self._lock:
                entry.pins -= 1
                if entry.forgotten and entry.pins == 0:
                    os.close(entry.fd)

    def forget(self, path: Path) -> None:
        """Close the file (its segment was closed or deleted); a reader still using it finishes."""
        with self._lock:
            entry = self._open.pop(path, None)
            if entry is None:
                return
            if entry.pins:
                entry.forgotten = True
            else:
                os.close(entry.fd)

    def _close_least_recent(self) -> None:
        while len(self._open) > self.capacity:
            oldest = next((path for path, entry in self._open.items() if entry.pins == 0), None)
            if oldest is None:
                return  # every one is in use: the next use closes one
            os.close(self._open.pop(oldest).fd)


FILES = OpenFiles(default_capacity())


def closed_error(path: Path) -> OSError:
    """What a closed segment's reads and writes raise, as a closed descriptor did."""
    return OSError(errno.EBADF, f"{path.name} is closed")

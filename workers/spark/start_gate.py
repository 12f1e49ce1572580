"""A Spark query started before its task is assigned here, held at its source until granted.

Most of a Spark task's start comes before its first batch reads anything: Spark starts the
query, a planner process for its Python data source, and creates the source's reader; only
then does it read the checkpoint's logs and plan a batch. A worker about to take a task over
(distributed/warm_handoff.py) starts the query while the old owner still runs it, and the reader's
constructor waits at a gate: a file the worker writes. `grant` lets the reader return, and
Spark reads the checkpoint as the old owner left it (ownership changed by then, through the
protocol's revoke-then-assign); `cancel` makes it raise, so the query ends without having
read anything and its stop never waits on a blocked reader. A reader that waits leaves
`<gate>.waiting`: the worker's sign that the query is prepared.

The reader runs in Spark's planner process, on the worker's machine (the driver), so the
gate is a local file; this module imports nothing heavy, as it loads in that process.
"""

from __future__ import annotations

import json
import time
from pathlib import Path

from workers.spark.share_handoff import write_atomically

GRANT, CANCEL = "grant", "cancel"
POLL_S = 0.01


class GateClosed(RuntimeError):
    """The prepared start was cancelled, or no grant came in time."""


def await_grant(path: str, timeout_s: float) -> None:
    """Wait until the gate at `path` is granted (the reader's side)."""
    gate = Path(path)
    waiting_marker(gate).touch()
    deadline = time.monotonic() + timeout_s
    while True:
        word = _read(gate)
        if word == GRANT:
            return
        if word == CANCEL:
            raise GateClosed(f"the prepared start at {gate.name} was cancelled")
        if time.monotonic() > deadline:
            raise GateClosed(f"the prepared start at {gate.name} was not granted within {timeout_s:.0f} s")
        time.sleep(POLL_S)


def granted(path: str) -> bool:
    """Whether the gate at `path` has been granted: a reader made after the grant (Spark makes
    one again, in a Python worker of its own, to pickle its `read` for the batch) has nothing to
    wait for nor anything to prepare."""
    return _read(Path(path)) == GRANT


class Gate:
    """The worker's side of one prepared start's gate."""

    def __init__(self, path: Path, timeout_s: float) -> None:
        self.path, self.timeout_s = path, timeout_s  # the reader gives up after `timeout_s`
        path.parent.mkdir(parents=True, exist_ok=True)
        for stale in (path, waiting_marker(path)):
            stale.unlink(missing_ok=True)

    def arrive(self) -> None:
        """The worker's own run has reached the gate (a task prepared without a gated source)."""
        waiting_marker(self.path).touch()

    def waiting(self) -> bool:
        """The query's reader has reached the gate: all of its start that can come first has."""
        return waiting_marker(self.path).exists()

    def grant(self) -> None:
        self._write(GRANT)

    def cancel(self) -> None:
        self._write(CANCEL)

    def cancel_unless_granted(self) -> None:
        if _read(self.path) != GRANT:
            self.cancel()

    def remove(self) -> None:
        for done in (self.path, waiting_marker(self.path)):
            done.unlink(missing_ok=True)

    def _write(self, word: str) -> None:
        write_atomically(self.path, word)  # the reader sees the whole word or none


def waiting_marker(gate: Path) -> Path:
    return gate.with_name(gate.name + ".waiting")


def _read(gate: Path) -> str:
    try:
        return str(json.loads(gate.read_text()))
    except (OSError, ValueError):
        return ""

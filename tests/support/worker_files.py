"""Starting a worker from a file the way an operator does, for tests of files it refuses."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

# The settings every worker needs, pointing at no coordinator: a file refused at start never
# gets as far as connecting.
REQUIRED = (
    "bootstrap.servers=127.0.0.1:9\ngroup.id=g\nconfig.storage.topic=c\noffset.storage.topic=o\n"
    "status.storage.topic=s\n"
)


def refused_start(worker_file: Path, text: str | None = None) -> list[str]:
    """What `connect-rebalance worker --config worker_file` (written with `text` first) says on
    stderr, once it has exited with status 2 (the settings refused, before anything started)."""
    if text is not None:
        worker_file.write_text(text)
    result = subprocess.run(
        [sys.executable, "-m", "connect_rebalance_cli.cli", "worker", "--config", str(worker_file)],
        capture_output=True, text=True, timeout=60,
    )  # fmt: skip
    assert result.returncode == 2, f"exited with {result.returncode}:\n{result.stderr}"
    return result.stderr.splitlines()

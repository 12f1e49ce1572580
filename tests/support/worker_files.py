"""Starting a worker from a file the way an operator does, for tests of files it refuses."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path


def refused_start(worker_file: Path) -> list[str]:
    """What `connect-rebalance worker --config worker_file` says on stderr, once it has exited
    with status 2 (the settings refused, before anything is started)."""
    result = subprocess.run(
        [sys.executable, "-m", "connect_rebalance_cli.cli", "worker", "--config", str(worker_file)],
        capture_output=True, text=True, timeout=60,
    )  # fmt: skip
    assert result.returncode == 2, f"exited with {result.returncode}:\n{result.stderr}"
    return result.stderr.splitlines()

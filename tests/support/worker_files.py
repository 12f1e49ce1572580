"""Worker files that must not start: run `connect-rebalance worker --config <file>` to its end."""

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


def run_worker_file(worker_file: Path, text: str | None = None) -> subprocess.CompletedProcess[str]:
    """The worker's exit (code, stdout, stderr) with `worker_file` (written with `text` first)."""
    if text is not None:
        worker_file.write_text(text)
    return subprocess.run(
        [sys.executable, "-m", "connect_rebalance_cli.cli", "worker", "--config", str(worker_file)],
        capture_output=True, text=True, timeout=60,
    )  # fmt: skip

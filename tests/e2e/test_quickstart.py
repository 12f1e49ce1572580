"""The README's first command, as a newcomer types it: a coordinator and three workers
ingest the sample data with PySpark through a leave and a join, and the run ends with its
summary proving every row arrived once."""

from __future__ import annotations

import re
import subprocess
from pathlib import Path

import pytest

pytestmark = pytest.mark.e2e

ROOT = Path(__file__).resolve().parents[2]


def first_command() -> str:
    """The first shell block of the README (install, then the quickstart)."""
    readme = (ROOT / "README.md").read_text()
    block = re.search(r"```bash\n(.*?)\n```", readme, re.S)
    assert block is not None, "the README has no shell block"
    return block.group(1).strip()


@pytest.mark.timeout(900)
def test_the_readmes_first_command_ends_with_its_summary() -> None:
    command = first_command()
    assert command.endswith("connect-rebalance quickstart"), command
    # The install part has run already (the test suite runs in that environment): run the rest.
    quickstart = command.split("&&")[-1].strip()
    result = subprocess.run(quickstart, shell=True, cwd=ROOT, capture_output=True, text=True, timeout=840)
    out = result.stdout
    assert result.returncode == 0, out[-4000:] + result.stderr[-2000:]
    assert "Nothing lost, nothing duplicated." in out
    rows = re.search(r"\[ok\] rows in the output: (\d+) of (\d+)", out)
    assert rows is not None and rows.group(1) == rows.group(2), out[-2000:]
    assert re.search(r"\[ok\] distinct ids: (\d+), duplicates: 0, missing: 0", out)
    assert "[ok] only w1's tasks moved; w2 and w3 stopped nothing" in out
    assert "[ok] a join moved only what balance needs (one item)" in out
    assert re.search(r"web view: http://127\.0\.0\.1:\d+/ui ", out), out[:3000]
    assert "[ok] the web view showed w1 leave" in out and "[ok] the web view showed w4 join" in out

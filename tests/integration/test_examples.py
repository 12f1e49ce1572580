"""`examples/produce_consume.py`, the consumer-group example, against a coordinator process:
it consumes what it produced as a KIP-848 consumer group (and as a classic one), commits,
and a second run reads only the new records; `groups describe` shows the group."""

from __future__ import annotations

import re
import subprocess
import sys
from pathlib import Path

import pytest

from connect_rebalance.processes import CoordinatorProcess

pytestmark = pytest.mark.integration
EXAMPLE = Path(__file__).resolve().parents[2] / "examples" / "produce_consume.py"


def run(*args: str) -> str:
    result = subprocess.run([sys.executable, *args], capture_output=True, text=True, timeout=120, check=False)
    assert result.returncode == 0, result.stderr
    return result.stdout


@pytest.mark.parametrize("protocol", ["consumer", "classic"])
def test_the_consumer_group_example_consumes_commits_and_resumes(
    group_coordinator: CoordinatorProcess, protocol: str
) -> None:
    bootstrap = group_coordinator.bootstrap
    example = [str(EXAMPLE), "--bootstrap-server", bootstrap, "--topic", "events", "--group", "example",
               "--group-protocol", protocol, "--count", "10"]  # fmt: skip
    first = run(*example)
    assert "produced 10 records" in first and "consumed 10 records" in first, first
    offsets = {int(p): int(o) for p, o in re.findall(r"partition (\d+) at (\d+)", first)}
    assert sum(offsets.values()) == 10, first

    second = run(*example)
    assert "consumed 10 records" in second, second
    values = re.findall(r"offset \d+: event (\d+)", second)
    assert sorted(map(int, values)) == list(range(10)) and len(values) == 10, "only the new records"
    resumed = {int(p): int(o) for p, o in re.findall(r"partition (\d+) at (\d+)", second)}
    assert sum(resumed.values()) == 20, second

    described = run("-m", "connect_rebalance_cli.cli", "groups", "--bootstrap-server", bootstrap,
                    "describe", "example")  # fmt: skip
    assert "example" in described and "events" in described, described

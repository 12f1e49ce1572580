"""Shared fixtures: every process a test starts is stopped by the fixture that started it.

Every test carries exactly one tier marker (`unit`, `integration`, `e2e`), so `-m unit`,
`-m integration` and `-m e2e` together select every test, each once; collection fails
naming any test that has none or more than one.
"""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest
from hypothesis import settings

from connect_rebalance.processes import CoordinatorProcess

TIERS = ("unit", "integration", "e2e")

# Property tests check what a message or a state machine does, not how fast: Hypothesis's
# per-example deadline (200 ms) would fail them on a machine busy with other tiers' processes.
# Speed is shown by bench/.
settings.register_profile("suite", deadline=None)
settings.load_profile("suite")


@pytest.hookimpl(tryfirst=True)  # before `-m` deselects anything: every collected test is checked
def pytest_collection_modifyitems(items: list[pytest.Item]) -> None:
    wrong = []
    for item in items:
        tiers = sorted({mark.name for mark in item.iter_markers() if mark.name in TIERS})
        if len(tiers) != 1:
            wrong.append(f"  {item.nodeid}: {', '.join(tiers) or 'no tier marker'}")
    if wrong:
        raise pytest.UsageError(
            f"every test needs exactly one of the markers {', '.join(TIERS)}:\n" + "\n".join(wrong)
        )


@pytest.fixture
def coordinator(tmp_path: Path) -> Iterator[CoordinatorProcess]:
    """A coordinator subprocess on a free port with its own data directory."""
    process = CoordinatorProcess(tmp_path / "data").start()
    try:
        yield process
    finally:
        process.kill()


@pytest.fixture(scope="module")
def shared_coordinator(tmp_path_factory: pytest.TempPathFactory) -> Iterator[CoordinatorProcess]:
    """One coordinator for a module whose tests use distinct topic names."""
    process = CoordinatorProcess(tmp_path_factory.mktemp("shared") / "data").start()
    try:
        yield process
    finally:
        process.kill()

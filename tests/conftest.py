"""Shared fixtures: every process a test starts is stopped by the fixture that started it."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest

from connect_rebalance.processes import CoordinatorProcess


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

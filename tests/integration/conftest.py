"""Integration tests need the real peers installed; say how to get them rather than skip."""

from __future__ import annotations

import shutil
from collections.abc import Iterator
from pathlib import Path

import pytest

from connect_rebalance.processes import CoordinatorProcess
from tests.support.connect_driver import TcpTransport
from tests.support.group_scenario import MemberFleet


@pytest.fixture(autouse=True, scope="session")
def _real_peers_are_installed() -> None:
    if shutil.which("kcat") is None:
        pytest.fail(
            "kcat is not installed: run the suite with ./scripts/test, which installs it, "
            "or `apt-get install kcat`"
        )


@pytest.fixture
def group_coordinator(tmp_path: Path) -> Iterator[CoordinatorProcess]:
    """A coordinator whose empty groups form their first generation after 300 ms."""
    process = CoordinatorProcess(tmp_path / "data", {"group.initial.rebalance.delay.ms": "300"}).start()
    try:
        yield process
    finally:
        process.kill()


@pytest.fixture
def fleets() -> Iterator[list[MemberFleet]]:
    """Member fleets a test creates; every member process is killed at the end."""
    created: list[MemberFleet] = []
    try:
        yield created
    finally:
        for fleet in created:
            fleet.kill_all()


@pytest.fixture
def transports() -> Iterator[list[TcpTransport]]:
    """Protocol-client connections a test opens (tests.support.connect_driver); each is closed
    at the end."""
    opened: list[TcpTransport] = []
    try:
        yield opened
    finally:
        for transport in opened:
            transport.close()

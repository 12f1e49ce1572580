"""Integration tests need the real peers installed; say how to get them rather than skip."""

from __future__ import annotations

import shutil

import pytest


@pytest.fixture(autouse=True, scope="session")
def _real_peers_are_installed() -> None:
    if shutil.which("kcat") is None:
        pytest.fail(
            "kcat is not installed: run `apt-get install kcat` (or `bash .ci/run`, which installs it)"
        )

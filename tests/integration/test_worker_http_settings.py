"""Kafka Connect's REST listener settings on a worker process, read with curl.

- `access.control.allow.origin`/`.methods` and `response.http.headers.config`, as a browser
  UI's requests look: an allowed origin gets the CORS headers and its preflight the allowed
  methods, another origin gets none, and every answer (a 404 included) carries the configured
  headers. A malformed header rule stops the start, named with Kafka Connect's message.
- `admin.listeners`: the admin endpoints on their own listener and not on the REST one; blank,
  on none."""

from __future__ import annotations

import subprocess
from pathlib import Path

import pytest

from connect_rebalance.processes import CoordinatorProcess
from tests.support.spark_standalone import free_port
from tests.support.worker_cluster import WorkerCluster
from tests.support.worker_files import REQUIRED, refused_start

pytestmark = pytest.mark.integration


def headers_of(*args: str) -> tuple[int, dict[str, list[str]]]:
    """curl's status and response headers (names lower-cased) for a request."""
    out = subprocess.run(["curl", "-s", "-o", "/dev/null", "-D", "-", *args],
                         capture_output=True, text=True, timeout=30, check=True).stdout  # fmt: skip
    lines = [line.strip() for line in out.splitlines() if line.strip()]
    found: dict[str, list[str]] = {}
    for line in lines[1:]:
        name, _, value = line.partition(":")
        found.setdefault(name.lower(), []).append(value.strip())
    return int(lines[0].split()[1]), found


def test_cors_answers_and_configured_headers(tmp_path: Path) -> None:
    coordinator = CoordinatorProcess(tmp_path / "data").start()
    cluster = WorkerCluster(
        tmp_path, coordinator, **{
            "access.control.allow.origin": "https://*.example.com,http://localhost:3000",
            "access.control.allow.methods": "GET,POST,PUT,DELETE",
            "response.http.headers.config": "set X-Frame-Options: DENY, add Cache-Control: no-store",
        },
    )  # fmt: skip
    try:
        url = cluster.start("w1").url
        status, got = headers_of("-H", "Origin: https://ui.example.com", f"{url}/connectors")
        assert status == 200
        assert got["access-control-allow-origin"] == ["https://ui.example.com"]
        assert got["x-frame-options"] == ["DENY"] and got["cache-control"] == ["no-store"]

        # The preflight a browser sends before a PUT, without credentials.
        preflight = [
            "-X",
            "OPTIONS",
            "-H",
            "Origin: http://localhost:3000",
            "-H",
            "Access-Control-Request-Method: PUT",
        ]
        status, got = headers_of(*preflight, f"{url}/connectors/x/pause")
        assert status == 200
        assert got["access-control-allow-origin"] == ["http://localhost:3000"]
        assert got["access-control-allow-methods"] == ["GET,POST,PUT,DELETE"]

        status, got = headers_of("-H", "Origin: https://evil.example.org", f"{url}/connectors")
        assert status == 200 and "access-control-allow-origin" not in got
        status, got = headers_of(f"{url}/connectors/nope")
        assert status == 404 and got["x-frame-options"] == ["DENY"]
    finally:
        cluster.stop_all()
        coordinator.kill()


def test_a_malformed_header_rule_stops_the_start_naming_it(tmp_path: Path) -> None:
    rule = "response.http.headers.config=put X-A: 1,set X-B\n"
    said = "\n".join(refused_start(tmp_path / "worker.properties", REQUIRED + rule))
    assert "response.http.headers.config" in said
    assert "Invalid header config action: 'put'" in said
    assert "Invalid format of header config 'set X-B'" in said


@pytest.mark.parametrize("own_listener", [True, False])
def test_admin_endpoints_move_to_their_own_listener_or_are_turned_off(
    tmp_path: Path, own_listener: bool
) -> None:
    admin_url = f"http://127.0.0.1:{free_port()}" if own_listener else ""
    coordinator = CoordinatorProcess(tmp_path / "data").start()
    cluster = WorkerCluster(tmp_path, coordinator, **{"admin.listeners": admin_url})
    try:
        url = cluster.start("w1").url
        assert headers_of(f"{url}/connectors")[0] == 200
        assert headers_of(f"{url}/admin/loggers")[0] == 404
        if own_listener:
            assert headers_of(f"{admin_url}/admin/loggers")[0] == 200
            assert headers_of(f"{admin_url}/connectors")[0] == 404
    finally:
        cluster.stop_all()
        coordinator.kill()

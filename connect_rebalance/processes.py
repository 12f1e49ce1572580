"""A coordinator running as a real subprocess: for the quickstart, tests and benchmarks.

It listens on a port the OS picks (read back from its first line of output), keeps its
data in a directory the caller owns, and can be stopped gracefully, killed with SIGKILL,
paused with SIGSTOP and restarted on the same port and data.
"""

from __future__ import annotations

import os
import re
import resource
import select
import signal
import subprocess
import sys
import time
from pathlib import Path

_READY = re.compile(r"listening on (\S+):(\d+) ")
_ADMIN = re.compile(r"; admin (https?://\S+)")
_LISTENERS = re.compile(r"; listeners ([^;\s]+)")


def connect_timings(session_ms: int, heartbeat_ms: int = 1000) -> dict[str, str]:
    """Coordinator settings for connect groups with a short session (tests, demos, benches).

    The bounds are lowered explicitly, so the defaults stay what production wants.
    """
    return {
        "group.connect.session.timeout.ms": str(session_ms),
        "group.connect.heartbeat.interval.ms": str(heartbeat_ms),
        "group.connect.min.session.timeout.ms": str(min(session_ms, 6000)),
        "group.connect.min.heartbeat.interval.ms": str(min(heartbeat_ms, 1000)),
    }


class CoordinatorProcess:
    def __init__(
        self,
        data_dir: Path,
        overrides: dict[str, str] | None = None,
        log_path: Path | None = None,
        code_dir: Path | None = None,
        open_files_limit: int | None = None,
    ):
        """`code_dir`: run the coordinator of another checkout (a bench's "before"), not this one.
        `open_files_limit`: the process's `ulimit -n` (soft and hard), as an operator would set it."""
        self.data_dir = Path(data_dir)
        self.code_dir = code_dir
        self.open_files_limit = open_files_limit
        self.overrides = dict(overrides or {})
        self.log_path = log_path or self.data_dir.parent / f"{self.data_dir.name}-coordinator.log"
        self.port = 0
        self.admin_url = ""  # the admin HTTP port (/metrics), on a free port of its own
        # Every Kafka listener as NAME://host:port, once started (a restart binds the same ports).
        self.listener_urls: list[str] = []
        self.process: subprocess.Popen[bytes] | None = None

    @property
    def bootstrap(self) -> str:
        return f"127.0.0.1:{self.port}"

    def bootstrap_for(self, listener_name: str) -> str:
        """host:port of the named listener (e.g. SASL_SSL)."""
        for url in self.listener_urls:
            name, _, address = url.partition("://")
            if name == listener_name.upper():
                return address
        raise KeyError(f"no listener {listener_name} among {self.listener_urls}")

    def start(self, timeout: float = 30.0) -> CoordinatorProcess:
        command = [
            sys.executable,
            "-m",
            "connect_rebalance_cli.cli",
            "coordinator",
            "--listen",
            f"127.0.0.1:{self.port}",
            "--data-dir",
            str(self.data_dir),
        ]
        settings = dict(self.overrides)
        settings.setdefault("admin.listeners", "http://127.0.0.1:0")
        if self.admin_url:  # a restart keeps the same ports
            settings["admin.listeners"] = self.admin_url
        if self.listener_urls and "listeners" in self.overrides:
            settings["listeners"] = ",".join(self.listener_urls)
        for name, value in settings.items():
            command += ["-o", f"{name}={value}"]
        self.log_path.parent.mkdir(parents=True, exist_ok=True)
        log_file = open(self.log_path, "ab")  # noqa: SIM115 - owned by the child from here on
        self.process = subprocess.Popen(
            command, stdout=subprocess.PIPE, stderr=log_file, cwd=self.code_dir, preexec_fn=self._limits
        )
        log_file.close()
        deadline = time.monotonic() + timeout
        line = b""
        assert self.process.stdout is not None
        while time.monotonic() < deadline:
            ready, _, _ = select.select([self.process.stdout], [], [], 0.2)
            if ready:
                line = self.process.stdout.readline()
                match = _READY.search(line.decode(errors="replace"))
                if match:
                    self.port = int(match.group(2))
                    admin_match = _ADMIN.search(line.decode(errors="replace"))
                    self.admin_url = admin_match.group(1) if admin_match else ""
                    listeners_match = _LISTENERS.search(line.decode(errors="replace"))
                    self.listener_urls = listeners_match.group(1).split(",") if listeners_match else []
                    return self
            if self.process.poll() is not None:
                break
        self.kill()
        raise RuntimeError(f"coordinator did not start: {line!r}\n{self.log_path.read_text()[-3000:]}")

    def _limits(self) -> None:
        """In the child, before it runs the coordinator."""
        if self.open_files_limit is not None:
            resource.setrlimit(resource.RLIMIT_NOFILE, (self.open_files_limit, self.open_files_limit))

    def kill(self) -> None:
        """SIGKILL: no flush, no clean shutdown."""
        if self.process is not None and self.process.poll() is None:
            self.process.kill()
            self.process.wait(10)

    def stop(self, timeout: float = 15.0) -> int | None:
        if self.process is None:
            return None
        if self.process.poll() is None:
            self.process.send_signal(signal.SIGTERM)
            try:
                self.process.wait(timeout)
            except subprocess.TimeoutExpired:
                self.process.kill()
                self.process.wait(10)
        return self.process.returncode

    def pause(self) -> None:
        assert self.process is not None
        os.kill(self.process.pid, signal.SIGSTOP)

    def resume(self) -> None:
        assert self.process is not None
        os.kill(self.process.pid, signal.SIGCONT)

    def restart(self) -> CoordinatorProcess:
        self.stop()
        return self.start()

    def is_running(self) -> bool:
        return self.process is not None and self.process.poll() is None

    def log_text(self) -> str:
        return self.log_path.read_text(errors="replace")

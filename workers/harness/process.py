"""A worker running as a real subprocess: for the quickstart, tests and benchmarks.

It listens on a REST port the OS picks (read back from its first line of output) and can
be stopped gracefully (SIGTERM: it leaves the group), killed with SIGKILL (a crash), or
paused with SIGSTOP.
"""

from __future__ import annotations

import os
import re
import select
import signal
import subprocess
import sys
import time
from pathlib import Path

_READY = re.compile(r"worker listening on (https?://\S+) \(worker (\S+),")


class WorkerProcess:
    def __init__(
        self,
        properties: dict[str, str],
        workdir: Path,
        name: str,
        file: Path | None = None,
        niceness: int = 0,
    ) -> None:
        """`properties` are the worker's file; with `file`, that file is read as it is and
        `properties` override it (`-o name=value`). `niceness` > 0 runs the worker (and the
        Spark JVM it starts) at a lower CPU priority, as on a host of its own beside the
        coordinator's rather than one sharing its cores."""
        self.niceness = niceness
        self.properties = {"listeners": "http://127.0.0.1:0", **properties}
        self.file = file
        self.workdir, self.name = Path(workdir), name
        self.config_path = self.workdir / f"{name}.properties"
        self.log_path = self.workdir / f"{name}.log"
        self.url = ""
        self.worker_id = ""
        self.process: subprocess.Popen[bytes] | None = None
        self.paused = False  # SIGSTOPped: alive, but answers nothing until resumed

    def start(self, timeout: float = 60.0) -> WorkerProcess:
        self.workdir.mkdir(parents=True, exist_ok=True)
        command = [sys.executable, "-m", "connect_rebalance_cli.cli", "worker", "--config"]
        if self.file is None:
            self.config_path.write_text("".join(f"{k}={v}\n" for k, v in self.properties.items()))
            command.append(str(self.config_path))
        else:
            command += [str(self.file), *(f"-o{k}={v}" for k, v in self.properties.items())]
        log_file = open(self.log_path, "ab")  # noqa: SIM115 - owned by the child from here on
        lower = (lambda: os.nice(self.niceness)) if self.niceness > 0 else None
        self.process = subprocess.Popen(command, stdout=subprocess.PIPE, stderr=log_file, preexec_fn=lower)  # noqa: PLW1509
        log_file.close()
        assert self.process.stdout is not None
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            ready, _, _ = select.select([self.process.stdout], [], [], 0.2)
            if ready:
                match = _READY.search(self.process.stdout.readline().decode(errors="replace"))
                if match:
                    self.url, self.worker_id = match.group(1), match.group(2)
                    return self
            if self.process.poll() is not None:
                break
        self.kill()
        raise RuntimeError(f"worker {self.name} did not start:\n{self.log_text()[-3000:]}")

    def stop(self, timeout: float = 30.0) -> int | None:
        """SIGTERM: the worker stops its work and leaves the group."""
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

    def kill(self) -> None:
        if self.process is not None and self.process.poll() is None:
            self.process.kill()
            self.process.wait(10)

    def pause(self) -> None:
        assert self.process is not None
        os.kill(self.process.pid, signal.SIGSTOP)
        self.paused = True

    def resume(self) -> None:
        assert self.process is not None
        os.kill(self.process.pid, signal.SIGCONT)
        self.paused = False

    def is_running(self) -> bool:
        return self.process is not None and self.process.poll() is None

    def log_text(self) -> str:
        return self.log_path.read_text(errors="replace") if self.log_path.exists() else ""

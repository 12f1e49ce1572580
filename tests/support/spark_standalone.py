"""A real Spark standalone cluster on loopback, from the installed PySpark: one master and
Spark workers, started with the wheel's own `bin/spark-class` (the standalone cluster manager
ships inside it), each in its own process group, all killed on exit with their executors.

Tests point connect workers at it with `spark.master=spark://127.0.0.1:<port>`; the master's
JSON status (`http://127.0.0.1:<ui>/json/`) says which Spark workers are alive and which
applications hold executors on them.
"""

from __future__ import annotations

import contextlib
import json
import os
import signal
import socket
import subprocess
import sys
import time
import urllib.request
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pyspark

from workers.harness.spark_jvm import SHORT_LIVED_JVM_OPTIONS

SPARK_HOME = str(Path(pyspark.__file__).resolve().parent)


def free_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return int(probe.getsockname()[1])


@dataclass
class StandaloneCluster:
    base: Path
    master_port: int = field(default_factory=free_port)
    ui_port: int = field(default_factory=free_port)
    processes: dict[str, subprocess.Popen[bytes]] = field(default_factory=dict)

    @property
    def master_url(self) -> str:
        return f"spark://127.0.0.1:{self.master_port}"

    def _spawn(self, name: str, *args: str) -> None:
        log = open(self.base / f"{name}.log", "ab")  # noqa: SIM115 - the child owns it
        env = {**os.environ, "SPARK_HOME": SPARK_HOME, "SPARK_LOCAL_IP": "127.0.0.1",
               "PYSPARK_PYTHON": sys.executable, "SPARK_LOG_DIR": str(self.base),
               "SPARK_WORKER_DIR": str(self.base / f"{name}-work"),
               "SPARK_DAEMON_JAVA_OPTS": SHORT_LIVED_JVM_OPTIONS}  # fmt: skip
        command = [str(Path(SPARK_HOME) / "bin" / "spark-class"), *args]
        self.processes[name] = subprocess.Popen(
            command, stdout=log, stderr=subprocess.STDOUT, env=env, start_new_session=True
        )
        log.close()

    def start_master(self) -> None:
        self._spawn("master", "org.apache.spark.deploy.master.Master", "--host", "127.0.0.1",
                    "--port", str(self.master_port), "--webui-port", str(self.ui_port))  # fmt: skip

    def start_worker(self, name: str, cores: int = 2, memory: str = "1g") -> None:
        """A Spark worker offering `cores` slots (not CPUs: executors share the machine's)."""
        self._spawn(name, "org.apache.spark.deploy.worker.Worker", self.master_url, "--host", "127.0.0.1",
                    "--cores", str(cores), "--memory", memory, "--webui-port", str(free_port()),
                    "--work-dir", str(self.base / f"{name}-work"))  # fmt: skip

    def status(self) -> dict[str, Any]:
        """The master's JSON status: workers, applications, and their executors' workers."""
        with urllib.request.urlopen(f"http://127.0.0.1:{self.ui_port}/json/", timeout=5) as answer:
            return json.loads(answer.read())  # type: ignore[no-any-return]

    def alive_workers(self) -> int:
        try:
            return sum(1 for w in self.status().get("workers", []) if w.get("state") == "ALIVE")
        except OSError:
            return 0

    def kill(self, name: str) -> None:
        process = self.processes.pop(name, None)
        if process is not None:
            with contextlib.suppress(ProcessLookupError):
                os.killpg(process.pid, signal.SIGKILL)
            process.wait(30)

    def stop_all(self) -> None:
        for name in list(self.processes):
            self.kill(name)


@contextlib.contextmanager
def spark_standalone(base: Path, workers: int = 2, timeout: float = 90.0) -> Iterator[StandaloneCluster]:
    """A master and `workers` Spark workers, all alive; every process killed on exit."""
    base.mkdir(parents=True, exist_ok=True)
    cluster = StandaloneCluster(base)
    try:
        cluster.start_master()
        for index in range(workers):
            cluster.start_worker(f"spark-worker-{index + 1}")
        deadline = time.monotonic() + timeout
        while cluster.alive_workers() < workers:
            if time.monotonic() > deadline:
                raise AssertionError(f"the Spark cluster did not start {workers} workers in {timeout:.0f}s")
            for name, process in cluster.processes.items():
                if process.poll() is not None:
                    raise AssertionError(f"{name} exited: {(base / f'{name}.log').read_text()[-2000:]}")
            time.sleep(0.2)
        yield cluster
    finally:
        cluster.stop_all()

"""One process that plans every streaming query of a worker's Python data sources.

Spark starts a Python process for each streaming query over a Python data source (its
planner: `initialOffset`, `latestOffset`, `partitions`, `commit`), with `python -m
pyspark.sql.streaming.python_streaming_source_runner`, and gives it 10 s to connect back to
the JVM. Each such process imports PySpark and pyarrow anew: about 80 MiB and half a second
to over a second of CPU per query. Sixteen queries starting at once on two cores took longer
than the 10 s, and their tasks failed ("Python worker failed to connect back").

So a worker runs one planner host (`PlannerHost`, this module's `main` in a process of its
own, with PySpark, pyarrow and kafka-python imported once) and every planner Spark starts
hands its query over to it at once: the host connects back to the JVM in the planner's place
and runs PySpark's own planner loop (`python_streaming_source_runner.main`) for that query on
a thread. The hand-over is Python's start-up hook: the runtime puts `planner_site/` (a
`sitecustomize` module) first on the import path of Spark's Python processes on this
machine, and names the host's socket in CONNECT_REBALANCE_PLANNER_HOST; a Python process
started as a planner with both set sends its connection details (`hand_over`) and exits once
the host says it has connected. Any other Python process, and a planner where the host is
gone, goes on as it would have (Spark's executors on other machines have neither).

A query's planner thread ends when the JVM closes its connection (the query stopped), as a
planner process does. The host ends with the worker: it exits when its stdin, a pipe from
the worker, reaches its end, as the JVM does.
"""

from __future__ import annotations

import contextlib
import json
import logging
import os
import shutil
import socket
import subprocess
import sys
import tempfile
import threading
from collections.abc import Mapping, MutableMapping
from pathlib import Path
from typing import Any, BinaryIO

log = logging.getLogger(__name__)

RUNNER = "pyspark.sql.streaming.python_streaming_source_runner"
HOST_SOCKET_ENV = "CONNECT_REBALANCE_PLANNER_HOST"
SITE_DIR = str(Path(__file__).resolve().parent / "planner_site")
TAKEN, REFUSED = b"ok", b"no"
# A planner waits at most this long for the host's answer: Spark has given up on it by then.
ANSWER_WAIT_S = 60.0
READY_TIMEOUT_S = 60.0
# Settings of Spark's connection that PySpark reads from the environment when it connects.
CONNECTION_ENV = ("SPARK_AUTH_SOCKET_TIMEOUT", "SPARK_BUFFER_SIZE", "SPARK_PREFER_IPV6")


# -- the planner's side (imported at the start of a planner process: the standard library only) --


def hand_over(host: str) -> bool:
    """Hand this planner's query to the host at `host`; True once the host has connected back
    to the JVM in this process's place (the process has nothing left to do), False when no
    host answers (the process plans its query itself)."""
    try:
        with socket.socket(socket.AF_UNIX, socket.SOCK_STREAM) as conn:
            conn.settimeout(ANSWER_WAIT_S)
            conn.connect(host)
            conn.sendall(json.dumps({"pid": os.getpid(), "env": dict(os.environ)}).encode() + b"\n")
            answer = conn.recv(len(TAKEN))
    except TimeoutError:
        os._exit(1)  # the host hangs: Spark stopped waiting for this planner long ago
    except OSError:
        return False
    return answer == TAKEN


# -- the worker's side ----------------------------------------------------------------------------


class PlannerHost:
    """The worker's planner host process: started with the Spark session, stopped with it."""

    def __init__(self) -> None:
        self.directory = Path(tempfile.mkdtemp(prefix="spark-planners-"))  # private (0700)
        self.socket_path = str(self.directory / "host.sock")
        self.process: subprocess.Popen[bytes] | None = None
        self._environ: dict[str, str] = {}
        self._lock = threading.Lock()

    def start(self, environ: Mapping[str, str]) -> None:
        """Start the host with `environ` (the interpreter and import path of Spark's Python
        processes) and wait until it listens."""
        self._environ = dict(environ)
        ready_r, ready_w = os.pipe()
        self.process = subprocess.Popen(  # noqa: S603 - this interpreter, this module
            [sys.executable, "-m", __name__, self.socket_path, str(ready_w)],
            stdin=subprocess.PIPE, env=self._environ, pass_fds=(ready_w,),
        )  # fmt: skip
        os.close(ready_w)
        with os.fdopen(ready_r, "rb") as ready:
            readable = _wait_readable(ready, READY_TIMEOUT_S)
            line = ready.readline() if readable else b""
        if line.strip() != b"ready":
            self.stop()
            raise RuntimeError(f"the Spark planner host did not start within {READY_TIMEOUT_S:.0f} s")

    def ensure_running(self) -> None:
        """Start the host again, on the same socket, if it has died: the session's JVM hands
        its planners to that socket; meanwhile they planned their queries themselves."""
        with self._lock:
            if self.process is None or self.process.poll() is None:
                return
            log.warning("the Spark planner host ended (exit %s); starting it again", self.process.returncode)
            self.start(self._environ)

    def environment(self, environ: Mapping[str, str]) -> dict[str, str]:
        """What Spark's Python processes on this machine need in their environment (added to
        `environ`'s) to hand their planners to this host."""
        paths = [p for p in environ.get("PYTHONPATH", "").split(os.pathsep) if p and p != SITE_DIR]
        return {HOST_SOCKET_ENV: self.socket_path, "PYTHONPATH": os.pathsep.join([SITE_DIR, *paths])}

    @staticmethod
    def forget(environ: MutableMapping[str, str]) -> None:
        """Take what `environment` added out of `environ` again (a session that stops)."""
        environ.pop(HOST_SOCKET_ENV, None)
        paths = [p for p in environ.get("PYTHONPATH", "").split(os.pathsep) if p and p != SITE_DIR]
        if paths:
            environ["PYTHONPATH"] = os.pathsep.join(paths)
        else:
            environ.pop("PYTHONPATH", None)

    @property
    def pid(self) -> int | None:
        return self.process.pid if self.process is not None else None

    def stop(self) -> None:
        if self.process is not None:
            if self.process.stdin is not None:
                self.process.stdin.close()  # the host's sign to exit
            try:
                self.process.wait(5)
            except subprocess.TimeoutExpired:
                self.process.kill()
                self.process.wait()
            self.process = None
        shutil.rmtree(self.directory, ignore_errors=True)


def _wait_readable(stream: BinaryIO, timeout_s: float) -> bool:
    import select

    return bool(select.select([stream], [], [], timeout_s)[0])


# -- the host process ------------------------------------------------------------------------------


def main(socket_path: str, ready_fd: int) -> None:
    logging.basicConfig(level=logging.INFO, format="%(asctime)s %(levelname)s %(name)s: %(message)s")
    logging.getLogger("kafka").setLevel(logging.WARNING)
    # What every planner of the worker's queries needs, imported once for all of them.
    import kafka  # noqa: F401
    import pyspark.sql.streaming.python_streaming_source_runner  # noqa: F401

    import workers.spark.topic_source  # noqa: F401

    server = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    with contextlib.suppress(FileNotFoundError):
        os.unlink(socket_path)  # a host that died before this one left its socket
    server.bind(socket_path)
    server.listen(128)
    threading.Thread(target=_exit_with_the_worker, name="worker-watch", daemon=True).start()
    with os.fdopen(ready_fd, "wb") as ready:
        ready.write(b"ready\n")
    while True:
        conn, _ = server.accept()
        threading.Thread(target=_take, args=(conn,), name="planner-handover", daemon=True).start()


def _exit_with_the_worker() -> None:
    """The worker holds the other end of stdin: at its end (the worker stopped, or was killed),
    the host and every planner in it go too."""
    while sys.stdin.buffer.read(4096):
        pass
    os._exit(0)


def _take(conn: socket.socket) -> None:
    """Take one planner's query over: connect back to the JVM as that planner, answer it,
    then plan the query on this thread until the JVM closes the connection."""
    with conn:
        try:
            request = json.loads(conn.makefile("rb").readline())
            connection = _connect_back(request["env"], int(request["pid"]))
        except Exception:  # noqa: BLE001 - the planner process plans its query itself
            log.exception("a planner could not be taken over")
            conn.sendall(REFUSED)
            return
        conn.sendall(TAKEN)
    _plan(*connection)


def _connect_back(env: Mapping[str, str], pid: int) -> tuple[Any, socket.socket]:
    """Connect to the JVM with the planner's details, as PySpark's planner does on its own
    (`worker_util.get_sock_file_to_executor`), and tell it the planner's pid."""
    from pyspark.serializers import write_int
    from pyspark.util import local_connect_and_auth

    conn_info: str | int = env.get("PYTHON_WORKER_FACTORY_SOCK_PATH") or int(
        env.get("PYTHON_WORKER_FACTORY_PORT", -1)
    )
    # PySpark reads these from the environment; they are the JVM's, the same for every query.
    for name in CONNECTION_ENV:
        if name in env and os.environ.get(name) != env[name]:
            os.environ[name] = env[name]
    sock_file, sock = local_connect_and_auth(conn_info, env.get("PYTHON_WORKER_FACTORY_SECRET"))
    sock.settimeout(None)
    write_int(pid, sock_file)
    sock_file.flush()
    return sock_file, sock


def _plan(sock_file: Any, sock: socket.socket) -> None:
    from pyspark.sql.streaming.python_streaming_source_runner import main as planner_loop

    try:
        planner_loop(sock_file, sock_file)
    except SystemExit:
        pass  # the loop's own end after an error it has reported to the JVM
    except (OSError, EOFError):
        pass  # the JVM closed the connection: the query stopped
    except Exception:  # noqa: BLE001 - one query's planner: the host serves the others on
        log.exception("a query's planner ended with an error")
    finally:
        for done in (sock_file, sock):
            with contextlib.suppress(OSError):
                done.close()


if __name__ == "__main__":
    main(sys.argv[1], int(sys.argv[2]))

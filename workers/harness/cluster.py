"""A coordinator's worker cluster run as local processes, and what is read from the workers.

Workers are real `connect-rebalance worker` subprocesses; this talks to them over their
REST API (urllib) and reads their Prometheus metrics. The quickstart, the benchmarks and
the tests drive clusters through it.
"""

from __future__ import annotations

import base64
import json
import ssl
import urllib.error
import urllib.request
from collections import Counter
from pathlib import Path
from typing import Any
from urllib.parse import quote

from prometheus_client.parser import text_string_to_metric_families

from connect_rebalance.processes import CoordinatorProcess
from workers.harness.process import WorkerProcess


def rest(
    method: str,
    url: str,
    body: Any = None,
    *,
    auth: tuple[str, str] | None = None,
    context: ssl.SSLContext | None = None,
) -> tuple[int, Any]:
    """One REST call; `auth` for basic authentication, `context` to trust an https:// worker."""
    data = None if body is None else json.dumps(body).encode()
    headers = {"Content-Type": "application/json"}
    if auth is not None:
        headers["Authorization"] = "Basic " + base64.b64encode(":".join(auth).encode()).decode()
    request = urllib.request.Request(url, data=data, method=method, headers=headers)
    try:
        with urllib.request.urlopen(request, timeout=60, context=context) as response:
            payload = response.read()
            return response.status, json.loads(payload) if payload else None
    except urllib.error.HTTPError as exc:
        payload = exc.read()
        return exc.code, json.loads(payload) if payload else None


def metrics(url: str) -> dict[str, float]:
    """A `/metrics` answer read by prometheus_client's own parser (so a malformed one fails
    here), as `name{label="value",...}` (labels in name order) -> value."""
    with urllib.request.urlopen(f"{url}/metrics", timeout=30) as response:
        text = response.read().decode()
    values = {}
    for family in text_string_to_metric_families(text):
        for sample in family.samples:
            labels = ",".join(f'{k}="{v}"' for k, v in sorted(sample.labels.items()))
            values[sample.name + (f"{{{labels}}}" if labels else "")] = sample.value
    return values


def stops(url: str, connector: str) -> int:
    return int(metrics(url).get(f'connect_worker_work_stopped_total{{connector="{connector}"}}', 0))


class WorkerCluster:
    def __init__(
        self,
        tmp: Path,
        coordinator: CoordinatorProcess,
        rest_options: dict[str, Any] | None = None,
        **settings: str,
    ) -> None:
        self.tmp, self.coordinator = tmp, coordinator
        self.rest_options = rest_options or {}  # `rest`'s auth and context, for secured workers
        self.properties = {
            "bootstrap.servers": coordinator.bootstrap, "group.id": "connect-cluster",
            "config.storage.topic": "connect-configs", "offset.storage.topic": "connect-offsets",
            "status.storage.topic": "connect-status",
            # Lightweight tasks: no SparkSession until a Spark task asks for one.
            "spark.session.warmup": "false", **settings,
        }  # fmt: skip
        self.workers: dict[str, WorkerProcess] = {}
        self.niceness = 0  # > 0: workers at a lower CPU priority than the coordinator (WorkerProcess)

    def start(self, name: str) -> WorkerProcess:
        worker = WorkerProcess(self.properties, self.tmp / "workers", name, niceness=self.niceness).start()
        self.workers[name] = worker
        return worker

    def running(self) -> list[WorkerProcess]:
        """The workers alive and not frozen: the ones that answer."""
        return [w for w in self.workers.values() if w.is_running() and not w.paused]

    def status(self, connector: str) -> dict[str, Any]:
        for worker in self.running():
            url = f"{worker.url}/connectors/{quote(connector, safe='')}/status"
            code, body = rest("GET", url, **self.rest_options)
            if code == 200:
                return body  # type: ignore[no-any-return]
        raise AssertionError(f"no worker knows {connector}")

    def placement(self, connector: str) -> dict[str, str]:
        """Which worker runs the connector ("C") and each task ("0", "1", ...), if RUNNING."""
        status = self.status(connector)
        where = {}
        if status["connector"]["state"] == "RUNNING":
            where["C"] = status["connector"]["worker_id"]
        for task in status["tasks"]:
            if task["state"] == "RUNNING":
                where[str(task["id"])] = task["worker_id"]
        return where

    def balanced(self, connector: str, items: int) -> bool:
        """All `items` (the connector and its tasks) run on live workers, the tasks spread
        over every live worker within one: Kafka Connect's balance rule, for one connector."""
        where = self.placement(connector)
        live = {w.worker_id for w in self.running()}
        tasks = Counter({worker: 0 for worker in live})
        tasks.update(worker for item, worker in where.items() if item != "C")
        return (
            len(where) == items
            and set(where.values()) <= live
            and max(tasks.values()) - min(tasks.values()) <= 1
        )

    def stop_all(self) -> None:
        for worker in self.workers.values():
            worker.kill()

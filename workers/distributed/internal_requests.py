"""Requests one worker makes of another: a connector's task configs, sent to the leader.

Only the leader writes the config topic (Kafka Connect's rule: one writer, with the latest
view of the config). A worker whose connector generated new task configs therefore sends
them to the leader, `POST /connectors/{name}/tasks` as Kafka Connect's workers do, signed
with the session key where requests are signed; the leader writes them with their commit
record. If the leader moves or the key is rotated meanwhile, the worker catches up with the
config topic and sends again, for as long as it still runs the connector. The sending runs
in the background, so starting the connector never waits on the leader.
"""

from __future__ import annotations

import asyncio
import json
import logging
import ssl
import time
from typing import Protocol

from aiohttp import ClientError, ClientSession, ClientTimeout

from workers.storage.session_key import SessionKey, task_configs_path

log = logging.getLogger(__name__)
FIRST_RETRY_S, MAX_RETRY_S = 0.25, 5.0


class TaskConfigRoute(Protocol):
    """What the sender needs of its worker (the herder)."""

    def runs_connector(self, name: str) -> bool: ...
    def is_leader(self) -> bool: ...
    def leader_url(self) -> str | None: ...  # None: this worker leads, or no leader is known
    def session_key(self) -> SessionKey | None: ...
    def signs_requests(self) -> bool: ...
    def client_tls(self) -> ssl.SSLContext | None: ...
    async def put_task_configs(self, name: str, configs: list[dict[str, str]]) -> None: ...
    async def read_config(self) -> None: ...


async def send_task_configs(worker: TaskConfigRoute, name: str, configs: list[dict[str, str]]) -> None:
    """Until the leader has written `configs` for connector `name`, or this worker no longer
    runs the connector; retried with a growing back-off, as Kafka Connect does."""
    body = json.dumps(configs).encode()
    backoff, why = FIRST_RETRY_S, "no leader known"
    while worker.runs_connector(name):
        if worker.is_leader():
            await worker.put_task_configs(name, configs)
            return
        key, leader_url = worker.session_key(), worker.leader_url()
        if leader_url and (key is not None or not worker.signs_requests()):
            path = task_configs_path(name)
            signed = key.headers("POST", path, body, int(time.time() * 1000)) if key else {}
            headers = {"Content-Type": "application/json", **signed}
            status, why = await _post(f"{leader_url}{path}?forward=true", body, headers, worker.client_tls())
            if status == 204:
                return
        elif leader_url:
            why = "no session key read yet"
        log.info("task configs of %s not taken (%s); trying again in %.2f s", name, why, backoff)
        await worker.read_config()
        await asyncio.sleep(backoff)
        backoff = min(backoff * 2, MAX_RETRY_S)


async def _post(
    url: str, body: bytes, headers: dict[str, str], tls: ssl.SSLContext | None
) -> tuple[int, str]:
    try:
        async with (
            ClientSession(timeout=ClientTimeout(total=30)) as session,
            session.post(url, data=body, headers=headers, ssl=tls or True) as answer,
        ):
            return answer.status, (await answer.text())[:500]
    except (ClientError, TimeoutError, OSError) as exc:
        return 0, f"{url}: {exc}"

"""Kafka Connect's internal endpoint (`InternalConnectResource`): the worker running a
connector sends the task configs its connector generated, and the leader writes them.

Where requests between workers are signed (the `connect` protocol, `sessioned`), a request
must carry a valid signature of the leader's session key, within its time window, and be
its first use: anyone else who can reach the REST port could otherwise write task configs.
"""

from __future__ import annotations

import json
import time

from aiohttp import web

from workers.rest.errors import RestError
from workers.rest.forwarding import Forwarding, LeaderWrites
from workers.rest.herder import Herder, known_config
from workers.storage.session_key import SeenSignatures, task_configs_path


class InternalResource(LeaderWrites):
    def __init__(self, herder: Herder, forwarding: Forwarding) -> None:
        super().__init__(herder, forwarding)
        self._seen_signatures = SeenSignatures()  # internal requests already taken (replays)

    async def put_task_configs(self, request: web.Request) -> web.StreamResponse:
        return await self.forwarding.by_leader(request, lambda: self._write_task_configs(request))

    async def _write_task_configs(self, request: web.Request) -> web.StreamResponse:
        name = request.match_info["connector"]
        body = await request.read()
        herder = self.herder
        if herder.signs_requests():
            key = herder.session_key()
            if key is None:
                raise RestError(503, "Request cannot be verified: the leader has no session key yet")
            now_ms = int(time.time() * 1000)
            problem = key.check(request.method, task_configs_path(name), body, request.headers, now_ms)
            if problem is not None:
                raise RestError(*problem)
            if not self._seen_signatures.first_use(request.headers, now_ms):
                raise RestError(403, "Internal request signature was already used: refused as a replay")
        try:
            configs = json.loads(body)
        except (json.JSONDecodeError, UnicodeDecodeError) as exc:
            raise RestError(400, f"Invalid JSON in the request body: {exc}") from exc
        if not isinstance(configs, list) or not all(isinstance(c, dict) for c in configs):
            raise RestError(400, "Task configs must be a JSON array of objects, one per task")
        known_config(herder, name)
        await herder.put_task_configs(name, [{str(k): str(v) for k, v in c.items()} for c in configs])
        return web.Response(status=204)

"""`/connectors/{connector}/tasks`: a connector's task configs, each task's status, and a
task's restart where it runs, as Kafka Connect's `ConnectorsResource` answers them."""

from __future__ import annotations

from aiohttp import ClientError, web

from workers.rest.errors import RestError
from workers.rest.forwarding import LeaderWrites
from workers.rest.herder import known_config


class TasksResource(LeaderWrites):
    async def get_tasks(self, request: web.Request) -> web.Response:
        name = request.match_info["connector"]
        known_config(self.herder, name)
        tasks = self.herder.task_configs(name)
        return web.json_response(
            [{"id": {"connector": name, "task": i}, "config": c} for i, c in enumerate(tasks)]
        )

    def _task(self, request: web.Request) -> tuple[str, int]:
        name = request.match_info["connector"]
        known_config(self.herder, name)
        try:
            task = int(request.match_info["task"])
        except ValueError as exc:
            raise RestError(404, f"Task {request.match_info['task']} not found") from exc
        if not 0 <= task < len(self.herder.task_configs(name)):
            raise RestError(404, f"Task {name}-{task} not found")
        return name, task

    async def get_task_status(self, request: web.Request) -> web.Response:
        name, task = self._task(request)
        status = self.herder.connector_status(name) or {"tasks": []}
        return web.json_response(status["tasks"][task])

    async def restart_task(self, request: web.Request) -> web.Response:
        """Restart a task where it runs: here, or forwarded to the worker its status names."""
        name, task = self._task(request)
        if self.herder.runs((name, task)):
            await self.herder.restart((name, task))
            return web.Response(status=204)
        owner = (self.herder.connector_status(name) or {"tasks": []})["tasks"][task].get("worker_id")
        if not owner or owner == self.herder.config.worker_id or request.query.get("forward") == "false":
            raise RestError(
                409, f"Cannot restart task {name}-{task}: it is not running (rebalance in progress?)"
            )
        try:
            url = self.herder.worker_url(owner)
            return await self.forwarding.forward(request, url, {**request.query, "forward": "false"})
        except (ClientError, TimeoutError) as exc:
            raise RestError(
                409, f"Cannot restart task {name}-{task}: worker {owner} did not answer ({exc})"
            ) from exc

"""The one rule for where a request is answered: config writes by the leader, a task's
restart by the worker running it. A follower forwards the identical request, as Kafka
Connect's `RestServer.completeOrForwardRequest` does, and passes the answer back.

`forward=true` marks a request a follower forwarded; one the leader itself no longer takes
(leadership moved while it travelled) is forwarded once more with `forward=false`, and a
request marked `forward=false` that reaches a worker which cannot answer it gets Kafka
Connect's 409, so a request never travels in circles.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable

from aiohttp import ClientSession, ClientTimeout, web
from yarl import URL

from workers.rest.errors import RestError
from workers.rest.herder import WorkerHerder
from workers.storage.session_key import ALGORITHM_HEADER, SIGNATURE_HEADER, TIMESTAMP_HEADER

FORWARD_TIMEOUT_S = 90.0
REBALANCING = "Cannot complete request because of a conflicting operation (e.g. worker rebalance)"


class Forwarding:
    def __init__(self, herder: WorkerHerder) -> None:
        self.herder = herder

    async def by_leader(
        self, request: web.Request, write: Callable[[], Awaitable[web.StreamResponse]]
    ) -> web.StreamResponse:
        """`write()` here if this worker leads; otherwise the leader's answer to the same request."""
        leader_url = self.herder.leader_url()
        if leader_url is None:
            return await write()
        if request.query.get("forward") == "false":
            raise RestError(409, REBALANCING)
        query = {**request.query, "forward": "true" if "forward" not in request.query else "false"}
        return await self.forward(request, leader_url, query)

    async def forward(self, request: web.Request, base_url: str, query: dict[str, str]) -> web.Response:
        """The identical request, sent to another worker; its answer, passed back.

        The path goes as it came, still percent-encoded: decoded, a connector named
        `x/../victim` would be read there as `/connectors/victim`."""
        url = URL(f"{base_url}{request.rel_url.raw_path}", encoded=True)
        body = await request.read()
        passed_on = (SIGNATURE_HEADER, ALGORITHM_HEADER, TIMESTAMP_HEADER, "Authorization")
        async with (
            ClientSession(timeout=ClientTimeout(total=FORWARD_TIMEOUT_S)) as session,
            session.request(
                request.method,
                url,
                params=query,
                data=body or None,
                # A signed request stays signed, and the caller's credentials go along (as
                # Kafka Connect forwards them); TLS as the worker's REST client has it.
                headers={
                    "Content-Type": "application/json",
                    **{h: request.headers[h] for h in passed_on if h in request.headers},
                },
                ssl=self.herder.client_tls() or True,
            ) as answer,
        ):
            payload = await answer.read()
            kept = {h: answer.headers[h] for h in ("Location",) if h in answer.headers}
            return web.Response(
                status=answer.status, body=payload, content_type="application/json", headers=kept
            )

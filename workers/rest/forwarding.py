"""The one rule for where a request is answered: config writes by the leader, a task's
restart by the worker running it. A follower forwards the identical request, as Kafka
Connect's `RestServer.completeOrForwardRequest` does, and passes the answer back.

`forward=true` marks a request a follower forwarded; one the leader itself no longer takes
(leadership moved while it travelled) is forwarded once more with `forward=false`, and a
request marked `forward=false` that reaches a worker which cannot answer it gets Kafka
Connect's 409, so a request never travels in circles.

A leader that is gone (its port refuses the connection) or shutting down (it answers 503
before it reads the request's body) has not taken the write: the follower waits for the
group's next leader and sends the request there, within Kafka Connect's REST request timeout
(90 s). Kafka Connect answers 409 or 500 there; a rolling restart of the workers then fails
writes that a client sent to the workers still up.
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Awaitable, Callable

from aiohttp import ClientConnectorError, ClientSession, ClientTimeout, web
from yarl import URL

from workers.rest.errors import RestError
from workers.rest.herder import Herder, WorkerHerder
from workers.storage.session_key import ALGORITHM_HEADER, SIGNATURE_HEADER, TIMESTAMP_HEADER

log = logging.getLogger(__name__)
FORWARD_TIMEOUT_S = 90.0
NEXT_LEADER_POLL_S = 0.1
REBALANCING = "Cannot complete request because of a conflicting operation (e.g. worker rebalance)"
SHUTTING_DOWN = "Worker is shutting down"


class Forwarding:
    def __init__(self, herder: WorkerHerder) -> None:
        self.herder = herder

    async def by_leader(
        self, request: web.Request, write: Callable[[], Awaitable[web.StreamResponse]]
    ) -> web.StreamResponse:
        """`write()` here if this worker leads; otherwise the leader's answer to the same request,
        from the next leader if this one is gone or shutting down."""
        loop = asyncio.get_running_loop()
        deadline = loop.time() + FORWARD_TIMEOUT_S
        while True:
            leader_url = self.herder.leader_url()
            if leader_url is None:
                if self.herder.stopping():
                    raise RestError(503, SHUTTING_DOWN)
                return await write()
            if request.query.get("forward") == "false":
                raise RestError(409, REBALANCING)
            query = {**request.query, "forward": "true" if "forward" not in request.query else "false"}
            try:
                answer = await self.forward(request, leader_url, query)
            except ClientConnectorError as exc:  # not delivered: the leader's port is closed
                gone = f"{exc}"
            else:
                if not _shutting_down(answer):
                    return answer
                gone = "it is shutting down"
            log.info("the leader at %s did not take %s %s (%s): waiting for the next leader",
                     leader_url, request.method, request.path, gone)  # fmt: skip
            while self.herder.leader_url() == leader_url and not self.herder.stopping():
                if loop.time() >= deadline:
                    raise RestError(
                        503, f"No leader took the request within {FORWARD_TIMEOUT_S:.0f} s: {gone}"
                    )
                await asyncio.sleep(NEXT_LEADER_POLL_S)
            if self.herder.stopping():
                raise RestError(503, SHUTTING_DOWN)

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


def _shutting_down(answer: web.Response) -> bool:
    """A worker's refusal of a write because it is shutting down (made before it read the body)."""
    return answer.status == 503 and isinstance(answer.body, bytes) and SHUTTING_DOWN.encode() in answer.body


class LeaderWrites:
    """A resource some of whose requests are writes the leader makes: the worker's Herder
    protocol, and the forwarding rule to reach the leader."""

    def __init__(self, herder: Herder, forwarding: Forwarding) -> None:
        self.herder, self.forwarding = herder, forwarding

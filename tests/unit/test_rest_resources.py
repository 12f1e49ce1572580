"""The REST resources against a fake worker that implements REST's `Herder` protocol and
nothing more (tests/support/fake_herder.py): every resource is served from the protocol
alone, a follower's writes are answered by its leader (the one forwarding rule), and the
herder's refusals become Kafka Connect's 400s. The same routes run against a real herder in
test_rest_api.py, and over HTTP against worker processes in tests/integration.
"""

from __future__ import annotations

import asyncio
import socket
from collections.abc import Awaitable, Callable
from typing import Any

import pytest
from aiohttp import web
from aiohttp.test_utils import TestClient

from tests.support.fake_herder import FakeHerder
from workers.rest.server import RestApi

pytestmark = pytest.mark.unit
Client = TestClient[web.Request, web.Application]
MakeClient = Callable[[web.Application], Awaitable[Client]]
ORDERS = {
    "name": "orders",
    "config": {"connector.class": "VerifiableSource", "topic": "out", "tasks.max": "1"},
}


async def body_of(response: Any, status: int) -> Any:
    text = await response.text()
    assert response.status == status, (response.status, text)
    return await response.json() if text else None


async def test_every_resource_is_served_from_the_herder_protocol_alone(aiohttp_client: MakeClient) -> None:
    herder = FakeHerder()
    client = await aiohttp_client(RestApi(herder).app)
    assert (await body_of(await client.get("/"), 200))["kafka_cluster_id"] == "fake-cluster"
    assert (await body_of(await client.get("/health"), 200))["status"] == "healthy"
    assert (await client.get("/metrics")).status == 200
    created = await body_of(await client.post("/connectors", json=ORDERS), 201)
    assert created["type"] == "source" and created["tasks"] == [{"connector": "orders", "task": 0}]
    assert await body_of(await client.get("/connectors"), 200) == ["orders"]
    expanded = await body_of(await client.get("/connectors?expand=status&expand=info"), 200)
    assert expanded["orders"]["status"]["connector"]["state"] == "RUNNING"
    assert (await body_of(await client.get("/connectors/orders/tasks"), 200))[0]["id"]["task"] == 0
    assert (await body_of(await client.get("/connectors/orders/tasks/0/status"), 200))["state"] == "RUNNING"
    assert (await client.put("/connectors/orders/stop")).status == 204
    assert await body_of(await client.get("/connectors/orders/offsets"), 200) == {"offsets": []}
    assert (await client.delete("/connectors/orders/offsets")).status == 200
    assert (await client.post("/connectors/orders/restart?includeTasks=true")).status == 202
    assert (await client.get("/connector-plugins")).status == 200
    assert (await client.put("/admin/loggers/workers", json={"level": "debug"})).status == 200
    assert (await client.get("/ui/state")).status == 200
    assert (await client.delete("/connectors/orders")).status == 204
    assert [op for op, _ in herder.writes] == ["create", "STOPPED", "reset offsets", "restart", "delete"]


async def test_a_followers_writes_are_answered_by_its_leader(aiohttp_client: MakeClient) -> None:
    leader = FakeHerder()
    leader_client = await aiohttp_client(RestApi(leader).app)
    follower = FakeHerder(leader=url_of(leader_client))
    client = await aiohttp_client(RestApi(follower).app)

    created = await client.post("/connectors", json={**ORDERS, "name": "a/b c"})
    assert created.status == 201, await created.text()
    assert created.headers["Location"] == "/connectors/a%2Fb%20c", "the leader's Location, passed back"
    assert leader.writes == [("create", "a/b c")] and follower.writes == []
    follower.configs["a/b c"] = leader.configs["a/b c"]  # as the follower reads the config topic
    assert (await client.put("/connectors/a%2Fb%20c/stop")).status == 204
    assert leader.writes[-1] == ("STOPPED", "a/b c") and follower.writes == []

    # A request a follower was sent as forwarded already is not sent on again.
    refused = await body_of(await client.put("/connectors/a%2Fb%20c/stop?forward=false"), 409)
    assert "conflicting operation" in refused["message"]
    # Reads are answered where they are asked.
    assert await body_of(await client.get("/connectors"), 200) == ["a/b c"]


async def test_the_herders_refusals_are_kafka_connects_400s(aiohttp_client: MakeClient) -> None:
    herder = FakeHerder()
    client = await aiohttp_client(RestApi(herder).app)
    unknown = {"name": "x", "config": {"connector.class": "NoSuchPlugin"}}
    assert (await body_of(await client.post("/connectors", json=unknown), 400))["message"] == (
        "no plugin 'NoSuchPlugin'"
    )
    nested = {"name": "x", "config": {"connector.class": "VerifiableSource", "topic": {"a": 1}}}
    message = (await body_of(await client.post("/connectors", json=nested), 400))["message"]
    assert "from Object value (setting 'topic')" in message
    await body_of(await client.post("/connectors", json={**ORDERS, "initial_state": "STOPPED"}), 201)
    herder.refuse_offsets = "tasks still running: 0"
    change = {"offsets": [{"partition": {"p": 0}, "offset": None}]}
    refused = await body_of(await client.patch("/connectors/orders/offsets", json=change), 400)
    assert refused == {"error_code": 400, "message": "tasks still running: 0"}
    assert herder.writes == [("create", "orders")], "nothing changed by a refused request"


async def test_a_write_a_leader_did_not_take_goes_to_the_next_leader(aiohttp_client: MakeClient) -> None:
    stopping = FakeHerder(shutting_down=True)  # answers reads, refuses writes with 503
    stopping_client = await aiohttp_client(RestApi(stopping).app)
    next_leader = FakeHerder()
    next_client = await aiohttp_client(RestApi(next_leader).app)
    follower = FakeHerder(leader=url_of(stopping_client))
    client = await aiohttp_client(RestApi(follower).app)

    refused = await body_of(await stopping_client.post("/connectors", json=ORDERS), 503)
    assert refused["message"] == "Worker is shutting down"
    paused = await body_of(await stopping_client.put("/connectors/orders/pause"), 503)
    assert paused["message"] == "Worker is shutting down", "a write it would make itself, refused too"
    assert (await stopping_client.get("/connectors")).status == 200, "reads are still answered"

    async def new_leader_after(delay: float, url: str | None) -> None:
        await asyncio.sleep(delay)
        follower.leader = url

    elected = asyncio.create_task(new_leader_after(0.3, url_of(next_client)))
    created = await client.post("/connectors", json=ORDERS)
    await elected
    assert created.status == 201, await created.text()
    assert next_leader.writes == [("create", "orders")] and stopping.writes == follower.writes == []

    # A leader whose port is closed: the follower itself is chosen next, and writes.
    follower.leader = f"http://127.0.0.1:{closed_port()}"
    elected = asyncio.create_task(new_leader_after(0.3, None))
    assert (await client.put("/connectors/orders/config", json=ORDERS["config"])).status == 201
    await elected
    assert follower.writes == [("put", "orders")]


def url_of(client: Client) -> str:
    return str(client.make_url("")).rstrip("/")


def closed_port() -> int:
    """A port nothing listens on (bound, then closed)."""
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])

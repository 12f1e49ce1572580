"""The worker's web view in process (workers/rest/web_view.py): `/ui` is one small page that loads
nothing from anywhere, `/ui/state` renders the cluster with every user-chosen name escaped,
both sit behind the REST API's authentication, and `/metrics` says what the view says.
The same page is driven in a real browser against worker processes in tests/e2e/test_web_view.py."""

from __future__ import annotations

import base64
import re
from collections.abc import Awaitable, Callable
from pathlib import Path

import pytest
from aiohttp import web
from aiohttp.test_utils import TestClient
from prometheus_client.parser import text_string_to_metric_families

from tests.integration.test_worker_rest_security import basic_auth_settings
from tests.support.memory_log import MemoryLogs
from tests.unit.test_rest_api import SETTINGS, source
from workers.config.worker import WorkerConfig
from workers.distributed.herder import Herder
from workers.distributed.herder_api import HerderApi
from workers.rest.server import RestApi

pytestmark = pytest.mark.unit
Client = TestClient[web.Request, web.Application]
PAGE_WEIGHT_LIMIT = 100 * 1024
NAME = '<img src=x onerror="alert(1)">&orders'


@pytest.fixture
async def secured(
    tmp_path: Path, aiohttp_client: Callable[[web.Application], Awaitable[Client]]
) -> tuple[Herder, Client]:
    settings = {**SETTINGS, **basic_auth_settings(tmp_path, {"admin": "secret"})}
    herder = Herder(WorkerConfig.from_settings(settings), logs=MemoryLogs())
    herder.ready.set()
    return herder, await aiohttp_client(RestApi(HerderApi(herder)).app)


AUTH = {"Authorization": "Basic " + base64.b64encode(b"admin:secret").decode()}


async def test_the_page_is_small_self_contained_and_behind_authentication(
    secured: tuple[Herder, Client],
) -> None:
    _, client = secured
    for path in ("/ui", "/ui/state", "/ui/rates"):
        assert (await client.get(path)).status == 401, path
    answer = await client.get("/ui", headers=AUTH)
    assert answer.status == 200 and answer.content_type == "text/html"
    page = await answer.text()
    assert len(page.encode()) < PAGE_WEIGHT_LIMIT, "HTML, CSS and script together"
    assert not re.search(r"\b(src|href)\s*=", page), "nothing loaded but the page itself"
    assert not re.search(r"https?://", page) and "@import" not in page
    assert 'fetch("/ui/state"' in page


async def test_the_state_shows_moves_joins_and_escapes_names_and_metrics_match(
    secured: tuple[Herder, Client],
) -> None:
    """Given a connector of 2 tasks on w1 and w2 at epoch 5, when w3 joins and task 1 moves
    from w2 to w3 0.25 s after its stop, then the view shows it, and /metrics says the same."""
    herder, client = secured
    assert (await client.post("/connectors", json=source(NAME), headers=AUTH)).status == 201
    await herder.configs.put_task_configs(NAME, [{"topic": "out"}, {"topic": "out"}])
    timeline, t0 = herder.watch.timeline, herder.watch.timeline.since
    timeline.group(5, ["w1", "w2"], t0 + 1)
    timeline.status((NAME, 0), "RUNNING", "w1", t0 + 1)
    timeline.status((NAME, 1), "RUNNING", "w2", t0 + 1)
    timeline.group(6, ["w1", "w2", "w3"], t0 + 2)
    timeline.status((NAME, 1), "UNASSIGNED", "w2", t0 + 2.0)
    timeline.status((NAME, 1), "RUNNING", "w3", t0 + 2.25)

    state = await (await client.get("/ui/state", headers=AUTH)).json()
    assert state["group"]["epoch"] == 6
    assert [w["id"] for w in state["workers"]] == ["w1", "w2", "w3"]
    html = "".join(state["fragments"].values())
    assert "<img" not in html and "&lt;img src=x onerror=&quot;alert(1)&quot;&gt;&amp;orders" in html
    assert 'data-kind="epoch" data-joined="w3"' in state["fragments"]["entries"]
    assert 'data-kind="move"' in state["fragments"]["entries"]
    assert '<g class="run open" data-item="&lt;img' in state["fragments"]["timeline"]
    assert state["fragments"]["timeline"].count('class="move"') == 1

    connector = state["connectors"][0]
    assert connector["unassigned_s"] == pytest.approx(0.25) and connector["handoff_gaps"] == 1
    metrics = await (await client.get("/metrics", headers=AUTH)).text()
    values = {
        (sample.name, sample.labels.get("connector")): sample.value
        for family in text_string_to_metric_families(metrics)
        for sample in family.samples
    }
    assert values[("connect_worker_connector_unassigned_seconds_total", NAME)] == connector["unassigned_s"]
    assert values[("connect_worker_connector_handoff_gap_seconds_count", NAME)] == 1
    assert (
        values[("connect_worker_connector_handoff_gap_seconds_sum", NAME)] == connector["handoff_gap_total_s"]
    )
    assert values[("connect_worker_connector_handoff_gap_max_seconds", NAME)] == pytest.approx(0.25)
    assert values[("connect_worker_group_epoch", None)] == 6

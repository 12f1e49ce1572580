"""The web view in a real browser: headless Chromium (Debian's `chromium`, which scripts/test
installs) driven by Playwright opens `/ui` on a worker of a 3-worker cluster, sees the
connector's 4 tasks where they run, and, when a fourth worker joins, sees the moved task on
its new worker and the join on the timeline within 5 s of the rebalance; the page asks for
nothing but the worker's own URLs, and its screenshot is the README's (bench/results/ui.png)."""

from __future__ import annotations

import shutil
import time
from pathlib import Path
from typing import Any

import pytest
from playwright import sync_api

from tests.integration.test_workers import source, worker_cluster
from tests.support.group_scenario import wait_until
from tests.support.polling import settle
from tests.support.worker_cluster import WorkerCluster, metrics, rest

pytestmark = pytest.mark.e2e
ROOT = Path(__file__).resolve().parents[2]
CHROMIUM = shutil.which("chromium") or "/usr/bin/chromium"
SCREENSHOT = ROOT / "bench" / "results" / "ui.png"
SHOWN_WITHIN_S = 5.0


def tasks_shown(page: Any) -> dict[str, str]:
    """Task -> worker, as the page's task rows say."""
    rows = page.locator("tr.task").all()
    return {row.get_attribute("data-item"): row.get_attribute("data-worker") for row in rows}


def test_the_web_view_shows_a_join_move_a_task_live(tmp_path: Path) -> None:
    if not Path(CHROMIUM).exists():
        pytest.fail("Debian's chromium is missing: scripts/test installs it")
    with worker_cluster(tmp_path, 3000) as cluster:
        w1, *_ = (cluster.start(name) for name in ("w1", "w2", "w3"))
        assert rest("POST", f"{w1.url}/connectors", source("orders", 4, throughput=5))[0] == 201
        wait_until(lambda: cluster.balanced("orders", 5), 30, "the connector and 4 tasks over 3 workers")
        with sync_api.sync_playwright() as playwright:
            browser = playwright.chromium.launch(executable_path=CHROMIUM, headless=True)
            try:
                page = browser.new_page(viewport={"width": 1000, "height": 900})
                requested: list[str] = []
                page.on("request", lambda request: requested.append(request.url))
                page.goto(f"{w1.url}/ui")
                watch_join(cluster, page, w1.url)
                SCREENSHOT.parent.mkdir(parents=True, exist_ok=True)
                page.screenshot(path=str(SCREENSHOT), full_page=True)
            finally:
                browser.close()
        outside = [url for url in requested if not url.startswith(f"{w1.url}/")]
        assert requested and not outside, f"requests that left the worker: {outside}"


def watch_join(cluster: WorkerCluster, page: Any, url: str) -> None:
    placement = {
        f"orders-{task}": worker for task, worker in cluster.placement("orders").items() if task != "C"
    }
    wait_until(lambda: tasks_shown(page) == placement, 10, "the page to show the 4 tasks where they run")
    before = dict(placement)

    w4 = cluster.start("w4")
    wait_until(lambda: w4.worker_id in cluster.placement("orders").values(), 30, "a task to move to w4")
    rebalanced = time.monotonic()
    after = {f"orders-{t}": w for t, w in cluster.placement("orders").items() if t != "C"}
    moved = [item for item, worker in after.items() if worker == w4.worker_id]
    assert len(moved) == 1 and before[moved[0]] != w4.worker_id, (before, after)
    shown = settle(lambda: tasks_shown(page).get(moved[0]), lambda w: w == w4.worker_id, SHOWN_WITHIN_S)
    assert shown == w4.worker_id, f"{moved[0]} shown on {shown}, 5 s after it moved to w4"
    joined = page.locator(f'li[data-kind="epoch"][data-joined~="{w4.worker_id}"]')
    move = page.locator(f'li[data-kind="move"][data-item="{moved[0]}"][data-to="{w4.worker_id}"]')
    left = SHOWN_WITHIN_S - (time.monotonic() - rebalanced)
    entries = settle(
        lambda: (joined.count(), move.count()), lambda n: n[0] == 1 and n[1] >= 1, max(left, 0.5)
    )
    assert entries[0] == 1, "an epoch entry naming w4 as joined, 5 s after the rebalance"
    assert entries[1] >= 1, f"the move of {moved[0]} to w4 on the timeline, 5 s after the rebalance"
    lane = page.locator(f'g.run.open[data-item="{moved[0]}"][data-worker="{w4.worker_id}"]')
    assert lane.count() == 1, "the moved task's new run drawn on w4's lane"
    rate = page.locator(f'tr.task[data-item="{moved[0]}"] td.n')
    wait_until(lambda: rate.inner_text() not in ("", "-"), 10, "the moved task's rows/s, from w4")

    # /metrics says what the view says: the handoff gaps and unassigned seconds of `orders`.
    def figures() -> tuple[dict[str, Any], dict[str, float]]:
        state = rest("GET", f"{url}/ui/state")[1]
        return next(c for c in state["connectors"] if c["name"] == "orders"), metrics(url)

    shown, values = settle(figures, lambda f: f[0]["unassigned_tasks"] == 0 and f[0]["handoff_gaps"] >= 1, 10)
    label = '{connector="orders"}'
    assert shown["handoff_gaps"] >= 1 and shown["unassigned_tasks"] == 0, shown
    assert values[f"connect_worker_connector_handoff_gap_seconds_count{label}"] == shown["handoff_gaps"]
    assert values[f"connect_worker_connector_handoff_gap_seconds_sum{label}"] == pytest.approx(
        shown["handoff_gap_total_s"], abs=1e-3
    )
    assert values[f"connect_worker_connector_unassigned_seconds_total{label}"] == pytest.approx(
        shown["unassigned_s"], abs=1e-3
    )
    assert shown["unassigned_s"] >= shown["handoff_gap_last_s"] > 0, (
        "the moved task was unassigned for its gap"
    )

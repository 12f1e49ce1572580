"""The worker's web view (`/ui`): the cluster's workers, connectors and tasks, the connect
group's epoch, and its rebalance timeline drawn live, one lane per worker.

Server-rendered: `/ui` is one HTML page (its CSS and a little JavaScript inline, from
`workers/rest/ui/`), and the script polls `/ui/state` every second, a JSON answer holding the
cluster's state and the page's parts already rendered here, which it puts in place. No build
step, nothing fetched from anywhere but this worker. Every name a user chose (connectors,
worker ids, urls) is HTML-escaped where it is rendered. The routes sit behind the REST API's
authentication (its middlewares).

Rows/s: a worker knows the rates of the tasks it runs (cluster_watch.RowRates); for the
others, `/ui/state` asks each worker of the group for its `/ui/rates` (with the caller's
credentials, as forwarded REST requests carry them), at most PEER_TIMEOUT_S each, side by side.
"""

from __future__ import annotations

import asyncio
import html
import ssl
import time
from datetime import UTC, datetime
from importlib import resources
from typing import Any

from aiohttp import ClientError, ClientSession, ClientTimeout, web

from connect_rebalance.work import CONNECTOR, work_name
from workers.rest.herder import Herder

PEER_TIMEOUT_S = 1.0
# The timeline's time axis: from its oldest run still in the last two minutes (at least 20 s).
WINDOW_S, MIN_WINDOW_S = 120.0, 20.0
LANE_ROW, LANE_PAD, AXIS_X, WIDTH, TOP = 11, 8, 130, 900, 40
PLOT_WIDTH = WIDTH - AXIS_X - 60  # room on the right for the last labels


def _asset(name: str) -> str:
    return resources.files("workers.rest").joinpath("ui", name).read_text(encoding="utf-8")


def page() -> str:
    """The whole page: its parts fill in on the first poll."""
    return _asset("page.html").replace("/*CSS*/", _asset("page.css")).replace("/*JS*/", _asset("page.js"))


def web_view_routes(herder: Herder) -> list[web.RouteDef]:
    async def view(request: web.Request) -> web.Response:
        herder.viewed()
        return web.Response(text=page(), content_type="text/html", charset="utf-8")

    async def state(request: web.Request) -> web.Response:
        herder.viewed()
        rates = {work_name(item): rate for item, rate in herder.task_rates().items()}
        rates |= await _peer_rates(herder, request.headers.get("Authorization"))
        cluster = cluster_state(herder, rates, time.time())
        return web.json_response({**cluster, "fragments": fragments(cluster)})

    async def own_rates(request: web.Request) -> web.Response:
        return web.json_response({work_name(i): r for i, r in herder.task_rates().items()})

    return [web.get("/ui", view), web.get("/ui/state", state), web.get("/ui/rates", own_rates)]


async def _peer_rates(herder: Herder, authorization: str | None) -> dict[str, float]:
    """The rows/s of the tasks the group's other workers run, from their `/ui/rates`."""
    others = [w for w in herder.timeline().members if w != herder.config.worker_id]
    if not others:
        return {}
    headers = {"Authorization": authorization} if authorization else {}
    tls: ssl.SSLContext | bool = herder.client_tls() or True

    async def ask(session: ClientSession, worker: str) -> dict[str, float]:
        url = f"{herder.worker_url(worker)}/ui/rates"
        try:
            async with session.get(url, headers=headers, ssl=tls) as answer:
                found = await answer.json() if answer.status == 200 else {}
                return {str(k): float(v) for k, v in found.items()} if isinstance(found, dict) else {}
        except (ClientError, TimeoutError, ValueError):
            return {}

    async with ClientSession(timeout=ClientTimeout(total=PEER_TIMEOUT_S)) as session:
        answers = await asyncio.gather(*(ask(session, w) for w in others))
    return {item: rate for found in answers for item, rate in found.items()}


def cluster_state(herder: Herder, rates: dict[str, float], now: float) -> dict[str, Any]:
    """The cluster as this worker knows it, as JSON."""
    timeline = herder.timeline()
    figures = timeline.connector_figures(now, herder.configured_tasks())
    connectors = []
    running: dict[str, int] = {}
    for name in herder.connectors():
        status = herder.connector_status(name) or {"connector": {}, "tasks": []}
        tasks = []
        for task in status["tasks"]:
            worker = task.get("worker_id", "")
            if task["state"] == "RUNNING":
                running[worker] = running.get(worker, 0) + 1
            item = work_name((name, task["id"]))
            tasks.append({"id": task["id"], "item": item, "state": task["state"], "worker": worker,
                          "rows_per_s": rates.get(item)})  # fmt: skip
        connectors.append({"name": name, "state": status["connector"].get("state", ""),
                           "worker": status["connector"].get("worker_id", ""), "tasks": tasks,
                           **figures.get(name, {})})  # fmt: skip
    workers = [
        {"id": w, "member": w in timeline.members, "state": timeline.presence.get(w, {}).get("state", ""),
         "url": timeline.presence.get(w, {}).get("url", ""), "running_tasks": running.get(w, 0)}
        for w in timeline.workers()
    ]  # fmt: skip
    group = {"id": herder.config.group_id, "protocol": herder.config.group_protocol,
             "epoch": timeline.epoch, "state": herder.group_state()}  # fmt: skip
    return {"worker": herder.config.worker_id, "now": now, "group": group, "workers": workers,
            "connectors": connectors, "timeline": timeline.snapshot()}  # fmt: skip


# -- rendering (every user-chosen name through `_e`) --------------------------------------------


def _e(value: Any) -> str:
    return html.escape(str(value), quote=True)


def _clock(at: float) -> str:
    return datetime.fromtimestamp(at, UTC).strftime("%H:%M:%S.%f")[:-5]


def fragments(state: dict[str, Any]) -> dict[str, str]:
    """The page's parts, by element id."""
    return {"summary": _summary(state), "workers": _workers(state), "connectors": _connectors(state),
            "timeline": _timeline_svg(state), "entries": _entries(state)}  # fmt: skip


def _summary(state: dict[str, Any]) -> str:
    group = state["group"]
    epoch = "?" if group["epoch"] is None else group["epoch"]
    return (f'group <b>{_e(group["id"])}</b> ({_e(group["protocol"])}) · epoch <b id="epoch">{_e(epoch)}</b>'
            f' {_e(group["state"])} · seen from worker <b>{_e(state["worker"])}</b>')  # fmt: skip


def _workers(state: dict[str, Any]) -> str:
    rows = "".join(
        f'<tr data-worker="{_e(w["id"])}"><td>{_e(w["id"])}</td>'
        f"<td>{'member' if w['member'] else _e(w['state'].lower() or '-')}</td>"
        f'<td class="n">{w["running_tasks"]}</td><td>{_e(w["url"])}</td></tr>'
        for w in state["workers"]
    )
    return f"<table><tr><th>worker</th><th>group</th><th>tasks</th><th>url</th></tr>{rows}</table>"


def _connectors(state: dict[str, Any]) -> str:
    parts = []
    for c in state["connectors"]:
        gaps = (f'{c.get("handoff_gaps", 0)} moves, last {c.get("handoff_gap_last_s", 0):.2f} s, '
                f'max {c.get("handoff_gap_max_s", 0):.2f} s')  # fmt: skip
        head = (f'<h3 data-connector="{_e(c["name"])}">{_e(c["name"])} <span class="s {_e(c["state"])}">'
                f'{_e(c["state"])}</span> on {_e(c["worker"] or "-")}</h3><p class="figures">unassigned '
                f'{c.get("unassigned_s", 0):.2f} s ({c.get("unassigned_tasks", 0)} now) · handoff gaps: '
                f"{gaps}</p>")  # fmt: skip
        rows = "".join(
            f'<tr class="task" data-item="{_e(t["item"])}" data-worker="{_e(t["worker"])}">'
            f"<td>{_e(t['item'])}</td><td>{_e(t['worker'] or '-')}</td>"
            f'<td class="s {_e(t["state"])}">{_e(t["state"])}</td>'
            f'<td class="n">{_rate(t["rows_per_s"])}</td></tr>'
            for t in c["tasks"]
        )
        parts.append(f"{head}<table><tr><th>task</th><th>worker</th><th>state</th><th>rows/s</th></tr>"
                     f"{rows}</table>")  # fmt: skip
    return "".join(parts) or "<p>No connectors.</p>"


def _rate(rows_per_s: float | None) -> str:
    return "-" if rows_per_s is None else f"{rows_per_s:.1f}"


def _timeline_svg(state: dict[str, Any]) -> str:
    """One lane per worker over the last seconds: a bar per run, a line from where a moved
    item stopped to where it started again, and a mark per epoch."""
    now, timeline = state["now"], state["timeline"]
    runs = [r for r in timeline["runs"] if (r["ended"] or now) >= now - WINDOW_S]
    oldest = min([r["started"] for r in runs], default=now)
    window = min(max(now - oldest + 2, MIN_WINDOW_S), WINDOW_S)
    start = now - window
    workers = [w["id"] for w in state["workers"]]
    lanes: dict[str, list[str]] = {w: [] for w in workers}
    for run in runs:
        items = lanes.setdefault(run["worker"], [])
        if run["item"] not in items:
            items.append(run["item"])
    tops, y = {}, TOP
    for worker, items in lanes.items():
        tops[worker] = y
        y += max(len(items), 1) * LANE_ROW + LANE_PAD

    def x(at: float) -> float:
        return round(AXIS_X + (max(at, start) - start) / window * (PLOT_WIDTH), 1)

    def row_y(worker: str, item: str) -> int:
        return tops[worker] + sorted(lanes[worker]).index(item) * LANE_ROW

    out = [f'<svg width="{WIDTH}" height="{y + 14}" role="img">']
    for back in range(0, int(window) + 1, _tick(window)):
        label = f"-{back} s" if back else "now"
        out.append(f'<text class="tick" x="{x(now - back)}" y="{y + 10}">{label}</text>')
    for worker, top in tops.items():
        height = max(len(lanes[worker]), 1) * LANE_ROW
        out.append(f'<rect class="lane" x="{AXIS_X}" y="{top - 2}" width="{PLOT_WIDTH}" '
                   f'height="{height + 2}"/>'
                   f'<text class="lane-name" x="4" y="{top + 9}">{_e(worker)}</text>')  # fmt: skip
    for run in runs:
        top, left = row_y(run["worker"], run["item"]), x(run["started"])
        right = x(run["ended"] if run["ended"] is not None else now)
        open_ = " open" if run["ended"] is None else ""
        out.append(f'<g class="run{open_}" data-item="{_e(run["item"])}" data-worker="{_e(run["worker"])}">'
                   f'<rect x="{left}" y="{top}" width="{max(right - left, 2)}" height="{LANE_ROW - 2}"/>'
                   f'<text x="{left + 2}" y="{top + 8}">{_e(run["item"])}</text></g>')  # fmt: skip
    marks = 0
    for entry in timeline["entries"]:
        if entry["at"] < start:
            continue
        if entry["kind"] == "epoch":
            marks += 1
            label_y = 10 + (marks % 3) * 10
            change = " ".join([*(f"+{w}" for w in entry["joined"]), *(f"-{w}" for w in entry["left"])])
            at = x(entry["at"])
            near_end = at > AXIS_X + PLOT_WIDTH * 0.7  # labelled leftwards, so it is not cut off
            place = f'x="{at - 2}" text-anchor="end"' if near_end else f'x="{at + 2}"'
            label = f'<text {place} y="{label_y}">epoch {entry["epoch"]} {_e(change)}</text>'
            out.append(f'<g class="epoch"><line x1="{at}" y1="{label_y - 8}" x2="{at}" y2="{y}"/>{label}</g>')
        elif entry["kind"] == "move" and entry["from"] in tops and entry["to"] in tops:
            stopped = entry["stopped"] if entry["stopped"] is not None else entry["at"]
            y1 = (
                row_y(entry["from"], entry["item"]) + 4
                if entry["item"] in lanes[entry["from"]]
                else tops[entry["from"]]
            )
            y2 = (
                row_y(entry["to"], entry["item"]) + 4
                if entry["item"] in lanes[entry["to"]]
                else tops[entry["to"]]
            )
            out.append(f'<line class="move" x1="{x(stopped)}" y1="{y1}" x2="{x(entry["at"])}" y2="{y2}"/>')
    out.append("</svg>")
    return "".join(out)


def _tick(window: float) -> int:
    """Seconds between the time axis' labels: about six of them."""
    return next(step for step in (5, 10, 20, 30, 60) if window / step <= 6)


def _entries(state: dict[str, Any]) -> str:
    """The timeline's entries as text, newest first."""
    items = []
    # In time order: a move read from the status topic may be heard of before the epoch behind it.
    ordered = sorted(state["timeline"]["entries"], key=lambda entry: entry["at"])
    for entry in reversed(ordered[-30:]):
        if entry["kind"] == "epoch":
            previous = "?" if entry["previous"] is None else entry["previous"]
            unchanged = "(first seen)" if entry["previous"] is None else "(same workers)"
            changes = [f"joined {_e(w)}" for w in entry["joined"]] + [f"left {_e(w)}" for w in entry["left"]]
            text = f"epoch {previous} → {entry['epoch']} {', '.join(changes) or unchanged}"
            joined, left = _e(" ".join(entry["joined"])), _e(" ".join(entry["left"]))
            data = f'data-kind="epoch" data-joined="{joined}" data-left="{left}"'
        else:
            name = "the connector" if entry["task"] == CONNECTOR else ""
            gap = "gap unknown" if entry["gap_s"] is None else f"gap {entry['gap_s']:.2f} s"
            text = f"{_e(entry['item'])} {name} {_e(entry['from'])} → {_e(entry['to'])} ({gap})"
            data = f'data-kind="move" data-item="{_e(entry["item"])}" data-to="{_e(entry["to"])}"'
        items.append(f"<li {data}><time>{_clock(entry['at'])}</time> {text}</li>")
    return f'<ol class="entries">{"".join(items)}</ol>'

"""The coordinator's admin HTTP port: Prometheus `/metrics` and a `/health` probe, over
plain HTTP or, with `admin.listeners=https://...`, TLS from the broker's `ssl.*` settings.

It only reads what the pure core counted (`coordinator.groups.group_metrics`); serving it
never touches the Kafka listener or the groups' state.
"""

from __future__ import annotations

import socket

from aiohttp import web

from connect_rebalance.prometheus import Exposition
from connect_rebalance.tls_server import server_context

from .broker import Broker
from .quotas.entities import ENFORCED_KEYS
from .security.settings import tls_settings


def render_metrics(broker: Broker) -> str:
    core = broker.groups.core if broker.groups is not None else None
    throttles = broker.throttles
    figures = sorted(core.metrics.groups.items()) if core is not None else []
    label = [({"group": group_id, "type": f.group_type}, f) for group_id, f in figures]
    return (
        Exposition()
        .family("connect_rebalance_group_rebalances_total", "counter",
                "New group epochs (classic groups: generations).",
                [(labels, f.rebalances) for labels, f in label])
        .summary("connect_rebalance_group_reconcile_seconds",
                 "From a new group epoch until every member has reconciled to it.",
                 [(labels, f.reconcile_ms_total / 1000, f.reconciles) for labels, f in label])
        .family("connect_rebalance_group_last_reconcile_seconds", "gauge",
                "How long the last rebalance took until every member had reconciled.",
                [(labels, f.last_reconcile_ms / 1000) for labels, f in label])
        .family("connect_rebalance_group_moved_total", "counter",
                "Partitions (connect groups: connectors and tasks) that changed owner.",
                [(labels, f.moved) for labels, f in label])
        .family("connect_rebalance_group_heartbeats_total", "counter",
                "Heartbeats answered (Heartbeat, ConsumerGroupHeartbeat, ConnectGroupHeartbeat).",
                [(labels, f.heartbeats) for labels, f in label])
        .family("connect_rebalance_group_target_computations_total", "counter",
                "Server-side target assignments computed (consumer groups).",
                [(labels, f.computations) for labels, f in label])
        .family("connect_rebalance_group_members", "gauge", "Members of the group.",
                [(labels, f.members) for labels, f in label])
        .family("connect_rebalance_group_epoch", "gauge", "The group epoch (classic groups: generation).",
                [(labels, f.epoch) for labels, f in label])
        .family("connect_rebalance_groups", "gauge", "Groups hosted, by type.",
                [({"type": t}, sum(1 for _, f in figures if f.group_type == t))
                 for t in ("classic", "consumer", "connect")])
        .family("connect_rebalance_quota_throttled_total", "counter",
                "Answers that took their client over a byte-rate quota, by quota.",
                [({"quota": key}, throttles.throttled[key] if throttles else 0) for key in ENFORCED_KEYS])
        .family("connect_rebalance_quota_throttle_seconds_total", "counter",
                "Throttle time given to clients over a byte-rate quota, by quota.",
                [({"quota": key}, throttles.throttled_ms[key] / 1000 if throttles else 0)
                 for key in ENFORCED_KEYS])
        .text()
    )  # fmt: skip


class AdminServer:
    def __init__(self, broker: Broker, host: str, port: int) -> None:
        self.broker, self.host, self.port = broker, host, port
        self._runner: web.AppRunner | None = None
        # https:// admin.listeners: the broker's ssl.* settings (keystore, truststore, client auth).
        self._tls = (
            server_context(tls_settings(broker.config, None), "the admin port (admin.listeners)")
            if broker.config.admin_uses_tls
            else None
        )

    async def start(self) -> None:
        app = web.Application()
        app.add_routes([web.get("/metrics", self._metrics), web.get("/health", self._health)])
        self._runner = web.AppRunner(app, access_log=None)
        await self._runner.setup()
        # Bound here, so that port 0 gets a free port whose number is then known.
        sock = socket.create_server((self.host, self.port), reuse_port=False)
        self.port = sock.getsockname()[1]
        await web.SockSite(self._runner, sock, ssl_context=self._tls).start()

    async def stop(self) -> None:
        if self._runner is not None:
            await self._runner.cleanup()

    @property
    def url(self) -> str:
        return f"{'https' if self._tls is not None else 'http'}://{self.host}:{self.port}"

    async def _metrics(self, request: web.Request) -> web.Response:
        return web.Response(text=render_metrics(self.broker), content_type=Exposition.CONTENT_TYPE)

    async def _health(self, request: web.Request) -> web.Response:
        return web.json_response({"status": "healthy"})

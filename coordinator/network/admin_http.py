"""The coordinator's admin HTTP port: Prometheus `/metrics`, each group's rebalance timeline
(`/groups/{group}/timeline`, JSON) and a `/health` probe, over plain HTTP or, with
`admin.listeners=https://...`, TLS from the broker's `ssl.*` settings (with
`ssl.client.auth=required`, only clients with a trusted certificate get an answer).

It only reads what the pure core counted (`coordinator.groups.group_metrics`); serving it
never touches the Kafka listener or the groups' state.
"""

from __future__ import annotations

import socket

from aiohttp import web

from connect_rebalance.prometheus import Exposition
from connect_rebalance.tls_server import server_context
from coordinator.broker import Broker
from coordinator.group_service import GroupService
from coordinator.groups.group_metrics import BALANCE_BUCKETS_S, GROUP_TYPES, GroupMetrics
from coordinator.quotas.entities import ENFORCED_KEYS
from coordinator.security.settings import tls_settings

# Group states by type, as Kafka's group coordinator counts them (consumer-group-count{state}).
STATES = {
    "classic": ("Empty", "PreparingRebalance", "CompletingRebalance", "Stable", "Dead"),
    "consumer": ("Empty", "Assigning", "Reconciling", "Stable", "Dead"),
    "connect": ("Empty", "Assigning", "Reconciling", "Stable", "Dead"),
}


def render_metrics(broker: Broker, groups: GroupService) -> str:
    metrics = groups.core.metrics
    throttles = broker.throttles
    figures = sorted(metrics.groups.items())
    label = [({"group": group_id, "type": f.group_type}, f) for group_id, f in figures]
    exposition = kafka_group_families(Exposition(), metrics)
    return (
        exposition
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
        .histogram("connect_rebalance_group_time_to_balance_seconds",
                   "From a rebalance's first new epoch until the group is Stable with every member at "
                   "the target (the rebalance timeline's time_to_balance_ms), by group type.",
                   BALANCE_BUCKETS_S,
                   [({"type": t}, h.counts, h.sum_ms / 1000) for t, h in metrics.balanced_by_type.items()])
        .family("connect_rebalance_group_paused_total", "counter",
                "Partitions (connect groups: connectors and tasks) revoked in a rebalance, each paused "
                "until a member was given it; summed over the group's rebalances.",
                [(labels, f.paused) for labels, f in label])
        .family("connect_rebalance_group_last_rebalance_paused", "gauge",
                "Partitions (connect groups: connectors and tasks) revoked in the group's last rebalance.",
                [(labels, f.last_paused) for labels, f in label])
        .family("connect_rebalance_quota_throttled_total", "counter",
                "Answers that took their client over a byte-rate quota, by quota.",
                [({"quota": key}, throttles.throttled[key] if throttles else 0) for key in ENFORCED_KEYS])
        .family("connect_rebalance_quota_throttle_seconds_total", "counter",
                "Throttle time given to clients over a byte-rate quota, by quota.",
                [({"quota": key}, throttles.throttled_ms[key] / 1000 if throttles else 0)
                 for key in ENFORCED_KEYS])
        .text()
    )  # fmt: skip


def kafka_group_families(exposition: Exposition, metrics: GroupMetrics) -> Exposition:
    """Kafka's group coordinator metrics (group-coordinator-metrics), in Prometheus style: a
    `-count` meter is a `_total` counter (its `-rate` is PromQL's rate() of it), a count of
    groups a gauge. The connect group type follows the consumer group's names."""
    by_type = {t: [f for f in metrics.groups.values() if f.group_type == t] for t in GROUP_TYPES}
    for kind in GROUP_TYPES:
        exposition.family(
            f"connect_rebalance_{kind}_group_count", "gauge",
            f"{kind.capitalize()} groups by state (Kafka's {kind}-group-count).",
            [({"state": state}, sum(1 for f in by_type[kind] if f.state == state)) for state in STATES[kind]],
        )  # fmt: skip
    return (
        exposition.family("connect_rebalance_group_count", "gauge",
                          "Groups by protocol (Kafka's group-count).",
                          [({"protocol": t}, len(by_type[t])) for t in GROUP_TYPES])
        .family("connect_rebalance_consumer_group_rebalance_total", "counter",
                "Consumer group epoch bumps (Kafka's consumer-group-rebalance-count).",
                [({}, metrics.rebalances_by_type["consumer"])])
        .family("connect_rebalance_connect_group_rebalance_total", "counter",
                "Connect group epoch bumps (as consumer-group-rebalance-count counts them).",
                [({}, metrics.rebalances_by_type["connect"])])
        .family("connect_rebalance_group_completed_rebalance_total", "counter",
                "Classic group rebalances completed (Kafka's group-completed-rebalance-count).",
                [({}, sum(metrics.balanced_by_type["classic"].counts))])
    )  # fmt: skip


class AdminServer:
    def __init__(self, broker: Broker, groups: GroupService, host: str, port: int) -> None:
        self.broker, self.groups, self.host, self.port = broker, groups, host, port
        self._runner: web.AppRunner | None = None
        # https:// admin.listeners: the broker's ssl.* settings (keystore, truststore, client auth).
        self._tls = (
            server_context(tls_settings(broker.config, None), "the admin port (admin.listeners)")
            if broker.config.admin_uses_tls
            else None
        )

    async def start(self) -> None:
        app = web.Application()
        app.add_routes([
            web.get("/metrics", self._metrics),
            web.get("/health", self._health),
            # A group id may hold any character, '/' included (percent-encoded by the client).
            web.get("/groups/{group_id:.+}/timeline", self._timeline),
        ])  # fmt: skip
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
        return web.Response(
            text=render_metrics(self.broker, self.groups), content_type=Exposition.CONTENT_TYPE
        )

    async def _timeline(self, request: web.Request) -> web.Response:
        group_id = request.match_info["group_id"]
        timeline = self.groups.core.metrics.timeline(group_id)
        if timeline is None:
            return web.json_response(
                {"error_code": 404, "message": f"Group {group_id} not found."}, status=404
            )
        return web.json_response(timeline)

    async def _health(self, request: web.Request) -> web.Response:
        return web.json_response({"status": "healthy"})

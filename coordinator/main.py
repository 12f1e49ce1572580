"""Running a coordinator process: open the data directory, serve, stop cleanly on a signal."""

from __future__ import annotations

import asyncio
import contextlib
import gc
import logging
import signal
import sys
from collections.abc import Callable
from typing import TYPE_CHECKING

from coordinator.broker import Broker, DataDirectoryLocked
from coordinator.configs.coordinator import CoordinatorConfig
from coordinator.configs.event_loop import loop_factory
from coordinator.group_service import GroupService
from coordinator.network.server import CoordinatorServer
from coordinator.quotas.rates import Throttles
from coordinator.security.authorizer import StandardAuthorizer
from coordinator.security.settings import super_users
from coordinator.security.store import SecurityStore

if TYPE_CHECKING:
    from coordinator.network.admin_http import AdminServer

log = logging.getLogger(__name__)


def group_service(broker: Broker) -> GroupService:
    """The group coordinator's service over an opened broker's topics, its `__consumer_offsets`
    opened (or made); `start` loads it."""
    config = broker.config
    groups = GroupService(
        broker.topics, config.group_settings(), config.offsets_topic_segment_bytes, broker.compaction_due
    )
    groups.open()
    return groups


def _admin_server(broker: Broker, groups: GroupService, config: CoordinatorConfig) -> AdminServer | None:
    """The admin HTTP port when `admin.listeners` names one; its web framework is loaded only
    then, which keeps a start without it (a restart, above all) shorter."""
    if not config.admin_bind:
        return None
    from coordinator.network.admin_http import AdminServer

    return AdminServer(broker, groups, *config.admin_bind)


async def serve(
    config: CoordinatorConfig,
    on_ready: Callable[[Broker, CoordinatorServer, AdminServer | None], None] | None = None,
    stop: asyncio.Event | None = None,
) -> None:
    """Serve until `stop` is set or SIGTERM/SIGINT arrives; then flush and close."""
    broker = Broker(config)
    broker.open()
    groups = group_service(broker)
    attach_security(broker)
    try:
        server = CoordinatorServer(broker, groups)
        admin = _admin_server(broker, groups, config)
    except ValueError:
        await close_broker(broker, groups)
        raise
    stop = stop or asyncio.Event()
    loop = asyncio.get_running_loop()
    for signum in (signal.SIGTERM, signal.SIGINT):
        with contextlib.suppress(NotImplementedError, RuntimeError):  # not in the main thread
            loop.add_signal_handler(signum, stop.set)
    try:
        await server.start()
        if admin is not None:
            await admin.start()
        broker.start_background()
        groups.start()
        log.info("serving on the %s event loop", type(loop).__module__.split(".")[0])
        if on_ready is not None:
            on_ready(broker, server, admin)
        await stop.wait()
        log.info("stopping")
    finally:
        if admin is not None:
            await admin.stop()
        await server.stop()
        await close_broker(broker, groups)


def attach_security(broker: Broker) -> None:
    """Open the security store and measure client quotas against its bounds; with
    authorizer.class.name set, enforce its ACLs."""
    config = broker.config
    store = SecurityStore.open(broker.data_dir, config)
    broker.security = store
    broker.throttles = Throttles(
        store.quotas, config.quota_window_num, config.quota_window_size_seconds * 1000
    )
    if config.authorizer_class_name.strip():
        broker.authorizer = StandardAuthorizer(
            lambda: store.acls.keys(), super_users(config), config.allow_everyone_if_no_acl_found
        )


async def close_broker(broker: Broker, groups: GroupService) -> None:
    await groups.close()
    if broker.security is not None:
        broker.security.close()
    await broker.close()


def announce(broker: Broker, server: CoordinatorServer, admin: AdminServer | None) -> None:
    # What start-up made (modules, schema classes, the replayed state) lives as long as the
    # process: out of the collector's generations, a full collection walks only what changed
    # since, so its pause on the event loop stays short.
    gc.freeze()
    host, port = broker.advertised_address
    print(
        f"connect-rebalance coordinator listening on {host}:{port} "
        f"(data {broker.data_dir}, cluster {broker.cluster_id}); "
        f"listeners {','.join(server.listener_urls())}"
        + (f"; admin {admin.url}" if admin is not None else ""),
        flush=True,
    )


def run(config: CoordinatorConfig) -> int:
    try:
        with asyncio.Runner(loop_factory=loop_factory(config.event_loop)) as runner:
            runner.run(serve(config, announce))
    except KeyboardInterrupt:
        pass
    except (OSError, DataDirectoryLocked) as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 1
    except ValueError as exc:  # key material or another setting that only fails when used
        print(f"error: {exc}", file=sys.stderr)
        return 2
    return 0

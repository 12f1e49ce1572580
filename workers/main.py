"""Running a worker process: bind the REST ports, join the group, serve until signalled.

The REST sockets (one per listener, `http://` or `https://`) are bound first so that
`listeners=http://host:0` can pick a free port and the worker advertises the port it really
has. SIGTERM/SIGINT make the worker leave the
group for good (its work is reassigned at once); SIGKILL is a crash (its work waits for
`scheduled.rebalance.max.delay.ms`).
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import signal
import socket
import sys

from aiohttp import web
from kafka.errors import KafkaError

from connect_rebalance.properties import ConfigError

from .connect_membership import MembershipRefused
from .herder import Herder
from .rest import RestApi
from .worker_config import WorkerConfig

log = logging.getLogger(__name__)


async def serve(config: WorkerConfig, stop: asyncio.Event | None = None) -> None:
    sockets = []
    for _, host, port in config.rest_listeners:
        sock = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
        sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        sock.bind((host, port))
        sockets.append(sock)
    config = config.with_bound_ports([sock.getsockname()[1] for sock in sockets])
    herder = Herder(config)
    api = RestApi(herder)
    runner = web.AppRunner(api.app, access_log=None)
    await runner.setup()
    for (scheme, _, _), sock in zip(config.rest_listeners, sockets, strict=True):
        context = config.rest_server_context() if scheme == "https" else None
        await web.SockSite(runner, sock, ssl_context=context).start()
    stop = stop or asyncio.Event()
    loop = asyncio.get_running_loop()
    for signum in (signal.SIGTERM, signal.SIGINT):
        with contextlib.suppress(NotImplementedError, RuntimeError):
            loop.add_signal_handler(signum, stop.set)
    try:
        await herder.start()
        print(
            f"connect-rebalance worker listening on {config.rest_url} (worker {config.worker_id}, "
            f"group {config.group_id}, protocol {config.group_protocol})",
            flush=True,
        )
        stopping = asyncio.ensure_future(stop.wait())
        await asyncio.wait({stopping, herder.membership_run}, return_when=asyncio.FIRST_COMPLETED)
        stopping.cancel()
        if herder.membership_run.done() and not herder.membership_run.cancelled():
            herder.membership_run.result()  # MembershipRefused: the worker exits with its message
        log.info("leaving the group")
    finally:
        await herder.stop()
        await runner.cleanup()


def run(config: WorkerConfig) -> int:
    try:
        asyncio.run(serve(config))
    except KeyboardInterrupt:
        pass
    except (OSError, ConfigError, MembershipRefused, KafkaError) as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 1
    return 0

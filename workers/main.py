"""Running a worker process: bind the REST ports, join the group, serve until signalled.

The REST sockets (one per listener, `http://` or `https://`) are bound first so that
`listeners=http://host:0` can pick a free port and the worker advertises the port it really
has. SIGTERM/SIGINT make the worker leave the
group for good (its work is reassigned at once); SIGKILL is a crash (its work waits for
`scheduled.rebalance.max.delay.ms`).

A SIGTERM always stops the worker, within `task.shutdown.graceful.timeout.ms`,
SHUTDOWN_MARGIN_S and the hand-over of its Spark tasks (herder.LEAVE_HANDOFF_S, which only a
worker running TopicIngest tasks in a group that answers takes), whether or not the
coordinator answers: it may come while the worker is
still starting, and a stop that is not done by then (a client waiting on a coordinator that
is gone) is abandoned. A thread still blocked in such a client at the end does not keep the
process: it exits anyway, and its Spark JVM (which exits when its parent's pipe closes) with it.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import os
import signal
import socket
import sys
import threading
import time

from aiohttp import web
from kafka.errors import KafkaError

from connect_rebalance.properties import ConfigError
from workers.config.worker import WorkerConfig
from workers.distributed.herder import LEAVE_HANDOFF_S, Herder
from workers.distributed.herder_api import HerderApi
from workers.distributed.membership.connect import MembershipRefused
from workers.plugins.registry import Plugins
from workers.rest.server import RestApi

log = logging.getLogger(__name__)
# Beyond the tasks' graceful timeout: leaving the group, the LEFT record and closing clients.
SHUTDOWN_MARGIN_S = 5.0
Listener = tuple[str, str, int]  # scheme, host, port
THREADS_GRACE_S = 1.0  # threads still running after the stop get this long before the exit


def _bound(listeners: list[Listener]) -> list[socket.socket]:
    """A listening socket per (scheme, host, port), bound before the worker joins its group."""
    sockets = []
    for _, host, port in listeners:
        sock = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
        sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        sock.bind((host, port))
        sockets.append(sock)
    return sockets


async def _served(
    app: web.Application,
    config: WorkerConfig,
    listeners: list[Listener],
    sockets: list[socket.socket],
) -> web.AppRunner:
    runner = web.AppRunner(app, access_log=None)
    await runner.setup()
    for (scheme, _, _), sock in zip(listeners, sockets, strict=True):
        context = config.rest_server_context() if scheme == "https" else None
        await web.SockSite(runner, sock, ssl_context=context).start()
    return runner


async def serve(config: WorkerConfig, stop: asyncio.Event | None = None) -> None:
    sockets, admin_sockets = _bound(config.rest_listeners), _bound(config.admin_rest_listeners)
    config = config.with_bound_ports(
        [sock.getsockname()[1] for sock in sockets], [sock.getsockname()[1] for sock in admin_sockets]
    )
    plugins, scan_warnings = Plugins.load(config.plugin_locations())
    for warning in [*config.setting_warnings, *scan_warnings]:
        log.warning("%s", warning)
    herder = Herder(config, plugins=plugins)
    api = RestApi(HerderApi(herder))
    runners = [await _served(api.app, config, config.rest_listeners, sockets)]
    if api.admin_app is not None:  # the admin endpoints' own listeners (admin.listeners)
        runners.append(await _served(api.admin_app, config, config.admin_rest_listeners, admin_sockets))
    stop = stop or asyncio.Event()
    loop = asyncio.get_running_loop()
    for signum in (signal.SIGTERM, signal.SIGINT):
        with contextlib.suppress(NotImplementedError, RuntimeError):
            loop.add_signal_handler(signum, stop.set)
    stopping = asyncio.ensure_future(stop.wait())
    try:
        starting = asyncio.ensure_future(herder.start())
        await asyncio.wait({stopping, starting}, return_when=asyncio.FIRST_COMPLETED)
        if not starting.done():  # signalled while starting (the coordinator may not answer)
            starting.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await starting
            return
        starting.result()
        print(
            f"connect-rebalance worker listening on {config.rest_url} (worker {config.worker_id}, "
            f"group {config.group_id}, protocol {config.group_protocol})",
            flush=True,
        )
        await asyncio.wait({stopping, herder.membership_run}, return_when=asyncio.FIRST_COMPLETED)
        if herder.membership_run.done() and not herder.membership_run.cancelled():
            herder.membership_run.result()  # MembershipRefused: the worker exits with its message
        log.info("leaving the group")
    finally:
        stopping.cancel()
        # The hand-over has a bound of its own: the stops after it keep all of theirs.
        bound = config.task_shutdown_graceful_timeout_ms / 1000 + SHUTDOWN_MARGIN_S + LEAVE_HANDOFF_S
        try:
            await asyncio.wait_for(_shut_down(herder, runners), bound)
        except TimeoutError:
            log.warning("the worker did not stop within %.0f s; exiting without waiting for the rest", bound)


async def _shut_down(herder: Herder, runners: list[web.AppRunner]) -> None:
    await herder.stop()
    for runner in runners:
        await runner.cleanup()


def run(config: WorkerConfig) -> int:
    code = 0
    loop = asyncio.new_event_loop()
    try:
        loop.run_until_complete(serve(config))
    except KeyboardInterrupt:
        pass
    except (OSError, ConfigError, MembershipRefused, KafkaError) as exc:
        print(f"error: {exc}", file=sys.stderr)
        code = 1
    finally:
        loop.close()  # does not wait for the threads of the default executor
    _exit_despite_blocked_threads(code)
    return code


def _exit_despite_blocked_threads(code: int) -> None:
    """A thread blocked in a client call that cannot finish (its broker is gone) would keep the
    interpreter from exiting, which joins such threads; past a short grace the process exits."""
    deadline = time.monotonic() + THREADS_GRACE_S
    while True:
        blocked = [t for t in threading.enumerate() if t is not threading.main_thread() and not t.daemon]
        if not blocked:
            return
        if time.monotonic() > deadline:
            log.warning(
                "exiting with %d thread(s) still blocked: %s", len(blocked), [t.name for t in blocked]
            )
            logging.shutdown()
            sys.stdout.flush()
            sys.stderr.flush()
            os._exit(code)
        time.sleep(0.05)

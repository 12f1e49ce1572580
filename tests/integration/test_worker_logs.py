"""A worker's log tells the rebalance story, as an operator reads it: one line per
assignment (its epoch, the connectors and tasks assigned, what starts here now), one when
they have finished starting, and one when work is revoked and when it has stopped, with
how long that took. Read from two workers' logs across a join and a graceful leave. And
log levels change at run time with curl on `/admin/loggers`, on one worker or on all."""

from __future__ import annotations

import re
import time
from pathlib import Path

import pytest

from connect_rebalance.processes import CoordinatorProcess, connect_timings
from tests.support.curl import curl
from tests.support.group_scenario import wait_until
from tests.support.worker_cluster import WorkerCluster, rest

pytestmark = pytest.mark.integration
ASSIGNED = re.compile(r"assignment at epoch (\d+): connectors \[(.*?)\], tasks \[(.*?)\]; starting \[(.*?)\]")
STARTED = re.compile(r"finished starting \[(.*?)\] in \d+ ms")
REVOKED = re.compile(r"revoked \[(.*?)\]: stopping")
STOPPED = re.compile(r"stopped \[(.*?)\] in \d+ ms")


def told(log: str, line: re.Pattern[str]) -> list[tuple[str, ...]]:
    return [match.groups() for match in line.finditer(log)]


def last(log: str, line: re.Pattern[str]) -> tuple[str, ...]:
    """The latest such line's fields; the log must have one."""
    found = told(log, line)
    assert found, f"the log has no line like {line.pattern!r}"
    return found[-1]


def names(cell: str) -> set[str]:
    return set(cell.split()) - {"-"}


def test_a_workers_log_tells_each_assignment_and_revocation_across_a_join_and_a_leave(tmp_path: Path) -> None:
    coordinator = CoordinatorProcess(tmp_path / "data", connect_timings(20000, 1000)).start()
    cluster = WorkerCluster(tmp_path, coordinator)
    try:
        w1 = cluster.start("w1")
        config = {"connector.class": "VerifiableSource", "topic": "told", "tasks.max": "3", "throughput": "1"}
        assert rest("POST", f"{w1.url}/connectors", {"name": "told", "config": config})[0] == 201
        wait_until(lambda: cluster.balanced("told", 4), 60, "the connector and its 3 tasks on w1")
        everything = {"told-0", "told-1", "told-2"}
        wait_until(lambda: everything <= {n for (s,) in told(w1.log_text(), STARTED) for n in names(s)}, 30,
                   "w1 to say they started")  # fmt: skip
        first = last(w1.log_text(), ASSIGNED)
        assert (names(first[1]), names(first[2])) == ({"told"}, everything)

        w2 = cluster.start("w2")
        wait_until(lambda: cluster.balanced("told", 4), 60, "4 items over 2 workers")
        moved = {item for item, worker in cluster.placement("told").items() if worker == w2.worker_id}
        moved_names = {"told" if item == "C" else f"told-{item}" for item in moved}
        wait_until(lambda: told(w1.log_text(), STOPPED), 30, "w1 to say it stopped what moved")
        assert {n for (s,) in told(w1.log_text(), REVOKED) for n in names(s)} == moved_names
        assert {n for (s,) in told(w1.log_text(), STOPPED) for n in names(s)} == moved_names
        wait_until(lambda: told(w2.log_text(), STARTED), 30, "w2 to say it started its share")
        joined = last(w2.log_text(), ASSIGNED)
        assert names(joined[1]) | names(joined[2]) == moved_names == names(joined[3])
        assert int(joined[0]) > int(first[0]), "the join's assignment is at a later epoch"

        w2.stop()  # SIGTERM: a graceful leave
        assert {n for (s,) in told(w2.log_text(), STOPPED) for n in names(s)} == moved_names
        wait_until(lambda: cluster.balanced("told", 4), 60, "everything back on w1")
        wait_until(lambda: names(last(w1.log_text(), ASSIGNED)[3]) == moved_names, 30,
                   "w1 to say it starts what w2 left")  # fmt: skip
    finally:
        cluster.stop_all()
        coordinator.kill()


def level_of(url: str, logger: str) -> str:
    status, body = curl("GET", f"{url}/admin/loggers/{logger}")
    assert status == 200 and isinstance(body, dict), (status, body)
    return str(body["level"])


def test_log_levels_change_at_run_time_on_one_worker_or_on_every_worker(tmp_path: Path) -> None:
    coordinator = CoordinatorProcess(tmp_path / "data", connect_timings(20000, 1000)).start()
    cluster = WorkerCluster(tmp_path, coordinator)
    try:
        w1, w2 = cluster.start("w1"), cluster.start("w2")
        herder, driver = "workers.distributed.herder", "workers.distributed.membership.driver"
        status, affected = curl("PUT", f"{w1.url}/admin/loggers/{herder}", {"level": "TRACE"})
        assert (status, affected) == (200, [herder])
        assert level_of(w1.url, herder) == "TRACE"
        assert level_of(w2.url, herder) == "INFO", "a worker-scope change reached another worker"

        everywhere = f"{w2.url}/admin/loggers/{driver}?scope=cluster"
        assert curl("PUT", everywhere, {"level": "DEBUG"}) == (204, None)
        for worker in (w1, w2):
            deadline = time.monotonic() + 30
            while level_of(worker.url, driver) != "DEBUG" and time.monotonic() < deadline:
                time.sleep(0.2)
            assert level_of(worker.url, driver) == "DEBUG", f"{worker.name} kept its level"
        status, listed = curl("GET", f"{w1.url}/admin/loggers")
        assert status == 200 and isinstance(listed, dict) and "root" in listed
        assert listed["workers.distributed.membership.driver"]["level"] == "DEBUG"
        assert curl("PUT", f"{w1.url}/admin/loggers/workers", {"level": "LOUD"}) == (
            404, {"error_code": 404, "message": "invalid log level 'LOUD'."}
        )  # fmt: skip
    finally:
        cluster.stop_all()
        coordinator.kill()

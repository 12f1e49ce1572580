"""A slice of bench/fuzz.py's REST run in CI: schemathesis drives a real worker process's REST
API from the OpenAPI document it serves, with requests valid by the schema and not. No answer
is a 5xx, every error is Kafka Connect's {"error_code", "message"}, and every status is one the
document lists for its route."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest

from connect_rebalance.processes import CoordinatorProcess, connect_timings
from tests.support.rest_fuzz import fuzz_rest
from tests.support.worker_cluster import WorkerCluster
from workers.process import WorkerProcess

pytestmark = pytest.mark.integration


@pytest.fixture
def worker(tmp_path: Path) -> Iterator[WorkerProcess]:
    coordinator = CoordinatorProcess(tmp_path / "data", connect_timings(3000)).start()
    cluster = WorkerCluster(tmp_path, coordinator)
    try:
        yield cluster.start("w1")
    finally:
        cluster.stop_all()
        coordinator.kill()


def test_generated_requests_to_every_route_get_kafka_connect_answers_and_never_a_5xx(
    worker: WorkerProcess,
) -> None:
    result = fuzz_rest(worker.url, examples=60, derandomize=True)
    summary = result.summary()
    assert result.requests >= 20 * 24, summary
    assert result.server_errors == [], summary["server_error_examples"]
    assert result.not_kafka_connect_errors == [], result.not_kafka_connect_errors[:5]
    assert result.undocumented == [], summary["undocumented_statuses"]
    assert "Traceback" not in worker.log_text()

"""Worker files written for Kafka Connect, as a user brings them.

Apache Kafka's own `config/connect-distributed.properties` (its text kept unchanged in
tests/fixtures) starts a worker: only where the coordinator is and where the REST API
listens are given on the command line. The worker warns about the one setting that changes
nothing here, creates its internal topics as the file asks, and writes a source
connector's records with the file's converters (JSON with schemas). A file with three
misspelled settings fails once, naming all three with the names they were meant to be.
"""

from __future__ import annotations

import json
import time
from pathlib import Path

import pytest
from kafka import KafkaAdminClient

from connect_rebalance.processes import CoordinatorProcess
from tests.support.group_scenario import wait_until
from tests.support.verifiable_records import read_raw
from tests.support.worker_cluster import rest
from tests.support.worker_files import refused_start
from workers.harness.process import WorkerProcess

pytestmark = pytest.mark.integration
STOCK_FILE = Path(__file__).parents[1] / "fixtures" / "connect-distributed.properties"
# What the worker says of the stock file, and nothing else at WARNING.
EXPECTED_WARNINGS = [
    "offset.flush.interval.ms=10000 changes nothing here: source offsets are written in one request "
    "with the records they follow, through the task's fence (as Kafka Connect's exactly-once source "
    "support does), so there is nothing to flush on a timer"
]


def partition_counts(bootstrap: str, *topics: str) -> dict[str, int]:
    admin = KafkaAdminClient(bootstrap_servers=bootstrap)
    try:
        return {t["name"]: len(t["partitions"]) for t in admin.describe_topics(list(topics))}
    finally:
        admin.close()


def test_kafkas_own_worker_file_starts_a_worker_unchanged(tmp_path: Path) -> None:
    coordinator = CoordinatorProcess(tmp_path / "data", {"auto.create.topics.enable": "true"}).start()
    overrides = {"bootstrap.servers": coordinator.bootstrap, "checkpoint.dir": str(tmp_path / "checkpoints"),
                 "spark.session.warmup": "false"}  # fmt: skip
    worker = WorkerProcess(overrides, tmp_path / "worker", "stock", file=STOCK_FILE)
    try:
        worker.start()
        warnings = [line.split("WARNING", 1)[1].split(": ", 1)[1].strip()
                    for line in worker.log_text().splitlines() if "WARNING" in line]  # fmt: skip
        assert warnings == EXPECTED_WARNINGS

        described = partition_counts(
            coordinator.bootstrap, "connect-offsets", "connect-configs", "connect-status"
        )
        assert described == {"connect-offsets": 25, "connect-configs": 1, "connect-status": 5}

        source = {
            "connector.class": "VerifiableSource",
            "topic": "converted",
            "tasks.max": "1",
            "throughput": "50",
        }
        assert rest("POST", f"{worker.url}/connectors", {"name": "seq", "config": source})[0] == 201
        wait_until(lambda: len(read_raw(coordinator.bootstrap, "converted")) >= 3, 60, "3 records")
        _, _, key, value = read_raw(coordinator.bootstrap, "converted")[0]
        # JsonConverter with schemas.enable=true, for keys and values: Kafka Connect's envelope.
        assert json.loads(key) == {"schema": {"type": "string", "optional": False}, "payload": "seq-0"}
        envelope = json.loads(value)
        assert envelope["payload"]["seq"] == 0 and envelope["payload"]["connector"] == "seq"
        assert envelope["schema"]["type"] == "struct"
        assert {f["field"]: f["type"] for f in envelope["schema"]["fields"]} == {
            "connector": "string", "task": "int64", "seq": "int64", "worker": "string", "run": "string",
            "at": "double",
        }  # fmt: skip
    finally:
        worker.kill()
        coordinator.kill()


def test_a_file_with_three_misspelled_settings_fails_once_naming_all_three(tmp_path: Path) -> None:
    worker_file = tmp_path / "worker.properties"
    worker_file.write_text(
        STOCK_FILE.read_text()
        + "sesion.timeout.ms=10000\noffset.storage.partiton=5\nvalue.converter.schema.enable=false\n"
    )
    started = time.monotonic()
    said = refused_start(worker_file)
    assert time.monotonic() - started < 30
    assert said == [
        "error: 3 problems with the settings:",
        "  - setting 'value.converter.schema.enable': JsonConverter has no setting 'schema.enable' "
        "(did you mean 'schemas.enable'?)",
        "  - unknown setting 'offset.storage.partiton' (did you mean 'offset.storage.partitions'?)",
        "  - unknown setting 'sesion.timeout.ms' (did you mean 'session.timeout.ms'?)",
    ]


def test_the_internal_topics_are_made_as_their_settings_say_and_a_replication_factor_too_big_is_refused(
    tmp_path: Path,
) -> None:
    coordinator = CoordinatorProcess(tmp_path / "data").start()
    base = {"bootstrap.servers": coordinator.bootstrap, "group.id": "sized",
            "config.storage.topic": "sized-configs", "offset.storage.topic": "sized-offsets",
            "status.storage.topic": "sized-status",
            "spark.session.warmup": "false", "checkpoint.dir": str(tmp_path / "checkpoints")}  # fmt: skip
    sized = WorkerProcess({**base, "offset.storage.partitions": "7", "status.storage.partitions": "2",
                           "offset.storage.replication.factor": "1"}, tmp_path / "w", "sized")  # fmt: skip
    too_big = WorkerProcess({**base, "group.id": "too-big", "config.storage.topic": "other-configs",
                             "config.storage.replication.factor": "3"}, tmp_path / "w", "big")  # fmt: skip
    try:
        sized.start()
        described = partition_counts(coordinator.bootstrap, "sized-offsets", "sized-configs", "sized-status")
        assert described == {"sized-offsets": 7, "sized-configs": 1, "sized-status": 2}
        with pytest.raises(RuntimeError) as refused:
            too_big.start()
        assert (
            "cannot create topic other-configs: replication factor 3 is larger than the 1 available broker"
            in str(refused.value)
        )
    finally:
        sized.kill()
        too_big.kill()
        coordinator.kill()

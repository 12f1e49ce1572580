"""Requests a worker must refuse, against a real worker process: connector names Kafka
Connect refuses (control characters, empty), whatever client sends them, and signed
internal requests replayed to another connector, again, or too late. Each is refused with
Kafka Connect's {"error_code", "message"} and changes nothing."""

from __future__ import annotations

import json
import time
from collections.abc import Iterator
from pathlib import Path
from urllib.parse import quote

import pytest
import requests
from confluent_kafka.admin import AdminClient
from kafka import KafkaConsumer, TopicPartition
from kafka_connect import KafkaConnect

from connect_rebalance.processes import CoordinatorProcess, connect_timings
from tests.support.group_scenario import wait_until
from tests.support.worker_cluster import WorkerCluster, rest
from workers.harness.process import WorkerProcess
from workers.storage.session_key import MAX_AGE_MS, SessionKey, task_configs_path

pytestmark = pytest.mark.integration


@pytest.fixture
def worker(tmp_path: Path) -> Iterator[tuple[WorkerCluster, WorkerProcess]]:
    coordinator = CoordinatorProcess(tmp_path / "data", connect_timings(3000)).start()
    cluster = WorkerCluster(tmp_path, coordinator)
    try:
        yield cluster, cluster.start("w1")
    finally:
        cluster.stop_all()
        coordinator.kill()


def source(name: str, topic: str = "out") -> dict[str, object]:
    return {"name": name, "config": {"connector.class": "VerifiableSource", "topic": topic, "tasks.max": "1"}}


def raw(method: str, url: str, body: bytes, headers: dict[str, str] | None = None) -> tuple[int, dict]:
    """Plain HTTP: the body sent exactly as given (a JSON string may carry any character)."""
    answer = requests.request(method, url, data=body, timeout=30,
                              headers={"Content-Type": "application/json", **(headers or {})})  # fmt: skip
    return answer.status_code, answer.json() if answer.content else {}


def test_names_with_control_characters_are_refused_by_every_route_and_nothing_is_created(
    worker: tuple[WorkerCluster, WorkerProcess],
) -> None:
    _, w1 = worker
    url = w1.url
    rule = "String may not contain control sequences but had the following ASCII chars"
    for name, codes in (("a\nb", "10"), ("nul\0name", "0"), ("tab\tin", "9"), ("bell\x07ring", "7")):
        code, body = raw("POST", f"{url}/connectors", json.dumps(source(name)).encode())
        assert code == 400 and body["error_code"] == 400, body
        assert f"{rule}: {codes}" in body["message"] and "configuration name" in body["message"]
        config = json.dumps(source(name)["config"]).encode()
        code, body = raw("PUT", f"{url}/connectors/{quote(name, safe='')}/config", config)
        assert code == 400 and f"{rule}: {codes}" in body["message"], body
    with pytest.raises(requests.HTTPError) as refused:  # the Kafka Connect REST client
        KafkaConnect(url=url).create_connector(source("via\nclient"))
    assert refused.value.response.status_code == 400 and rule in refused.value.response.json()["message"]
    code, body = raw("POST", f"{url}/connectors", json.dumps(source("   ")).encode())
    assert code == 400 and "String may not be empty" in body["message"], body
    assert rest("GET", f"{url}/connectors")[1] == []

    # As in Kafka Connect, a created connector's name is trimmed (Java's trim: control
    # characters at either end go too), and any other character is legal; the Location
    # header is the name percent-encoded.
    answer = requests.post(f"{url}/connectors", json=source("\0trimmed\n"), timeout=30)
    assert answer.status_code == 201 and answer.json()["name"] == "trimmed"
    answer = requests.post(f"{url}/connectors", json=source("../../a%2Fb c"), timeout=30)
    assert answer.status_code == 201 and answer.headers["Location"] == "/connectors/..%2F..%2Fa%252Fb%20c"
    assert rest("GET", f"{url}/connectors")[1] == ["../../a%2Fb c", "trimmed"]
    assert "Traceback" not in w1.log_text()


def config_records(bootstrap: str, topic: str = "connect-configs") -> list[tuple[str, dict | None]]:
    """The config topic's records, key and JSON value, as any client that may read it reads them."""
    consumer = KafkaConsumer(bootstrap_servers=bootstrap, enable_auto_commit=False)
    try:
        partition = TopicPartition(topic, 0)
        consumer.assign([partition])
        consumer.seek_to_beginning()
        records = []
        end = consumer.end_offsets([partition])[partition]
        while consumer.position(partition) < end:
            for record in [r for rs in consumer.poll(timeout_ms=1000).values() for r in rs]:
                value = json.loads(record.value) if record.value is not None else None
                records.append((record.key.decode(), value))
        return records
    finally:
        consumer.close()


def session_key(bootstrap: str) -> SessionKey:
    keys = [SessionKey.from_record(v) for k, v in config_records(bootstrap) if k == "session-key" and v]
    assert keys, "no session key in the config topic"
    return keys[-1]


def task_configs_written(bootstrap: str, name: str) -> list[dict[str, str]]:
    """Every config of the connector's task 0 the config topic has held, oldest first."""
    return [v["properties"] for k, v in config_records(bootstrap) if k == f"task-{name}-0" and v]


def test_a_signed_internal_request_is_good_once_for_one_connector_and_not_later(
    worker: tuple[WorkerCluster, WorkerProcess],
) -> None:
    cluster, w1 = worker
    url = w1.url
    for name in ("orders", "victim"):
        assert rest("POST", f"{url}/connectors", source(name, f"{name}-out"))[0] == 201
    wait_until(lambda: len(rest("GET", f"{url}/connectors/victim/tasks")[1]) == 1, 30, "victim's tasks")
    key = session_key(cluster.coordinator.bootstrap)
    victim_before = rest("GET", f"{url}/connectors/victim/tasks")[1]

    configs = json.dumps([{"topic": "orders-out", "throughput": "3"}]).encode()
    path = task_configs_path("orders")
    signed = key.headers("POST", path, configs, int(time.time() * 1000))
    assert raw("POST", f"{url}{path}", configs, signed)[0] == 204  # the genuine request
    # Written to the config topic. (The running connector then writes the configs it
    # generated again, as Kafka Connect's do: what GET .../tasks shows is back to them soon
    # after, so the topic, not that view, says the request was acted on.)
    wait_until(
        lambda: any(
            c.get("throughput") == "3" for c in task_configs_written(cluster.coordinator.bootstrap, "orders")
        ),
        30,
        "the genuine task configs to be written",
    )

    again = raw("POST", f"{url}{path}", configs, signed)
    assert again[0] == 403 and "already used" in again[1]["message"], again
    elsewhere = raw("POST", f"{url}{task_configs_path('victim')}", configs, signed)
    assert elsewhere == (403, {"error_code": 403, "message": "Internal request contained invalid signature."})
    too_old_ms = int(time.time() * 1000) - MAX_AGE_MS - 5000
    stale = key.headers("POST", task_configs_path("victim"), configs, too_old_ms)
    late = raw("POST", f"{url}{task_configs_path('victim')}", configs, stale)
    assert late[0] == 403 and "replay" in late[1]["message"], late
    assert rest("GET", f"{url}/connectors/victim/tasks")[1] == victim_before


def test_a_write_sent_to_either_worker_acts_on_the_connector_its_url_names(tmp_path: Path) -> None:
    """Writes sent to a follower are forwarded to the leader with the path as it came,
    percent-encoded: a connector named `x/../victim` is not `victim` there, and the creation's
    Location header comes back. One of the two workers is the follower, so each write goes
    to both."""
    coordinator = CoordinatorProcess(tmp_path / "data", connect_timings(3000)).start()
    cluster = WorkerCluster(tmp_path, coordinator)
    try:
        workers = [cluster.start("w1"), cluster.start("w2")]
        assert rest("POST", f"{workers[0].url}/connectors", source("spread"))[0] == 201
        # Its connector and task on one worker each: both are members and know the leader.
        on_both = lambda: len(set(cluster.placement("spread").values())) == 2  # noqa: E731
        wait_until(on_both, 60, "one item on each worker")
        for worker in workers:
            victim, sneaky = f"victim-{worker.name}", f"x/../victim-{worker.name}"
            for name in (victim, sneaky):
                answer = requests.post(f"{worker.url}/connectors", json=source(name), timeout=30)
                assert answer.status_code == 201, answer.text
                assert answer.headers.get("Location") == f"/connectors/{quote(name, safe='')}"
            stopped = requests.put(f"{worker.url}/connectors/{quote(sneaky, safe='')}/stop", timeout=30)
            assert stopped.status_code == 204, stopped.text
            deleted = requests.delete(f"{worker.url}/connectors/{quote(sneaky, safe='')}", timeout=30)
            assert deleted.status_code == 204, deleted.text
        expected = sorted(["spread", *(f"victim-{w.name}" for w in workers)])
        for url in (w.url for w in workers):  # each worker reads the config topic: the same list, in time
            wait_until(lambda u=url: len(rest("GET", f"{u}/connectors")[1]) == 3, 30, "two deletions read")
            assert rest("GET", f"{url}/connectors")[1] == expected
    finally:
        cluster.stop_all()
        coordinator.kill()


def test_framework_settings_the_runtime_would_ignore_are_refused_and_json_values_read_as_connect_does(
    worker: tuple[WorkerCluster, WorkerProcess],
) -> None:
    """Transforms, header converters, error handling and exactly-once are Kafka Connect
    settings this runtime does not run: any value but Kafka's default (which
    means "not used") is refused, naming the setting, instead of being stored and ignored. A
    key or value converter this runtime does not have is refused, naming it. Values
    that are JSON numbers or booleans are read as their text, as Kafka Connect's
    Map<String, String> reads them; an object or an array is refused."""
    _, w1 = worker
    url = w1.url
    base = source("plain")["config"]
    refused = {
        "transforms": "x", "transforms.x.type": "com.Nope", "predicates": "p", "errors.tolerance": "all",
        "header.converter": "org.apache.kafka.connect.storage.StringConverter",
        "exactly.once.support": "required", "transaction.boundary": "connector",
    }  # fmt: skip
    for name, value in refused.items():
        code, body = raw(
            "PUT", f"{url}/connectors/ignored/config", json.dumps({**base, name: value}).encode()
        )
        assert code == 400 and body["error_code"] == 400, body
        assert (
            f"Invalid value {value} for configuration {name}: this runtime does not support"
            in body["message"]
        )
    avro = "io.confluent.connect.avro.AvroConverter"
    code, body = raw(
        "PUT", f"{url}/connectors/ignored/config", json.dumps({**base, "value.converter": avro}).encode()
    )
    assert (
        code == 400
        and f"Invalid value {avro} for configuration value.converter: {avro} is not a converter"
        in (body["message"])
    )
    with pytest.raises(requests.HTTPError) as by_client:  # the Kafka Connect REST client
        KafkaConnect(url=url).create_connector({"name": "ignored", "config": {**base, "transforms": "x"}})
    assert by_client.value.response.status_code == 400
    validated = rest(
        "PUT",
        f"{url}/connector-plugins/VerifiableSource/config/validate",
        {**base, "name": "v", "transforms": "x"},
    )[1]
    assert validated["error_count"] == 1
    assert [c["value"]["name"] for c in validated["configs"] if c["value"]["errors"]] == ["transforms"]

    defaults = {**base, "transforms": "", "errors.tolerance": "none", "exactly.once.support": "requested"}
    code, body = raw("PUT", f"{url}/connectors/defaults/config", json.dumps(defaults).encode())
    assert code == 201, body

    typed = {**base, "tasks.max": 2, "throughput": 5, "flag": True, "ratio": 1.5, "nothing": None}
    code, body = raw("POST", f"{url}/connectors", json.dumps({"name": "typed", "config": typed}).encode())
    assert code == 201, body
    assert {k: body["config"].get(k) for k in ("tasks.max", "throughput", "flag", "ratio", "nothing")} == {
        "tasks.max": "2",
        "throughput": "5",
        "flag": "true",
        "ratio": "1.5",
        "nothing": None,
    }
    for bad in ({"a": 1}, [1, 2]):
        code, body = raw(
            "POST",
            f"{url}/connectors",
            json.dumps({"name": "bad", "config": {**base, "topic": bad}}).encode(),
        )
        assert code == 400 and "Cannot deserialize value of type `java.lang.String`" in body["message"], body
    assert rest("GET", f"{url}/connectors")[1] == ["defaults", "typed"]
    assert "Traceback" not in w1.log_text()


def test_the_root_resource_reports_the_kafka_cluster_id(worker: tuple[WorkerCluster, WorkerProcess]) -> None:
    cluster, w1 = worker
    admin = AdminClient({"bootstrap.servers": cluster.coordinator.bootstrap})
    known = admin.list_topics(timeout=30).cluster_id
    info = KafkaConnect(url=w1.url).get_cluster_info()
    assert known and info["kafka_cluster_id"] == known and info["version"]


def test_tasks_max_past_the_cap_is_refused_naming_the_setting_and_nothing_is_created(
    worker: tuple[WorkerCluster, WorkerProcess],
) -> None:
    _, w1 = worker
    huge = {**source("huge"), "config": {**source("huge")["config"], "tasks.max": "100000"}}
    code, body = raw("POST", f"{w1.url}/connectors", json.dumps(huge).encode())
    assert code == 400 and body["error_code"] == 400, body
    assert "tasks.max" in body["message"] and "from 1 to 1,000" in body["message"], body
    code, body = raw("PUT", f"{w1.url}/connectors/huge/config", json.dumps(huge["config"]).encode())
    assert code == 400 and "tasks.max" in body["message"], body
    assert rest("GET", f"{w1.url}/connectors")[1] == []
    # The cap itself is accepted (validated only: a thousand tasks would start).
    most = {**huge["config"], "tasks.max": "1000", "name": "huge"}
    code, body = raw(
        "PUT", f"{w1.url}/connector-plugins/VerifiableSource/config/validate", json.dumps(most).encode()
    )
    assert code == 200 and body["error_count"] == 0, body

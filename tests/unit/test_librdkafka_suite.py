"""bench/librdkafka_suite.py reads librdkafka's test table and test-runner's output, and
stands in for Kafka's scripts, as librdkafka's tests call them (their text, copied below).

The suite itself needs librdkafka's source and is not run here; these check the pieces that
decide what runs and what a result means.
"""

from __future__ import annotations

import pytest

from bench.librdkafka_suite import (
    BY_DESIGN,
    broker_tests,
    explained,
    kafka_acls_argv,
    kafka_topics_argv,
    parse_output,
)

pytestmark = pytest.mark.unit

TEST_TABLE = """
struct test tests[] = {
    {.name = "<MAIN>", .flags = TEST_F_LOCAL},
    _TEST(0001_multiobj, 0),
    _TEST(0009_mock_cluster,
          TEST_F_LOCAL,
          TEST_BRKVER(0, 11, 0, 0)),
    _TEST(0028_long_topicnames,
          TEST_F_KNOWN_ISSUE,
          TEST_BRKVER(0, 9, 0, 0)),
    _TEST(0045_subscribe_update, 0, TEST_BRKVER(0, 9, 0, 0)),
    _TEST(0045_subscribe_update_topic_remove,
          0,
          TEST_BRKVER(0, 9, 0, 0),
          .scenario = "noautocreate"),
    _TEST(0055_producer_latency, TEST_F_KNOWN_ISSUE_WIN32),
    _TEST(0171_share_consumer_consume, 0, TEST_BRKVER(4, 2, 0, 0)),
    _TEST(8000_idle, TEST_F_MANUAL),
    {NULL}};
"""


def test_the_broker_tests_are_run_per_number_and_scenario_without_local_manual_or_known_issues() -> None:
    units = {(u.number, u.scenario): u.names for u in broker_tests(TEST_TABLE)}
    assert units == {
        ("0001", "default"): ("0001_multiobj",),
        ("0045", "default"): ("0045_subscribe_update",),
        ("0045", "noautocreate"): ("0045_subscribe_update_topic_remove",),
        ("0055", "default"): ("0055_producer_latency",),  # a Windows-only known issue runs here
    }


def test_kafka_topics_sh_as_0052_calls_it_becomes_a_topics_create() -> None:
    argv = ["--bootstrap-server", "127.0.0.1:9092", "--create", "--topic", "t", "--replication-factor", "1",
            "--partitions", "1", "--config", "message.timestamp.type=LogAppendTime"]  # fmt: skip
    assert kafka_topics_argv(argv) == [
        "topics", "--bootstrap-server", "127.0.0.1:9092", "create", "t", "--partitions", "1",
        "--replication-factor", "1", "--config", "message.timestamp.type=LogAppendTime",
    ]  # fmt: skip
    alter = ["--bootstrap-server", "b:1", "--alter", "--topic", "t", "--partitions", "4"]
    assert kafka_topics_argv(alter) == [
        "topics",
        "--bootstrap-server",
        "b:1",
        "alter",
        "t",
        "--partitions",
        "4",
    ]


def test_kafka_acls_sh_as_0119_calls_it_becomes_an_acls_command_without_force() -> None:
    argv = ["--bootstrap-server", "b:1", "--remove", "--force", "--allow-principal", "User:*",
            "--operation", "Describe", "--allow-host", "*", "--topic", "t"]  # fmt: skip
    assert kafka_acls_argv(argv) == [
        "acls", "--bootstrap-server", "b:1", "remove", "--allow-principal", "User:*", "--operation",
        "Describe", "--allow-host", "*", "--topic", "t",
    ]  # fmt: skip


SUMMARY = """\x1b[0m[31m### Test "0055_producer_latency (test_producer_latency:187: transactions)" failed at \
0055-producer_latency.c:211:test_producer_latency() at Sat Nov 28 06:54:55 2026: ###
rd_kafka_init_transactions(rk, 10 * 1000) failed: Transactional Id authorization failed
|\x1b[32m 0001_multiobj                            |     PASSED |   1.084s \x1b[0m|
| 0110_batch_size                          |    SKIPPED |   0.000s | RapidJSON >=1.1.0 not available
"""


def test_runner_output_gives_each_tests_result_its_failure_and_its_skip_reason() -> None:
    found = parse_output(SUMMARY, ("0001_multiobj", "0055_producer_latency", "0110_batch_size"), False)
    assert found["0001_multiobj"] == {"result": "passed", "seconds": 1.084}
    assert found["0110_batch_size"]["detail"] == "RapidJSON >=1.1.0 not available"
    failed = found["0055_producer_latency"]
    assert failed["result"] == "failed"  # the runner aborted before its summary: the failure message tells
    assert "Transactional Id authorization failed" in failed["detail"]
    row = explained({"test": "0055_producer_latency", "protocol": "classic", **failed})
    assert row["category"] == BY_DESIGN


def test_a_test_without_any_result_was_cut_off_or_crashed() -> None:
    assert parse_output("", ("0113_cooperative_rebalance",), True)["0113_cooperative_rebalance"][
        "result"
    ] == ("timeout")
    assert parse_output("", ("0001_multiobj",), False)["0001_multiobj"]["result"] == "failed"

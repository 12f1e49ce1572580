"""librdkafka's own integration tests, run unchanged against the coordinator (not part of CI).

Every test of ours is written by us; a real client's own suite is a check we did not write.
librdkafka's `tests/test-runner` takes `bootstrap.servers` from a `test.conf` and the group
protocol from `TEST_CONSUMER_GROUP_PROTOCOL`. This script:

- builds librdkafka and `test-runner` in a source tree fetched as a user would (once);
- lists the broker tests (not the local, mock, manual or known-issue ones, nor the share-group
  tests of KIP-932) from `tests/test.c`, and runs each test number alone, not in quick mode,
  against a fresh coordinator started with the settings that test needs (auto topic creation
  off for the `noautocreate` scenario; Kafka's authorizer with allow-everyone, as librdkafka's
  test clusters run), on each group protocol, at most `--jobs` at a time under a time cap;
- gives the tests that shell out to Kafka's `kafka-topics.sh` / `kafka-acls.sh` stand-ins
  over our CLI (`$KAFKA_PATH/bin/...`, as the tests find them);
- saves a row per test and protocol in `bench/results/librdkafka_suite.json` (result,
  seconds, and for a failure its category and why, from `KNOWN` below, or the first failure
  line when unexplained) and renders the table into `docs/conformance.md`.

    python -m bench.librdkafka_suite run ~/src/librdkafka --protocol classic --protocol consumer
    python -m bench.librdkafka_suite run ~/src/librdkafka --tests 0052,0077 --merge
    python -m bench.librdkafka_suite render
"""

from __future__ import annotations

import argparse
import datetime
import json
import os
import re
import shlex
import signal
import subprocess
import sys
import tempfile
import time
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
RESULTS = ROOT / "bench" / "results" / "librdkafka_suite.json"
CONFORMANCE = ROOT / "docs" / "conformance.md"
# The broker version the tests are told: below 4.2 keeps them from the share-group tests.
BROKER_VERSION = "4.1.0"
AUTHORIZER = "org.apache.kafka.metadata.authorizer.StandardAuthorizer"

OUR_BUG, LACKING, MULTI_NODE, BY_DESIGN, NOT_FOR_PROTOCOL = (
    "our bug", "a feature we lack", "needs more than one node", "refused by design",
    "not written for this protocol",
)  # fmt: skip

# Known explanations of failures: test name, or (test name, protocol) -> (category, why).
_TRANSACTIONS = (BY_DESIGN, "needs transactions, which are not offered (decision 3): InitProducerId with a "
                 "transactional id is refused TRANSACTIONAL_ID_AUTHORIZATION_FAILED")  # fmt: skip
_REPLICATION_FACTOR_3 = (MULTI_NODE, "creates its topics with replication factor 3, which one node refuses "
                         "INVALID_REPLICATION_FACTOR")  # fmt: skip
_SHARE_CONSUMER = (LACKING, "a share consumer (KIP-932 share groups, not offered), on a topic of replication "
                   "factor 3")  # fmt: skip
KNOWN: dict[str | tuple[str, str], tuple[str, str]] = {
    "0055_producer_latency": _TRANSACTIONS,
    "0061_consumer_lag": _TRANSACTIONS,
    "0103_transactions": _TRANSACTIONS,
    "0129_fetch_aborted_msgs": _TRANSACTIONS,
    "0137_barrier_batch_consume": _TRANSACTIONS,
    "0107_topic_recreate": _REPLICATION_FACTOR_3,
    "0111_delay_create_topics": _REPLICATION_FACTOR_3,
    "0135_sasl_credentials [do_test_share_consumer]": _SHARE_CONSUMER,
    "0142_reauthentication [do_test_consumer:]": (
        MULTI_NODE,
        "creates its topic with replication factor 3 before its consumer re-authenticates (our own "
        "tests re-authenticate consumers: tests/integration/test_security_reauthentication.py)",
    ),
    "0142_reauthentication [do_test_share_consumer:]": _SHARE_CONSUMER,
    "0142_reauthentication [do_test_share_reauth_failure:]": _SHARE_CONSUMER,
    "0142_reauthentication [do_test_txn_producer:]": _TRANSACTIONS,
    "0098_consumer_txn": (
        MULTI_NODE,
        "creates its topics with replication factor 3, then produces transactions through Kafka's "
        "Java TransactionProducerCli (transactions are also refused by design, decision 3)",
    ),
    "0101_fetch_from_follower": (
        MULTI_NODE,
        "fetching from a follower (KIP-392) needs replicas on other brokers; it creates its topic with "
        "replication factor 3",
    ),
    ("0045_resubscribe_with_regex", "consumer"): (
        BY_DESIGN,
        "expects the literal topic assigned one heartbeat before the regex's topics, as Kafka resolves "
        "a regex asynchronously; we resolve it at once (decision 13) and assign all 10 partitions "
        "together, which the protocol allows",
    ),
    ("0045_subscribe_update_topic_remove", "consumer"): (
        NOT_FOR_PROTOCOL,
        "expects an eager full reassignment after a topic is deleted; KIP-848 revokes only the deleted "
        "topic's partitions (an incremental unassign of 5, then an empty incremental assign)",
    ),
    ("0045_subscribe_update_non_exist_and_partchange", "consumer"): (
        NOT_FOR_PROTOCOL,
        "expects a revoke before the assignment of a topic's new partitions; KIP-848 only adds them "
        "(an incremental assign)",
    ),
}

# Tests run in parts (one per SUBTESTS filter), so that a failure early in one does not hide
# the rest: 0081 exercises every Admin API in turn and stops at its first failure.
SPLITS = {
    "0081": ("do_test_CreateTopics", "do_test_DeleteTopics", "do_test_CreatePartitions", "Acls",
             "do_test_AlterConfigs", "do_test_IncrementalAlterConfigs", "do_test_DescribeConfigs",
             "do_test_DeleteRecords", "do_test_ListConsumerGroups", "do_test_DescribeConsumerGroups",
             "do_test_DescribeTopics", "do_test_DescribeCluster", "do_test_DeleteGroups",
             "do_test_DeleteConsumerGroupOffsets", "do_test_ListOffsets", "do_test_AlterConsumerGroupOffsets",
             "do_test_ListConsumerGroupOffsets", "do_test_UserScramCredentials", "unclean_destroy"),
    # 0135 changes SASL credentials of a producer and consumer, then of a share consumer (KIP-932).
    "0135": ("do_test:", "do_test_share_consumer"),
    # 0142 re-authenticates a consumer, a share consumer, producers (one transactional) and clients
    # whose credentials went wrong; its OAUTHBEARER parts skip themselves on other mechanisms
    # (OAUTHBEARER is not offered), so they are not run.
    "0142": ("do_test_consumer:", "do_test_share_consumer:", "do_test_producer:", "do_test_txn_producer:",
             "do_test_reauth_failure:", "do_test_share_reauth_failure:"),
}  # fmt: skip

# Tests that need longer than the cap: 0113 runs some 40 cooperative rebalancing subtests.
LONG_TESTS = {"0113": 900.0}

# connections.max.reauth.ms of the SASL suites: librdkafka's test clusters' value.
REAUTH_MS = "10000"

# Coordinator settings a test needs beyond those of its scenario.
TEST_SETTINGS: dict[str, dict[str, str]] = {}


@dataclass(frozen=True)
class Unit:
    """One test-runner run: a test number (all its broker tests) in one scenario."""

    number: str
    scenario: str
    names: tuple[str, ...]
    subtests: str = ""  # test-runner's SUBTESTS filter: run only the subtests whose name holds it


@dataclass(frozen=True)
class Security:
    """A listener (and SASL mechanism) to run some tests over, as librdkafka's sasl_test.py
    runs its suites: user `myuser`, password `mypassword`, the server's certificate from a CA
    made for the run; SASL sessions of 10 s (`connections.max.reauth.ms`, as librdkafka's
    test clusters set it), so that clients re-authenticate."""

    name: str
    listener: str
    mechanism: str = ""

    def prepare(self, work: Path, code_dir: Path | None) -> dict[str, str]:
        """The user and the certificates written; the coordinator's settings for this listener."""
        from tests.support.certificates import make_pki

        pki = make_pki(work / "pki")
        settings = {"listeners": f"{self.listener}://127.0.0.1:0", "ssl.keystore.type": "PEM",
                    "ssl.keystore.location": str(pki.server.combined)}  # fmt: skip
        if self.mechanism:
            settings["sasl.enabled.mechanisms"] = self.mechanism
            settings["connections.max.reauth.ms"] = REAUTH_MS
            command = [sys.executable, "-m", "connect_rebalance_cli.cli", "users", "--data-dir",
                       str(work / "data"), "add", "myuser"]  # fmt: skip
            subprocess.run(
                command,
                input="mypassword\n",
                text=True,
                check=True,
                cwd=code_dir,
                timeout=60,
                capture_output=True,
            )
        return settings

    def client_conf(self, work: Path) -> str:
        """test.conf's lines beyond bootstrap.servers."""
        lines = [f"security.protocol={self.listener}"]
        if "SSL" in self.listener:
            lines.append(f"ssl.ca.location={work / 'pki' / 'ca.pem'}")
        if self.mechanism:
            lines += [f"sasl.mechanisms={self.mechanism}", "sasl.username=myuser", "sasl.password=mypassword"]
        return "\n".join(lines) + "\n"


SECURITY = (
    Security("SASL_PLAINTEXT/PLAIN", "SASL_PLAINTEXT", "PLAIN"),
    Security("SASL_PLAINTEXT/SCRAM-SHA-512", "SASL_PLAINTEXT", "SCRAM-SHA-512"),
    Security("SASL_SSL/SCRAM-SHA-256", "SASL_SSL", "SCRAM-SHA-256"),
    Security("SSL", "SSL"),
)
# What runs over each: a smoke test, produce and consume, group commits, and the two tests
# that need SASL (0135 changes credentials at run time; 0142 re-authenticates).
SECURITY_TESTS = ("0001", "0012", "0030", "0135", "0142")


# --- the source tree --------------------------------------------------------------------------


def build_test_runner(source: Path) -> Path:
    """`tests/test-runner`, built with librdkafka unless it is there already."""
    runner = source / "tests" / "test-runner"
    if runner.exists():
        return runner
    if not (source / "Makefile.config").exists():
        subprocess.run(["./configure"], cwd=source, check=True)
    subprocess.run(["make", "-j2", "libs"], cwd=source, check=True)
    subprocess.run(["make", "-j2", "build"], cwd=source / "tests", check=True)
    return runner


def librdkafka_version(source: Path) -> str:
    """The version the tree declares (src/rdkafka.h's RD_KAFKA_VERSION)."""
    header = (source / "src" / "rdkafka.h").read_text()
    match = re.search(r"#define RD_KAFKA_VERSION\s+0x([0-9a-fA-F]{8})", header)
    if not match:
        return "unknown"
    value = int(match.group(1), 16)
    return f"{value >> 24}.{(value >> 16) & 0xFF}.{(value >> 8) & 0xFF}"


def broker_tests(test_c: str) -> list[Unit]:
    """The units to run, from test.c's `tests[]` table: one per test number and scenario."""
    table = test_c[test_c.index("struct test tests[] = {") : test_c.index("{NULL}};")]
    units: dict[tuple[str, str], list[str]] = {}
    for entry in table.split("_TEST(")[1:]:
        name, _, rest = entry.partition(",")
        name, flags = name.strip(), rest.split(",")[0].split(")")[0]
        if re.search(r"\bTEST_F_(LOCAL|MANUAL|KNOWN_ISSUE)\b", flags) or "share_consumer" in name:
            continue
        scenario = re.search(r'\.scenario\s*=\s*"([^"]*)"', entry)
        run_in = "noautocreate" if scenario and scenario.group(1) == "noautocreate" else "default"
        units.setdefault((name[:4], run_in), []).append(name)
    return [
        Unit(number, scenario, tuple(names), subtests)
        for (number, scenario), names in sorted(units.items())
        for subtests in SPLITS.get(number, ("",))
    ]


# --- stand-ins for Kafka's scripts --------------------------------------------------------------


def kafka_topics_argv(argv: list[str]) -> list[str]:
    """kafka-topics.sh's arguments as `connect-rebalance topics ...` arguments."""
    parser = argparse.ArgumentParser(prog="kafka-topics.sh")
    parser.add_argument("--bootstrap-server", required=True)
    for action in ("create", "alter", "delete", "describe", "list"):
        parser.add_argument(f"--{action}", dest="action", action="store_const", const=action)
    parser.add_argument("--topic", default="")
    parser.add_argument("--partitions")
    parser.add_argument("--replication-factor")
    parser.add_argument("--config", action="append", default=[])
    parser.add_argument("--if-not-exists", action="store_true")
    args = parser.parse_args(argv)
    out = ["topics", "--bootstrap-server", args.bootstrap_server, args.action]
    out += [args.topic] if args.topic else []
    out += ["--partitions", args.partitions] if args.partitions else []
    out += ["--replication-factor", args.replication_factor] if args.replication_factor else []
    out += [arg for config in args.config for arg in ("--config", config)]
    return out + (["--if-not-exists"] if args.if_not_exists else [])


def kafka_acls_argv(argv: list[str]) -> list[str]:
    """kafka-acls.sh's arguments as `connect-rebalance acls ...` arguments: the action flag
    becomes the subcommand, the rest is spelled the same."""
    [action] = [arg for arg in argv if arg in ("--add", "--remove", "--list")]
    rest = [arg for arg in argv if arg not in (action, "--force")]  # ours never asks to confirm
    at = rest.index("--bootstrap-server")
    bootstrap = rest[at : at + 2]
    return ["acls", *bootstrap, action[2:], *rest[:at], *rest[at + 2 :]]


STAND_INS = {"kafka-topics.sh": kafka_topics_argv, "kafka-acls.sh": kafka_acls_argv}


def write_stand_ins(kafka_path: Path) -> None:
    """$KAFKA_PATH/bin/kafka-topics.sh and kafka-acls.sh, each running this script's stand-in."""
    (kafka_path / "bin").mkdir(parents=True, exist_ok=True)
    for script in STAND_INS:
        path = kafka_path / "bin" / script
        command = [sys.executable, "-m", "bench.librdkafka_suite", "stand-in", script]
        path.write_text(f'#!/bin/sh\ncd {shlex.quote(str(ROOT))} && exec {shlex.join(command)} "$@"\n')
        path.chmod(0o755)


def run_stand_in(script: str, argv: list[str]) -> int:
    command = [sys.executable, "-m", "connect_rebalance_cli.cli", *STAND_INS[script](argv)]
    print("stand-in:", shlex.join(command), file=sys.stderr)
    return subprocess.run(command).returncode


# --- running ------------------------------------------------------------------------------------

_ANSI = re.compile(r"\x1b\[[0-9;]*m")
_SUMMARY = re.compile(
    r"^\|\s*(\d{4}_\w+)\s*\|\s*"
    r"(PASSED|FAILED|SKIPPED|RUNNING)\s*\|\s*([\d.]+)s\s*\|?\s*(.*)"
)
_BANNER = re.compile(r"Test (\d{4}_\w+) (PASSED|FAILED|SKIPPED)")
_FAILURE = re.compile(r'### Test "(\d{4}_\w+)([^"]*)" failed at (\S+?):[^\n]*###\n([^\n]*)')


def coordinator_settings(unit: Unit) -> dict[str, str]:
    """A unit's coordinator: like the brokers librdkafka's test clusters run (4 partitions a
    topic, an authorizer that allows everyone without ACLs), with its scenario's auto-creation."""
    settings = {
        "num.partitions": "4",
        "auto.create.topics.enable": "false" if unit.scenario == "noautocreate" else "true",
        "authorizer.class.name": AUTHORIZER,
        "allow.everyone.if.no.acl.found": "true",
    }
    for name in unit.names:
        settings.update(TEST_SETTINGS.get(name, {}))
    return settings


def parse_output(log: str, names: tuple[str, ...], cut_off: bool) -> dict[str, dict[str, Any]]:
    """Each test's result and seconds from test-runner's summary table, or when there is none
    (cut off by the cap, or the runner aborted) from its banners and failure messages, with its
    first failure message (subtest, source line and reason)."""
    text = _ANSI.sub("", log)
    found: dict[str, dict[str, Any]] = {}
    for line in text.splitlines():
        summary = _SUMMARY.match(line.strip())
        if summary and summary.group(1) in names:
            found[summary.group(1)] = {"result": summary.group(2).lower(), "seconds": float(summary.group(3))}
            if summary.group(2) == "SKIPPED" and summary.group(4):
                found[summary.group(1)]["detail"] = summary.group(4).strip()
    for name, result in _BANNER.findall(text):
        found.setdefault(name, {"result": result.lower(), "seconds": None})
    for name, subtest, where, reason in _FAILURE.findall(text):
        entry = found.setdefault(name, {"result": "failed", "seconds": None})
        entry.setdefault("detail", f"{subtest.strip(' ()')} at {where}: {reason.strip()}"[:300])
    for name in names:
        found.setdefault(name, {"result": "timeout" if cut_off else "failed", "seconds": None})
        if found[name]["result"] == "running" and cut_off:
            found[name]["result"] = "timeout"
    return found


def run_unit(
    unit: Unit,
    protocol: str,
    runner: Path,
    cap: float,
    logs: Path,
    code_dir: Path | None,
    security: Security | None = None,
) -> list[dict[str, Any]]:
    """One unit against a fresh coordinator (of the checkout `code_dir`, or this one), on a
    plaintext listener or `security`'s; its rows."""
    from connect_rebalance.processes import CoordinatorProcess

    output, cut_off, elapsed = "", False, 0.0
    with tempfile.TemporaryDirectory(prefix=f"rdk-{unit.number}-") as tmp:
        work = Path(tmp)
        settings, client = coordinator_settings(unit), ""
        if security:
            settings, client = settings | security.prepare(work, code_dir), security.client_conf(work)
        coordinator = CoordinatorProcess(
            work / "data", settings, log_path=work / "coord.log", code_dir=code_dir
        )
        _LIVE.add(coordinator)
        try:
            coordinator.start()
            bootstrap = coordinator.bootstrap_for(security.listener) if security else coordinator.bootstrap
            (work / "test.conf").write_text(f"bootstrap.servers={bootstrap}\n{client}")
            write_stand_ins(work / "kafka")
            env = dict(os.environ, TESTS=unit.number, TEST_SCENARIO=unit.scenario, SUBTESTS=unit.subtests,
                       TEST_KAFKA_VERSION=BROKER_VERSION, TEST_CONSUMER_GROUP_PROTOCOL=protocol,
                       RDKAFKA_TEST_CONF=str(work / "test.conf"), KAFKA_PATH=str(work / "kafka"),
                       BROKERS=bootstrap, LD_LIBRARY_PATH="../src:../src-cpp")  # fmt: skip
            started = time.monotonic()
            unit_cap = max(cap, LONG_TESTS.get(unit.number, 0.0))
            output, cut_off = _run_capped([str(runner), "-L"], runner.parent, env, unit_cap)
            elapsed = time.monotonic() - started
        finally:
            coordinator.stop()
            _LIVE.discard(coordinator)
            where = security.name.replace("/", "-") if security else protocol
            log_name = "-".join(part for part in (where, unit.number, unit.scenario, unit.subtests) if part)
            (logs / f"{log_name}.log").write_text(output)
            (logs / f"{log_name}-coordinator.log").write_bytes((work / "coord.log").read_bytes()[-2_000_000:])
    rows = []
    for name, found in parse_output(output, unit.names, cut_off).items():
        seconds = found["seconds"] if found["seconds"] is not None else round(elapsed, 1)
        test = f"{name} [{unit.subtests}]" if unit.subtests else name
        row = {"test": test, "protocol": protocol, "result": found["result"], "seconds": seconds}
        if security:
            row["security"] = security.name
        if found.get("detail"):
            row["detail"] = found["detail"]
        rows.append(row)
    return rows


_LIVE: set[Any] = set()  # the coordinators running, stopped if the run is interrupted


def _stop_all(signum: int, _frame: Any) -> None:
    for coordinator in list(_LIVE):
        coordinator.kill()
    os._exit(128 + signum)


def _run_capped(command: list[str], cwd: Path, env: dict[str, str], cap: float) -> tuple[str, bool]:
    """The command's output, and whether the cap cut it off (its whole process group killed)."""
    process = subprocess.Popen(
        command, cwd=cwd, env=env, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, start_new_session=True
    )
    try:
        output, _ = process.communicate(timeout=cap)
        return output.decode(errors="replace"), False
    except subprocess.TimeoutExpired:
        os.killpg(process.pid, signal.SIGKILL)
        output, _ = process.communicate()
        return output.decode(errors="replace"), True


def explained(row: dict[str, Any]) -> dict[str, Any]:
    """A failure's category and why, from KNOWN; a skip's reason, as the test gave it."""
    if row["result"] == "skipped":
        return {**row, "category": "skipped", "why": row.get("detail", "")}
    if row["result"] not in ("failed", "timeout"):
        return row
    known = KNOWN.get((row["test"], row["protocol"])) or KNOWN.get(row["test"])
    category, why = known or ("unexplained", row.get("detail", "cut off by the time cap"))
    return {**row, "category": category, "why": why}


def _row_key(row: dict[str, Any]) -> tuple[str, str, str]:
    """A row's test (without its SUBTESTS part), protocol and security suite."""
    return row["test"].split(" [")[0], row["protocol"], row.get("security", "")


def run(args: argparse.Namespace) -> None:
    source = Path(args.source).resolve()
    runner = build_test_runner(source)
    units = broker_tests((source / "tests" / "test.c").read_text())
    if args.tests:
        wanted = args.tests.split(",")
        units = [u for u in units if u.number in wanted or any(n in wanted for n in u.names)]
    logs = Path(args.logs)
    logs.mkdir(parents=True, exist_ok=True)
    code_dir = Path(args.code_dir).resolve() if args.code_dir else None
    signal.signal(signal.SIGTERM, _stop_all)
    signal.signal(signal.SIGINT, _stop_all)
    if args.security:  # the security suites, each over its tests, on the classic protocol
        secure = [u for u in units if u.number in SECURITY_TESTS and u.scenario == "default"]
        runs = [(unit, "classic", security) for security in SECURITY for unit in secure]
    else:
        runs = [
            (unit, protocol, None) for protocol in args.protocol or ["classic", "consumer"] for unit in units
        ]
    rows: list[dict[str, Any]] = []
    with ThreadPoolExecutor(max_workers=args.jobs) as pool:
        running = [pool.submit(run_unit, u, p, runner, args.cap, logs, code_dir, s) for u, p, s in runs]
        for done in running:
            for row in done.result():
                print(f"{row.get('security', row['protocol']):30} {row['test']:45} {row['result']:8} "
                      f"{row['seconds']}", flush=True)  # fmt: skip
                rows.append(row)
    previous = json.loads(RESULTS.read_text()) if args.merge and RESULTS.exists() else {"rows": []}
    ran = {_row_key(row) for row in rows}  # a test run now replaces its saved rows, whole or in parts
    kept = [row for row in previous["rows"] if _row_key(row) not in ran]
    results = {
        "librdkafka": librdkafka_version(source),
        "coordinator": subprocess.run(
            ["git", "rev-parse", "--short", "HEAD"], cwd=code_dir or ROOT, capture_output=True, text=True
        ).stdout.strip(),  # fmt: skip
        "date": datetime.date.today().isoformat(),
        "cap_s": args.cap,
        "rows": sorted(kept + rows, key=_row_key),
    }
    RESULTS.parent.mkdir(parents=True, exist_ok=True)
    RESULTS.write_text(json.dumps(results, indent=2) + "\n")
    render()


# --- the table ----------------------------------------------------------------------------------


def counts(results: dict[str, Any], protocol: str) -> dict[str, int]:
    """How many tests passed, failed (or were cut off) and were skipped on one protocol, over
    the plaintext listener."""
    tally = {"passed": 0, "failed": 0, "skipped": 0}
    for row in results["rows"]:
        if row["protocol"] == protocol and "security" not in row:
            tally[row["result"] if row["result"] in ("passed", "skipped") else "failed"] += 1
    return tally


def summary_line(results: dict[str, Any]) -> str:
    """One line of counts, for the README's headline table."""
    return ", ".join(
        f"{protocol}: {c['passed']} of {c['passed'] + c['failed']}"
        for protocol in ("classic", "consumer")
        for c in [counts(results, protocol)]
    )


def _table(rows: list[dict[str, Any]], column: str, columns: tuple[str, ...]) -> list[str]:
    """A row per test, a column per value of `column` (protocol, or security suite)."""
    by_test: dict[str, dict[str, dict[str, Any]]] = {}
    for row in rows:
        by_test.setdefault(row["test"], {})[row.get(column, "")] = explained(row)
    lines = [
        f"| test | {' | '.join(columns)} | why it fails, or was skipped |",
        "|---" * (len(columns) + 2) + "|",
    ]
    for test, cells_of in sorted(by_test.items()):
        cells, whys = [], []
        for value in columns:
            row = cells_of.get(value)
            cells.append(f"{row['result']} ({row['seconds']:.0f} s)" if row else "-")
            if row and "why" in row and f"{row['category']}: {row['why']}" not in whys:
                whys.append(f"{row['category']}: {row['why']}")
        lines.append(f"| {test} | {' | '.join(cells)} | {'; '.join(whys)} |")
    return lines


def readme_block(results: dict[str, Any] | None) -> str:
    """docs/conformance.md's tables: the broker tests per group protocol, then the security suites."""
    if results is None:
        return "No run saved yet."
    plain = [row for row in results["rows"] if "security" not in row]
    secure = [row for row in results["rows"] if "security" in row]
    lines = [
        f"librdkafka {results['librdkafka']}, coordinator {results['coordinator']}, {results['date']}; "
        f"a fresh coordinator per test, time cap {results['cap_s']:.0f} s. Passed: {summary_line(results)}.",
        "",
        *_table(plain, "protocol", ("classic", "consumer")),
    ]
    if secure:
        suites = tuple(s.name for s in SECURITY if any(row["security"] == s.name for row in secure))
        lines += ["", "Over TLS and SASL (classic protocol):", "", *_table(secure, "security", suites)]
    return "\n".join(lines)


def render() -> None:
    """Write the saved run into docs/conformance.md's block and the README's headline."""
    from bench.headline import main as headline
    from bench.readme_table import render as rendered
    from bench.readme_table import update_readme

    update_readme("librdkafka_suite", rendered("librdkafka_suite"))
    headline()


def main(argv: list[str] | None = None) -> int:
    argv = sys.argv[1:] if argv is None else argv
    if argv[:1] == ["stand-in"]:  # a test's kafka-topics.sh / kafka-acls.sh: all else is theirs
        return run_stand_in(argv[1], argv[2:])
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    commands = parser.add_subparsers(dest="command", required=True)
    run_parser = commands.add_parser("run", help="build, run the tests, save and render")
    run_parser.add_argument("source", help="a librdkafka source tree")
    run_parser.add_argument("--protocol", action="append", choices=["classic", "consumer"])
    run_parser.add_argument("--tests", help="comma-separated test numbers or names (default: all)")
    run_parser.add_argument("--jobs", type=int, default=2, help="tests at a time (default 2)")
    run_parser.add_argument("--cap", type=float, default=300.0, help="seconds a test may run (default 300)")
    run_parser.add_argument("--security", action="store_true", help="the TLS and SASL suites instead")
    run_parser.add_argument("--merge", action="store_true", help="keep saved rows of tests not run now")
    run_parser.add_argument("--code-dir", help="run the coordinator of this checkout (default: this one)")
    run_parser.add_argument("--logs", default=str(Path(tempfile.gettempdir()) / "librdkafka-suite-logs"))
    commands.add_parser("render", help="rewrite docs/conformance.md and the README from the saved run")
    commands.add_parser("stand-in", help="kafka-topics.sh / kafka-acls.sh ARGS... over our CLI")
    args = parser.parse_args(argv)
    run(args) if args.command == "run" else render()
    return 0


if __name__ == "__main__":
    sys.exit(main())

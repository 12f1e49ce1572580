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
KNOWN: dict[str | tuple[str, str], tuple[str, str]] = {
    "0055_producer_latency": _TRANSACTIONS,
    "0061_consumer_lag": _TRANSACTIONS,
    "0103_transactions": _TRANSACTIONS,
    "0129_fetch_aborted_msgs": _TRANSACTIONS,
    "0137_barrier_batch_consume": _TRANSACTIONS,
    "0107_topic_recreate": _REPLICATION_FACTOR_3,
    "0111_delay_create_topics": _REPLICATION_FACTOR_3,
    "0081_admin": (
        LACKING,
        "AlterConfigs of a BROKER resource (a dynamic broker config): broker settings "
        "are read from the properties file at start and refused INVALID_REQUEST; the test stops "
        "there, before its later subtests",
    ),
}

# Tests that need longer than the cap: 0113 runs some 40 cooperative rebalancing subtests.
LONG_TESTS = {"0113": 900.0}

# Coordinator settings a test needs beyond those of its scenario.
TEST_SETTINGS: dict[str, dict[str, str]] = {}


@dataclass(frozen=True)
class Unit:
    """One test-runner run: a test number (all its broker tests) in one scenario."""

    number: str
    scenario: str
    names: tuple[str, ...]


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
    return [Unit(number, scenario, tuple(names)) for (number, scenario), names in sorted(units.items())]


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
    unit: Unit, protocol: str, runner: Path, cap: float, logs: Path, code_dir: Path | None
) -> list[dict[str, Any]]:
    """One unit against a fresh coordinator (of the checkout `code_dir`, or this one); its rows."""
    from connect_rebalance.processes import CoordinatorProcess

    with tempfile.TemporaryDirectory(prefix=f"rdk-{unit.number}-") as tmp:
        work = Path(tmp)
        coordinator = CoordinatorProcess(
            work / "data", coordinator_settings(unit), log_path=work / "coord.log", code_dir=code_dir
        )
        _LIVE.add(coordinator)
        coordinator.start()
        try:
            (work / "test.conf").write_text(f"bootstrap.servers={coordinator.bootstrap}\n")
            write_stand_ins(work / "kafka")
            env = dict(os.environ, TESTS=unit.number, TEST_SCENARIO=unit.scenario,
                       TEST_KAFKA_VERSION=BROKER_VERSION, TEST_CONSUMER_GROUP_PROTOCOL=protocol,
                       RDKAFKA_TEST_CONF=str(work / "test.conf"), KAFKA_PATH=str(work / "kafka"),
                       BROKERS=coordinator.bootstrap, LD_LIBRARY_PATH="../src:../src-cpp")  # fmt: skip
            started = time.monotonic()
            unit_cap = max(cap, LONG_TESTS.get(unit.number, 0.0))
            output, cut_off = _run_capped([str(runner), "-L"], runner.parent, env, unit_cap)
            elapsed = time.monotonic() - started
        finally:
            coordinator.stop()
            _LIVE.discard(coordinator)
            log_name = f"{protocol}-{unit.number}-{unit.scenario}"
            (logs / f"{log_name}.log").write_text(output)
            (logs / f"{log_name}-coordinator.log").write_bytes((work / "coord.log").read_bytes()[-2_000_000:])
    rows = []
    for name, found in parse_output(output, unit.names, cut_off).items():
        seconds = found["seconds"] if found["seconds"] is not None else round(elapsed, 1)
        row = {"test": name, "protocol": protocol, "result": found["result"], "seconds": seconds}
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
    rows: list[dict[str, Any]] = []
    for protocol in args.protocol or ["classic", "consumer"]:
        with ThreadPoolExecutor(max_workers=args.jobs) as pool:
            runs = [pool.submit(run_unit, unit, protocol, runner, args.cap, logs, code_dir) for unit in units]
            for done in runs:
                for row in done.result():
                    print(f"{protocol:9} {row['test']:45} {row['result']:8} {row['seconds']}", flush=True)
                    rows.append(row)
    previous = json.loads(RESULTS.read_text()) if args.merge and RESULTS.exists() else {"rows": []}
    ran = {(row["test"], row["protocol"]) for row in rows}
    kept = [row for row in previous["rows"] if (row["test"], row["protocol"]) not in ran]
    results = {
        "librdkafka": librdkafka_version(source),
        "coordinator": subprocess.run(
            ["git", "rev-parse", "--short", "HEAD"], cwd=code_dir or ROOT, capture_output=True, text=True
        ).stdout.strip(),  # fmt: skip
        "date": datetime.date.today().isoformat(),
        "cap_s": args.cap,
        "rows": sorted(kept + rows, key=lambda r: (r["test"], r["protocol"])),
    }
    RESULTS.parent.mkdir(parents=True, exist_ok=True)
    RESULTS.write_text(json.dumps(results, indent=2) + "\n")
    render()


# --- the table ----------------------------------------------------------------------------------


def counts(results: dict[str, Any], protocol: str) -> dict[str, int]:
    """How many tests passed, failed (or were cut off) and were skipped on one protocol."""
    tally = {"passed": 0, "failed": 0, "skipped": 0}
    for row in results["rows"]:
        if row["protocol"] == protocol:
            tally[row["result"] if row["result"] in ("passed", "skipped") else "failed"] += 1
    return tally


def summary_line(results: dict[str, Any]) -> str:
    """One line of counts, for the README's headline table."""
    return ", ".join(
        f"{protocol}: {c['passed']} of {c['passed'] + c['failed']}"
        for protocol in ("classic", "consumer")
        for c in [counts(results, protocol)]
    )


def readme_block(results: dict[str, Any] | None) -> str:
    """docs/conformance.md's table: a row per test, a column per protocol."""
    if results is None:
        return "No run saved yet."
    by_test: dict[str, dict[str, dict[str, Any]]] = {}
    for row in results["rows"]:
        by_test.setdefault(row["test"], {})[row["protocol"]] = explained(row)
    lines = [
        f"librdkafka {results['librdkafka']}, coordinator {results['coordinator']}, {results['date']}; "
        f"a fresh coordinator per test, time cap {results['cap_s']:.0f} s. Passed: {summary_line(results)}.",
        "",
        "| test | classic | consumer | why it fails, or was skipped |",
        "|---|---|---|---|",
    ]
    for test, protocols in sorted(by_test.items()):
        cells, whys = [], []
        for protocol in ("classic", "consumer"):
            row = protocols.get(protocol)
            cells.append(f"{row['result']} ({row['seconds']:.0f} s)" if row else "-")
            if row and "why" in row and f"{row['category']}: {row['why']}" not in whys:
                whys.append(f"{row['category']}: {row['why']}")
        lines.append(f"| {test} | {' | '.join(cells)} | {'; '.join(whys)} |")
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

"""Apply one mutation to a copy of the working tree, run its tests there, and judge the outcome.

A mutation is caught when every test named for it fails, and fails on an assertion raised
by test code (a file under `tests/`) that is not a wait running out of time: a test that
only notices the breakage by timing out, or by an error the product raised, did not check
the promise it is named after.
"""

from __future__ import annotations

import os
import re
import shutil
import subprocess
import sys
import tempfile
import time
import xml.etree.ElementTree as ET
from dataclasses import dataclass
from pathlib import Path

from .catalog import Mutation

ROOT = Path(__file__).resolve().parents[2]
PACKAGES = ("connect_rebalance", "coordinator", "workers")
TIMEOUT_WORDS = re.compile(r"timed out|Timeout", re.I)
# The line pytest ends a failure's traceback with: "path/to/file.py:123: ExceptionType".
RAISED_AT = re.compile(r"^(?P<path>[^\s:]+\.py):(?P<line>\d+): (?P<kind>[\w.]+)", re.M)


class SnippetNotFound(Exception):
    pass


def check_applies(mutation: Mutation, root: Path = ROOT) -> None:
    """Raise unless the mutation's snippet occurs exactly once in its file."""
    path = root / mutation.file
    if not path.is_file():
        raise SnippetNotFound(f"{mutation.name}: {mutation.file} does not exist")
    found = path.read_text().count(mutation.original)
    if found != 1:
        where = "is no longer in" if found == 0 else f"occurs {found} times in"
        raise SnippetNotFound(f"{mutation.name}: the snippet {where} {mutation.file}:\n{mutation.original}")
    missing = [t for t in mutation.tests if not (root / t.split("::")[0]).is_file()]
    if missing:
        raise SnippetNotFound(f"{mutation.name}: no such test file for {missing}")


def working_tree_files(root: Path = ROOT) -> list[str]:
    """Tracked and untracked-but-not-ignored files: the tree as it is now, uncommitted edits included."""
    listed = subprocess.run(
        ["git", "ls-files", "--cached", "--others", "--exclude-standard", "-z"],
        cwd=root, capture_output=True, check=True,
    ).stdout.decode()  # fmt: skip
    return [name for name in listed.split("\0") if name and (root / name).is_file()]


def copy_tree(files: list[str], into: Path, root: Path = ROOT) -> None:
    for name in files:
        target = into / name
        target.parent.mkdir(parents=True, exist_ok=True)
        shutil.copy2(root / name, target)


def environment(copy: Path) -> dict[str, str]:
    """The copy's packages shadow the editable install of the working tree."""
    env = dict(os.environ)
    env["PYTHONPATH"] = os.pathsep.join([str(copy), env.get("PYTHONPATH", "")]).rstrip(os.pathsep)
    env["PYTHONDONTWRITEBYTECODE"] = "1"
    return env


def assert_imports_from(copy: Path) -> None:
    probe = "; ".join(f"import {p}; print({p}.__file__)" for p in PACKAGES)
    out = subprocess.run([sys.executable, "-c", probe], cwd=copy, env=environment(copy),
                         capture_output=True, text=True, check=True).stdout.split()  # fmt: skip
    strays = [path for path in out if not Path(path).resolve().is_relative_to(copy.resolve())]
    if strays:
        raise RuntimeError(f"the tests would import the product from outside the copy: {strays}")


@dataclass(frozen=True)
class TestOutcome:
    test: str
    verdict: str  # "assertion", "passed", "timeout", "error", "not run"
    detail: str = ""

    @property
    def caught(self) -> bool:
        return self.verdict == "assertion"


@dataclass(frozen=True)
class MutationOutcome:
    mutation: Mutation
    tests: list[TestOutcome]
    seconds: float

    @property
    def caught(self) -> bool:
        return all(t.caught for t in self.tests)


def node_of(case: ET.Element) -> str:
    """A junit testcase's pytest node id (classname is the module's dotted path)."""
    module = case.get("classname", "").replace(".", "/") + ".py"
    return f"{module}::{case.get('name')}"


def judge(case: ET.Element | None, test: str) -> TestOutcome:
    if case is None:
        return TestOutcome(test, "not run", "pytest did not report it (no such test?)")
    problem = case.find("failure")
    if problem is None:
        problem = case.find("error")
    if problem is None:
        return TestOutcome(test, "passed" if case.find("skipped") is None else "not run", "")
    message = (problem.get("message") or "").strip().splitlines()
    first = message[0][:300] if message else ""
    raised = RAISED_AT.findall(problem.text or "")
    path, line, kind = raised[-1] if raised else ("?", "?", problem.get("type") or "?")
    detail = f"{kind} at {path}:{line}: {first}"
    if TIMEOUT_WORDS.search(first):
        return TestOutcome(test, "timeout", detail)
    if problem.tag == "failure" and kind.endswith("AssertionError") and path.startswith("tests/"):
        return TestOutcome(test, "assertion", detail)
    return TestOutcome(test, "error", detail)


def run_tests(copy: Path, tests: list[str], timeout_s: float) -> dict[str, ET.Element]:
    report = copy / "mutation-report.xml"
    command = [sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider", "--tb=long",
               f"--junitxml={report}", "-o", "junit_family=xunit1", *tests]  # fmt: skip
    try:
        subprocess.run(command, cwd=copy, env=environment(copy), capture_output=True, timeout=timeout_s)
    except subprocess.TimeoutExpired:
        return {}
    if not report.exists():
        return {}
    return {node_of(case): case for case in ET.parse(report).getroot().iter("testcase")}


def run_mutation(
    mutation: Mutation, files: list[str], mutate: bool = True, timeout_s: float = 1800
) -> MutationOutcome:
    """Copy the tree, apply the mutation (unless `mutate` is false: the baseline), run its tests."""
    started = time.monotonic()
    with tempfile.TemporaryDirectory(prefix=f"mutant-{mutation.name}-") as tmp:
        copy = Path(tmp) / "tree"
        copy_tree(files, copy)
        check_applies(mutation, copy)
        if mutate:
            target = copy / mutation.file
            target.write_text(target.read_text().replace(mutation.original, mutation.replacement, 1))
        assert_imports_from(copy)
        cases = run_tests(copy, list(mutation.tests), timeout_s)
    outcomes = [judge(cases.get(test), test) for test in mutation.tests]
    return MutationOutcome(mutation, outcomes, time.monotonic() - started)

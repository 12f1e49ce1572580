"""The mutation catalog stays in step with the code, and the runner judges outcomes as it says.

Every mutation's snippet occurs exactly once in its file and every test it names exists, so a
refactoring that moves the code a mutation breaks fails here, naming the mutation to update
(`tests/mutations/catalog.py`). Running the mutations themselves is `python -m tests.mutations`.
"""

from __future__ import annotations

import re
import xml.etree.ElementTree as ET
from pathlib import Path

import pytest

from tests.mutations.catalog import MUTATIONS, Mutation
from tests.mutations.runner import ROOT, SnippetNotFound, check_applies, judge

pytestmark = pytest.mark.unit


@pytest.mark.parametrize("mutation", MUTATIONS, ids=[m.name for m in MUTATIONS])
def test_each_mutation_applies_once_and_names_existing_tests(mutation: Mutation) -> None:
    check_applies(mutation)
    assert mutation.original != mutation.replacement
    for test in mutation.tests:
        path, _, name = test.partition("::")
        function = re.sub(r"\[.*\]$", "", name)
        assert re.search(rf"^(async )?def {function}\(", (ROOT / path).read_text(), re.M), f"no test {test}"


def test_mutation_names_are_unique() -> None:
    names = [m.name for m in MUTATIONS]
    assert len(names) == len(set(names))


def test_a_snippet_no_longer_found_or_found_twice_is_refused(tmp_path: Path) -> None:
    (tmp_path / "core.py").write_text("x = 1\nx = 1\ny = 2\n")
    (tmp_path / "test_core.py").write_text("def test_y(): ...\n")
    gone = Mutation("gone", "", "core.py", "z = 3", "z = 4", ("test_core.py::test_y",))
    twice = Mutation("twice", "", "core.py", "x = 1", "x = 2", ("test_core.py::test_y",))
    for mutation, words in ((gone, "is no longer in"), (twice, "occurs 2 times")):
        with pytest.raises(SnippetNotFound, match=words):
            check_applies(mutation, tmp_path)


def case(body: str) -> ET.Element:
    return ET.fromstring(f'<testcase classname="tests.unit.test_x" name="test_y">{body}</testcase>')


def test_only_an_assertion_in_test_code_counts_as_caught() -> None:
    test = "tests/unit/test_x.py::test_y"
    in_test = '<failure message="AssertionError: W2 got BC0">tests/unit/test_x.py:1: AssertionError</failure>'
    in_product = '<failure message="AssertionError: held">coordinator/groups/x.py:9: AssertionError</failure>'
    waited = (
        '<failure message="AssertionError: timed out after 30s waiting for balance">'
        "tests/support/group_scenario.py:40: AssertionError</failure>"
    )
    killed = '<failure message="Failed: Timeout &gt;300.0s">tests/unit/test_x.py:3: Failed</failure>'
    crashed = '<error message="ConnectionError: closed">tests/unit/test_x.py:3: ConnectionError</error>'
    assert judge(case(in_test), test).verdict == "assertion"
    assert judge(case(""), test).verdict == "passed"
    assert judge(case(in_product), test).verdict == "error"
    assert judge(case(waited), test).verdict == "timeout"
    assert judge(case(killed), test).verdict == "timeout"
    assert judge(case(crashed), test).verdict == "error"
    assert judge(None, test).verdict == "not run"

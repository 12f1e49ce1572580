"""Connector names: Kafka Connect's rule (non-empty, no ISO control characters), and the
directory name every name is stored under, which never leaves its parent."""

from __future__ import annotations

import os
from pathlib import Path

import pytest
from hypothesis import given
from hypothesis import strategies as st

from workers.plugins.names import java_trim, name_problem, path_segment
from workers.plugins.registry import Plugins
from workers.spark.runtime import checkpoint_path

pytestmark = pytest.mark.unit
CONTROLS = "String may not contain control sequences but had the following ASCII chars"

HOSTILE = ["../../escape-fi", "/etc/passwd", "a%2Fb", "a/b", "..", ".", ".hidden", "victim/../victim",
           "~", "x" * 1000, "\u00e9t\u00e9", "\ud800", "C:\\temp", "a b"]  # fmt: skip


@pytest.mark.parametrize("name", HOSTILE)
def test_a_hostile_name_is_one_directory_inside_checkpoint_dir(name: str, tmp_path: Path) -> None:
    segment = path_segment(name)
    assert "/" not in segment and "\\" not in segment and "\0" not in segment
    assert segment not in ("", ".", "..") and not segment.startswith(".")
    assert len(segment.encode()) <= 255
    root = tmp_path / "checkpoints"
    where = Path(os.path.normpath(checkpoint_path(root, name, 0)))
    assert where.parent.parent == root and where.parent.name == segment


def test_names_of_safe_characters_keep_their_directory() -> None:
    assert path_segment("orders-2024_v1.0") == "orders-2024_v1.0"


@given(st.text(max_size=300), st.text(max_size=300))
def test_two_names_never_share_a_directory(a: str, b: str) -> None:
    if a != b:
        assert path_segment(a) != path_segment(b)
    assert path_segment("a/b") != path_segment("a%2Fb") != path_segment("a%252Fb")


@pytest.mark.parametrize(
    ("name", "problem"),
    [
        ("", "String may not be empty"),
        ("   ", "String may not be empty"),
        ("a\nb", f"{CONTROLS}: 10"),
        ("a\0b", f"{CONTROLS}: 0"),
        ("a\x7fb\x85", f"{CONTROLS}: 127, 133"),
    ],
)
def test_kafka_connects_rule_refuses_empty_names_and_control_characters(name: str, problem: str) -> None:
    assert name_problem(name) == problem
    plugin = Plugins.installed().find("VerifiableSource")
    assert plugin is not None
    config = {"name": name, "connector.class": "VerifiableSource"}
    found = {p.name: p.message for p in plugin.validate(config)}
    assert problem in found["name"] or (not name.strip() and "name" in found)


def test_legal_names_and_java_trim() -> None:
    for name in ("orders", "a/b", "..", "\u00e9", "a b"):
        assert name_problem(name) is None
    assert java_trim(" \0orders\n\t") == "orders" and java_trim("a\nb") == "a\nb"

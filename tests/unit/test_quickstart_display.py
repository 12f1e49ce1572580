"""The quickstart's live progress (cluster_demo.Frame and Display): on a terminal a table that
rich redraws in place, in a pipe one line every few seconds; both say what a user watches for
(each task's worker, state and rows, and the committed output against what was landed)."""

from __future__ import annotations

import io

import pytest
from rich.console import Console

from connect_rebalance_cli.cluster_demo import Display, Frame

pytestmark = pytest.mark.unit

FRAME = Frame(
    "after w1 left",
    [(0, "w2", "RUNNING", {"rows": 1250, "processed_rows_per_second": 410, "batches": 3}),
     (1, "w3", "UNASSIGNED", {})],
    "waiting for the Spark session of w3: its tasks start once it is ready",
    1250,
    3000,
)  # fmt: skip


def test_a_terminal_gets_a_table_redrawn_in_place() -> None:
    screen = io.StringIO()
    display = Display(Console(file=screen, force_terminal=True, width=100, color_system=None))
    display.show(FRAME)
    display.show(FRAME)
    display.done()
    text = screen.getvalue()
    assert text.count("after w1 left") >= 2  # drawn, then drawn again over itself
    assert "\x1b[" in text  # cursor movement: the table is redrawn in place, not appended
    rows = {line.split()[0]: line.split() for line in text.splitlines() if line.strip()[:1].isdigit()}
    assert rows["0"][:6] == ["0", "w2", "RUNNING", "1,250", "410", "3"]
    assert rows["1"][:3] == ["1", "w3", "UNASSIGNED"]
    assert "committed rows in the output: 1,250 of 3,000" in text
    assert "waiting for the Spark session of w3" in text


def test_a_pipe_gets_one_line() -> None:
    assert FRAME.line() == (
        "task 0 w2 RUNNING 1250 rows; task 1 w3 UNASSIGNED 0 rows; waiting for the Spark session of w3: "
        "its tasks start once it is ready; output 1250/3000 rows"
    )

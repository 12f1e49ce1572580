"""The admin commands' tables and describe rows, in process: plain columns for pipes, a ruled
table that never folds a cell on a terminal, names printed as they are, and the members view of
a consumer group mid-upgrade (classic members next to consumer-protocol ones)."""

from __future__ import annotations

import io
import sys

import pytest

from connect_rebalance_cli import group_views
from connect_rebalance_cli.tables import print_table, render_plain

pytestmark = pytest.mark.unit

LONG_ID = "c1-54721f76-56cb-47ce-84e5-bea51743b42f"


def test_plain_columns_are_two_blanks_apart_with_no_box_and_no_trailing_blanks() -> None:
    text = render_plain(
        ["GROUP", "LAG", "CLIENT-ID"], [["[bold]g", "0", "-"], ["orders-app", "12", ":smile:"]]
    )
    assert text == "GROUP       LAG  CLIENT-ID\n[bold]g     0    -\norders-app  12   :smile:\n"


class _Terminal(io.StringIO):
    def isatty(self) -> bool:
        return True


def test_a_terminal_gets_a_ruled_table_whose_cells_are_never_folded(monkeypatch: pytest.MonkeyPatch) -> None:
    terminal = _Terminal()
    monkeypatch.setattr(sys, "stdout", terminal)
    monkeypatch.setenv("COLUMNS", "30")  # narrower than the table
    print_table(["GROUP", "CONSUMER-ID"], [["orders-app", LONG_ID]])
    shown = terminal.getvalue()
    assert "─" in shown and LONG_ID in shown, shown


def test_a_consumer_group_mid_upgrade_shows_which_members_are_upgraded() -> None:
    def member(member_id: str, member_type: int, partitions: list[int]) -> dict:
        assignment = {
            "topic_partitions": [{"topic_id": "x", "topic_name": "orders", "partitions": partitions}]
        }
        return {"member_id": member_id, "instance_id": None, "client_id": member_id, "client_host": "h",
                "member_epoch": 7, "assignment": assignment, "target_assignment": assignment,
                "member_type": member_type}  # fmt: skip

    members = [member("old", 0, [0]), member("new", 1, [1, 2])]
    answer = {"group_id": "g", "group_state": "Stable", "assignor_name": "uniform", "group_epoch": 7,
              "assignment_epoch": 7, "members": members}  # fmt: skip
    group = group_views.consumer_group(answer)
    rows = group_views.members_rows(group)
    part = group_views.section(rows, group_views.members_columns(rows, verbose=True))
    assert part.headers[-1] == "UPGRADED" and [c[-1] for c in part.cells] == ["false", "true"]
    assert [c[part.headers.index("CURRENT-ASSIGNMENT")] for c in part.cells] == ["orders:0", "orders:1,2"]
    assert "UPGRADED" not in [header for header, _ in group_views.members_columns(rows, verbose=False)]

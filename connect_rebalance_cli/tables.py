"""What the admin commands print: rows of named values, as aligned columns or as JSON.

A command builds its answer once, as rows (dicts with snake_case keys) and the columns that
show them, and `emit` prints it the way `--output` asks: a table for people or a JSON array
(one object per row) for scripts, so the two never disagree.

Tables are drawn by rich. On a terminal they get a rule under the header; anywhere else
(a pipe, a file, a test) they are plain columns two spaces apart with no box characters and
no trailing blanks, the layout kafka-consumer-groups prints and `awk`/`split()` read.
"""

from __future__ import annotations

import io
import json
import sys
from collections.abc import Mapping, Sequence
from typing import Any

from rich import box
from rich.console import Console
from rich.table import Table
from rich.text import Text

MISSING = "-"  # kafka-consumer-groups' MISSING_COLUMN_VALUE
# Wide enough that rich never wraps or cuts a cell when the output is not a terminal.
PLAIN_WIDTH = 1_000_000


# A table column: its header, and the key of the row value it shows.
Column = tuple[str, str]


def cell(value: Any) -> str:
    """A value as a table shows it: `-` for none, lists joined with commas, booleans in lower case."""
    if value is None or value == "":
        return MISSING
    if isinstance(value, bool):
        return str(value).lower()
    if isinstance(value, list | tuple):
        return ",".join(map(str, value)) or MISSING
    return str(value)


def _rich_table(headers: Sequence[str], rows: Sequence[Sequence[str]], terminal: bool) -> Table:
    # Cells are Text, never markup: a group or topic named "[bold]" prints as it is.
    table = Table(
        box=box.SIMPLE_HEAD if terminal else None, show_edge=False, pad_edge=False,
        padding=(0, 1) if terminal else (0, 2, 0, 0), header_style="bold" if terminal else "",
    )  # fmt: skip
    for header in headers:
        table.add_column(Text(header), no_wrap=True, overflow="ignore")
    for row in rows:
        table.add_row(*(Text(value) for value in row))
    return table


def render_plain(headers: Sequence[str], rows: Sequence[Sequence[str]]) -> str:
    """The table as plain columns, each line without trailing blanks."""
    out = io.StringIO()
    console = Console(file=out, width=PLAIN_WIDTH, color_system=None, force_terminal=False,
                      markup=False, emoji=False, highlight=False)  # fmt: skip
    console.print(_rich_table(headers, rows, terminal=False))
    return "\n".join(line.rstrip() for line in out.getvalue().splitlines()) + "\n"


def print_table(headers: Sequence[str], rows: Sequence[Sequence[str]]) -> None:
    """Boxed for a terminal; plain columns whenever stdout is not one, whatever the environment
    says about colours (FORCE_COLOR), so that a pipe always reads the same layout."""
    if sys.stdout.isatty():
        console, table = Console(markup=False, emoji=False, highlight=False), _rich_table(headers, rows, True)
        # Never fold or cut a cell (a member id is copied from here): a table wider than the
        # terminal runs on, as kafka-consumer-groups' lines do.
        natural = console.measure(table, options=console.options.update_width(PLAIN_WIDTH)).maximum
        console.width = max(console.width, natural)
        console.print(table)
    else:
        sys.stdout.write(render_plain(headers, rows))
        sys.stdout.flush()


def print_json(document: Any) -> None:
    print(json.dumps(document))


def emit(columns: Sequence[Column], rows: Sequence[Mapping[str, Any]], output: str) -> None:
    """Rows as JSON objects (`--output json`) or as a table of `columns`; a table with no rows
    is not printed, as kafka-consumer-groups prints none."""
    if output == "json":
        print_json([dict(row) for row in rows])
    elif rows:
        print_table(
            [header for header, _ in columns], [[cell(row.get(key)) for _, key in columns] for row in rows]
        )

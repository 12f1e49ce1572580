"""Every figure block in README.md is what its bench script renders from its committed JSON.

A block `<!-- bench:<name> -->` belongs to `bench/<name>.py`, whose `readme_block` renders it
from `bench/results/<name>.json` (bench/readme_table.py). A hand-edited figure, a table with
no data behind it, or results re-run without regenerating the README fail here.
"""

from __future__ import annotations

import difflib

import pytest

from bench.readme_table import readme_blocks, render

pytestmark = pytest.mark.unit
BLOCKS = readme_blocks()


def test_the_readme_has_figure_blocks() -> None:
    assert {"produce_fetch", "consumer_rebalance", "connect_rebalance", "ingest"} <= set(BLOCKS)


@pytest.mark.parametrize("name", sorted(BLOCKS))
def test_a_readme_block_is_rendered_from_its_benchmarks_json(name: str) -> None:
    rendered, written = render(name), BLOCKS[name].strip()
    diff = "\n".join(
        difflib.unified_diff(written.splitlines(), rendered.splitlines(), "README", "JSON", lineterm="")
    )
    assert rendered == written, (
        f"README's bench:{name} block is not what bench/{name}.py renders from bench/results/{name}.json "
        f"(run it with --update-readme):\n{diff}"
    )

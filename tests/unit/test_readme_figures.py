"""Every figure block in README.md and docs/performance.md is what its bench script renders
from its committed JSON.

A block `<!-- bench:<name> -->` belongs to `bench/<name>.py`, whose `readme_block` renders it
from `bench/results/<name>.json` (bench/readme_table.py); the README's summary, `headline`,
from the other benchmarks' JSON. A hand-edited figure, a table with no data behind it, or
results re-run without regenerating the documents fail here.
"""

from __future__ import annotations

import difflib

import pytest

from bench.readme_table import PERFORMANCE, README, readme_blocks, render

pytestmark = pytest.mark.unit
BLOCKS = readme_blocks()


def test_the_readme_has_the_summary_and_docs_performance_the_tables() -> None:
    assert set(readme_blocks((README,))) == {"headline"}
    assert {"produce_fetch", "consumer_rebalance", "connect_rebalance", "ingest"} <= set(
        readme_blocks((PERFORMANCE,))
    )


@pytest.mark.parametrize("name", sorted(BLOCKS))
def test_a_readme_block_is_rendered_from_its_benchmarks_json(name: str) -> None:
    rendered, written = render(name), BLOCKS[name].strip()
    diff = "\n".join(
        difflib.unified_diff(written.splitlines(), rendered.splitlines(), "README", "JSON", lineterm="")
    )
    assert rendered == written, (
        f"the bench:{name} block is not what bench/{name}.py renders from the saved results "
        f"(run it with --update-readme):\n{diff}"
    )

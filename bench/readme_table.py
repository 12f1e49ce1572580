"""Where a benchmark's figures go: between its markers in docs/performance.md (or, for the
headline summary, README.md), rendered from its JSON.

Each bench script owns one block, `<!-- bench:<name> -->` ... `<!-- /bench:<name> -->`, and
rewrites only that block, so the prose around the figures stays as written. The block is
never written by hand: `bench/<name>.py` defines `readme_block(results) -> str`, which renders
it from `bench/results/<name>.json` alone (the JSON the same run saved), and
`--update-readme` writes what it returns. `bench/headline.py` renders the README's summary
from the other benchmarks' JSON. `tests/unit/test_readme_figures.py` renders every block of
both documents the same way and compares, so a figure with no data behind it, or data
re-run without the documents following, fails the fast tier.
"""

from __future__ import annotations

import importlib
import json
import re
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
README = ROOT / "README.md"
PERFORMANCE = ROOT / "docs" / "performance.md"
CONFORMANCE = ROOT / "docs" / "conformance.md"
DOCUMENTS = (README, PERFORMANCE, CONFORMANCE)
RESULTS = ROOT / "bench" / "results"
_BLOCK = re.compile(r"<!-- bench:(?P<name>[\w-]+) -->\n(?P<body>.*?)\n<!-- /bench:(?P=name) -->", re.S)


def readme_blocks(documents: tuple[Path, ...] = DOCUMENTS) -> dict[str, str]:
    """The documents' bench blocks: name -> the text between the markers."""
    return {m["name"]: m["body"] for document in documents for m in _BLOCK.finditer(document.read_text())}


def results_of(name: str) -> Any:
    """What `bench/<name>.py` last saved."""
    return json.loads((RESULTS / f"{name}.json").read_text())


def render(name: str) -> str:
    """The block `bench/<name>.py` renders from its saved results (None for a block, like
    the headline summary, that reads other benchmarks' results itself)."""
    module = importlib.import_module(f"bench.{name}")
    saved = RESULTS / f"{name}.json"
    return str(module.readme_block(results_of(name) if saved.exists() else None)).strip()


def update_readme(name: str, body: str, documents: tuple[Path, ...] = DOCUMENTS) -> None:
    """Replace the block's content with `body`, in whichever document holds it; none is an error."""
    start, end = f"<!-- bench:{name} -->", f"<!-- /bench:{name} -->"
    holding = [d for d in documents if start in (t := d.read_text()) and end in t]
    if not holding:
        raise SystemExit(f"no document has a {start} ... {end} block")
    readme = holding[0]
    text = readme.read_text()
    before, _, rest = text.partition(start)
    _, _, after = rest.partition(end)
    readme.write_text(f"{before}{start}\n{body.strip()}\n{end}{after}")


def publish(name: str, results: Any, readme: bool) -> str:
    """Save a run's results as `bench/results/<name>.json`, and with `readme` rewrite its README
    block from them; the block's text is returned, to print."""
    path = RESULTS / f"{name}.json"
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(json.dumps(results, indent=2) + "\n")
    print(f"saved {path.relative_to(ROOT)}")
    block = render(name)
    if readme:
        update_readme(name, block)
    return block

"""Where a benchmark's headline figures go: between its markers in README.md, rendered from its JSON.

Each bench script owns one block, `<!-- bench:<name> -->` ... `<!-- /bench:<name> -->`, and
rewrites only that block, so the prose around the figures stays as written. The block is
never written by hand: `bench/<name>.py` defines `readme_block(results) -> str`, which renders
it from `bench/results/<name>.json` alone (the JSON the same run saved), and
`--update-readme` writes what it returns. `tests/unit/test_readme_figures.py` renders every
block of the README the same way and compares, so a figure with no data behind it, or data
re-run without the README following, fails the fast tier.
"""

from __future__ import annotations

import importlib
import json
import re
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
README = ROOT / "README.md"
RESULTS = ROOT / "bench" / "results"
_BLOCK = re.compile(r"<!-- bench:(?P<name>[\w-]+) -->\n(?P<body>.*?)\n<!-- /bench:(?P=name) -->", re.S)


def readme_blocks(readme: Path = README) -> dict[str, str]:
    """The README's bench blocks: name -> the text between the markers."""
    return {m["name"]: m["body"] for m in _BLOCK.finditer(readme.read_text())}


def results_of(name: str) -> Any:
    """What `bench/<name>.py` last saved."""
    return json.loads((RESULTS / f"{name}.json").read_text())


def render(name: str) -> str:
    """The block `bench/<name>.py` renders from its saved results."""
    module = importlib.import_module(f"bench.{name}")
    return str(module.readme_block(results_of(name))).strip()


def update_readme(name: str, body: str, readme: Path = README) -> None:
    """Replace the block's content with `body`; a README without the block is an error."""
    text = readme.read_text()
    start, end = f"<!-- bench:{name} -->", f"<!-- /bench:{name} -->"
    if start not in text or end not in text:
        raise SystemExit(f"{readme.name} has no {start} ... {end} block")
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

"""Where a benchmark's headline table goes: between its markers in README.md.

Each bench script owns one block, `<!-- bench:<name> -->` ... `<!-- /bench:<name> -->`, and
rewrites only that block, so the prose around the figures stays as written.
"""

from __future__ import annotations

from pathlib import Path

README = Path(__file__).resolve().parents[1] / "README.md"


def update_readme(name: str, body: str, readme: Path = README) -> None:
    """Replace the block's content with `body`; a README without the block is an error."""
    text = readme.read_text()
    start, end = f"<!-- bench:{name} -->", f"<!-- /bench:{name} -->"
    if start not in text or end not in text:
        raise SystemExit(f"{readme.name} has no {start} ... {end} block")
    before, _, rest = text.partition(start)
    _, _, after = rest.partition(end)
    readme.write_text(f"{before}{start}\n{body.strip()}\n{end}{after}")

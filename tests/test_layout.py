"""The tree shows the architecture, and keeps showing it: the layout rules of docs/workers.md
and docs/protocol.md ("How ... is built"), read from the code's own imports and classes.

- workers/ keeps at most 12 modules at its top level, coordinator/ at most 8 (re-export
  modules count, `__init__.py` does not);
- no import circle among the modules of the four packages, TYPE_CHECKING imports included
  (a package's `__init__` importing its own modules does not count);
- no module of workers/ outside connectors/ imports connectors/;
- no class in workers/ has more than 30 methods.
"""

from __future__ import annotations

import ast
from collections.abc import Iterator
from pathlib import Path

import pytest

pytestmark = pytest.mark.unit
ROOT = Path(__file__).resolve().parents[1]
PACKAGES = ("workers", "coordinator", "connect_rebalance", "connect_rebalance_cli")
NOT_MODULES = ("planner_site",)  # a directory put on Spark planners' path, never imported as a package


def modules() -> dict[str, tuple[Path, bool]]:
    """Dotted name -> (file, whether it is a package's __init__)."""
    found = {}
    for package in PACKAGES:
        for path in (ROOT / package).rglob("*.py"):
            parts = list(path.relative_to(ROOT).with_suffix("").parts)
            if any(part in NOT_MODULES for part in parts):
                continue
            is_init = parts[-1] == "__init__"
            found[".".join(parts[:-1] if is_init else parts)] = (path, is_init)
    return found


def imports_of(name: str, path: Path, is_init: bool, known: dict[str, tuple[Path, bool]]) -> set[str]:
    """The project modules `name` imports, anywhere in its file."""
    package = name.split(".") if is_init else name.split(".")[:-1]

    def resolved(dotted: str) -> str | None:
        while dotted and dotted not in known:
            dotted = dotted.rpartition(".")[0]
        return dotted or None

    found: set[str | None] = set()
    for node in ast.walk(ast.parse(path.read_text())):
        if isinstance(node, ast.ImportFrom):
            base = node.module or ""
            if node.level:
                base = ".".join(package[: len(package) - node.level + 1] + ([base] if base else []))
            for alias in node.names:
                found.add(
                    resolved(f"{base}.{alias.name}") if f"{base}.{alias.name}" in known else resolved(base)
                )
        elif isinstance(node, ast.Import):
            found.update(resolved(alias.name) for alias in node.names)
    deps = {d for d in found if d is not None and d != name}
    return {d for d in deps if not d.startswith(name + ".")} if is_init else deps


def graph() -> dict[str, set[str]]:
    known = modules()
    return {name: imports_of(name, path, is_init, known) for name, (path, is_init) in known.items()}


def circles(edges: dict[str, set[str]]) -> Iterator[list[str]]:
    """Strongly connected components of more than one module (Tarjan's, iterative)."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on_stack: set[str] = set()
    for root in edges:
        if root in index:
            continue
        work = [(root, iter(sorted(edges[root])))]
        index[root] = low[root] = len(index)
        stack.append(root)
        on_stack.add(root)
        while work:
            node, children = work[-1]
            child = next(children, None)
            if child is not None:
                if child not in index:
                    index[child] = low[child] = len(index)
                    stack.append(child)
                    on_stack.add(child)
                    work.append((child, iter(sorted(edges[child]))))
                elif child in on_stack:
                    low[node] = min(low[node], index[child])
                continue
            work.pop()
            if work:
                low[work[-1][0]] = min(low[work[-1][0]], low[node])
            if low[node] == index[node]:
                component = []
                while True:
                    member = stack.pop()
                    on_stack.discard(member)
                    component.append(member)
                    if member == node:
                        break
                if len(component) > 1:
                    yield sorted(component)


def test_few_modules_stand_at_the_top_of_workers_and_coordinator() -> None:
    for package, most in (("workers", 12), ("coordinator", 8)):
        top = sorted(p.name for p in (ROOT / package).glob("*.py") if p.name != "__init__.py")
        assert len(top) <= most, f"{package}/ has {len(top)} top-level modules, at most {most}: {top}"


def test_no_import_circle_across_the_packages() -> None:
    found = list(circles(graph()))
    assert found == [], f"import circles: {found}"


def test_nothing_of_the_worker_imports_its_connectors() -> None:
    edges = graph()
    reaching = {
        name: sorted(d for d in deps if d.startswith("workers.connectors"))
        for name, deps in edges.items()
        if name.startswith("workers.") and not name.startswith("workers.connectors")
    }
    assert {name: deps for name, deps in reaching.items() if deps} == {}


def test_no_class_of_the_worker_has_more_than_30_methods() -> None:
    large = {}
    for path in (ROOT / "workers").rglob("*.py"):
        for node in ast.walk(ast.parse(path.read_text())):
            if isinstance(node, ast.ClassDef):
                count = sum(isinstance(b, ast.FunctionDef | ast.AsyncFunctionDef) for b in node.body)
                if count > 30:
                    large[f"{path.relative_to(ROOT)}:{node.name}"] = count
    assert large == {}

"""`python -m tests.mutations [NAME ...] [--check] [--baseline] [--list]`: see the package docstring."""

from __future__ import annotations

import argparse
import sys

from .catalog import by_name
from .runner import MutationOutcome, SnippetNotFound, check_applies, run_mutation, working_tree_files


def report(outcome: MutationOutcome) -> str:
    mark = "CAUGHT" if outcome.caught else "MISSED"
    m = outcome.mutation
    lines = [f"{mark}  {m.name}  ({m.file}, {outcome.seconds:.0f} s): {m.breaks}"]
    for test in outcome.tests:
        lines.append(f"    {test.verdict:<9} {test.test}")
        if test.detail:
            lines.append(f"              {test.detail}")
    return "\n".join(lines)


def main() -> int:
    parser = argparse.ArgumentParser(prog="python -m tests.mutations", description=__doc__)
    parser.add_argument("names", nargs="*", help="mutations to run (default: all)")
    parser.add_argument("--check", action="store_true", help="only check that every snippet applies")
    parser.add_argument("--baseline", action="store_true", help="first run each mutation's tests unmutated")
    parser.add_argument("--list", action="store_true", help="list the mutations and their tests")
    args = parser.parse_args()
    mutations = by_name(args.names)
    if args.list:
        for m in mutations:
            print(f"{m.name}: {m.breaks}\n  {m.file}\n" + "".join(f"  -> {t}\n" for t in m.tests))
        return 0
    problems = []
    for m in mutations:
        try:
            check_applies(m)
        except SnippetNotFound as exc:
            problems.append(str(exc))
    if problems:
        print("mutations that no longer apply (update their snippets in tests/mutations/catalog.py):")
        print("\n\n".join(problems))
        return 2
    if args.check:
        print(f"all {len(mutations)} mutations apply")
        return 0
    files = working_tree_files()
    if args.baseline:
        for m in mutations:
            unmutated = run_mutation(m, files, mutate=False)
            failing = [t for t in unmutated.tests if t.verdict != "passed"]
            print(f"baseline {m.name}: " + ("passed" if not failing else f"{failing}"), flush=True)
            if failing:
                return 3
    outcomes = []
    for m in mutations:
        outcome = run_mutation(m, files)
        outcomes.append(outcome)
        print(report(outcome), flush=True)
    caught = sum(o.caught for o in outcomes)
    print(f"\n{caught} of {len(outcomes)} mutations caught by their tests' own assertions")
    return 0 if caught == len(outcomes) else 1


if __name__ == "__main__":
    sys.exit(main())

"""Mutation checks: does each test fail when the promise it is named after is broken?

`catalog.py` lists named one-line mutations of the product, each with the test(s) that must
then fail. `python -m tests.mutations` applies each mutation to a fresh copy of the working
tree, runs its tests there, and reports for each whether every one of them failed on an
assertion of the test itself (caught), or passed, timed out, or broke with an error
(missed). It is not part of the default test run: it runs the slow tests once per mutation.

    .venv/bin/python -m tests.mutations                 # every mutation
    .venv/bin/python -m tests.mutations NAME [NAME ...]  # some
    .venv/bin/python -m tests.mutations --check         # only: does every snippet still apply?
    .venv/bin/python -m tests.mutations --baseline      # also run the tests unmutated first

A mutation names a file, an exact snippet of it and its replacement. When the code moves
on, `--check` (and every run) fails loudly naming each mutation whose snippet is no longer
found exactly once: update the snippet, keeping the mutation's meaning.
"""

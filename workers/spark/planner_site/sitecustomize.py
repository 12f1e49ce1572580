"""Python's start-up hook in Spark's Python processes on a worker's machine (spark/planner_host.py).

The worker's Spark runtime puts this directory first on their import path. A process started
as a streaming query's planner hands its query to the worker's planner host and exits; every
other process (and a planner when no host answers) goes on as it would have, after any other
`sitecustomize` on the path has run.
"""

import os
import sys


def _hand_over_a_planner() -> None:
    host = os.environ.get("CONNECT_REBALANCE_PLANNER_HOST")
    if not host or sys.orig_argv[-2:] != ["-m", "pyspark.sql.streaming.python_streaming_source_runner"]:
        return  # not a planner (planner_host.is_planner), or no host to hand it to
    from workers.spark.planner_host import hand_over

    if hand_over(host):
        sys.stdout.flush()
        os._exit(0)


def _run_the_next_sitecustomize() -> None:
    """The `sitecustomize` this one hides on the path, if there is one."""
    import importlib.machinery
    import importlib.util

    here = os.path.dirname(os.path.abspath(__file__))
    others = [p for p in sys.path if os.path.abspath(p or ".") != here]
    spec = importlib.machinery.PathFinder.find_spec("sitecustomize", others)
    if spec is not None and spec.loader is not None:
        spec.loader.exec_module(importlib.util.module_from_spec(spec))


_hand_over_a_planner()
_run_the_next_sitecustomize()

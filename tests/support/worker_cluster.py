"""Worker clusters for integration tests: `workers.harness.cluster`, where the quickstart and the
benchmarks find it too."""

from workers.harness.cluster import WorkerCluster, metrics, rest, stops

__all__ = ["WorkerCluster", "metrics", "rest", "stops"]

"""Worker clusters for integration tests: `workers.cluster`, where the quickstart and the
benchmarks find it too."""

from workers.cluster import WorkerCluster, metrics, rest, stops

__all__ = ["WorkerCluster", "metrics", "rest", "stops"]

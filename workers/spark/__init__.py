"""The Spark side of a task: the shared session and its runtime, the `SparkTask` base class,
the warm-up, the planner host, the start gate, the Kafka topic data source (its reads, its
partition split, its handoff on a task count change), checkpoint generations (KIP-875 on
checkpoints), Parquet output and Spark's metadata logs read without Spark.

Imports `plugins/` and `config/`; connectors import it, never the reverse.
"""

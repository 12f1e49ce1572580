"""`workers.spark_task`, the README's import of the Spark task base class (workers/spark/task.py)."""

from workers.spark.task import SparkTask

__all__ = ["SparkTask"]

"""A throw-away streaming query that readies a new SparkSession for the tasks' queries.

A session's first streaming query pays for what its later ones reuse: code generation for
the streaming and Parquet paths, the JVM's JIT, the Python data source's planner protocol
and the Python workers (pyspark-notes §3-4). A trivial batch job does not warm those: on a
warm session the first TopicIngest task took 5.1 s to its first committed batch, every later
one 1.3 s. So the runtime's warm-up runs this query once — a Python data source of a few
rows into Parquet, to completion — in a scratch directory it then removes, and the first
task assigned to the worker starts as fast as any other.

The source lives in a module of its own because Spark's Python processes import it by name.
"""

from __future__ import annotations

import shutil
import tempfile
from collections.abc import Iterator
from typing import Any

from pyspark.sql.datasource import DataSource, DataSourceStreamReader, InputPartition

ROWS = 10
TIMEOUT_S = 120


class _WarmupReader(DataSourceStreamReader):
    """Offsets 0 -> ROWS: one batch of ROWS rows, then nothing new."""

    def initialOffset(self) -> dict[str, int]:  # noqa: N802 - Spark's names
        return {"offset": 0}

    def latestOffset(self, start: dict[str, int] | None = None, limit: Any = None) -> dict[str, int]:  # noqa: N802
        return {"offset": ROWS}

    def partitions(self, start: dict[str, int], end: dict[str, int]) -> list[InputPartition]:
        return [InputPartition((start["offset"], end["offset"]))]

    def read(self, partition: InputPartition) -> Iterator[tuple[int, bytes]]:
        first, end = partition.value
        for n in range(first, end):
            yield n, str(n).encode()

    def commit(self, end: dict[str, int]) -> None:
        pass


class WarmupSource(DataSource):
    @classmethod
    def name(cls) -> str:
        return "connect-warmup"

    def schema(self) -> str:
        return "offset long, value binary"

    def streamReader(self, schema: Any) -> DataSourceStreamReader:  # noqa: N802
        return _WarmupReader()


def run_warmup_query(spark: Any) -> None:
    """Run the warm-up query to its end (bounded), leaving nothing behind on disk."""
    scratch = tempfile.mkdtemp(prefix="spark-warmup-")
    try:
        spark.dataSource.register(WarmupSource)
        query = (
            spark.readStream.format(WarmupSource.name())
            .load()
            .writeStream.format("parquet")
            .option("path", f"{scratch}/out")
            .option("checkpointLocation", f"{scratch}/checkpoint")
            .queryName("connect-worker-warmup")
            .trigger(availableNow=True)
            .start()
        )
        try:
            if not query.awaitTermination(TIMEOUT_S):
                raise TimeoutError(f"the warm-up query did not end within {TIMEOUT_S} s")
        finally:
            query.stop()
    finally:
        shutil.rmtree(scratch, ignore_errors=True)

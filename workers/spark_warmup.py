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
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

from pyspark.sql.datasource import DataSource, DataSourceStreamReader, InputPartition

ROWS = 10  # per partition and batch
BATCHES = 3  # a task's first batch follows code the JVM has run more than once
TIMEOUT_S = 120


class _WarmupReader(DataSourceStreamReader):
    """BATCHES batches, each of ROWS rows in each of `parallelism` partitions (every core's
    Python worker reads), rows shaped and sent as the `topic` source's: Arrow record batches of
    its schema, built by its code (so the Python workers have imported it)."""

    def __init__(self, parallelism: int) -> None:
        self.parallelism = parallelism

    def initialOffset(self) -> dict[str, int]:  # noqa: N802 - Spark's names
        return {"offset": 0}

    def getDefaultReadLimit(self) -> Any:  # noqa: N802
        from pyspark.sql.streaming.datasource import ReadMaxRows

        return ReadMaxRows(ROWS * self.parallelism)

    def latestOffset(self, start: dict[str, int] | None = None, limit: Any = None) -> dict[str, int]:  # noqa: N802
        from pyspark.sql.streaming.datasource import ReadMaxRows

        total = ROWS * self.parallelism * BATCHES
        if start is not None and isinstance(limit, ReadMaxRows):
            return {"offset": min(start["offset"] + limit.max_rows, total)}
        return {"offset": total}

    def partitions(self, start: dict[str, int], end: dict[str, int]) -> list[InputPartition]:
        first, last = start["offset"], end["offset"]
        step = max(1, -(-(last - first) // self.parallelism))
        return [InputPartition((n, min(n + step, last))) for n in range(first, last, step)]

    def read(self, partition: InputPartition) -> Iterator[Any]:
        import confluent_kafka  # noqa: F401 - librdkafka's load: the first read's cost
        from pyspark.sql.pandas.types import to_arrow_schema

        from .connectors.partition_reads import arrow_batch
        from .connectors.topic_spark_source import SCHEMA

        first, end = partition.value
        records = [_Message(n) for n in range(first, end)]
        yield arrow_batch("connect-warmup", 0, records, to_arrow_schema(SCHEMA, timezone="UTC"))

    def commit(self, end: dict[str, int]) -> None:
        pass


class _Message:
    """A record as librdkafka hands it over (the methods `arrow_batch` calls)."""

    def __init__(self, offset: int) -> None:
        self._offset = offset

    def offset(self) -> int:
        return self._offset

    def timestamp(self) -> tuple[int, int]:
        return 1, self._offset

    def key(self) -> bytes | None:
        return None

    def value(self) -> bytes:
        return str(self._offset).encode()


class WarmupSource(DataSource):
    @classmethod
    def name(cls) -> str:
        return "connect-warmup"

    def schema(self) -> Any:
        from .connectors.topic_spark_source import SCHEMA

        return SCHEMA

    def streamReader(self, schema: Any) -> DataSourceStreamReader:  # noqa: N802
        return _WarmupReader(int(self.options.get("parallelism", "2")))


def run_warmup_query(spark: Any) -> None:
    """Run the warm-up query to its end (bounded), leaving nothing behind on disk."""
    spark.dataSource.register(WarmupSource)

    def frame(scratch: Path) -> Any:
        return (
            spark.readStream.format(WarmupSource.name())
            .option("parallelism", str(spark.sparkContext.defaultParallelism))
            .load()
        )

    run_in_scratch(frame, "connect-worker-warmup")


def run_in_scratch(
    frame: Callable[[Path], Any], name: str | None = None, timeout_s: float = TIMEOUT_S
) -> None:
    """Run a throw-away streaming query to its end (bounded): `frame(scratch)`, the DataFrame
    it reads (its input may be written under `scratch`), into Parquet in `scratch`, removed
    afterwards with its checkpoint."""
    scratch = Path(tempfile.mkdtemp(prefix="spark-warmup-"))
    try:
        writer = (
            frame(scratch).writeStream.format("parquet").option("path", str(scratch / "out"))
            .option("checkpointLocation", str(scratch / "checkpoint")).trigger(availableNow=True)
        )  # fmt: skip
        query = (writer.queryName(name) if name else writer).start()
        try:
            if not query.awaitTermination(timeout_s):
                raise TimeoutError(f"the warm-up query did not end within {timeout_s:.0f} s")
        finally:
            query.stop()
    finally:
        shutil.rmtree(scratch, ignore_errors=True)

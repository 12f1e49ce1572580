"""A throw-away streaming query that readies a new SparkSession for the tasks' queries.

A session's first streaming query pays for what its later ones reuse: code generation for
the streaming and Parquet paths, the JVM's JIT, the Python data source's planner protocol
and the Python workers (pyspark-notes §3-4). A trivial batch job does not warm those: on a
warm session the first TopicIngest task took 5.1 s to its first committed batch, every later
one 1.3 s. So the runtime's warm-up runs this query — a Python data source of a few rows into
Parquet, BATCHES batches to completion — in a scratch directory it then removes, and the first
task assigned to the worker starts as fast as any other.

A task about to move here (a prepared run, distributed/warm_handoff.py) runs it again (`warm_reads`), for
as many batches as the file sink takes to compact its metadata log for the first time
(`prepared_batches`), and with the task's `topic` source options: each read then readies the
Python worker's consumer for the task's topics (partition_reads.connect). Measured on a
2-core machine, a joining worker's first batch of a moved task took 0.9-1.2 s after one
warm-up batch, as against 0.4-0.6 s after ten, and the handoff gap 1.3-1.8 s against
0.6-0.9 s: the JVM compiles what runs often (planning, the logs, Parquet's writer) and the
first compaction reads and writes the log's JSON, all before the move instead of in it.

The source lives in a module of its own because Spark's Python processes import it by name.
"""

from __future__ import annotations

import shutil
import tempfile
from collections.abc import Callable, Iterator, Mapping
from pathlib import Path
from typing import Any

from pyspark.sql.datasource import CaseInsensitiveDict, DataSource, DataSourceStreamReader, InputPartition
from pyspark.sql.streaming.datasource import SupportsTriggerAvailableNow

ROWS = 10  # per partition and batch
BATCHES = 3  # a task's first batch follows code the JVM has run more than once
TIMEOUT_S = 120
# The source's own options; any other is the `topic` source's.
PARALLELISM, BATCHES_OPTION = "connect.warmup.parallelism", "connect.warmup.batches"
COMPACT_INTERVAL = "spark.sql.streaming.fileSink.log.compactInterval"  # Spark's, 10 by default
MAX_PREPARED_BATCHES = 20


class _WarmupReader(DataSourceStreamReader, SupportsTriggerAvailableNow):
    """`batches` batches, each of ROWS rows in each of `parallelism` partitions (every core's
    Python worker reads), rows shaped and sent as the `topic` source's: Arrow record batches of
    its schema, built by its code (so the Python workers have imported it). With the `topic`
    source's options (`topic_options`), each read also readies its Python worker's consumer for
    that source's reads."""

    def __init__(self, parallelism: int, batches: int, topic_options: Mapping[str, str]) -> None:
        self.parallelism, self.batches, self.topic_options = parallelism, batches, topic_options

    def prepareForTriggerAvailableNow(self) -> None:  # noqa: N802
        """Nothing to fix: the end is known. Implemented so that Spark's `availableNow` keeps
        to the read limit, batch by batch (for a source without it, it reads all in one)."""

    def initialOffset(self) -> dict[str, int]:  # noqa: N802 - Spark's names
        return {"offset": 0}

    def getDefaultReadLimit(self) -> Any:  # noqa: N802
        from pyspark.sql.streaming.datasource import ReadMaxRows

        return ReadMaxRows(ROWS * self.parallelism)

    def latestOffset(self, start: dict[str, int] | None = None, limit: Any = None) -> dict[str, int]:  # noqa: N802
        from pyspark.sql.streaming.datasource import ReadMaxRows

        total = ROWS * self.parallelism * self.batches
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

        from workers.spark.partition_reads import arrow_batch
        from workers.spark.topic_source import SCHEMA, TopicStreamReader

        if self.topic_options:
            TopicStreamReader(self.topic_options).connect_reads()
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
        from workers.spark.topic_source import SCHEMA

        return SCHEMA

    def streamReader(self, schema: Any) -> DataSourceStreamReader:  # noqa: N802
        options = CaseInsensitiveDict(self.options)  # as the topic source reads them
        parallelism = int(options.pop(PARALLELISM, "2"))
        batches = int(options.pop(BATCHES_OPTION, str(BATCHES)))
        return _WarmupReader(parallelism, batches, options)


def run_warmup_query(spark: Any) -> int:
    """Run the warm-up query to its end (bounded), leaving nothing behind on disk; its batches."""
    return run_in_scratch(lambda scratch: _warmup_frame(spark, BATCHES, {}), "connect-worker-warmup")


def warm_reads(spark: Any, topic_options: dict[str, str]) -> int:
    """The warm-up query again for a task about to start here (`prepared_batches`), its reads
    readying their Python workers' consumers for a `topic` source with `topic_options`:
    bounded, nothing left; its batches."""
    return run_in_scratch(lambda scratch: _warmup_frame(spark, prepared_batches(spark), topic_options))


def prepared_batches(spark: Any) -> int:
    """How many batches a prepared run's warm-up runs: through the file sink's first compaction
    of its metadata log (at its compact interval's last batch), at most MAX_PREPARED_BATCHES."""
    try:
        interval = int(spark.conf.get(COMPACT_INTERVAL, "10"))
    except ValueError:
        interval = 10  # Spark refuses such a setting itself, when a file sink starts
    return max(1, min(interval, MAX_PREPARED_BATCHES))


def _warmup_frame(spark: Any, batches: int, topic_options: dict[str, str]) -> Any:
    spark.dataSource.register(WarmupSource)
    own = {PARALLELISM: str(spark.sparkContext.defaultParallelism), BATCHES_OPTION: str(batches)}
    return spark.readStream.format(WarmupSource.name()).options(**{**topic_options, **own}).load()


def run_in_scratch(
    frame: Callable[[Path], Any], name: str | None = None, timeout_s: float = TIMEOUT_S
) -> int:
    """Run a throw-away streaming query to its end (bounded): `frame(scratch)`, the DataFrame
    it reads (its input may be written under `scratch`), into Parquet in `scratch`, removed
    afterwards with its checkpoint. The batches it ran."""
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
            last = query.lastProgress
            return int(last["batchId"]) + 1 if last else 0
        finally:
            query.stop()
    finally:
        shutil.rmtree(scratch, ignore_errors=True)

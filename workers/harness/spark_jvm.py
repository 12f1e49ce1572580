"""JVM options for Spark drivers that live for minutes, not days: the quickstart's, the tests'.

Such a JVM spends most of its CPU starting: loading some 15,000 classes and compiling them.
Two things cut that:
- `SHORT_LIVED_JVM_OPTIONS`: the C1 compiler alone and the serial collector. A local session's
  start and ten small batches take 10 s of CPU instead of 17 s on two cores, at the same batch
  times. A worker that runs for days keeps the JVM's defaults, whose C2 compiler pays off
  over hours.
- A class archive (the JVM's application class-data sharing): the classes a session loads,
  parsed and verified once, mapped by every later JVM of the same Java and Spark. It halves
  the start again (about 5.5 s of CPU to 2.9 s). `build_class_archive` writes one from a
  throw-away session that runs the warm-up query (`spark/warmup.py`) and reads Parquet; a JVM
  given an archive that does not exist, or that another Java wrote, starts without it.
"""

from __future__ import annotations

import contextlib
import fcntl
import hashlib
import os
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path

SHORT_LIVED_JVM_OPTIONS = "-XX:TieredStopAtLevel=1 -XX:+UseSerialGC"
BUILD_TIMEOUT_S = 600


def class_archive_path(directory: Path) -> Path:
    """Where the archive for this Java and this PySpark lives under `directory`: a JVM only
    maps an archive its own build wrote, so each pair has its own file."""
    import pyspark

    java_home = os.environ.get("JAVA_HOME")
    java = str(Path(java_home) / "bin" / "java") if java_home else shutil.which("java") or "java"
    key = hashlib.sha256(f"{os.path.realpath(java)} {pyspark.__version__}".encode()).hexdigest()[:12]
    return directory / f"spark-{pyspark.__version__}-{key}.jsa"


def driver_options(archive: Path) -> str:
    """A short-lived driver's JVM options, mapping `archive` when it is there."""
    return f"{SHORT_LIVED_JVM_OPTIONS} -XX:SharedArchiveFile={archive}"


def build_class_archive(archive: Path) -> None:
    """Write `archive` unless it exists, once however many processes ask at the same time
    (a lock file beside it); the JVM writes it as the throw-away session's JVM exits."""
    archive.parent.mkdir(parents=True, exist_ok=True)
    with open(archive.with_suffix(".lock"), "w") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)
        if archive.exists():
            return
        partial = archive.with_suffix(".partial")
        with contextlib.suppress(FileNotFoundError):
            partial.unlink()
        subprocess.run(
            [sys.executable, "-m", __name__, str(partial)],
            check=True, timeout=BUILD_TIMEOUT_S, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
        )  # fmt: skip
        if not partial.exists():
            raise RuntimeError(f"the JVM wrote no class archive at {partial}")
        partial.rename(archive)


def _run_throwaway_session(partial: str) -> None:
    """A session as a worker starts and warms it, that also writes and reads Parquet (as
    tests read what tasks wrote), and archives the classes it loaded when its JVM exits."""
    from workers.spark.runtime import SparkRuntime
    from workers.spark.warmup import run_warmup_query

    scratch = tempfile.mkdtemp(prefix="spark-archive-")
    archiving = f"{SHORT_LIVED_JVM_OPTIONS} -XX:ArchiveClassesAtExit={partial}"
    settings = {"spark.ui.enabled": "false", "spark.sql.shuffle.partitions": "1",
                "spark.driver.extraJavaOptions": archiving}  # fmt: skip
    runtime = SparkRuntime("local[1]", settings, f"{scratch}/checkpoints", stop_timeout_ms=30_000)
    try:
        spark = runtime.session()  # as a worker's, with its Python environment
        run_warmup_query(spark)
        spark.range(10).write.parquet(f"{scratch}/rows")
        spark.read.parquet(f"{scratch}/rows").count()
    finally:
        runtime.close()
        shutil.rmtree(scratch, ignore_errors=True)
    # The JVM writes the archive as it exits, which it does when its stdin closes (PySpark's
    # gateway contract): wait for that, so the archive is whole once this process has ended.
    from pyspark import SparkContext

    jvm = SparkContext._gateway.proc  # type: ignore[attr-defined]
    jvm.stdin.close()
    jvm.wait(BUILD_TIMEOUT_S)


if __name__ == "__main__":
    _run_throwaway_session(sys.argv[1])

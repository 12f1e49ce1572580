"""Fuzzing at scale: a coordinator process driven with a million hostile frames over TCP.

Frames, drawn at random from four kinds:
- random: a header of a random API key and version (supported or not), then random bytes;
- mutated: a request captured from a real client (tests/fixtures/conformance-frames) with
  bytes flipped, a run of bytes overwritten with 0x7f/0xff (huge lengths and counts), or a
  slice deleted or repeated;
- truncated: a real request cut short (its size prefix states the cut length);
- oversized: a real request's header with an array count in the millions, or a size prefix
  past `socket.request.max.bytes`.

Each frame goes out on one of several connections and the answer (or the close, or silence
past 2 s) is awaited before that connection sends its next frame; a closed connection is
opened again. The coordinator's resident memory is sampled every 50,000 frames.

Reported: frames sent, answered, closed by the server and unanswered; the coordinator still
running; handler failures (requests that raised inside the coordinator: its log's
"failed; closing" lines, each a bug); resident memory at the start, after the first 10% and at
the end.

Then a worker's REST API: schemathesis generates requests for every route from the OpenAPI
document the worker serves, valid by it and not (tests/support/rest_fuzz.py), `--rest-examples`
per route, in rounds; reported are the statuses, 5xx answers, error bodies that are not Kafka
Connect's, statuses the document does not list, and the worker's memory after each round.

    python bench/fuzz.py [--frames 1000000] [--connections 8] [--seed 1]
                         [--rest-examples 1000] [--update-readme]

Not part of CI: tests/unit/test_frame_fuzz.py runs a small slice of the same frames in-process,
and tests/integration/test_rest_fuzz.py a slice of the REST run.
Saves bench/results/fuzz.json.
"""

from __future__ import annotations

import argparse
import asyncio
import collections
import os
import platform
import random
import re
import struct
import sys
import tempfile
import time
from datetime import datetime
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from bench.readme_table import publish  # noqa: E402
from connect_rebalance.processes import CoordinatorProcess, connect_timings  # noqa: E402
from tests.support.frames import captured_frames, request_bytes  # noqa: E402
from tests.support.rest_fuzz import RestFuzzResult, fuzz_rest  # noqa: E402
from tests.support.worker_cluster import WorkerCluster  # noqa: E402

ANSWER_WAIT_S = 2.0
KINDS = ("random", "mutated", "truncated", "oversized")
WEIGHTS = (20, 50, 20, 10)


class Frames:
    """The hostile frames, each with its size prefix."""

    def __init__(self, seed: int) -> None:
        self.rng = random.Random(seed)
        self.real = [request_bytes(p) for p in captured_frames()]

    def next(self) -> tuple[str, bytes]:
        kind = self.rng.choices(KINDS, WEIGHTS)[0]
        return kind, getattr(self, f"_{kind}")()

    @staticmethod
    def _framed(payload: bytes) -> bytes:
        return struct.pack(">i", len(payload)) + payload

    def _random(self) -> bytes:
        rng = self.rng
        header = struct.pack(
            ">hhih", rng.randrange(-2, 100), rng.randrange(-1, 20), rng.randrange(1 << 31), 4
        )
        return self._framed(header + b"fuzz" + rng.randbytes(rng.randrange(0, 300)))

    def _mutated(self) -> bytes:
        rng = self.rng
        frame = bytearray(rng.choice(self.real))
        for _ in range(rng.randrange(1, 6)):
            if not frame:
                break
            at = rng.randrange(len(frame))
            how = rng.randrange(4)
            if how == 0:
                frame[at] ^= 1 << rng.randrange(8)
            elif how == 1:
                run = rng.randrange(1, 5)
                frame[at : at + run] = bytes([rng.choice((0x7F, 0xFF))]) * run
            elif how == 2:
                del frame[at : at + rng.randrange(1, 16)]
            else:
                frame[at:at] = frame[at : at + rng.randrange(1, 64)]
        return self._framed(bytes(frame))

    def _truncated(self) -> bytes:
        frame = self.rng.choice(self.real)
        return self._framed(frame[: self.rng.randrange(len(frame))])

    def _oversized(self) -> bytes:
        rng = self.rng
        if rng.random() < 0.3:
            return struct.pack(">i", rng.randrange(100 * 1024 * 1024 + 1, 1 << 31)) + rng.randbytes(64)
        frame = bytearray(rng.choice(self.real))
        at = rng.randrange(10, max(11, len(frame) - 4))
        frame[at : at + 4] = struct.pack(">i", rng.randrange(1_000_001, 1 << 31))
        return self._framed(bytes(frame))


class Tally:
    def __init__(self) -> None:
        self.sent = collections.Counter[str]()
        self.outcomes = collections.Counter[str]()
        self.done = 0


async def drive(port: int, frames: Frames, total: int, tally: Tally, connections: int) -> None:
    async def one_connection() -> None:
        reader = writer = None
        while tally.done < total:
            if writer is None:
                try:
                    reader, writer = await asyncio.open_connection("127.0.0.1", port)
                except OSError:
                    await asyncio.sleep(0.05)
                    continue
            assert reader is not None
            kind, frame = frames.next()
            tally.sent[kind] += 1
            tally.done += 1
            try:
                writer.write(frame)
                await writer.drain()
                prefix = await asyncio.wait_for(reader.readexactly(4), ANSWER_WAIT_S)
                await asyncio.wait_for(reader.readexactly(struct.unpack(">i", prefix)[0]), ANSWER_WAIT_S)
                tally.outcomes["answered"] += 1
                continue
            except (asyncio.IncompleteReadError, ConnectionError):
                tally.outcomes["closed by the coordinator"] += 1
            except TimeoutError:
                tally.outcomes["no answer within 2 s (acks=0, a parked join, half a frame)"] += 1
            writer.close()
            reader = writer = None

    await asyncio.gather(*(one_connection() for _ in range(connections)))


def rss_mb(pid: int) -> float:
    status = Path(f"/proc/{pid}/status").read_text()
    return int(re.search(r"VmRSS:\s+(\d+)", status)[1]) / 1024  # type: ignore[index]


def fuzz_wire(frames_total: int, connections: int, seed: int, base: Path) -> dict[str, Any]:
    coordinator = CoordinatorProcess(base / "data", {"auto.create.topics.enable": "false",
                                                      "group.initial.rebalance.delay.ms": "0"})  # fmt: skip
    coordinator.start()
    assert coordinator.process is not None
    pid = coordinator.process.pid
    frames, tally = Frames(seed), Tally()
    memory = [(0, rss_mb(pid))]
    started = time.monotonic()
    try:
        step = 50_000
        while tally.done < frames_total:
            asyncio.run(
                drive(coordinator.port, frames, min(frames_total, tally.done + step), tally, connections)
            )
            memory.append((tally.done, rss_mb(pid)))
            print(f"{tally.done:,} frames, {time.monotonic() - started:.0f} s, RSS {memory[-1][1]:.0f} MB",
                  flush=True)  # fmt: skip
        running = coordinator.is_running()
    finally:
        coordinator.stop()
    log_text = coordinator.log_text()
    failures = collections.Counter(re.findall(r"\): (\w+) v\d+ failed; closing", log_text))
    (base.parent / "fuzz-coordinator.log").write_text(log_text)  # kept for reading the failures
    tenth = next(mb for done, mb in memory if done >= frames_total // 10)
    return {
        "frames": tally.done, "seconds": round(time.monotonic() - started), "by_kind": dict(tally.sent),
        "outcomes": dict(tally.outcomes), "still_running": running,
        "handler_failures": sum(failures.values()), "handler_failures_by_api": dict(failures),
        "tracebacks": log_text.count("Traceback"),
        "failure_kinds": dict(collections.Counter(_failure_kinds(log_text)).most_common(20)),
        "rss_mb": {"start": round(memory[0][1]), "after_10_percent": round(tenth),
                   "end": round(memory[-1][1]), "most": round(max(mb for _, mb in memory))},
        "memory": memory,
    }  # fmt: skip


def fuzz_worker_rest(examples: int, base: Path, rounds: int = 5) -> dict[str, Any]:
    """`examples` generated requests per route, in `rounds`, the worker's RSS after each."""
    base.mkdir(parents=True)
    coordinator = CoordinatorProcess(base / "data", connect_timings(3000)).start()
    cluster = WorkerCluster(base, coordinator)
    total = RestFuzzResult()
    started = time.monotonic()
    try:
        worker = cluster.start("w1")
        assert worker.process is not None
        memory = [rss_mb(worker.process.pid)]
        for _ in range(rounds):
            part = fuzz_rest(worker.url, max(1, examples // rounds))
            total.requests += part.requests
            total.statuses.update(part.statuses)
            total.server_errors += part.server_errors
            total.not_kafka_connect_errors += part.not_kafka_connect_errors
            total.undocumented += part.undocumented
            memory.append(rss_mb(worker.process.pid))
            print(f"REST: {total.requests:,} requests, worker RSS {memory[-1]:.0f} MB", flush=True)
        running = worker.process.poll() is None
        tracebacks = worker.log_text().count("Traceback")
    finally:
        cluster.stop_all()
        coordinator.kill()
    return {**total.summary(), "seconds": round(time.monotonic() - started), "worker_still_running": running,
            "worker_tracebacks": tracebacks, "worker_rss_mb": [round(mb) for mb in memory]}  # fmt: skip


def _failure_kinds(log_text: str) -> list[str]:
    """Each traceback as `API: the innermost frame of the project's code: the exception`."""
    kinds = []
    for block in log_text.split("Traceback (most recent call last):")[1:]:
        lines = [line for line in block.splitlines() if line.strip()]
        ours = [
            line.strip()
            for line in lines
            if line.strip().startswith('File "') and "/site-packages/" not in line
        ]
        error = next((line for line in lines if not line.startswith(" ")), "?")
        kinds.append(f"{ours[-1] if ours else '?'}: {error[:160]}")
    return kinds


def readme_block(results: dict[str, Any]) -> str:
    wire = results["wire"]
    rss = wire["rss_mb"]
    outcomes = ", ".join(f"{count:,} {what}" for what, count in wire["outcomes"].items())
    lines = [
        f"Fuzzing ({results['machine']}, {results['date']}), `python bench/fuzz.py`:",
        "",
        "| | goal | result |",
        "|---|---|---|",
        f"| hostile frames over TCP to one coordinator | 1,000,000 | {wire['frames']:,} in "
        f"{wire['seconds']} s ({outcomes}) |",
        f"| coordinator still running, handler failures | yes, 0 | "
        f"{'yes' if wire['still_running'] else 'NO'}, {wire['handler_failures']} |",
        f"| resident memory: start / after 10% / end | flat after warm-up | {rss['start']} / "
        f"{rss['after_10_percent']} / {rss['end']} MB |",
    ]
    rest = results.get("rest")
    if rest:
        statuses = ", ".join(f"{count:,} × {status}" for status, count in rest["statuses"].items())
        lines += [
            f"| generated requests to the worker's REST API (every route) | — | {rest['requests']:,} in "
            f"{rest['seconds']} s ({statuses}) |",
            f"| 5xx answers, errors not in Kafka Connect's shape, undocumented statuses | 0, 0, 0 | "
            f"{rest['server_errors']}, {rest['error_bodies_not_kafka_connects']}, "
            f"{len(rest['undocumented_statuses'])} |",
            f"| worker resident memory after each fifth | flat | "
            f"{' / '.join(str(mb) for mb in rest['worker_rss_mb'][1:])} MB |",
        ]
    return "\n".join(lines)


def main() -> None:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--frames", type=int, default=1_000_000)
    parser.add_argument("--connections", type=int, default=8)
    parser.add_argument("--seed", type=int, default=1)
    parser.add_argument("--rest-examples", type=int, default=1000, help="per route; 0 skips the REST run")
    parser.add_argument("--update-readme", action="store_true")
    args = parser.parse_args()
    results: dict[str, Any] = {"machine": f"{os.cpu_count()} cores, Python {platform.python_version()}",
                               "date": datetime.now().strftime("%Y-%m-%d")}  # fmt: skip
    with tempfile.TemporaryDirectory(prefix="fuzz-bench-") as tmp:
        results["wire"] = fuzz_wire(args.frames, args.connections, args.seed, Path(tmp))
        print({k: v for k, v in results["wire"].items() if k != "memory"})
        if args.rest_examples:
            results["rest"] = fuzz_worker_rest(args.rest_examples, Path(tmp) / "rest")
            print(results["rest"])
    print(publish("fuzz", results, args.update_readme))


if __name__ == "__main__":
    main()

"""RecordStore.store() against a plain file and SQLite: throughput and per-call latency.

Run: python benchmarks/store.py [--pairs 7] [--records 100000] [--sqlite-records 5000]

Contenders, each fed the same pre-built records (80 % ``cpu,<time>,<percent>``, 20 % JSON
values of 100-300 bytes, like ``gc-pause`` and ``custom-span``):

  hawkwatch  RecordStore.store(collection, key, value): one line into the mmap'd buffer; the
             store's background thread moves full buffers to records.mtlog.
  file       f.write(f"{collection},{key},{value}\\n"); f.flush() on a text file opened with
             open(path, "w"): one write() system call per record, as a naive crash-aware logger.
  sqlite     one INSERT per record, WAL journal, synchronous=NORMAL, autocommit (each insert
             is its own transaction).

Per BENCHMARKS.md the contenders run alternately in the same process (a warm-up round, then
``--pairs`` rounds, the order rotating each round) and the figures are medians of per-round
ratios, with min and max. Throughput is records per second of calls on the calling thread.
Latency times single calls with time.perf_counter_ns(); the timer's own cost (median of
back-to-back reads, printed) is subtracted from every sample.
"""

from __future__ import annotations

import argparse
import gc
import json
import os
import platform
import random
import shlex
import sqlite3
import statistics
import sys
import tempfile
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from pathlib import Path

from hawkwatch.store import RecordStore

Record = tuple[str, str, str]
Writer = Callable[[str, str, str], None]

TARGET_VS_FILE = 2.0
TARGET_VS_SQLITE = 10.0
TARGET_P99_US = 10.0


def build_records(count: int, seed: int = 7) -> list[Record]:
    """Realistic records: mostly resource samples, some JSON events of 100-300 bytes."""
    rng = random.Random(seed)
    t = 1_718_000_000.0
    records: list[Record] = []
    for i in range(count):
        t += rng.uniform(0.0005, 0.5)
        key = f"{t:.6f}"
        if i % 5:
            records.append(("cpu", key, f"{rng.uniform(0, 180):.1f}"))
            continue
        event = {
            "name": rng.choice(["db.query", "http GET /api/items", "render", "cache.fill"]),
            "start": t,
            "duration_ms": round(rng.uniform(0.1, 900), 3),
            "thread": rng.choice(["MainThread", "worker-1", "asyncio_0"]),
            "detail": "x" * rng.randrange(0, 180),
        }
        records.append(("custom-span", key, json.dumps(event, separators=(",", ":"))))
    return records


# -- contenders: each yields a writer and cleans up after itself -----------------------------


@contextmanager
def hawkwatch_writer(folder: Path) -> Iterator[Writer]:
    store = RecordStore(folder, launch_time=time.time())
    try:
        yield store.store
    finally:
        store.close()


@contextmanager
def file_writer(folder: Path) -> Iterator[Writer]:
    with open(folder / "records.txt", "w", encoding="utf-8") as f:
        write, flush = f.write, f.flush

        def store(collection: str, key: str, value: str) -> None:
            write(f"{collection},{key},{value}\n")
            flush()

        yield store


@contextmanager
def sqlite_writer(folder: Path) -> Iterator[Writer]:
    db = sqlite3.connect(folder / "records.db", isolation_level=None)  # autocommit
    try:
        db.execute("PRAGMA journal_mode=WAL")
        db.execute("PRAGMA synchronous=NORMAL")
        db.execute("CREATE TABLE records (collection TEXT, key TEXT, value TEXT)")
        execute = db.execute
        sql = "INSERT INTO records VALUES (?, ?, ?)"

        def store(collection: str, key: str, value: str) -> None:
            execute(sql, (collection, key, value))

        yield store
    finally:
        db.close()


CONTENDERS = {"hawkwatch": hawkwatch_writer, "file": file_writer, "sqlite": sqlite_writer}


# -- measurements ----------------------------------------------------------------------------


def timer_overhead_ns(samples: int = 200_000) -> int:
    clock = time.perf_counter_ns
    deltas = []
    for _ in range(samples):
        t0 = clock()
        deltas.append(clock() - t0)
    return int(statistics.median(deltas))


def throughput(name: str, records: list[Record]) -> float:
    """Records per second of ``store`` calls on this thread."""
    with tempfile.TemporaryDirectory() as folder, CONTENDERS[name](Path(folder)) as store:
        gc.collect()
        gc.disable()
        try:
            started = time.perf_counter()
            for collection, key, value in records:
                store(collection, key, value)
            elapsed = time.perf_counter() - started
        finally:
            gc.enable()
    return len(records) / elapsed


def latencies(name: str, records: list[Record], overhead_ns: int) -> list[int]:
    """Duration of each call in ns, the timer's own cost subtracted."""
    clock = time.perf_counter_ns
    out: list[int] = []
    append = out.append
    with tempfile.TemporaryDirectory() as folder, CONTENDERS[name](Path(folder)) as store:
        gc.collect()
        gc.disable()
        try:
            for collection, key, value in records:
                t0 = clock()
                store(collection, key, value)
                append(clock() - t0 - overhead_ns)
        finally:
            gc.enable()
    return out


def percentile(sorted_values: list[int], p: float) -> float:
    index = min(len(sorted_values) - 1, round(p / 100 * (len(sorted_values) - 1)))
    return sorted_values[index] / 1000  # µs


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n", 1)[0])
    parser.add_argument("--pairs", type=int, default=7, help="measured rounds (default 7)")
    parser.add_argument("--records", type=int, default=100_000, help="per round, hawkwatch/file")
    parser.add_argument("--sqlite-records", type=int, default=5_000, help="per round, SQLite")
    args = parser.parse_args()

    print(f"machine: nproc={os.cpu_count()}, {platform.platform()}")
    print(f"python: {platform.python_implementation()} {platform.python_version()}")
    print(f"command: {shlex.join([Path(sys.executable).name, *sys.argv])}")
    records = build_records(args.records)
    sqlite_records = records[: args.sqlite_records]
    overhead = timer_overhead_ns()
    print(
        f"records: {len(records):,} per round ({len(sqlite_records):,} for SQLite), "
        f"mean {sum(len(','.join(r)) + 1 for r in records) / len(records):.0f} bytes a line; "
        f"timer overhead subtracted from each latency sample: {overhead} ns"
    )

    names = list(CONTENDERS)
    rates: dict[str, list[float]] = {n: [] for n in names}
    samples: dict[str, list[int]] = {n: [] for n in names}
    for round_ in range(args.pairs + 1):  # round 0 is the warm-up
        order = names[round_ % 3 :] + names[: round_ % 3]
        for name in order:
            data = sqlite_records if name == "sqlite" else records
            rate = throughput(name, data)
            lat = latencies(name, data[: len(data) // 2], overhead)
            if round_:
                rates[name].append(rate)
                samples[name].extend(lat)

    vs_file = [h / f for h, f in zip(rates["hawkwatch"], rates["file"], strict=True)]
    vs_sqlite = [h / s for h, s in zip(rates["hawkwatch"], rates["sqlite"], strict=True)]
    print()
    print(
        f"{'contender':<10} {'records/s':>12} {'p50 µs':>8} {'p99 µs':>8} {'p99.9 µs':>9} "
        f"{'max µs':>9} {'samples':>9}"
    )
    for name in names:
        ordered = sorted(samples[name])
        print(
            f"{name:<10} {statistics.median(rates[name]):>12,.0f} "
            f"{percentile(ordered, 50):>8.2f} {percentile(ordered, 99):>8.2f} "
            f"{percentile(ordered, 99.9):>9.2f} {ordered[-1] / 1000:>9.1f} {len(ordered):>9,}"
        )
    print()
    print(f"per-round throughput ratios over {args.pairs} rounds (median, min, max):")
    print(f"  hawkwatch / file   {_ratio(vs_file)}   target >= {TARGET_VS_FILE:g}x")
    print(f"  hawkwatch / sqlite {_ratio(vs_sqlite)}   target >= {TARGET_VS_SQLITE:g}x")

    p99 = percentile(sorted(samples["hawkwatch"]), 99)
    met = (
        statistics.median(vs_file) >= TARGET_VS_FILE
        and statistics.median(vs_sqlite) >= TARGET_VS_SQLITE
        and p99 <= TARGET_P99_US
    )
    print(
        f"store: {statistics.median(vs_file):.1f}x plain file "
        f"(min {min(vs_file):.1f}, max {max(vs_file):.1f}), "
        f"{statistics.median(vs_sqlite):.0f}x SQLite "
        f"(min {min(vs_sqlite):.0f}, max {max(vs_sqlite):.0f}), "
        f"p99 {p99:.2f} µs on the calling thread; targets >= {TARGET_VS_FILE:g}x, "
        f">= {TARGET_VS_SQLITE:g}x, <= {TARGET_P99_US:g} µs: {'met' if met else 'NOT met'}"
    )


def _ratio(values: list[float]) -> str:
    return f"{statistics.median(values):6.1f}x  ({min(values):.1f} - {max(values):.1f})"


if __name__ == "__main__":
    main()

"""MallocStackLogging index parsing: hawkwatch's numpy reader against a plain ``struct`` loop.

Run: python benchmarks/msl_parse.py [--megabytes 256] [--pairs 5] [--workdir DIR]

Needs numpy (the ``ios-memory`` extra).

1. Writes a ``--megabytes`` index file in the iOS 13+ 64-bit layout (32-byte records): a
   realistic mix of 55 % allocations, 40 % frees of earlier blocks, 5 % VM events is not
   needed for parsing speed, so the mix is 60 % ``alloc`` / 40 % ``dealloc`` of 16-byte aligned,
   disguised addresses, µs-form payloads over 200,000 stack ids. Reused from ``--workdir``.
2. Contenders, alternating (warm-up, then ``--pairs`` rounds, order swapped every round), each
   reading the file through ``mmap``:
     parse     ``hawkwatch.formats.msl.decode`` over chunks: un-disguised addresses, type flags,
               stack ids and times as numpy columns, validity checked (index parsing)
     replay    ``hawkwatch.formats.msl.replay``: parsing plus the pairing of every alloc with its
               free (live allocations at the end of the log)
     struct    the same decoding in a Python loop over ``struct.iter_unpack`` (the founding
               article's reader), on the first 1/16 of the file (it is that much slower)
   Reported: MB/s of each, and the median (min–max) of the per-round ratios parse/struct and
   replay/struct.
"""

from __future__ import annotations

import argparse
import mmap
import os
import platform
import statistics
import struct
import sys
import tempfile
import time
from pathlib import Path

import numpy as np

from hawkwatch.formats.msl import CHUNK_RECORDS, LAYOUTS, decode, replay

LAYOUT = "msl-framework-64"
RECORD = 32


def generate(path: Path, megabytes: int, seed: int = 7) -> None:
    rng = np.random.default_rng(seed)
    count = megabytes * 1024 * 1024 // RECORD
    records = np.zeros(count, dtype=LAYOUTS[LAYOUT])
    alloc = rng.random(count) < 0.6
    slots = rng.integers(0, 1 << 22, count, dtype=np.uint64)
    records["addr"] = (np.uint64(0x600000000000) + slots * np.uint64(16)) ^ np.uint64(0x5555)
    records["arg"] = np.where(alloc, rng.integers(16, 4096, count, dtype=np.uint64), 0)
    stack = rng.integers(0, 200_000, count, dtype=np.uint64)
    times = np.arange(count, dtype=np.uint64)
    records["stack"] = (stack << np.uint64(42)) | (times << np.uint64(3)) | np.uint64(1)
    records["flags"] = np.where(alloc, 2, 4).astype(np.uint32)
    path.write_bytes(records.tobytes())


def run_parse(path: Path) -> int:
    with path.open("rb") as file, mmap.mmap(file.fileno(), 0, access=mmap.ACCESS_READ) as data:
        dtype = LAYOUTS[LAYOUT]
        total = len(data) // dtype.itemsize
        valid = 0
        for start in range(0, total, CHUNK_RECORDS):
            chunk = np.frombuffer(
                data, dtype=dtype, count=min(CHUNK_RECORDS, total - start),
                offset=start * dtype.itemsize,
            )  # fmt: skip
            valid += int(decode(chunk, LAYOUT).valid.sum())
            del chunk
        return valid


def run_replay(path: Path) -> int:
    with path.open("rb") as file, mmap.mmap(file.fileno(), 0, access=mmap.ACCESS_READ) as data:
        return len(replay(data, layout=LAYOUT).malloc_address)


def run_struct(path: Path, limit: int) -> int:
    """The plain reader: one Python iteration per record, same fields decoded."""
    with path.open("rb") as file, mmap.mmap(file.fileno(), 0, access=mmap.ACCESS_READ) as data:
        view = memoryview(data)[:limit]
        valid = 0
        out = []
        for arg, addr, payload, flags, pad in struct.iter_unpack("<QQQII", view):
            address = addr ^ 0x5555
            if payload & 1:
                stack, t = payload >> 42, (payload >> 3) & (2**39 - 1)
            else:
                stack, t = payload >> 34, ((payload >> 3) & (2**31 - 1)) * 1000
            if pad == 0 and flags & 0xFF in (1, 2, 4, 16, 32, 144, 160) and not address & 0xF:
                valid += 1
            out.append((address, arg, flags, stack, t))
        del view
        return valid


def timed(fn, *args):  # type: ignore[no-untyped-def]
    start = time.perf_counter()
    fn(*args)
    return time.perf_counter() - start


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--megabytes", type=int, default=256)
    parser.add_argument("--pairs", type=int, default=5)
    parser.add_argument("--workdir")
    args = parser.parse_args()
    folder = Path(args.workdir or tempfile.mkdtemp(prefix="msl-bench-"))
    folder.mkdir(parents=True, exist_ok=True)
    path = folder / f"stack-logs.1.1000.bench.{args.megabytes}MB.index"
    if not path.is_file() or path.stat().st_size != args.megabytes << 20:
        generate(path, args.megabytes)
    size = path.stat().st_size
    struct_limit = size // 16 // RECORD * RECORD
    print(f"machine: {os.cpu_count()} CPUs, Python {platform.python_version()}, numpy "
          f"{np.__version__}; file {size / 1e6:.0f} MB ({size // RECORD:,} records)")  # fmt: skip
    timed(run_parse, path)  # warm-up: page cache, numpy
    timed(run_struct, path, struct_limit // 16)
    rates: dict[str, list[float]] = {"parse": [], "replay": [], "struct": []}
    for round_ in range(args.pairs):
        order = ["parse", "replay", "struct"]
        if round_ % 2:
            order.reverse()
        for name in order:
            if name == "struct":
                rates[name].append(struct_limit / timed(run_struct, path, struct_limit) / 1e6)
            elif name == "parse":
                rates[name].append(size / timed(run_parse, path) / 1e6)
            else:
                rates[name].append(size / timed(run_replay, path) / 1e6)
    print(f"{'contender':<10}{'MB/s median':>14}{'min':>10}{'max':>10}")
    for name, values in rates.items():
        print(f"{name:<10}{statistics.median(values):>14.0f}{min(values):>10.0f}"
              f"{max(values):>10.0f}")  # fmt: skip
    for name in ("parse", "replay"):
        ratios = [a / b for a, b in zip(rates[name], rates["struct"], strict=True)]
        print(f"{name}/struct: median {statistics.median(ratios):.0f}x "
              f"(min {min(ratios):.0f}x, max {max(ratios):.0f}x)")  # fmt: skip
    print(
        f"summary: index parsing {statistics.median(rates['parse']):.0f} MB/s, replay "
        f"{statistics.median(rates['replay']):.0f} MB/s, struct loop "
        f"{statistics.median(rates['struct']):.0f} MB/s (command: {' '.join(sys.argv)})"
    )


if __name__ == "__main__":
    main()

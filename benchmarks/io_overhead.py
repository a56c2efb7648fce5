"""What the file-I/O canary costs: a file-heavy workload and a CPU-bound one, canary on and off.

Run: python benchmarks/io_overhead.py [--rounds 11] [--files 400] [--big-mb 64] [--cpu-scale 0.25]
                                     [--dir /dev/shm] [--instructions]

The arms run in this one process, in rotating order after a warm-up, on the same files:
``off`` is the agent with ``io.enabled=false``; ``sampled`` the agent with only the canary
added, as configured by default (each opening site fully watched for its first
``io.site_warmup`` files, then 1 in ``io.sample_every`` while no issue is found there);
``full`` the canary watching every file (``io.sample_every=1``, the cost before sampling);
every other monitor is off in all of them, so the canary is all that differs. ``aa`` is
``off`` again, an A/A control that shows the noise floor. Each run starts the agent and stops
it again outside the timed part, so every round starts the sites' warm-up afresh (a
long-running program pays the warm-up once: the sampled figure here is the higher one).

File-heavy workload, per round (a batch job over many small documents):

* ``--files`` JSON documents (1-12 KB) read through the text layer with ``json.load``,
  changed, and written to a new file through the text layer;
* each output read back whole through ``pathlib.Path.read_bytes`` to check its size;
* one log file appended a line per document (a long-lived file, small buffered writes);
* one ``--big-mb`` file read sequentially in 1 MB chunks through a buffered binary file.

CPU-bound workload: ``workloads/cpu_mix.py``'s kernels at ``--cpu-scale``, no file I/O.

``--instructions`` counts instead of timing: one batch of the file-heavy workload runs under
``valgrind --tool=callgrind`` with the canary off, sampled and full (callgrind counts only the
batch, the second of the run, whose sites are past their warm-up: it
zeroes at ``os.getppid()`` just before and dumps at ``os.getpgrp()`` just after), and the
difference on the batch's own thread is divided by the files the batch opens: the canary's
cost per file in instructions, a figure the machine's load does not move (the files sit in a
folder of fixed name, so two runs count the same). Other threads (the
agent's scheduler, whose twice-a-second work grows with how long the batch took under valgrind,
not with the files) are left out.

Printed: per workload and canary arm the median of the per-round ratios (arm / off - 1) of wall
time and of process CPU time (steadier on a shared machine), with min and max, the A/A
control's, then one summary line with both canary arms. The target (issue 18): at most 3 %
on the file-heavy workload, nothing measurable on the CPU-bound one.
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import random
import re
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent / "workloads"))

from cpu_mix import KERNELS  # type: ignore[import-not-found]

import hawkwatch

QUIET = {
    name: False for name in ("resources", "gc", "launch", "imports", "stall", "cpu", "profiler")
}
#: The agent's options per arm (``aa`` is ``off`` again).
ARMS: dict[str, dict[str, object]] = {
    "off": {"io_enabled": False},
    "sampled": {"io_enabled": True},
    "full": {"io_enabled": True, "io_sample_every": 1},
    "aa": {"io_enabled": False},
}
CANARY_ARMS = ("sampled", "full")


def make_inputs(folder: Path, files: int, big_mb: int) -> tuple[list[Path], Path]:
    rng = random.Random(18)
    inputs = []
    for i in range(files):
        items = [
            {"id": j, "name": f"item-{rng.randrange(10**6)}", "price": rng.random() * 100,
             "tags": [rng.choice("abcdefgh") * rng.randrange(1, 6) for _ in range(4)]}
            for j in range(rng.randrange(15, 120))
        ]  # fmt: skip
        path = folder / f"doc-{i:04d}.json"
        path.write_text(json.dumps({"doc": i, "items": items}), encoding="utf-8")
        inputs.append(path)
    big = folder / "big.bin"
    chunk = bytes(rng.randrange(256) for _ in range(1 << 16))
    with big.open("wb") as f:
        for _ in range(big_mb * 16):
            f.write(chunk)
    return inputs, big


def file_heavy(inputs: list[Path], big: Path, out: Path) -> int:
    """One batch: the work whose time is compared."""
    checked = 0
    with open(out / "batch.log", "a", encoding="utf-8") as log:
        for source in inputs:
            with open(source, encoding="utf-8") as f:
                doc = json.load(f)
            doc["total"] = sum(item["price"] for item in doc["items"])
            doc["items"] = [item for item in doc["items"] if item["price"] > 20]
            target = out / source.name
            with open(target, "w", encoding="utf-8") as f:
                f.write(json.dumps(doc))
            checked += len(target.read_bytes())
            log.write(f"{source.name} {len(doc['items'])} {doc['total']:.2f}\n")
    with open(big, "rb") as f:
        while block := f.read(1 << 20):
            checked += block.count(b"\n")
    return checked


def cpu_bound(scale: float) -> int:
    total = 0
    for kernel, n in KERNELS.values():
        total += kernel(max(1, round(n * scale)))
    return total


def timed(work: Callable[[], int]) -> tuple[float, float]:
    wall, cpu = time.perf_counter(), time.process_time()
    work()
    return time.perf_counter() - wall, time.process_time() - cpu


def run_arm(arm: str, home: Path, work: Callable[[], int]) -> tuple[float, float]:
    cleanup = getattr(work, "prepare", None)
    if cleanup is not None:
        cleanup()
    hawkwatch.start(home=str(home), **ARMS[arm], **{f"{n}_enabled": v for n, v in QUIET.items()})
    try:
        return timed(work)
    finally:
        hawkwatch.stop()


def ratios(
    offs: list[tuple[float, float]], ons: list[tuple[float, float]], index: int
) -> list[float]:
    return [on[index] / off[index] - 1 for off, on in zip(offs, ons, strict=True)]


def line(name: str, values: list[float]) -> str:
    return (
        f"  {name:<16} median {statistics.median(values) * 100:+6.2f} %   "
        f"min {min(values) * 100:+6.2f} %   max {max(values) * 100:+6.2f} %"
    )


def compare(
    label: str, rounds: int, home: Path, work: Callable[[], int]
) -> dict[str, tuple[float, float]]:
    """Rounds of the four arms in rotating order; per canary arm (wall, CPU) median ratios."""
    for arm in ARMS:  # warm-up: caches, imports, first-touch of the files
        run_arm(arm, home, work)
    arms = tuple(ARMS)
    results: dict[str, list[tuple[float, float]]] = {arm: [] for arm in arms}
    for i in range(rounds):
        k = i % len(arms)
        for arm in arms[k:] + arms[:k]:
            results[arm].append(run_arm(arm, home, work))
    offs = results["off"]
    print(f"{label}: {rounds} rounds, canary off "
          f"{statistics.median(off[0] for off in offs):.3f} s wall per round")  # fmt: skip
    medians = {}
    for arm in CANARY_ARMS:
        wall, cpu = ratios(offs, results[arm], 0), ratios(offs, results[arm], 1)
        print(line(f"{arm} wall", wall))
        print(line(f"{arm} CPU", cpu))
        medians[arm] = statistics.median(wall), statistics.median(cpu)
    print(line("A/A wall", ratios(offs, results["aa"], 0)) + "   (off vs off: the noise floor)")
    print(line("A/A CPU", ratios(offs, results["aa"], 1)))
    return medians


def files_opened(files: int) -> int:
    """Files one batch opens: per document its input, its output and the read-back; the log;
    the big file."""
    return 3 * files + 2


def callgrind_child(arm: str, root: Path) -> None:
    """One warm batch, then the counted one (between the two marker calls callgrind watches)."""
    inputs = sorted((root / "in").glob("doc-*.json"))
    big, out = root / "in" / "big.bin", root / f"out-{arm}"
    hawkwatch.start(home=str(root / "home"), **ARMS[arm],
                    **{f"{n}_enabled": v for n, v in QUIET.items()})  # fmt: skip
    try:
        for counted in (False, True):  # one call site: the second batch finds the sites warm
            out.mkdir()
            if counted:
                os.getppid()  # callgrind: zero the counters
            file_heavy(inputs, big, out)
            if counted:
                os.getpgrp()  # callgrind: dump them
            else:
                shutil.rmtree(out)
    finally:
        hawkwatch.stop()


def instructions(arm: str, root: Path) -> int:
    """Instructions of one file-heavy batch under callgrind, on the thread that ran it."""
    with tempfile.TemporaryDirectory(prefix="hawkwatch-callgrind-") as folder:
        out = Path(folder) / "callgrind.out"
        env = {k: v for k, v in os.environ.items() if not k.startswith("HAWKWATCH_")}
        env["PYTHONHASHSEED"] = "0"
        subprocess.run(
            ["valgrind", "--tool=callgrind", "--zero-before=os_getppid",
             "--dump-before=os_getpgrp", "--separate-threads=yes",
             f"--callgrind-out-file={out}", sys.executable, __file__, "--callgrind-child", arm,
             "--dir", str(root)],
            capture_output=True, text=True, env=env, check=True, timeout=3600,
        )  # fmt: skip
        dump = Path(f"{out}.1-01")  # the first dump, of thread 1
        match = re.search(r"^summary:\s*(\d+)", dump.read_text(errors="replace"), re.M)
        if not match:
            raise SystemExit(f"callgrind wrote no dump for the canary {arm}")
    return int(match.group(1))


def count_instructions(files: int, big_mb: int, folder: str | None) -> None:
    """Both arms on files in a folder of fixed name: the paths' text moves string hashes and the
    C library's copies (a random folder name moved the figure by up to 4,000 per file)."""
    root = Path(folder or tempfile.gettempdir()) / "hawkwatch-io-bench-instructions"
    try:
        root.mkdir()
    except FileExistsError:
        raise SystemExit(f"{root} exists: another --instructions run? (remove it)") from None
    try:
        (root / "in").mkdir()
        make_inputs(root / "in", files, big_mb)
        counted = {arm: instructions(arm, root) for arm in ("off", *CANARY_ARMS)}
    finally:
        shutil.rmtree(root, ignore_errors=True)
    opened = files_opened(files)
    off = counted["off"]
    print(f"file-heavy batch under callgrind ({files} documents, {big_mb} MB read, "
          f"{opened} files opened; the run's second batch: past the sites' warm-up)")  # fmt: skip
    print(f"  the batch's thread: canary off {off:,} instructions")
    for arm in CANARY_ARMS:
        on = counted[arm]
        print(f"  canary {arm:<7} {on:,} instructions: {on / off - 1:+.2%}, "
              f"{(on - off) / opened:,.0f} per file opened")



def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--rounds", type=int, default=11)
    parser.add_argument("--files", type=int, default=400)
    parser.add_argument("--big-mb", type=int, default=64)
    parser.add_argument("--cpu-scale", type=float, default=0.25)
    parser.add_argument("--dir", help="where the files go (default: the system's temp folder)")
    parser.add_argument("--instructions", action="store_true", help="count under callgrind")
    parser.add_argument("--callgrind-child", choices=tuple(ARMS), help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.callgrind_child:
        callgrind_child(args.callgrind_child, Path(args.dir))
        return
    print(
        f"machine: {os.cpu_count()} CPUs, {platform.python_implementation()} "
        f"{platform.python_version()}, {platform.system()} {platform.release()}"
    )
    print(f"command: python {' '.join(sys.argv)}")
    print(f"load average: {' '.join(f'{x:.2f}' for x in os.getloadavg())}")
    if args.instructions:
        count_instructions(args.files, args.big_mb, args.dir)
        return
    with tempfile.TemporaryDirectory(prefix="hawkwatch-io-bench-", dir=args.dir) as tmp:
        root = Path(tmp)
        (root / "in").mkdir()
        inputs, big = make_inputs(root / "in", args.files, args.big_mb)
        out = root / "out"

        def batch() -> int:
            return file_heavy(inputs, big, out)

        def fresh_output() -> None:
            shutil.rmtree(out, ignore_errors=True)
            out.mkdir()
            os.sync()  # the previous round's writeback must not land in this one

        batch.prepare = fresh_output  # type: ignore[attr-defined]

        heavy = compare(
            f"file-heavy ({args.files} documents, {args.big_mb} MB read)",
            args.rounds,
            root / "home",
            batch,
        )
        cpu = compare(
            f"CPU-bound (cpu_mix x {args.cpu_scale})",
            args.rounds,
            root / "home",
            lambda: cpu_bound(args.cpu_scale),
        )
    for arm in CANARY_ARMS:
        (heavy_wall, heavy_cpu), (cpu_wall, cpu_cpu) = heavy[arm], cpu[arm]
        print(
            f"io canary overhead, {arm}: file-heavy {heavy_wall * 100:+.2f} % wall "
            f"({heavy_cpu * 100:+.2f} % CPU), CPU-bound {cpu_wall * 100:+.2f} % wall "
            f"({cpu_cpu * 100:+.2f} % CPU); target <= 3 % file-heavy"
        )
    print(f"load average at the end: {' '.join(f'{x:.2f}' for x in os.getloadavg())}")


if __name__ == "__main__":
    main()

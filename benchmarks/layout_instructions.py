"""Instructions of pyperformance's ``richards`` loops with the profiler off and on, over random
memory layouts: what sampling costs, apart from where objects happen to land.

Run: python benchmarks/layout_instructions.py [--layouts 8] [--loops 2] [--seed 14] [--jobs 2]

``richards`` reads attributes of four ``Task`` subclasses at the same sites, which CPython 3.11
leaves unspecialised, so each read looks the class up in the type-attribute cache: 4096 slots
indexed by the class's version tag XOR the name's address. Whether two hot lookups share a slot
(and miss on every call) depends on the layout — how many tags were handed out before richards'
classes got theirs, where its strings were allocated — which anything run first moves, the agent
included. So each arm runs under ``hawkwatch run`` (every other monitor off; ``prof``:
``--profile``, in-process sampler at the default budget) with the same random layouts
(``timed_run.py``'s ``--layout``: 0–255 tags, 0–2047 small strings), under ``valgrind
--tool=callgrind`` with ``PYTHONHASHSEED=0`` and ``setarch -R`` (deterministic counts). One
warm-up loop runs first; only the timed loops are counted (callgrind zeroes its counters at
``os.getppid()`` and dumps at ``os.getpgrp()``, as in ``network_instructions.py``), every
thread's instructions included (the sampler's too). Per run: instructions a loop and type-cache
misses a loop (calls from ``_PyType_Lookup`` to ``find_name_in_mro``). A line fitted through all
runs gives the cost of a miss; taking each run's misses out at that cost leaves what the arms
really do, and its difference is the profiler's cost.
"""

from __future__ import annotations

import argparse
import os
import random
import re
import statistics
import subprocess
import sys
import tempfile
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

HERE = Path(__file__).resolve().parent
REPO = HERE.parent
MONITORS_OFF = [f"-c{m}.enabled=false" for m in ("resources", "gc", "launch", "imports", "cpu",
                                                  "stall")]  # fmt: skip
ARMS = {"off": [], "prof": ["--profile", "-cprofiler.engine=in-process"]}
DRIVER = """
import os, sys
sys.path.insert(0, {workloads!r}); sys.path.insert(0, {bench!r})
from timed_run import shift_layout
keep = shift_layout({tags}, {strings})
import run_benchmark as richards
bench = richards.Richards()
bench.run(1)
os.getppid()  # callgrind: zero the counters
bench.run({loops})
os.getpgrp()  # callgrind: dump
"""
LOOKUP_CALLER = re.compile(r"<\s.*typeobject\.c:_PyType_Lookup \(([\d,]+)x\)")


def one_run(arm: str, layout: tuple[int, int], loops: int, work: Path) -> tuple[float, float]:
    """(instructions a loop, type-cache misses a loop) of one run."""
    import pyperformance

    bench = Path(pyperformance.__file__).parent / "data-files" / "benchmarks" / "bm_richards"
    code = DRIVER.format(workloads=str(HERE / "workloads"), bench=str(bench), tags=layout[0],
                         strings=layout[1], loops=loops)  # fmt: skip
    out = work / f"{arm}-{layout[0]}-{layout[1]}.out"
    env = {k: v for k, v in os.environ.items() if not k.startswith(("HAWKWATCH_", "_HAWKWATCH"))}
    env.update(HAWKWATCH_HOME=str(work / f"home-{out.stem}"), PYTHONHASHSEED="0")
    hawkwatch = str(Path(sys.executable).with_name("hawkwatch"))
    command = [hawkwatch, "run", *MONITORS_OFF, *ARMS[arm], "--", "setarch", "-R", "valgrind",
               "--tool=callgrind", "--zero-before=os_getppid", "--dump-before=os_getpgrp",
               f"--callgrind-out-file={out}", sys.executable, "-c", code]  # fmt: skip
    done = subprocess.run(command, cwd=REPO, env=env, capture_output=True, text=True, check=False)
    dumps = sorted(work.glob(f"{out.name}.*")) or [out]
    if done.returncode != 0 or not dumps[0].exists():
        raise SystemExit(f"{arm} {layout} failed: {done.stderr[-1500:]}")
    dump = dumps[0]
    totals = re.search(r"^(?:summary|totals):\s+(\d+)", dump.read_text(), re.MULTILINE)
    if totals is None:
        raise SystemExit(f"no totals in {dump}")
    tree = subprocess.run(["callgrind_annotate", "--tree=caller", "--threshold=100", str(dump)],
                          capture_output=True, text=True, check=True).stdout  # fmt: skip
    return int(totals.group(1)) / loops, _misses(tree) / loops


def _misses(tree: str) -> int:
    """Calls from ``_PyType_Lookup`` into ``find_name_in_mro``: the type cache's misses."""
    callers: list[str] = []
    for line in tree.splitlines():
        if "<" in line and re.match(r"\s*[\d,]+ ", line):
            callers.append(line)
            continue
        if "*" in line and "typeobject.c:find_name_in_mro" in line:
            for caller in callers:
                found = LOOKUP_CALLER.search(caller)
                if found:
                    return int(found.group(1).replace(",", ""))
            return 0
        callers = []
    return 0


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--layouts", type=int, default=8)
    parser.add_argument("--loops", type=int, default=2)
    parser.add_argument("--seed", type=int, default=14)
    parser.add_argument("--jobs", type=int, default=2)
    args = parser.parse_args()
    draw = random.Random(args.seed)
    layouts = [(draw.randrange(256), draw.randrange(2048)) for _ in range(args.layouts)]
    print(f"callgrind, richards, {args.loops} loops a run, Python {sys.version.split()[0]}")
    with tempfile.TemporaryDirectory(prefix="hawkwatch-layouts-") as tmp:
        jobs = [(arm, layout) for layout in layouts for arm in ARMS]
        with ThreadPoolExecutor(args.jobs) as pool:
            results = list(pool.map(lambda job: one_run(*job, args.loops, Path(tmp)), jobs))
    runs = dict(zip(jobs, results, strict=True))
    print(f"{'layout':>10} {'arm':5} {'instructions/loop':>18} {'misses/loop':>12}")
    for (arm, layout), (ins, miss) in runs.items():
        print(f"{layout[0]:>4},{layout[1]:<5} {arm:5} {ins / 1e6:16.1f} M {miss:12,.0f}")
    slope, _ = statistics.linear_regression([m for _, m in results], [i for i, _ in results])
    print(f"a miss costs {slope:.0f} instructions (line through all runs)")
    means = {}
    for arm in ARMS:
        raw = [runs[arm, lay][0] for lay in layouts]
        net = [runs[arm, lay][0] - slope * runs[arm, lay][1] for lay in layouts]
        means[arm] = (statistics.fmean(raw), statistics.fmean(net))
        print(f"{arm:5}: {statistics.fmean(raw) / 1e6:.1f} M a loop (layouts {min(raw) / 1e6:.1f}"
              f"…{max(raw) / 1e6:.1f}); misses taken out {statistics.fmean(net) / 1e6:.1f} M "
              f"(sd {statistics.stdev(net) / 1e6:.1f} M)")  # fmt: skip
    raw_cost = means["prof"][0] / means["off"][0] - 1
    net_cost = means["prof"][1] / means["off"][1] - 1
    print(f"summary: profiler at the default budget, richards: {raw_cost:+.2%} instructions a loop "
          f"over {len(layouts)} layouts, {net_cost:+.2%} with type-cache misses taken out")
    return 0


if __name__ == "__main__":
    sys.exit(main())

"""Instructions of pyperformance loops with the in-process profiler off and on, over random
memory layouts: what sampling costs, apart from where objects happen to land.

Run: python benchmarks/layout_instructions.py [--workload richards|raytrace|go|json_dumps|all]
         [--layouts 8] [--loops N] [--seed 14] [--jobs 2] [--budget B] [--arms off,share,full]

Arms, each under ``hawkwatch run`` with every other monitor off: ``off`` (profiler off);
``share`` (``--profile``, the in-process sampler at what it keeps beside py-spy:
``IN_PROCESS_SHARE`` of the budget — the part of the default ``hawkwatch run --profile`` that
runs inside the program); ``full`` (the in-process sampler alone at the whole budget, as
``hawkwatch.start()`` without the supervisor runs). ``--budget`` defaults to
``ProfilerConfig``'s default. py-spy's pauses are not in these counts (another process stops
this one; callgrind counts instructions, not time): ``pyspy_pause.py`` measures them.

``richards`` reads attributes of four ``Task`` subclasses at the same sites, which CPython 3.11
leaves unspecialised, so each read looks the class up in the type-attribute cache: 4096 slots
indexed by the class's version tag XOR the name's address. Whether two hot lookups share a slot
(and miss on every call) depends on the layout — how many tags were handed out before the
benchmark's classes got theirs, where its strings were allocated — which anything run first
moves, the agent included. So every arm runs with the same random layouts (``timed_run.py``'s
``--layout``: 0–255 tags, 0–2047 small strings), under ``valgrind --tool=callgrind`` with
``PYTHONHASHSEED=0`` and ``setarch -R`` (deterministic counts). One warm-up loop runs first;
only the timed loops are counted (callgrind zeroes its counters at ``os.getppid()`` and dumps at
``os.getpgrp()``, as in ``network_instructions.py``), every thread's instructions included (the
sampler's too), and the sampler thread's own share apart (``hawkwatch-profiler``: callgrind's
per-thread dumps). Per run: instructions a loop and type-cache misses a loop (calls from
``_PyType_Lookup`` to ``find_name_in_mro``). A line fitted through all runs gives the cost of a
miss; taking each run's misses out at that cost leaves what the arms really do, and its
difference is the profiler's cost. The functions whose own instructions differ most between
arms (mean over layouts) are listed, to say where a difference sits.

Time runs ~50× slower under callgrind, but the sampler's rate is set in wall time (its budget,
its ``min_rate_hz`` floor): a loop gets ~100× the samples it gets natively, so the raw
difference overstates sampling. Each run therefore also counts the samples taken within the
timed loops (the session's windows, by overlap with the loops' wall span); the difference over
them is the instructions one sample costs, all threads and every indirect effect included
(frame objects made, GC traversals of the sampler's tables); and one native run per arm (20×
the loops, no valgrind) gives the samples a loop natively, so ``natively`` is what sampling
costs the loop off valgrind.
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
from collections import Counter
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from pathlib import Path

from hawkwatch.config import ProfilerConfig
from hawkwatch.runenv import IN_PROCESS_SHARE

HERE = Path(__file__).resolve().parent
REPO = HERE.parent
MONITORS_OFF = [f"-c{m}.enabled=false" for m in ("resources", "gc", "launch", "imports", "cpu",
                                                  "stall")]  # fmt: skip
# per workload: the bench module's setup, one loop as ``loop()``, and the default loops a run
# (each loop about 60–400 ms natively, 50× that under callgrind)
WORKLOADS = {
    "richards": ("bench = m.Richards()\nloop = lambda: bench.run(1)", 2),
    "raytrace": ("loop = lambda: m.bench_raytrace(1, 100, 100, None)", 1),
    "go": ("loop = m.versus_cpu", 1),
    "json_dumps": ("data = [(obj, range(n)) for obj, n in (m.EMPTY, m.SIMPLE, m.NESTED, m.HUGE)]"
                   "\nloop = lambda: m.bench_json_dumps(data)", 4),
}  # fmt: skip
DRIVER = """
import os, sys, time
sys.path.insert(0, {workloads!r}); sys.path.insert(0, {bench!r})
from timed_run import shift_layout
keep = shift_layout({tags}, {strings})
import run_benchmark as m
{setup}
loop()
os.getppid()  # callgrind: zero the counters
start = time.time()
for _ in range({loops}):
    loop()
end = time.time()
os.getpgrp()  # callgrind: dump
print("SPAN", start, end, flush=True)
"""
LOOKUP_CALLER = re.compile(r"<\s.*typeobject\.c:_PyType_Lookup \(([\d,]+)x\)")


def arms(budget: float) -> dict[str, list[str]]:
    profile = ["--profile", "-cprofiler.engine=in-process"]
    return {"off": [], "share": [*profile, f"-cprofiler.budget={budget * IN_PROCESS_SHARE:g}"],
            "full": [*profile, f"-cprofiler.budget={budget:g}"]}  # fmt: skip


@dataclass
class Run:
    """One run's counts, per loop (every thread of the program)."""

    instructions: float
    misses: float  # type-cache misses
    functions: Counter[str] = field(default_factory=Counter)  # self instructions
    samples: float = 0.0  # the in-process sampler's samples
    span_s: float = 0.0  # wall seconds a loop took
    sample_cost_s: float = 0.0  # the sampler's own time per sample


def sampled(home: Path, stdout: str) -> tuple[float, float, float]:
    """(samples the in-process sampler took within the timed loops, their wall seconds, its own
    time per sample), from the session's windows, each counted for its overlap with the span."""
    from hawkwatch.formats.cpu_profile import read_profiles
    from hawkwatch.store import list_sessions

    span = next((line.split()[1:] for line in stdout.splitlines() if line.startswith("SPAN ")),
                None)  # fmt: skip
    if span is None:
        return 0.0, 0.0, 0.0
    start, end = float(span[0]), float(span[1])
    samples = cost = taken = 0.0
    for session in list_sessions(home / "sessions"):
        for profile in read_profiles(session.path, session.records().records).value:
            overlap = min(end, profile.start_time + profile.duration_s) - max(
                start, profile.start_time)  # fmt: skip
            samples += profile.samples * max(overlap, 0.0) / profile.duration_s
            cost += profile.cost_s
            taken += profile.samples
    return samples, end - start, cost / taken if taken else 0.0


def one_run(workload: str, command: list[str], layout: tuple[int, int], *, loops: int,
            work: Path, arm: str, native: bool = False) -> Run:  # fmt: skip
    import pyperformance

    bench = Path(pyperformance.__file__).parent / "data-files" / "benchmarks" / f"bm_{workload}"
    code = DRIVER.format(workloads=str(HERE / "workloads"), bench=str(bench), tags=layout[0],
                         strings=layout[1], loops=loops, setup=WORKLOADS[workload][0])  # fmt: skip
    out = work / f"{workload}-{arm}-{layout[0]}-{layout[1]}.out"
    env = {k: v for k, v in os.environ.items() if not k.startswith(("HAWKWATCH_", "_HAWKWATCH"))}
    env.update(HAWKWATCH_HOME=str(work / f"home-{out.stem}"), PYTHONHASHSEED="0")
    hawkwatch = str(Path(sys.executable).with_name("hawkwatch"))
    callgrind = ["setarch", "-R", "valgrind", "--tool=callgrind", "--zero-before=os_getppid",
                 "--dump-before=os_getpgrp", f"--callgrind-out-file={out}"]  # fmt: skip
    argv = [hawkwatch, "run", *MONITORS_OFF, *command, "--", *([] if native else callgrind),
            sys.executable, "-c", code]  # fmt: skip
    done = subprocess.run(argv, cwd=REPO, env=env, capture_output=True, text=True, check=False)
    samples, span_s, sample_cost_s = sampled(work / f"home-{out.stem}", done.stdout)
    if native:
        return Run(0.0, 0.0, samples=samples / loops, span_s=span_s / loops,
                   sample_cost_s=sample_cost_s)  # fmt: skip
    dumps = sorted(work.glob(f"{out.name}.*"))  # the dump at os.getpgrp
    if done.returncode != 0 or not dumps:
        raise SystemExit(f"{workload} {arm} {layout} failed: {done.stderr[-1500:]}")
    text = dumps[0].read_text()
    totals = re.search(r"^(?:summary|totals):\s+(\d+)", text, re.MULTILINE)
    if totals is None:
        raise SystemExit(f"no totals in {dumps[0]}")
    run = Run(int(totals.group(1)) / loops, _misses(_annotate(dumps[0], "--tree=caller")) / loops,
              samples=samples / loops, span_s=span_s / loops)  # fmt: skip
    run.functions = Counter({k: v / loops for k, v in _functions(text).items()})
    for dump in work.glob(f"{out.name}*"):
        dump.unlink()
    return run


def _annotate(dump: Path, *options: str) -> str:
    return subprocess.run(["callgrind_annotate", "--inclusive=no", *options, "--threshold=100",
                           str(dump)],
                          capture_output=True, text=True, check=True).stdout  # fmt: skip


def _functions(dump: str) -> Counter[str]:
    """Self instructions per function, read from a callgrind file (names may be compressed:
    ``fn=(id) name`` defines, ``fn=(id)`` refers; the line after ``calls=`` is a callee's
    inclusive cost, not the function's own)."""
    names: dict[str, str] = {}
    found: Counter[str] = Counter()
    current, callee_line = "", False
    for line in dump.splitlines():
        if line.startswith(("fn=", "cfn=")):
            key, _, name = line.partition("=")[2].partition(" ")
            if name:
                names[key] = name
            if line.startswith("fn="):
                current = names.get(key, key)
        elif line.startswith("calls="):
            callee_line = True
        elif line[:1].isdigit() or line[:1] in "+-*":
            if callee_line:
                callee_line = False
                continue
            fields = line.split()
            if len(fields) >= 2 and fields[1].isdigit():
                found[current] += int(fields[1])
    return found


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


def report(workload: str, names: list[str], layouts: list[tuple[int, int]],
           runs: dict[tuple[str, tuple[int, int]], Run],
           native: dict[str, Run]) -> str:  # fmt: skip
    print(f"  {'layout':>10} {'arm':5} {'instructions/loop':>18} {'misses/loop':>12}")
    for (arm, layout), run in runs.items():
        print(f"  {layout[0]:>4},{layout[1]:<5} {arm:5} {run.instructions / 1e6:16.2f} M "
              f"{run.misses:12,.0f}")  # fmt: skip
    every = list(runs.values())
    slope = 0.0
    if len({r.misses for r in every}) > 2:
        slope, _ = statistics.linear_regression([r.misses for r in every],
                                                [r.instructions for r in every])  # fmt: skip
    print(f"  a type-cache miss costs {slope:.0f} instructions (line through all runs)")
    means: dict[str, tuple[float, float]] = {}
    for arm in names:
        raw = [runs[arm, lay].instructions for lay in layouts]
        net = [runs[arm, lay].instructions - slope * runs[arm, lay].misses for lay in layouts]
        means[arm] = (statistics.fmean(raw), statistics.fmean(net))
        spread = statistics.stdev(net) / 1e6 if len(net) > 1 else 0.0
        print(f"  {arm:5}: {means[arm][0] / 1e6:.2f} M a loop (layouts {min(raw) / 1e6:.2f}…"
              f"{max(raw) / 1e6:.2f}); misses taken out {means[arm][1] / 1e6:.2f} M "
              f"(sd {spread:.2f} M)")  # fmt: skip
    parts = []
    for arm in names[1:]:
        ratios = [runs[arm, lay].instructions / runs["off", lay].instructions - 1
                  for lay in layouts]  # fmt: skip
        raw = means[arm][0] / means["off"][0] - 1
        net = means[arm][1] / means["off"][1] - 1
        samples = statistics.fmean(runs[arm, lay].samples for lay in layouts)
        per_sample = (means[arm][1] - means["off"][1]) / samples if samples else 0.0
        slow = statistics.fmean(runs["off", lay].span_s for lay in layouts)
        projected = ""
        if arm in native and native[arm].span_s and samples:
            here = native[arm]  # natively: the same loop, the sampler at its native rate
            natively = here.samples * per_sample / means["off"][1]
            projected = (f"; natively {here.samples:.1f} samples a loop of {here.span_s:.2f} s "
                         f"(callgrind: {samples:.0f} in {slow:.0f} s) → {natively:+.3%}")
        print(f"  {arm}: {samples:.0f} samples a loop under callgrind, "
              f"{per_sample / 1e3:,.0f} k instructions a sample (misses out){projected}")
        parts.append(f"{arm} {raw:+.2%} (per layout {min(ratios):+.2%}…{max(ratios):+.2%}; "
                     f"misses out {net:+.2%}{projected})")  # fmt: skip
        moved: Counter[str] = Counter()
        for lay in layouts:
            moved.update(runs[arm, lay].functions)
            moved.subtract(runs["off", lay].functions)
        largest = sorted(moved.items(), key=lambda kv: -abs(kv[1]))[:8]
        print(f"  {arm} − off, self instructions a loop by function (mean over layouts): "
              + ", ".join(f"{k} {v / len(layouts) / 1e3:+,.0f} k" for k, v in largest))
    return f"{workload}: " + "; ".join(parts)


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--workload", default="richards", help="one of "
                        f"{', '.join(WORKLOADS)}, a comma list, or all")  # fmt: skip
    parser.add_argument("--layouts", type=int, default=8)
    parser.add_argument("--loops", type=int, default=0, help="timed loops a run (0: the "
                        "workload's default)")  # fmt: skip
    parser.add_argument("--seed", type=int, default=14)
    parser.add_argument("--jobs", type=int, default=2)
    parser.add_argument("--budget", type=float, default=ProfilerConfig().budget)
    parser.add_argument("--arms", default="off,share")
    args = parser.parse_args()
    workloads = list(WORKLOADS) if args.workload == "all" else args.workload.split(",")
    names = args.arms.split(",")
    commands = arms(args.budget)
    if "off" not in names or any(n not in commands for n in names):
        raise SystemExit(f"--arms: off and any of {', '.join(commands)}")
    draw = random.Random(args.seed)
    layouts = [(draw.randrange(256), draw.randrange(2048)) for _ in range(args.layouts)]
    print(f"callgrind, {args.layouts} layouts (seed {args.seed}), budget {args.budget:g} "
          f"(share {args.budget * IN_PROCESS_SHARE:g}), Python {sys.version.split()[0]}")
    summary = []
    with tempfile.TemporaryDirectory(prefix="hawkwatch-layouts-") as tmp:
        for workload in workloads:
            loops = args.loops or WORKLOADS[workload][1]
            jobs = [(arm, layout) for layout in layouts for arm in names]
            def job_run(job: tuple[str, tuple[int, int]], workload: str = workload,
                        loops: int = loops) -> Run:  # fmt: skip
                return one_run(workload, commands[job[0]], job[1], loops=loops, work=Path(tmp),
                               arm=job[0])  # fmt: skip

            with ThreadPoolExecutor(args.jobs) as pool:
                results = list(pool.map(job_run, jobs))
            runs = dict(zip(jobs, results, strict=True))
            native = {arm: one_run(workload, commands[arm], layouts[0], loops=loops * 20,
                                   work=Path(tmp), arm=f"{arm}-native", native=True)
                      for arm in names[1:]}  # fmt: skip
            print(f"\n{workload}: {loops} loops a run")
            summary.append(report(workload, names, layouts, runs, native))
    print("\nsummary: profiler instructions a loop vs off, mean over layouts: "
          + " | ".join(summary))
    return 0


if __name__ == "__main__":
    sys.exit(main())

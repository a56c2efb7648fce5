"""What the memory monitor costs: the always-on part (growth detection) and tracing windows.

Run: python benchmarks/memory_overhead.py [--rounds 7] [--scale 0.5] [--sections tick,on,trace]
         [--wall]

Every run is its own process with this interpreter; arms alternate within each round (the order
rotates), and each figure is the median over rounds of the per-round ratio against the round's
baseline arm, with min and max (BENCHMARKS.md: a peer measured in the same run).

  on     the always-on part: ``hawkwatch.start()`` with default monitors and
         ``memory.enabled=false`` (baseline) vs the same with the memory monitor on (defaults:
         1 s readings, tracing only on growth) on ``workloads/cpu_mix.py`` and
         ``workloads/asyncio_mix.py``; ``aa`` repeats the baseline (the noise floor). The
         memory arm's sessions are checked to hold no tracing (no growth was found).
  trace  tracing windows on ``cpu_mix.py`` (allocation-heavy kernels included): no agent
         (baseline), plain ``python -X tracemalloc=16``, the agent with default monitors, the
         agent with ``memory.trace=always`` (tracemalloc + snapshots + type counts), and,
         when memray is installed, ``memray run`` (its defaults), ``memray run --native
         --trace-python-allocators`` (what hawkwatch asks of memray) and the agent with
         ``memory.backend=memray`` (its reading of the capture at exit is printed apart).

  tick   the always-on part measured directly: CPU time of one reading + growth decision
         (what runs every ``memory.interval_s``), over 60 s of readings, as a share of one core;
         and the reference-cycle hook's CPU per young collection, unsampled and sampled.

Figures: the workload's ``work_cpu_s`` (process CPU over the work, the agent's threads
included), which a busy shared machine disturbs far less than wall time; ``--wall`` uses
``work_s`` instead.
"""

from __future__ import annotations

import argparse
import importlib.util
import json
import os
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

Arms = dict[str, tuple[list[str], dict[str, str]]]
FIGURE = "work_cpu_s"

HERE = Path(__file__).resolve().parent
CPU_MIX = HERE / "workloads" / "cpu_mix.py"
ASYNCIO_MIX = HERE / "workloads" / "asyncio_mix.py"


def clean_env(home: Path, **extra: str) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith(("HAWKWATCH_", "_HAWKWATCH"))}
    env["HAWKWATCH_HOME"] = str(home)
    env.update(extra)
    return env


def run_arm(command: list[str], env: dict[str, str], cwd: Path) -> dict[str, object]:
    done = subprocess.run(command, env=env, cwd=cwd, capture_output=True, text=True, check=False)
    if done.returncode != 0:
        raise SystemExit(f"{' '.join(command)} failed:\n{done.stderr}")
    return json.loads(done.stdout.strip().splitlines()[-1])  # type: ignore[no-any-return]


def arms_on(workload: Path, scale: float, home: Path) -> Arms:
    base = [sys.executable, str(workload), "--scale", str(scale), "--start-agent"]
    off = clean_env(home / "off", HAWKWATCH_MEMORY_ENABLED="false")
    return {
        "baseline": (base, off),
        "memory": (base, clean_env(home / "memory")),
        "aa": (base, clean_env(home / "aa", HAWKWATCH_MEMORY_ENABLED="false")),
    }


def arms_trace(scale: float, home: Path, out: Path) -> Arms:
    work = [str(CPU_MIX), "--scale", str(scale)]
    py = sys.executable
    arms = {
        "baseline": ([py, *work], clean_env(home / "plain")),
        "tracemalloc": ([py, "-X", "tracemalloc=16", *work], clean_env(home / "plain")),
        "agent": ([py, *work, "--start-agent"], clean_env(home / "agent")),
        "agent+trace": (
            [py, *work, "--start-agent"],
            clean_env(home / "trace", HAWKWATCH_MEMORY_TRACE="always"),
        ),
    }
    if importlib.util.find_spec("memray") is not None:
        capture = str(out / "capture.bin")
        memray_run = [py, "-m", "memray", "run", "--quiet", "--force", "-o", capture]
        arms["memray"] = ([*memray_run, *work], clean_env(home / "plain"))
        # what hawkwatch's memray backend asks of memray: native stacks, pymalloc's objects
        arms["memray-full"] = (
            [*memray_run, "--native", "--trace-python-allocators", *work],
            clean_env(home / "plain"),
        )
        arms["agent+memray"] = (
            [py, *work, "--start-agent"],
            clean_env(
                home / "memray", HAWKWATCH_MEMORY_TRACE="always", HAWKWATCH_MEMORY_BACKEND="memray"
            ),
        )
    return arms


def memray_read_cost(home: Path) -> list[float]:
    """CPU each agent+memray session spent reading its capture at exit (not in the figure,
    which ends with the work): ``cost_s`` of its stopped ``memory-trace`` record."""
    from hawkwatch.model.records import MemoryTrace, decode_all
    from hawkwatch.store import list_sessions

    costs = []
    for session in list_sessions(home / "sessions"):
        traces = decode_all(session.records("memory-trace").records).of(MemoryTrace)
        costs += [t.cost_s for t in traces if t.backend == "memray" and t.state == "stopped"]
    return costs


def measure(title: str, arms: Arms, rounds: int, cwd: Path) -> dict[str, list[float]]:
    names = list(arms)
    for name in names:  # warm-up: bytecode caches, page cache
        run_arm(*arms[name], cwd=cwd)
    ratios: dict[str, list[float]] = {name: [] for name in names if name != "baseline"}
    for round_ in range(rounds):
        order = names[round_ % len(names) :] + names[: round_ % len(names)]
        times = {name: float(str(run_arm(*arms[name], cwd=cwd)[FIGURE])) for name in order}
        for name, values in ratios.items():
            values.append(times[name] / times["baseline"] - 1)
    print(f"\n{title}  ({rounds} rounds; overhead vs baseline: median [min, max])")
    for name, values in ratios.items():
        print(
            f"  {name:<12} {statistics.median(values) * 100:+7.2f} %   "
            f"[{min(values) * 100:+.2f} %, {max(values) * 100:+.2f} %]"
        )
    return ratios


def tick_cost(readings: int = 2000) -> None:
    """CPU per tick of the always-on part, in this process (its own thread's CPU clock)."""
    import psutil

    from hawkwatch.analysis.memory_growth import GrowthRule, footprint_growth

    process, rule = psutil.Process(), GrowthRule()
    points = [(float(t), 100e6 + t * 1e3) for t in range(60)]  # 60 s of 1 s readings
    started = time.thread_time()
    for _ in range(readings):
        points[-1] = (59.0, float(process.memory_info().rss))
        footprint_growth(points, rule)
    per_tick = (time.thread_time() - started) / readings
    print(
        f"\nalways-on tick: {per_tick * 1e6:.0f} µs CPU per reading + decision; at the default "
        f"1 s interval that is {per_tick * 100:.3f} % of one core"
    )


def cycles_cost(collections: int = 20000) -> None:
    """CPU the reference-cycle hook adds to a real young collection, unsampled and sampled:
    the same cycle-making loop with the hook and without (this thread's CPU clock)."""
    import gc

    from hawkwatch.agent.plugins.memory_cycles import CycleCounter

    class Node:
        def __init__(self) -> None:
            self.me = self

    def run(counter: CycleCounter | None) -> tuple[float, int]:
        if counter is not None:
            counter.install()
        try:
            before = gc.get_stats()[0]["collections"]
            started = time.thread_time()
            while gc.get_stats()[0]["collections"] - before < collections:
                Node()
            return time.thread_time() - started, gc.get_stats()[0]["collections"] - before
        finally:
            if counter is not None:
                counter.remove()

    plain, n = run(None)
    hooked, _ = run(CycleCounter(3600.0))  # one sample in the run, like a 1 s sample interval
    sampled_counter = CycleCounter(0.0)
    sampled, _ = run(sampled_counter)  # every collection sampled: the sample's own cost
    per = (hooked - plain) / n
    per_sample = (sampled - plain) / n
    print(
        f"\nreference-cycle hook: {per * 1e6:+.2f} µs CPU per young collection "
        f"({plain / n * 1e6:.0f} µs each without it, {n} collections of ~700 objects); a typed "
        f"(sampled) one costs {per_sample * 1e6:+.0f} µs, at most one per memory.cycles_sample_s"
    )


def tracing_started(home: Path) -> int:
    """Sessions under ``home`` whose records show a tracing window (none are expected)."""
    from hawkwatch.store import list_sessions

    return sum(
        1 for session in list_sessions(home / "sessions") if session.records("memory-trace").records
    )


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n", 1)[0])
    parser.add_argument("--rounds", type=int, default=7)
    parser.add_argument("--scale", type=float, default=0.5)
    parser.add_argument("--sections", default="tick,on,trace")
    parser.add_argument("--wall", action="store_true", help="compare wall time, not CPU time")
    args = parser.parse_args()
    global FIGURE
    FIGURE = "work_s" if args.wall else "work_cpu_s"
    sections = set(args.sections.split(","))
    print(f"python {sys.version.split()[0]}, {os.cpu_count()} CPUs; scale {args.scale}")
    if "tick" in sections:
        tick_cost()
        cycles_cost()
    with tempfile.TemporaryDirectory() as tmp:
        root = Path(tmp)
        cwd = root / "work"
        cwd.mkdir()
        if "on" in sections:
            for workload in (CPU_MIX, ASYNCIO_MIX):
                home = root / workload.stem
                measure(
                    f"always-on memory monitor, {workload.name}",
                    arms_on(workload, args.scale, home),
                    args.rounds,
                    cwd,
                )
                print(
                    f"  sessions of the memory arm that started tracing: "
                    f"{tracing_started(home / 'memory')}"
                )
        if "trace" in sections:
            measure(
                "tracing, cpu_mix.py",
                arms_trace(args.scale, root / "trace", root),
                args.rounds,
                cwd,
            )
            costs = memray_read_cost(root / "trace" / "memray")
            if costs:
                print(
                    f"  agent+memray read its capture at exit in {statistics.median(costs):.2f} s "
                    f"CPU (median of {len(costs)}), after the work"
                )


if __name__ == "__main__":
    main()

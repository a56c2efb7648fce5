"""What one blocking py-spy sample costs the program, measured from the program's side: the
time its main thread spends stopped per sample, and what the pause adds after it.

Run: python benchmarks/pyspy_pause.py [--rounds 3] [--rate 50] [--scale 0.3]
         [--workloads raytrace,richards,go,json_dumps,probe]

callgrind counts instructions, not time, and py-spy is another process that stops this one,
so ``layout_instructions.py`` cannot see py-spy's cost. Here each workload runs under ``hawkwatch
run`` (every other monitor off) in two arms, alternated in rounds: ``off`` (profiler off) and
``pyspy`` (``--profile``, py-spy engine at a fixed ``--rate``, blocking as by default; the
in-process sampler kept at 1 Hz or less, ``profiler.budget=0.0001``, so what differs is py-spy).
The driver (``workloads/timed_run.py``) reads its main thread's ``/proc/thread-self/schedstat``
(seconds on a CPU, seconds runnable but waiting for one) and its context switches over the timed
span. A blocking sample stops every thread (ptrace) and is one voluntary switch of the main
thread, so per round: pauses = voluntary switches more than ``off``; the time stopped = wall −
on-CPU − waiting, more than ``off``; each divided by the pauses gives the main thread's stopped
time per sample and the run-queue wait each pause adds (a resumed thread may find its core
taken), and the share of the program's wall time spent so. ``outside cpu``: the CPU time the
run's other processes used (the supervisor's recorder thread, py-spy: ``getrusage`` of the
whole tree minus the program's timed span) more than ``off``'s, per second of the run — the
share of a core taken from the machine, which the program pays for when the cores are busy.
What a pause costs after it (cold caches: the kernel's stop and resume run in the program's
context) is CPU time, which varies by ±5 % between runs of the same arm here:
``profile_agreement.py``'s wall and CPU arms are the place for it. ``probe`` rows run
``workloads/pause_probe.py`` at stack depths and with idle threads, to show what a pause grows
with. The designed cost of py-spy's share of the
budget is ``pyspy.COST_PER_SAMPLE_S`` per sample; the summary sets the measured pause beside it.
"""

from __future__ import annotations

import argparse
import json
import os
import resource
import statistics
import subprocess
import sys
import tempfile
from pathlib import Path

from hawkwatch.pyspy import COST_PER_SAMPLE_S

HERE = Path(__file__).resolve().parent
REPO = HERE.parent
sys.path.insert(0, str(HERE))
from profile_agreement import MONITORS_OFF, STALL_OFF, _env, engine_ran, workload_argv  # noqa: E402

DRIVER = HERE / "workloads" / "timed_run.py"
PROBE = HERE / "workloads" / "pause_probe.py"
PROBES = {"probe d=5 t=0": (5, 0), "probe d=100 t=0": (100, 0), "probe d=5 t=8": (5, 8),
          "probe d=5 t=32": (5, 32)}  # fmt: skip


def body(name: str, scale: float) -> list[str]:
    if name in PROBES:
        depth, threads = PROBES[name]
        return [str(PROBE), "--depth", str(depth), "--threads", str(threads),
                "--seconds", f"{max(scale * 8, 1.0):g}"]  # fmt: skip
    return workload_argv(name, scale)


def one(arm: str, name: str, scale: float, rate: int, home: Path) -> dict[str, float]:
    hw = [str(Path(sys.executable).with_name("hawkwatch")), "run", *MONITORS_OFF, *STALL_OFF]
    if arm == "pyspy":
        hw += ["--profile", "-cprofiler.engine=py-spy", f"-cprofiler.rate_hz={rate}",
               "-cprofiler.budget=0.0001"]  # fmt: skip
    command = [*hw, "--", sys.executable, str(DRIVER), *body(name, scale)]
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    done = subprocess.run(command, cwd=REPO, env=_env(home), capture_output=True, text=True,
                          check=False)  # fmt: skip
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    tree_cpu = (after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime)
    lines = [x for x in done.stdout.splitlines() if x.startswith('{"work_s"')]
    if not lines or "main" not in lines[-1]:
        raise SystemExit(f"{arm} on {name} failed: {done.stderr[-1500:]}")
    if arm == "pyspy":
        engine_ran(home, f"py-spy on {name}")
    result = json.loads(lines[-1])
    run_s, wait_s, voluntary, involuntary = result["main"]
    wall = result["work_s"]
    return {"wall": wall, "run": run_s, "wait": wait_s, "stopped": wall - run_s - wait_s,
            "vcsw": voluntary, "ivcsw": involuntary,
            "outside": tree_cpu - result["work_cpu_s"]}  # fmt: skip


def per_second(runs: list[dict[str, float]], key: str) -> float:
    return statistics.median(r[key] / r["wall"] for r in runs)


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--rate", type=int, default=100)
    parser.add_argument("--scale", type=float, default=0.5)
    parser.add_argument("--workloads", default="raytrace,richards,go,json_dumps,probe")
    args = parser.parse_args()
    names = [n for w in args.workloads.split(",") for n in (PROBES if w == "probe" else [w])]
    print(f"machine: nproc={os.cpu_count()}; py-spy at {args.rate} Hz, blocking; "
          f"{args.rounds} rounds; median over rounds [min … max]")
    print(f"{'workload':16} {'pauses/s':>8} {'stopped µs/pause':>22} {'+wait µs/pause':>20} "
          f"{'paused share':>13} {'outside cpu':>11} {'load':>5}")  # fmt: skip
    summary = []
    with tempfile.TemporaryDirectory(prefix="hw-pause-") as tmp:
        for name in names:
            load = os.getloadavg()[0]
            got: dict[str, list[dict[str, float]]] = {"off": [], "pyspy": []}
            for number in range(args.rounds):
                for arm in ("off", "pyspy") if number % 2 == 0 else ("pyspy", "off"):
                    home = Path(tmp) / f"{arm}-{len(got[arm])}-{name.replace(' ', '_')}"
                    got[arm].append(one(arm, name, args.scale, args.rate, home))
            load = (load + os.getloadavg()[0]) / 2
            # the off arm's own switches, stops and waits (the agent's threads, pyperf), per
            # second, taken out of each py-spy run at its length
            base = {key: per_second(got["off"], key) for key in ("vcsw", "stopped", "wait")}
            rates, stopped, wait, share = [], [], [], []
            # CPU the run's processes used outside the program's timed span, more than off: the
            # supervisor's recorder and py-spy (start-ups alike in both arms), per second
            outside_off = statistics.median(r["outside"] for r in got["off"])
            outside = [(r["outside"] - outside_off) / r["wall"] for r in got["pyspy"]]
            for run in got["pyspy"]:
                pauses = run["vcsw"] - base["vcsw"] * run["wall"]
                if pauses < 1:
                    raise SystemExit(f"{name}: no pauses seen ({run}, {got['off']})")
                rates.append(pauses / run["wall"])
                extra = {k: run[k] - base[k] * run["wall"] for k in ("stopped", "wait")}
                stopped.append(extra["stopped"] / pauses * 1e6)
                wait.append(extra["wait"] / pauses * 1e6)
                share.append((extra["stopped"] + extra["wait"]) / run["wall"])
            cells = [f"{statistics.median(v):6.0f} [{min(v):5.0f} … {max(v):5.0f}]"
                     for v in (stopped, wait)]  # fmt: skip
            print(f"{name:16} {statistics.median(rates):8.1f} {cells[0]:>22} {cells[1]:>20} "
                  f"{statistics.median(share):12.2%} {statistics.median(outside):10.2%} "
                  f"{load:5.2f}")  # fmt: skip
            summary.append(f"{name} {statistics.median(stopped):.0f}+"
                           f"{statistics.median(wait):.0f} µs")  # fmt: skip
    print(f"summary (stopped + added run-queue wait per pause; the budget's design figure "
          f"{COST_PER_SAMPLE_S * 1e6:.0f} µs): " + "; ".join(summary))
    return 0


if __name__ == "__main__":
    sys.exit(main())

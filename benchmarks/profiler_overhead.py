"""What the continuous profiler costs a CPU-bound program, and how that compares with
pyinstrument and py-spy sampling at the same 100 Hz.

Run: python benchmarks/profiler_overhead.py [--sections inproc,process] [--pairs 5] [--scale 1.0]
         [--arms ...] [--inproc-pairs 200]

Section ``inproc`` (the sharpest figure on a shared machine): ``workloads/profiler_alternation.py``
runs chunks of the same kernels (~0.1 s each) in one process with the profiler's sampler running
and paused, alternately, ``--inproc-pairs`` times, at the default budget and at a fixed 100 Hz;
overhead = median over pairs of (chunk with sampling / chunk without) − 1, by wall time and by
the main thread's CPU time. Other processes' noise comes in bursts of seconds, so chunks a tenth
of a second apart see the same machine.

Section ``process``:

``workloads/cpu_mix.py`` (seven pyperformance-like kernels, ~4 s at scale 1) runs as its own
process in each arm; the figure is the workload's own ``work_s`` (perf_counter around the
kernels):

  plain        python cpu_mix.py                                     baseline for the peers
  aa           python cpu_mix.py                                     A/A control: the noise floor
  hw-base      hawkwatch run (every monitor off) -- python …         baseline for the profiler
  hw-budget    hawkwatch run --profile (only the profiler, default budget 1 %)
  hw-100       hawkwatch run --profile -c profiler.rate_hz=100 (only the profiler)
  pyinstrument python -m pyinstrument -i 0.01 …                      100 Hz
  py-spy       py-spy record --rate 100 -- python …                  100 Hz, pauses the process
  py-spy-nb    py-spy record --rate 100 --nonblocking -- python …    100 Hz, reads without pausing

Per BENCHMARKS.md the arms alternate: one warm-up round, then ``--pairs`` rounds of every arm
once (the order rotates each round). Overhead = median over rounds of (arm / its baseline in the
same round) − 1, with min and max: ``hw-*`` against ``hw-base`` (the profiler alone), the peers
and ``aa`` against ``plain``. The hawkwatch arms also report the rate they reached and the
sampler's own CPU time per second from the session. py-spy samples from another process: its
own CPU is not in ``work_s`` (it runs on the second core) — only what it does to the target is.
Needs the ``bench`` extra (py-spy, pyinstrument) and ptrace rights for py-spy.
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import shutil
import statistics
import subprocess
import sys
import tempfile
from pathlib import Path

from hawkwatch.formats.cpu_profile import read_profiles
from hawkwatch.store import list_sessions

HERE = Path(__file__).resolve().parent
CPU_MIX = HERE / "workloads" / "cpu_mix.py"
ALTERNATION = HERE / "workloads" / "profiler_alternation.py"
MONITORS_OFF = [
    f"-o{name}.enabled=false" for name in ("resources", "gc", "launch", "imports", "cpu")
]
BASELINES = {
    "aa": "plain",
    "hw-budget": "hw-base",
    "hw-100": "hw-base",
    "pyinstrument": "plain",
    "py-spy": "plain",
    "py-spy-nb": "plain",
    "hw-base": "plain",
}
ARMS = ("plain", "aa", "hw-base", "hw-budget", "hw-100", "pyinstrument", "py-spy", "py-spy-nb")


def command(arm: str, scale: float, work: Path) -> list[str]:
    bin_dir = Path(sys.executable).parent
    workload = [sys.executable, str(CPU_MIX), "--scale", str(scale)]
    hawkwatch = [str(bin_dir / "hawkwatch"), "run", *MONITORS_OFF]
    pyspy = shutil.which("py-spy") or str(bin_dir / "py-spy")
    spy = [pyspy, "record", "--rate", "100", "--format", "raw", "-o", str(work / "spy.txt")]
    return {
        "plain": workload,
        "aa": workload,
        "hw-base": [*hawkwatch, "--", *workload],
        # the in-process sampler alone (benchmarks/profile_agreement.py measures the py-spy one)
        "hw-budget": [*hawkwatch, "--profile", "-cprofiler.engine=in-process", "--", *workload],
        "hw-100": [*hawkwatch, "--profile", "-cprofiler.engine=in-process",
                   "-c", "profiler.rate_hz=100", "--", *workload],
        "pyinstrument": [
            sys.executable, "-m", "pyinstrument", "-i", "0.01", "-r", "text",
            "-o", str(work / "pyinstrument.txt"), str(CPU_MIX), "--scale", str(scale),
        ],
        "py-spy": [*spy, "--", *workload],
        "py-spy-nb": [*spy, "--nonblocking", "--", *workload],
    }[arm]  # fmt: skip


def run_arm(
    arm: str, scale: float, work: Path, home: Path
) -> tuple[float, float, dict[str, float]]:
    env = {k: v for k, v in os.environ.items() if not k.startswith("HAWKWATCH_")}
    env["HAWKWATCH_HOME"] = str(home)
    before = {s.path for s in list_sessions(home / "sessions")} if arm.startswith("hw") else set()
    done = subprocess.run(
        command(arm, scale, work),
        cwd=work,
        env=env,
        capture_output=True,
        text=True,
        timeout=600,
        check=False,
    )
    if done.returncode != 0:
        raise SystemExit(f"{arm} failed ({done.returncode}): {done.stderr[-2000:]}")
    lines = [line for line in done.stdout.splitlines() if line.startswith("{")]
    result = json.loads(lines[-1])
    work_s, work_cpu_s = float(result["work_s"]), float(result["work_cpu_s"])
    extra: dict[str, float] = {}
    if arm in ("hw-budget", "hw-100"):
        (session,) = [s for s in list_sessions(home / "sessions") if s.path not in before]
        profiles = read_profiles(session.path, session.records().records).value
        duration = sum(p.duration_s for p in profiles)
        extra["rate_hz"] = sum(p.samples for p in profiles) / duration if duration else 0.0
        extra["sampler_cpu_pct"] = (
            sum(p.cost_s for p in profiles) / duration * 100 if duration else 0
        )
    return work_s, work_cpu_s, extra


def inproc(pairs: int) -> dict[str, tuple[float, float]]:
    """Per rate setting: (median wall overhead, median main-thread CPU overhead)."""
    env = {k: v for k, v in os.environ.items() if not k.startswith("HAWKWATCH_")}
    results: dict[str, tuple[float, float]] = {}
    quartiles = f"{'p25':>7} {'p75':>7}"
    print(f"\n{'in-process':22} {'wall ovh':>9} {quartiles} {'cpu ovh':>8} {quartiles}  rate")
    with tempfile.TemporaryDirectory(prefix="hw-profiler-inproc-") as tmp:
        env["HAWKWATCH_HOME"] = tmp
        for label, rate in (("default budget (1 %)", 0.0), ("fixed 100 Hz", 100.0)):
            done = subprocess.run(
                [sys.executable, str(ALTERNATION), "--pairs", str(pairs), "--rate-hz", str(rate),
                 "--chunk-scale", "0.03"],
                cwd=tmp, env=env, capture_output=True, text=True, timeout=1200, check=False,
            )  # fmt: skip
            if done.returncode != 0:
                raise SystemExit(f"in-process run failed: {done.stderr[-2000:]}")
            data = json.loads(done.stdout.splitlines()[-1])
            pairs_on_off = list(zip(data["on"], data["off"], strict=True))
            wall = sorted(on[0] / off[0] - 1 for on, off in pairs_on_off)
            cpu = sorted(on[1] / off[1] - 1 for on, off in pairs_on_off)
            q = statistics.quantiles
            results[label] = (statistics.median(wall), statistics.median(cpu))
            print(
                f"{label:22} {results[label][0] * 100:8.2f}% {q(wall, n=4)[0] * 100:6.2f}%"
                f" {q(wall, n=4)[2] * 100:6.2f}% {results[label][1] * 100:7.2f}%"
                f" {q(cpu, n=4)[0] * 100:6.2f}% {q(cpu, n=4)[2] * 100:6.2f}%"
                f"  {data['rate_hz']:.1f} Hz"
            )
    print(
        "cpu = the main thread's CPU time: what the program itself loses to the GIL hand-overs;"
        " the sampler's own CPU is the 'sampler CPU' of the process section"
    )
    return results


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--sections", default="inproc,process")
    parser.add_argument("--pairs", type=int, default=5)
    parser.add_argument("--inproc-pairs", type=int, default=200)
    parser.add_argument("--scale", type=float, default=1.0)
    parser.add_argument("--arms", default=",".join(ARMS))
    args = parser.parse_args()
    sections = set(args.sections.split(","))
    print(
        f"machine: nproc={os.cpu_count()}, Python {platform.python_version()}, {platform.machine()}"
    )
    print(f"command: {' '.join(sys.argv)}")
    inproc_results = inproc(args.inproc_pairs) if "inproc" in sections else {}
    if "process" not in sections:
        first = inproc_results.get("default budget (1 %)")
        if first:
            verdict = "met" if first[0] <= 0.01 else "NOT met"
            print(f"summary: in-process, default budget: wall {first[0] * 100:.2f} %, main-thread"
                  f" CPU {first[1] * 100:.2f} % ({verdict}, target <= 1 %); fixed 100 Hz: wall"
                  f" {inproc_results['fixed 100 Hz'][0] * 100:.2f} %")  # fmt: skip
        return 0
    arms = [a for a in args.arms.split(",") if a]
    for arm in arms:
        base = BASELINES.get(arm)
        if base and base not in arms:
            arms.insert(0, base)
    arms = list(dict.fromkeys(arms))
    times: dict[str, list[float]] = {arm: [] for arm in arms}
    cpu_times: dict[str, list[float]] = {arm: [] for arm in arms}
    extras: dict[str, list[dict[str, float]]] = {arm: [] for arm in arms}
    with tempfile.TemporaryDirectory(prefix="hw-profiler-overhead-") as tmp:
        work, home = Path(tmp) / "work", Path(tmp) / "home"
        work.mkdir()
        for round_index in range(args.pairs + 1):
            order = arms[round_index % len(arms) :] + arms[: round_index % len(arms)]
            for arm in order:
                work_s, work_cpu_s, extra = run_arm(arm, args.scale, work, home)
                if round_index:  # round 0 warms caches and .pyc files
                    times[arm].append(work_s)
                    cpu_times[arm].append(work_cpu_s)
                    extras[arm].append(extra)
            if round_index:
                print(
                    f"round {round_index}: " + "  ".join(f"{a} {times[a][-1]:.3f}s" for a in arms)
                )
    print(
        f"\n{'arm':13} {'vs':8} {'work_s':>7} {'wall ovh':>9} {'min':>7} {'max':>7}"
        f" {'cpu ovh':>8} {'min':>7} {'max':>7}  notes"
    )
    summary: dict[str, tuple[float, float]] = {}
    for arm in arms:
        base = BASELINES.get(arm)
        median_s = statistics.median(times[arm])
        if base is None:
            print(f"{arm:13} {'':8} {median_s:7.3f}")
            continue
        wall = [a / b - 1 for a, b in zip(times[arm], times[base], strict=True)]
        cpu = [a / b - 1 for a, b in zip(cpu_times[arm], cpu_times[base], strict=True)]
        summary[arm] = (statistics.median(wall), statistics.median(cpu))
        notes = ""
        if extras[arm] and extras[arm][0]:
            rate = statistics.median(e["rate_hz"] for e in extras[arm])
            cost = statistics.median(e["sampler_cpu_pct"] for e in extras[arm])
            notes = f"{rate:.1f} Hz reached, sampler CPU {cost:.2f} % of a core"
        print(
            f"{arm:13} {base:8} {median_s:7.3f} {summary[arm][0] * 100:8.2f}%"
            f" {min(wall) * 100:6.2f}% {max(wall) * 100:6.2f}%"
            f" {summary[arm][1] * 100:7.2f}% {min(cpu) * 100:6.2f}% {max(cpu) * 100:6.2f}%  {notes}"
        )
    print(
        "wall = the workload's perf_counter; cpu = the process's CPU time over the same span (all"
        " its threads; robust to other load on a shared machine; py-spy's own CPU is elsewhere)"
    )
    parts = []

    def both(arm: str) -> str:
        return f"wall {summary[arm][0] * 100:.2f} %, cpu {summary[arm][1] * 100:.2f} %"

    if "default budget (1 %)" in inproc_results:
        wall, cpu_main = inproc_results["default budget (1 %)"]
        verdict = "met" if wall <= 0.01 else "NOT met"
        parts.append(
            f"in-process at default budget wall {wall * 100:.2f} %, main-thread CPU"
            f" {cpu_main * 100:.2f} % ({verdict}, target <= 1 %)"
        )
        parts.append(f"in-process at 100 Hz wall {inproc_results['fixed 100 Hz'][0] * 100:.2f} %")
    if "hw-budget" in summary:
        verdict = "met" if summary["hw-budget"][1] <= 0.01 else "NOT met"
        parts.append(
            f"profiler at default budget {both('hw-budget')} (cpu {verdict}, target <= 1 %)"
        )
    peers = (
        ("hw-100", "hawkwatch"),
        ("pyinstrument", "pyinstrument"),
        ("py-spy", "py-spy"),
        ("py-spy-nb", "py-spy --nonblocking"),
    )
    for arm, label in peers:
        if arm in summary:
            parts.append(f"{label} 100 Hz {both(arm)}")
    if "aa" in summary:
        parts.append(f"A/A noise {both('aa')}")
    print("summary: " + "; ".join(parts))
    return 0


if __name__ == "__main__":
    sys.exit(main())

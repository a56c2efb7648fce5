"""What the profiler costs a program, measured inside one process: segments with the profiler on
and off, alternated, compared pair by pair.

Run: python benchmarks/profiler_paired.py [--pairs 8] [--segment-s 6]
         [--workloads raytrace,richards,go,json_dumps] [--arms budget,rate100,inproc,aa]
         [--save ratios.json]
     python benchmarks/profiler_paired.py --pool ratios.json more.json

Why paired: comparing whole runs (``profile_agreement.py``'s overhead section) compares two
processes, and on a shared 2-vCPU VM two identical processes differ by ±5–15 % (memory layout,
the type-attribute cache, CPU placement, the neighbours' load): a 1 % budget drowns. Here one
process runs the workload's loop (``workloads/paired_segments.py``) for ``2 × --pairs`` segments
of ``--segment-s`` seconds; this script turns the profiler on in half of them, in the order
on-off, off-on, on-off, … (so a drift in the machine's speed falls on both sides alike), and
each adjacent pair gives one ratio: the mean wall (and CPU) time of a call of the loop in the "on"
segment over the "off" one, calls that straddle a segment's edge left out. Printed per
workload and arm: the median of the pairs' ratios, their range, and a distribution-free 95 %
interval of the median (binomial order statistics), py-spy's rates and the cost per sample its
windows measured (``model µs``: what the rate is set from). ``--save`` keeps every pair's ratios;
``--pool`` gives the same table for several saved runs' pairs together.

Each pair's wall ratio is split in two (CPU time of a call is ``time.thread_time``): ``off-CPU``,
the wall ratio minus the CPU ratio (the time the loop's thread spent stopped by py-spy, or
waiting for the GIL while the in-process sampler held it, per time of a call: exact up to the
off segment's own off-CPU share, ~0.1 % of itself), and ``CPU``, the CPU ratio (what a sampler
costs the thread while it runs: cold caches after a pause, the collector's passes over the
sampler's objects). The split matters because this VM's speed drifts by up to ±20 % between
segments, and a drift moves wall and CPU time alike: the off-CPU part of A/A arms stays within
a few hundredths of a percent, the CPU part carries all the noise (±1–5 % intervals at 20–30
pairs). ``off µs``: the off-CPU median over py-spy's mean rate, the pause a sample costs (at the
budget it carries the in-process share's hand-offs too).

``bound``, printed per workload when the run (or the pool) has the ``budget`` arm, a py-spy
``rateN`` arm and an in-process ``inprocM`` arm: an upper bound of the default budget's cost from
figures this VM can resolve. The off-CPU part is measured at the budget itself (its interval's
upper end). The CPU part is too small to resolve there, so it is bounded per sample where it is
large, at N and M Hz: the upper end of ``rateN``'s CPU interval over N (everything it measured
charged to py-spy, the in-process share included) times py-spy's mean rate at the budget, plus
the upper end of ``inprocM``'s over M times the in-process share's highest rate (its budget share
over ``profiler.HANDOFF_ALLOWANCE_S``, the least it charges a sample: 2.4 Hz at the default).
That assumes a sample's CPU cost does not grow as samples get rarer; the off-CPU part, which can
be measured at every rate, does not (go: 572 µs a sample at 100 Hz, 587 at 20). The line says
``CONTRADICTED`` when the budget's own CPU interval lies wholly above the bound's CPU part.

Arms (the profiler as ``hawkwatch run --profile`` runs it, at the default ``profiler.budget``
unless said):

  budget   py-spy from outside (``hawkwatch.pyspy.Recorder``, the supervisor's recorder, with the
           options ``launcher.OutsideSampler`` derives from the default config: its budget share,
           rate adapted window by window, blocking), one window per "on" segment (windows are
           back to back under ``hawkwatch run``, each a new py-spy, ``profiler.window_s`` = 10 s
           long: a 6 s segment pays one attach, as a window does, so it charges py-spy's attach
           1.7 times as often as real use), and the in-process sampler at its share
           (``paired_segments.py`` ``share``)
  rate100  the same at a fixed 100 Hz (``profiler.rate_hz = 100``): py-spy's must-show rate
           (any ``rateN``: N Hz)
  pyspy    py-spy at the budget alone (the in-process sampler stays paused)
  inproc   the in-process sampler alone at the whole budget (the engine without py-spy)
  inprocM  the in-process sampler alone at a fixed M Hz (``profiler.rate_hz``): ``bound``'s
  aa       nothing turned on: the A/A control, the noise floor of the method

The recorder's rate carries over from one "on" segment to the next, as from one window to the
next. The program and py-spy run on whatever cores the kernel gives them, as in real use.
"""

from __future__ import annotations

import argparse
import dataclasses
import json
import os
import statistics
import subprocess
import sys
import tempfile
import time
from collections.abc import Sequence
from pathlib import Path

from _paired_stats import abba, median_interval, pair_ratios

from hawkwatch.agent.plugins.profiler import HANDOFF_ALLOWANCE_S
from hawkwatch.config import ProfilerConfig, load_config
from hawkwatch.launcher import OutsideSampler
from hawkwatch.pyspy import Recorder
from hawkwatch.runenv import IN_PROCESS_SHARE

HERE = Path(__file__).resolve().parent
WORKLOAD = HERE / "workloads" / "paired_segments.py"
ARMS = ("budget", "rate100", "inproc", "aa")
ENGINE = {"inproc": "whole", "aa": "none", "pyspy": "none"}
"""The in-process sampler in each arm's program (``paired_segments.py``); the others: ``share``,
``inprocM``: ``whole`` at M Hz."""
TARGET = 0.01
"""The default budget's cost may be at most this share of the program's time (issue #14)."""
MAX_SEGMENT_S = 8.0
"""py-spy's window is the segment plus 2 s (``Recorder`` stops it at the segment's end), and a
window is at most ``pyspy.MAX_WINDOW_S`` (10 s)."""


def outside_sampler(arm: str) -> OutsideSampler | None:
    """The supervisor's py-spy sampler for this arm, from the default config (None: no py-spy)."""
    if arm not in ("budget", "pyspy") and not arm.startswith("rate"):
        return None
    options = {"profiler.enabled": "true", "profiler.engine": "py-spy"}
    if arm.startswith("rate"):
        options["profiler.rate_hz"] = arm.removeprefix("rate")
    sampler = OutsideSampler.for_config(load_config(options, strict=True).config.profiler)
    if sampler is None:
        raise SystemExit("py-spy is not installed: pip install -e '.[bench]'")
    return sampler


def run_arm(
    name: str, arm: str, pairs: int, segment_s: float, scratch: Path
) -> tuple[list[list[float]], list[float], list[float]]:
    """Per segment of one process's schedule [mean wall, mean CPU] of a call, and the rates
    py-spy sampled at and the cost per sample each window measured (``Window.cost_s``)."""
    sampler = outside_sampler(arm)
    env = {k: v for k, v in os.environ.items() if not k.startswith(("HAWKWATCH_", "_HAWKWATCH"))}
    env["HAWKWATCH_HOME"] = str(scratch / f"home-{name}-{arm}")
    # its result is one long line on a pipe: unbuffered, py-spy's stops would cut it short
    # (CPython gh-85393; hawkwatch run's bootstrap guards a program's streams, hawkwatch.start()
    # in code does not: agent/whole_writes.py)
    env.pop("PYTHONUNBUFFERED", None)
    if sampler is not None:
        env.update(sampler.environment(str(scratch)))
    on = abba(pairs)
    # a window longer than the segment: stopping the recorder ends it, no second one starts
    options = None if sampler is None else dataclasses.replace(
        sampler.options, window_s=segment_s + 2
    )  # fmt: skip
    fixed = _hz(arm, "inproc")
    engine = [ENGINE.get(arm, "share")] if fixed is None else ["whole", f"{fixed:g}"]
    program = subprocess.Popen(
        [sys.executable, str(WORKLOAD), name, *engine],
        stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True, env=env,
    )  # fmt: skip
    assert program.stdin is not None and program.stdout is not None
    if program.stdout.readline().strip() != "ready":
        raise SystemExit(f"{name}/{arm}: the workload did not start")
    t0 = time.monotonic() + 0.5
    program.stdin.write(json.dumps({"t0": t0, "segment_s": segment_s, "on": on}) + "\n")
    program.stdin.flush()
    rate = None
    rates: list[float] = []
    costs: list[float] = []
    for k, active in enumerate(on):
        _sleep_until(t0 + k * segment_s)
        if not active or options is None:
            continue
        recorder = Recorder(program.pid, options)
        if rate is not None:
            recorder.rate_hz = rate
        recorder.start()
        _sleep_until(t0 + (k + 1) * segment_s)
        recorder.stop()
        if not recorder.windows:
            raise SystemExit(f"{name}/{arm}: py-spy made no window: {recorder.errors[-1:]}")
        rates.extend(window.rate_hz for window in recorder.windows)
        costs.extend(w.cost_s for w in recorder.windows if w.cost_s is not None)
        rate = recorder.rate_hz
    out, _ = program.communicate(timeout=600)
    if program.returncode:
        raise SystemExit(f"{name}/{arm}: the workload failed ({program.returncode})")
    try:
        calls: list[list[float]] = json.loads(out.strip().splitlines()[-1])["calls"]
    except (ValueError, IndexError, KeyError) as error:
        kept = Path(tempfile.gettempdir()) / f"profiler_paired-{name}-{arm}.txt"
        kept.write_text(out)
        raise SystemExit(f"{name}/{arm}: unreadable output ({error}), kept in {kept}") from None
    means = [_segment_means(calls, t0 + k * segment_s, segment_s) for k in range(len(on))]
    return means, rates, costs


def _sleep_until(moment: float) -> None:
    time.sleep(max(0.0, moment - time.monotonic()))


def _segment_means(calls: Sequence[Sequence[float]], start: float, length: float) -> list[float]:
    """[mean wall, mean CPU] of the calls wholly inside the segment (the first one pays for
    py-spy's attach, as each window's first moments do)."""
    inside = [c for c in calls if c[0] >= start and c[1] <= start + length]
    if len(inside) < 3:
        raise SystemExit(f"segments too short: {len(inside)} whole calls in {length} s")
    return [statistics.fmean(c[1] - c[0] for c in inside), statistics.fmean(c[2] for c in inside)]


def _hz(arm: str, prefix: str) -> float | None:
    """N of an arm named ``prefix`` + N (``rate100``, ``inproc100``); None for other arms."""
    rest = arm.removeprefix(prefix)
    return float(rest) if rest != arm and rest.isdigit() else None


@dataclasses.dataclass
class Arm:
    """One arm's pairs: wall and CPU ratios (on over off, minus 1), py-spy's rates and the cost
    per sample its windows measured."""

    wall: list[float]
    cpu: list[float]
    rates_hz: list[float]
    costs_s: list[float]

    @property
    def off_cpu(self) -> list[float]:
        return [w - c for w, c in zip(self.wall, self.cpu, strict=True)]

    def row(self, name: str) -> str:
        wall, off, cpu = (_with_interval(v) for v in (self.wall, self.off_cpu, self.cpu))
        rates = self.rates_hz
        hz = f"{min(rates):.0f}–{max(rates):.0f}" if rates else "–"
        model = f"{statistics.median(self.costs_s) * 1e6:.0f}" if self.costs_s else "–"
        pause = (
            f"{statistics.median(self.off_cpu) / statistics.fmean(rates) * 1e6:.0f}"
            if rates
            else "–"
        )
        spread = f"[{min(self.wall):+.2%} … {max(self.wall):+.2%}]"
        return (f"  {name:9} {wall:>32} {spread:>20} {off:>30} {cpu:>32} {hz:>9} {model:>8} "
                f"{pause:>7}")  # fmt: skip


HEADER = (f"  {'arm':9} {'wall median [95 % interval]':>32} {'range':>20} "
          f"{'off-CPU median [interval]':>30} {'CPU median [interval]':>32} {'py-spy Hz':>9} "
          f"{'model µs':>8} {'off µs':>7}")  # fmt: skip


def _with_interval(values: Sequence[float]) -> str:
    low, high, _ = median_interval(values)
    return f"{statistics.median(values):+.2%} [{low:+.2%} … {high:+.2%}]"


def bound(arms: dict[str, Arm]) -> str | None:
    """The default budget's cost bounded from above (the module's ``bound``), or None without
    the arms it needs."""
    budget = arms.get("budget")
    pyspy = [(hz, arm) for name, arm in arms.items() if (hz := _hz(name, "rate")) is not None]
    inproc = [(hz, arm) for name, arm in arms.items() if (hz := _hz(name, "inproc")) is not None]
    if budget is None or not budget.rates_hz or not pyspy or not inproc:
        return None
    p_hz, p_arm = max(pyspy, key=lambda found: found[0])
    i_hz, i_arm = max(inproc, key=lambda found: found[0])
    off_high = median_interval(budget.off_cpu)[1]
    rate = statistics.fmean(budget.rates_hz)
    share_hz = ProfilerConfig().budget * IN_PROCESS_SHARE / HANDOFF_ALLOWANCE_S  # the default's
    per_pyspy = max(median_interval(p_arm.cpu)[1], 0.0) / p_hz
    per_inproc = max(median_interval(i_arm.cpu)[1], 0.0) / i_hz
    cpu_bound = per_pyspy * rate + per_inproc * share_hz
    total = off_high + cpu_bound
    # the check the bound can fail: the budget's own CPU interval lying wholly above it
    measured_low = median_interval(budget.cpu)[0]
    check = "consistent" if measured_low <= cpu_bound else "CONTRADICTED"
    verdict = "met" if total <= TARGET and check == "consistent" else "not shown"
    return (
        f"  bound: off-CPU ≤ {off_high:+.2%} + py-spy CPU ≤ {per_pyspy * 1e6:.0f} µs × "
        f"{rate:.1f} Hz + in-process CPU ≤ {per_inproc * 1e6:.0f} µs × {share_hz:.1f} Hz = "
        f"≤ {total:.2%} ({verdict}: target ≤ {TARGET:.0%}); the budget's own CPU interval "
        f"starts at {measured_low:+.2%}: {check}"
    )


def report(name: str, arms: dict[str, Arm]) -> None:
    print(f"\n{name}:")
    print(HEADER)
    for arm, found in arms.items():
        print(found.row(arm))
    line = bound(arms)
    if line:
        print(line)


def pool(files: Sequence[Path]) -> int:
    """Runs of the same code pooled: every workload and arm's pairs from all ``files``."""
    pooled: dict[str, dict[str, Arm]] = {}
    for file in files:
        for name, arms in json.loads(file.read_text())["results"].items():
            for arm, found in arms.items():
                into = pooled.setdefault(name, {}).setdefault(arm, Arm([], [], [], []))
                into.wall.extend(found["wall"])
                into.cpu.extend(found["cpu"])
                into.rates_hz.extend(found.get("rates_hz", []))
                into.costs_s.extend(found.get("costs_s", []))
    print(f"pooled: {', '.join(str(file) for file in files)}")
    for name, arms in pooled.items():
        report(name, arms)
    return 0


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--pairs", type=int, default=8)
    parser.add_argument("--segment-s", type=float, default=6.0)
    parser.add_argument("--workloads", default="raytrace,richards,go,json_dumps")
    parser.add_argument("--arms", default=",".join(ARMS))
    parser.add_argument("--save", type=Path, help="write every pair's ratios here (JSON)")
    parser.add_argument(
        "--pool",
        type=Path,
        nargs="+",
        metavar="SAVED",
        help="no run: the table of the pairs of these --save files together",
    )
    args = parser.parse_args()
    if args.pool:
        return pool(args.pool)
    if not 1.0 <= args.segment_s <= MAX_SEGMENT_S:
        parser.error(f"--segment-s: 1 to {MAX_SEGMENT_S:g} s")
    arms = args.arms.split(",")
    print(f"machine: nproc={os.cpu_count()}, Python {sys.version.split()[0]}; "
          f"load average {' '.join(f'{x:.2f}' for x in os.getloadavg())}")  # fmt: skip
    print(f"command: python {' '.join(sys.argv)}")
    print(f"{args.pairs} pairs of {args.segment_s:g} s segments per workload and arm; per pair the "
          "mean call time with the profiler on over off, minus 1")  # fmt: skip
    saved: dict[str, dict[str, dict[str, list[float]]]] = {}
    with tempfile.TemporaryDirectory(prefix="hw-paired-") as tmp:
        for name in args.workloads.split(","):
            results: dict[str, Arm] = {}
            for arm in arms:
                segments, rates, costs = run_arm(name, arm, args.pairs, args.segment_s, Path(tmp))
                found = Arm(pair_ratios(segments, 0), pair_ratios(segments, 1), rates, costs)
                results[arm] = found
                saved.setdefault(name, {})[arm] = dataclasses.asdict(found)
                print(f"  {name} {arm}: load {os.getloadavg()[0]:.2f}", flush=True)
            report(name, results)
    if args.save:
        args.save.write_text(json.dumps({"command": sys.argv, "results": saved}, indent=1))
    return 0


if __name__ == "__main__":
    sys.exit(main())

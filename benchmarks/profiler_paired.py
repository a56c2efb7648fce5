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
interval of the median (binomial order statistics), the CPU median, py-spy's rates, the cost
per sample its windows measured (``model µs``: what the rate was set from) and the wall cost
per py-spy sample the loop saw (``wall µs``: the wall median over the mean rate; at the budget
it carries the in-process sampler's share too). ``--save`` keeps every pair's ratios;
``--pool`` gives the median and interval of several saved runs' pairs together.

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

from hawkwatch.config import load_config
from hawkwatch.launcher import OutsideSampler
from hawkwatch.pyspy import Recorder

HERE = Path(__file__).resolve().parent
WORKLOAD = HERE / "workloads" / "paired_segments.py"
ARMS = ("budget", "rate100", "inproc", "aa")
ENGINE = {"inproc": "whole", "aa": "none", "pyspy": "none"}
"""The in-process sampler in each arm's program (``paired_segments.py``); the others: ``share``."""
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
    program = subprocess.Popen(
        [sys.executable, str(WORKLOAD), name, ENGINE.get(arm, "share")],
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


def pool(files: Sequence[Path]) -> int:
    """Runs of the same code pooled: every workload and arm's pairs from all ``files``."""
    pooled: dict[tuple[str, str], list[float]] = {}
    for file in files:
        for name, arms in json.loads(file.read_text())["results"].items():
            for arm, found in arms.items():
                pooled.setdefault((name, arm), []).extend(found["wall"])
    for (name, arm), wall in pooled.items():
        low, high, _ = median_interval(wall)
        print(f"{name:10} {arm:8} {len(wall):3} pairs: {statistics.median(wall):+.2%} "
              f"[{low:+.2%} … {high:+.2%}]")  # fmt: skip
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
        help="no run: the medians of the pairs of these --save files together",
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
    summary = []
    saved: dict[str, dict[str, dict[str, list[float]]]] = {}
    with tempfile.TemporaryDirectory(prefix="hw-paired-") as tmp:
        for name in args.workloads.split(","):
            print(f"\n{name}:")
            print(f"  {'arm':8} {'wall median':>12} {'95 % interval':>20} {'range':>20} "
                  f"{'cpu median':>11} {'py-spy Hz':>10} {'model µs':>9} {'wall µs':>8} "
                  f"{'load':>5}")  # fmt: skip
            for arm in arms:
                segments, rates, costs = run_arm(name, arm, args.pairs, args.segment_s, Path(tmp))
                wall, cpu = pair_ratios(segments, 0), pair_ratios(segments, 1)
                model = f"{statistics.median(costs) * 1e6:.0f}" if costs else "–"
                # what a sample cost the loop in wall time: the median ratio over the mean rate
                per_sample = (f"{statistics.median(wall) / statistics.fmean(rates) * 1e6:.0f}"
                              if rates else "–")  # fmt: skip
                low, high, _ = median_interval(wall)
                print(
                    f"  {arm:8} {statistics.median(wall):>+11.2%} "
                    f"{f'[{low:+.2%} … {high:+.2%}]':>20} "
                    f"{f'[{min(wall):+.2%} … {max(wall):+.2%}]':>20} "
                    f"{statistics.median(cpu):>+10.2%} "
                    f"{f'{min(rates):.0f}–{max(rates):.0f}' if rates else '–':>10} "
                    f"{model:>9} {per_sample:>8} "
                    f"{os.getloadavg()[0]:>5.2f}",
                    flush=True,
                )
                saved.setdefault(name, {})[arm] = {"wall": wall, "cpu": cpu, "rates_hz": rates,
                                                   "costs_s": costs}  # fmt: skip
                summary.append(f"{name} {arm} {statistics.median(wall):+.2%} "
                               f"[{low:+.2%} … {high:+.2%}]")  # fmt: skip
    print("\nsummary (wall, median [95 % interval]): " + "; ".join(summary))
    if args.save:
        args.save.write_text(json.dumps({"command": sys.argv, "results": saved}, indent=1))
    return 0


if __name__ == "__main__":
    sys.exit(main())

"""The CPU-bound process of ``steady_paired.py``: ``cpu_mix.py``'s kernels in a loop, segment by
segment, the agent started or stopped between segments.

Usage: python steady_cpu.py SCALE   (then one JSON line on stdin: the schedule)

The schedule is ``{"segments": [{"on": bool, ...}, ...], "segment_s": S, "settle_s": T}``. Per
segment: ``hawkwatch.start()`` with default options (the environment holds HAWKWATCH_HOME only)
or ``hawkwatch.stop()``; kernel rounds (each kernel once, at ``round(base × SCALE)``) for ``T``
seconds, not timed (the agent's start, its first samples, its retention pass; the stop's
flush); the agent's state checked (``agent_state.problems``: exits 1 if it is not as scheduled);
then rounds for ``S`` seconds, each timed. One JSON line per segment: the segment's fields from
the schedule plus ``rounds``, ``wall_s`` and ``cpu_s`` (means per round; CPU of the process,
every thread, so the agent's own threads count) and ``monitors`` (the running agent's).
"""

from __future__ import annotations

import json
import sys
import time

import agent_state  # type: ignore[import-not-found]
from cpu_mix import KERNELS  # type: ignore[import-not-found]

import hawkwatch


def kernel_round(scale: float) -> int:
    return sum(kernel(max(1, round(base * scale))) for kernel, base in KERNELS.values())


def run_for(duration_s: float, scale: float) -> tuple[int, float, float]:
    """Whole rounds until ``duration_s`` has passed: (rounds, wall s, process CPU s)."""
    clock, cpu_clock = time.perf_counter, time.process_time
    wall0, cpu0 = clock(), cpu_clock()
    until = wall0 + duration_s
    rounds = 0
    while rounds < 3 or clock() < until:
        kernel_round(scale)
        rounds += 1
    return rounds, clock() - wall0, cpu_clock() - cpu0


def main() -> None:
    scale = float(sys.argv[1])
    schedule = json.loads(sys.stdin.readline())
    segment_s, settle_s = schedule["segment_s"], schedule["settle_s"]
    for segment in schedule["segments"]:
        if segment["on"]:
            hawkwatch.start()
        else:
            hawkwatch.stop()
        run_for(settle_s, scale)
        found = agent_state.problems(expect_on=segment["on"])
        if found:
            raise SystemExit(f"segment {segment}: {'; '.join(found)}")
        rounds, wall_s, cpu_s = run_for(segment_s, scale)
        print(json.dumps({**segment, "rounds": rounds, "wall_s": wall_s / rounds,
                          "cpu_s": cpu_s / rounds, "monitors": agent_state.running_monitors()}),
              flush=True)  # fmt: skip
    hawkwatch.stop()


if __name__ == "__main__":
    main()

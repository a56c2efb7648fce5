"""One process of ``profiler_paired.py``: a pyperformance workload's loop run again and again,
each call timed, while the harness turns the profiler on and off in segments.

Usage: python paired_segments.py WORKLOAD ENGINE [RATE_HZ]   (then one JSON line on stdin: the
schedule)

The agent starts in this process with every monitor off but the profiler (``ENGINE``: ``share``,
the in-process sampler at its share of the budget beside py-spy, as under ``hawkwatch run
--profile``; ``whole``, the in-process sampler at the whole budget, the fallback engine; ``none``,
no sampler here: the A/A control; ``RATE_HZ``: the in-process sampler at that fixed rate,
``profiler.rate_hz``, instead of its budget), warms up, prints ``ready``, and reads the schedule
``{"t0": monotonic seconds, "segment_s": S, "on": [bool, …]}``. Segment k spans
``t0 + k·S … t0 + (k+1)·S``; in an "on" segment the in-process sampler runs (the harness runs
py-spy on this process in the same segments), in an "off" one it is paused. Each call of the
workload's loop is recorded as (start, end, this thread's CPU seconds); the last line is
``{"calls": [[start, end, cpu], …]}``. ``time.monotonic`` is the system's CLOCK_MONOTONIC here and
in the harness, so both read one clock.
"""

from __future__ import annotations

import json
import sys
import time
from pathlib import Path
from typing import Any

import hawkwatch
from hawkwatch.agent.api import current_agent
from hawkwatch.agent.plugins.profiler import ProfilerMonitor

UNITS = {  # one call: 30–400 ms natively
    "richards": "bench = m.Richards()\nloop = lambda: bench.run(1)",
    "raytrace": "loop = lambda: m.bench_raytrace(1, 60, 60, None)",
    "go": "loop = m.versus_cpu",
    "json_dumps": "data = [(obj, range(n)) for obj, n in (m.EMPTY, m.SIMPLE, m.NESTED, m.HUGE)]"
    "\nloop = lambda: m.bench_json_dumps(data)",
}
MONITORS_OFF = ("resources", "gc", "launch", "imports", "cpu", "stall", "io", "network", "crash",
                "memory")  # fmt: skip
WARM_UP_S = 2.0


def workload(name: str) -> Any:
    import pyperformance

    folder = Path(pyperformance.__file__).parent / "data-files" / "benchmarks" / f"bm_{name}"
    sys.path.insert(0, str(folder))
    import run_benchmark as m

    scope: dict[str, Any] = {"m": m}
    exec(UNITS[name], scope)  # the table above, not input
    return scope["loop"]


def profiler() -> ProfilerMonitor | None:
    agent = current_agent()
    for monitor in agent.monitors if agent is not None else ():
        if isinstance(monitor, ProfilerMonitor):
            return monitor
    return None


def main() -> None:
    name, engine = sys.argv[1], sys.argv[2]
    loop = workload(name)
    options: dict[str, object] = {f"{m}.enabled": False for m in MONITORS_OFF}
    options["profiler.enabled"] = engine != "none"
    if len(sys.argv) > 3:
        options["profiler.rate_hz"] = float(sys.argv[3])
    hawkwatch.start(**options)
    sampler = profiler()
    if (sampler is None) != (engine == "none"):
        raise SystemExit(f"engine {engine}: profiler {'missing' if sampler is None else 'running'}")
    until = time.monotonic() + WARM_UP_S
    while time.monotonic() < until:
        loop()
    if sampler is not None:
        sampler.pause()
    print("ready", flush=True)
    schedule = json.loads(sys.stdin.readline())
    t0, segment_s, on = schedule["t0"], schedule["segment_s"], schedule["on"]
    end = t0 + segment_s * len(on)
    while time.monotonic() < t0:
        loop()
    calls: list[tuple[float, float, float]] = []
    sampling = False
    now = time.monotonic()
    while now < end:
        want = on[int((now - t0) // segment_s)]
        if sampler is not None and want != sampling:
            sampler.resume() if want else sampler.pause()
            sampling = want
        cpu = time.thread_time()
        loop()
        calls.append((now, time.monotonic(), time.thread_time() - cpu))
        now = calls[-1][1]
    if sampler is not None and sampling:
        sampler.pause()
    hawkwatch.stop()
    print(json.dumps({"calls": calls}), flush=True)


if __name__ == "__main__":
    main()

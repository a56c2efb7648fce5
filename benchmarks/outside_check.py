"""What the in-process profiler's look for py-spy's give-up costs, beside what it looks after.

Run: python benchmarks/outside_check.py [--calls 200000] [--rounds 5]

Under ``hawkwatch run --profile`` the agent looks whether the supervisor created the file
``runenv.OUTSIDE_STOPPED_VAR`` names (py-spy gave up): ``OutsideWatch.check``, one failed
``open``, when the sampler thread wakes anyway (at most 4 times a second) and in the scheduler's
job that already runs every second (no wake-up of its own). Measured here as thread CPU per call
with the file absent (every look while py-spy samples), alternated in rounds with its peer, one
in-process sample of this process (``Sampler.sample`` of one thread waiting 30 frames deep: the
unit the profiler's budget pays for), and set against the budget share the in-process sampler
keeps beside py-spy. Medians over the rounds.
"""

from __future__ import annotations

import argparse
import os
import statistics
import sys
import tempfile
import threading
import time

from hawkwatch.agent.plugins.profiler import OutsideWatch, Sampler, Window
from hawkwatch.config import ProfilerConfig
from hawkwatch.runenv import IN_PROCESS_SHARE, OUTSIDE_SAMPLER_VAR, OUTSIDE_STOPPED_VAR


def nested(depth: int, stop: threading.Event) -> None:
    """A thread waiting ``depth`` frames deep: what a sample walks in a small program."""
    if depth:
        nested(depth - 1, stop)
    else:
        stop.wait()


def per_call(run: object, calls: int) -> float:
    assert callable(run)
    begin = time.thread_time()
    for _ in range(calls):
        run()
    return (time.thread_time() - begin) / calls


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--calls", type=int, default=200_000)
    parser.add_argument("--rounds", type=int, default=5)
    args = parser.parse_args()
    folder = tempfile.mkdtemp(prefix="hawkwatch-outside-check-")
    watch = OutsideWatch(
        {OUTSIDE_SAMPLER_VAR: "py-spy", OUTSIDE_STOPPED_VAR: os.path.join(folder, "stopped")}
    )
    stop = threading.Event()
    waiter = threading.Thread(target=nested, args=(30, stop), name="waiter")  # one to sample
    waiter.start()
    config = ProfilerConfig()
    sampler = Sampler(config)
    window = Window(time.time(), time.monotonic())
    me = threading.get_ident()
    checks: list[float] = []
    samples: list[float] = []
    for _ in range(args.rounds):  # alternated: both arms see the same machine
        checks.append(per_call(watch.check, args.calls))
        samples.append(per_call(lambda: sampler.sample(window, me), max(args.calls // 20, 1)))
    sampler.close()
    stop.set()
    waiter.join()
    os.rmdir(folder)
    check, sample = statistics.median(checks), statistics.median(samples)
    share = config.budget * IN_PROCESS_SHARE
    print(f"Python {sys.version.split()[0]}, load {os.getloadavg()[0]:.2f}, "
          f"{args.rounds} rounds of {args.calls:,} checks")  # fmt: skip
    print(f"check (file absent): {check * 1e6:.2f} µs thread CPU a call "
          f"[{min(checks) * 1e6:.2f} … {max(checks) * 1e6:.2f}]")  # fmt: skip
    print(f"one in-process sample: {sample * 1e6:.2f} µs (check / sample = {check / sample:.3f})")
    for per_s in (1, 5):  # the scheduler's look alone; with the sampler's at most
        print(f"{per_s} a second: {check * per_s * 100:.6f} % of a core = "
              f"{check * per_s / share:.5f} of the in-process sampler's share beside py-spy "
              f"({share:g})")  # fmt: skip


if __name__ == "__main__":
    main()

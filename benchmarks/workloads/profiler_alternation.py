"""Profiler on / off alternating in one process, chunk by chunk, for
``benchmarks/profiler_overhead.py --section inproc``.

Run: python benchmarks/workloads/profiler_alternation.py [--pairs 200] [--chunk-scale 0.012]
         [--rate-hz 0]

Starts the agent with only the profiler (``hawkwatch.start``), then runs ``--pairs`` pairs of
equal chunks of ``cpu_mix``'s kernels (~60 ms each), one with the sampler thread running and
one with it paused (``ProfilerMonitor.pause``/``resume``, the same calls ``fork()`` uses), in
alternating order. Noise from other processes comes in bursts of seconds, so pairs 60 ms apart
see the same machine. The last line is JSON: per pair, wall and main-thread CPU seconds of the
chunk with and without sampling, and the rate the sampler reached.
"""

import argparse
import importlib.util
import json
import sys
import time
from pathlib import Path

import hawkwatch
from hawkwatch.agent import current_agent
from hawkwatch.agent.plugins.profiler import ProfilerMonitor

HERE = Path(__file__).resolve().parent


def load_cpu_mix():  # type: ignore[no-untyped-def]
    spec = importlib.util.spec_from_file_location("cpu_mix", HERE / "cpu_mix.py")
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--pairs", type=int, default=200)
    parser.add_argument("--chunk-scale", type=float, default=0.012)
    parser.add_argument("--rate-hz", type=float, default=0.0)
    args = parser.parse_args()
    cpu_mix = load_cpu_mix()
    kernels = [
        (kernel, max(1, round(base * args.chunk_scale)))
        for kernel, base in cpu_mix.KERNELS.values()
    ]

    def chunk() -> tuple[float, float]:
        w0, c0 = time.perf_counter(), time.thread_time()
        for kernel, n in kernels:
            kernel(n)
        return time.perf_counter() - w0, time.thread_time() - c0

    off = {f"{name}_enabled": False for name in ("resources", "gc", "launch", "imports", "cpu")}
    hawkwatch.start(profiler_enabled=True, profiler_rate_hz=args.rate_hz, **off)
    agent = current_agent()
    assert agent is not None
    (profiler,) = [m for m in agent.monitors if isinstance(m, ProfilerMonitor)]
    for _ in range(3):
        chunk()  # warm-up, sampling
    on: list[tuple[float, float]] = []
    quiet: list[tuple[float, float]] = []
    samples_before = profiler._window.samples if profiler._window else 0
    sampling_s = 0.0
    for index in range(args.pairs):
        for sampling in (True, False) if index % 2 == 0 else (False, True):
            if sampling:
                profiler.resume()
                started = time.perf_counter()
                on.append(chunk())
                sampling_s += time.perf_counter() - started
            else:
                profiler.pause()
                quiet.append(chunk())
    profiler.resume()
    window = profiler._window
    samples = (window.samples if window else 0) - samples_before
    hawkwatch.stop()
    print(
        json.dumps({"on": on, "off": quiet, "rate_hz": samples / sampling_s if sampling_s else 0})
    )
    sys.stdout.flush()


if __name__ == "__main__":
    main()

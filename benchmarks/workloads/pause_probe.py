"""A CPU-bound main thread at a chosen stack depth, beside idle threads: what a blocking py-spy
sample costs as the stack deepens and threads are added (``benchmarks/pyspy_pause.py``).

Run: python benchmarks/workloads/pause_probe.py [--depth 20] [--threads 0] [--seconds 2]

The main thread recurses ``--depth`` frames, then runs a pure-Python loop for ``--seconds``;
``--threads`` more threads wait on an event the whole time (py-spy stops and reads every thread
of the process at each sample, idle or not).
"""

import argparse
import threading
import time


def spin(seconds: float) -> int:
    end = time.perf_counter() + seconds
    total = 0
    while time.perf_counter() < end:
        for i in range(2000):
            total += i * i % 7
    return total


def deep(depth: int, seconds: float) -> int:
    return spin(seconds) if depth <= 1 else deep(depth - 1, seconds) + 1


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--depth", type=int, default=20)
    parser.add_argument("--threads", type=int, default=0)
    parser.add_argument("--seconds", type=float, default=2.0)
    args = parser.parse_args()
    done = threading.Event()
    idle = [threading.Thread(target=done.wait, name=f"idle-{i}") for i in range(args.threads)]
    for thread in idle:
        thread.start()
    try:
        deep(args.depth, args.seconds)
    finally:
        done.set()
        for thread in idle:
            thread.join()


if __name__ == "__main__":
    main()

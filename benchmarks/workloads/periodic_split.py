"""Strictly periodic work with a known CPU split, for ``benchmarks/cpu_accuracy.py``.

Run: python benchmarks/workloads/periodic_split.py --period-ms 10 --split 0.6 [--split2 0.3]
         [--seconds 4] [--go-file PATH]

Each busy thread alternates ``f`` (``split`` of every period) and ``g`` (the rest), both spinning
on the thread's CPU clock, in periods of exactly ``--period-ms`` of CPU time: the worst case for
a sampler on a fixed period, which phase-locks with it. ``--split2`` starts a second busy thread
(``busy-2``) with its own split, so the two share the GIL. The truth is each thread's CPU time in
``f`` and ``g`` (``time.thread_time``). With ``--go-file`` it prints its pid and waits for that
file, so an out-of-process sampler can attach first. The last line is JSON: the truth per thread.
"""

import argparse
import json
import os
import sys
import threading
import time


def f(seconds: float) -> None:
    end = time.thread_time() + seconds
    while time.thread_time() < end:
        pass


def g(seconds: float) -> None:
    end = time.thread_time() + seconds
    while time.thread_time() < end:
        pass


def alternate(period: float, split: float, seconds: float, out: dict[str, float]) -> None:
    cpu_end = time.thread_time() + seconds
    while time.thread_time() < cpu_end:
        t0 = time.thread_time()
        f(period * split)
        t1 = time.thread_time()
        g(period * (1 - split))
        t2 = time.thread_time()
        out["f"] += t1 - t0
        out["g"] += t2 - t1


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--period-ms", type=float, default=10.0)
    parser.add_argument("--split", type=float, default=0.6)
    parser.add_argument("--split2", type=float, default=None)
    parser.add_argument("--seconds", type=float, default=4.0, help="CPU seconds per thread")
    parser.add_argument("--go-file")
    args = parser.parse_args()
    if args.go_file:
        print(json.dumps({"pid": os.getpid()}), flush=True)
        while not os.path.exists(args.go_file):
            time.sleep(0.01)
    period = args.period_ms / 1000
    truth = {"MainThread": {"f": 0.0, "g": 0.0}}
    second = None
    if args.split2 is not None:
        truth["busy-2"] = {"f": 0.0, "g": 0.0}
        second = threading.Thread(
            target=alternate,
            args=(period, args.split2, args.seconds, truth["busy-2"]),
            name="busy-2",
        )
        second.start()
    alternate(period, args.split, args.seconds, truth["MainThread"])
    if second is not None:
        second.join()
    print(json.dumps(truth))
    sys.stdout.flush()


if __name__ == "__main__":
    main()

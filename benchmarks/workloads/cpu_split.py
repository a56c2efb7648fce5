"""A workload with a known CPU split, for ``benchmarks/cpu_accuracy.py``.

Run: python benchmarks/workloads/cpu_split.py --seconds 20 [--go-file PATH]

The main thread spends 60 % of its CPU time in ``f`` and 40 % in ``g`` (CPU time of the thread,
``time.thread_time``, so descheduling does not skew the truth); it alternates in cycles of a
random length between 5 and 25 ms, so no sampling rate can alias with them. A second thread,
``io-blocked``, sits in ``socket.recv`` the whole time; a third, ``sleeper``, sleeps in a loop.
With ``--go-file`` it prints its pid and waits for that file, so an out-of-process sampler can
attach first. The last line is JSON: the measured CPU seconds in ``f`` and ``g``.
"""

import argparse
import json
import os
import random
import socket
import sys
import threading
import time

F_SHARE = 0.6


def f(seconds: float) -> None:
    end = time.thread_time() + seconds
    while time.thread_time() < end:
        pass


def g(seconds: float) -> None:
    end = time.thread_time() + seconds
    while time.thread_time() < end:
        pass


def blocked_in_io(sock: socket.socket) -> None:
    sock.recv(1)


def sleeper(stop: threading.Event) -> None:
    while not stop.is_set():
        time.sleep(0.2)


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--seconds", type=float, default=20.0)
    parser.add_argument("--go-file")
    args = parser.parse_args()
    reader, writer = socket.socketpair()
    stop = threading.Event()
    threads = [
        threading.Thread(target=blocked_in_io, args=(reader,), name="io-blocked"),
        threading.Thread(target=sleeper, args=(stop,), name="sleeper"),
    ]
    for thread in threads:
        thread.start()
    if args.go_file:
        print(json.dumps({"pid": os.getpid()}), flush=True)
        while not os.path.exists(args.go_file):
            time.sleep(0.01)
    rng = random.Random(5)
    spent = {"f": 0.0, "g": 0.0}
    start = time.monotonic()
    while time.monotonic() - start < args.seconds:
        cycle = rng.uniform(0.005, 0.025)
        t0 = time.thread_time()
        f(cycle * F_SHARE)
        t1 = time.thread_time()
        g(cycle * (1 - F_SHARE))
        t2 = time.thread_time()
        spent["f"] += t1 - t0
        spent["g"] += t2 - t1
    writer.send(b"x")
    stop.set()
    for thread in threads:
        thread.join()
    print(json.dumps({"f_cpu_s": spent["f"], "g_cpu_s": spent["g"]}))
    sys.stdout.flush()


if __name__ == "__main__":
    main()

"""An asyncio app that stalls its own loop on purpose, for ``benchmarks/stall_accuracy.py``.

Run: python benchmarks/workloads/stall_injector.py PLAN_JSON

``PLAN_JSON`` is a list of ``[cause, seconds]`` (cause: sleep, cpu, file_read, regex, gc) or
``{"clean": seconds}``. The app starts hawkwatch (HAWKWATCH_HOME from the environment), runs
background traffic on its loop (small tasks, none blocking longer than 20 ms), and between gaps
of 0.6–1.0 s calls the injected function for each plan item right inside a coroutine, so the
loop is blocked for that long. Prints one JSON line: the session folder and the truth of each
injection (cause, nominal and measured seconds, wall-clock start, the injected function's name).
"""

from __future__ import annotations

import asyncio
import gc
import json
import os
import random
import re
import sys
import tempfile
import threading
import time

import hawkwatch


def inject_sleep(seconds: float) -> None:
    time.sleep(seconds)


def inject_cpu(seconds: float) -> None:
    deadline = time.perf_counter() + seconds
    total = 0
    while time.perf_counter() < deadline:
        for i in range(2000):
            total += i * i % 7


def inject_file_read(seconds: float) -> None:
    """A read from a FIFO whose writer answers after ``seconds``: blocking I/O."""
    folder = tempfile.mkdtemp(prefix="stall-fifo-")
    path = os.path.join(folder, "pipe")
    os.mkfifo(path)

    def writer() -> None:
        with open(path, "wb") as out:  # opens once the reader has
            time.sleep(seconds)
            out.write(b"x")

    thread = threading.Thread(target=writer)
    thread.start()
    with open(path, "rb") as source:
        source.read(1)
    thread.join()
    os.unlink(path)
    os.rmdir(folder)


REGEX = re.compile(r"(a+)+$")
_regex_sizes: dict[float, int] = {}


def regex_size(seconds: float) -> int:
    """The input size that backtracks for about ``seconds`` (the time doubles per character)."""
    if seconds not in _regex_sizes:
        n = 16
        while True:
            started = time.perf_counter()
            REGEX.match("a" * n + "b")
            took = time.perf_counter() - started
            if took >= 0.02:
                break
            n += 1
        while took < seconds / 1.41:
            n, took = n + 1, took * 2
        _regex_sizes[seconds] = n
    return _regex_sizes[seconds]


def inject_regex(seconds: float) -> None:
    """Catastrophic backtracking: C code holding the GIL (the watchdog cannot run)."""
    REGEX.match("a" * regex_size(seconds) + "b")


HEAP: list[list[object]] = []


def inject_gc(seconds: float) -> None:
    """Full collections over a heap of ~600,000 container objects until ``seconds`` pass."""
    deadline = time.perf_counter() + seconds
    gc.collect()
    while time.perf_counter() < deadline:
        gc.collect()


INJECT = {
    "sleep": inject_sleep,
    "cpu": inject_cpu,
    "file_read": inject_file_read,
    "regex": inject_regex,
    "gc": inject_gc,
}


async def traffic(stop: asyncio.Event) -> None:
    """What a busy loop does meanwhile: many short tasks, none over 20 ms of blocking."""
    rng = random.Random(7)

    async def request() -> None:
        work = rng.uniform(0.0, 0.02)
        deadline = time.perf_counter() + work
        while time.perf_counter() < deadline:
            sum(range(200))
        await asyncio.sleep(rng.uniform(0.0, 0.01))

    while not stop.is_set():
        await asyncio.gather(*(request() for _ in range(rng.randint(1, 4))))
        await asyncio.sleep(rng.uniform(0.005, 0.03))


async def main(plan: object) -> list[dict[str, object]]:
    stop = asyncio.Event()
    background = asyncio.create_task(traffic(stop))
    rng = random.Random(11)
    truths: list[dict[str, object]] = []
    await asyncio.sleep(1.0)
    if isinstance(plan, dict):
        await asyncio.sleep(float(plan["clean"]))
    else:
        for cause, seconds in plan:
            if cause == "regex":
                regex_size(seconds)  # calibrate outside the measured stall
            await asyncio.sleep(rng.uniform(0.6, 1.0))
            wall = time.time()
            started = time.perf_counter()
            INJECT[cause](seconds)
            took = time.perf_counter() - started
            truths.append(
                {
                    "cause": cause,
                    "nominal": seconds,
                    "seconds": took,
                    "start": wall,
                    "func": INJECT[cause].__name__,
                }
            )
        await asyncio.sleep(1.0)
    stop.set()
    await background
    return truths


if __name__ == "__main__":
    plan = json.loads(sys.argv[1])
    if not isinstance(plan, dict) and any(cause == "gc" for cause, _ in plan):
        HEAP.extend([[i] for i in range(600_000)])
    hawkwatch.start(app_name="stall-injector")
    from hawkwatch.agent import current_agent

    agent = current_agent()
    session = str(agent.session.path) if agent and agent.session else None
    found = asyncio.run(main(plan))
    hawkwatch.stop()
    print(json.dumps({"session": session, "truths": found}))

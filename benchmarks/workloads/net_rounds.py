"""The client process of ``network_overhead.py``: every arm in this one process, batch by batch.

Usage: python net_rounds.py FAMILY URL REQUESTS ROUNDS [ARMS] (comma-separated, ``off``
first; default all). Per round, each arm in turn (the order
rotates: each arm first in turn) starts the agent with its configuration, makes the untimed
warm-up requests, then a timed batch of REQUESTS (``net_families.run``: a new client each, its
loop timed, not its making), and stops the agent. Arms: ``off`` (the network monitor off),
``on`` (as configured by default: per-host head sampling), ``full`` (every request traced:
``network.sample_every = 1``, no cap a second) and ``aa`` (off again: the A/A control). Every
other monitor is off in all of them. One JSON line per batch on stdout: round, arm, wall s, CPU
s (the process's: every thread). A first round, not printed, warms up imports, connections and
caches.

What each batch holds, so that it shows what a long-running service pays per request:

- The warm-up requests (``network.sample_warmup + network.sample_every``) before it: a started
  agent counts each host afresh, and a service is past its hosts' warm-ups (every request
  traced) in seconds. Then the monitor writes them (``drain``): the process's first write
  imports the typed model and msgspec, once (the warm-up round).
- The monitor's writing of the batch's requests (``drain``, in this thread, timed): the
  scheduler's timers that do it otherwise (every 0.2 s, and with each 10 s window of
  aggregates) are pushed out of the batch (``network.DRAIN_INTERVAL_S``,
  ``AGGREGATE_INTERVAL_S``), so that none of it is left to the untimed stop. The window's
  ``network-aggregate`` records are not in it: written at stop here, once per 10 s of
  requests in a service.
- The libraries as the arm leaves them: with the monitor off (``off``, ``aa``, after an arm
  that had it on), no function or class attribute of the modules the monitor may wrap is ours
  (a wrapper keeps the original's name but its own module; nor an attribute named after us):
  the library's own, as before the agent first started (checked: the run fails if not); with
  it on, some are ours.
"""

from __future__ import annotations

import gc
import json
import sys
import time
from collections.abc import Iterator
from types import ModuleType

import net_families  # type: ignore[import-not-found]

import hawkwatch
from hawkwatch.agent.api import current_agent
from hawkwatch.agent.plugins import network

ARMS: dict[str, dict[str, object]] = {
    "off": {"network.enabled": False},
    "on": {"network.enabled": True},
    "full": {"network.enabled": True, "network.sample_every": 1, "network.max_traced_per_s": 0},
    "aa": {"network.enabled": False},
}
QUIET = {
    f"{name}.enabled": False
    for name in ("resources", "gc", "launch", "imports", "stall", "cpu", "profiler", "io",
                 "crash", "memory")
}  # fmt: skip
WARMUP = 64 + 16  # NetworkConfig's sample_warmup + sample_every


def _members(modules: list[ModuleType]) -> Iterator[tuple[str, object]]:
    """(where, object) of every function and class at the top of ``modules`` and of every
    attribute of those classes."""
    for module in modules:
        for attribute, value in list(vars(module).items()):
            if callable(value) and getattr(value, "__module__", None) == module.__name__:
                yield f"{module.__name__}.{attribute}", value
                if isinstance(value, type):
                    for member, inner in list(vars(value).items()):
                        yield f"{module.__name__}.{attribute}.{member}", inner


def _ours(value: object) -> bool:
    """A wrapper of the monitor's (it keeps the original's name, not its module)."""
    return str(getattr(value, "__module__", "")).startswith("hawkwatch")


def check(family: str, *, monitor_on: bool) -> None:
    """With the monitor off: nothing of ours (a wrapper, an attribute named after us) on the
    modules it may wrap, every function and class attribute the library's own; on: some."""
    prefixes = net_families.patchable(family)
    modules = [
        module for key, module in list(sys.modules.items())
        if isinstance(module, ModuleType) and key.partition(".")[0] in prefixes
    ]  # fmt: skip
    ours = [where for where, value in _members(modules) if _ours(value) or "hawkwatch" in where]
    if monitor_on and not ours:
        raise SystemExit(f"{family}: the monitor is on but nothing of the library is wrapped")
    if not monitor_on and ours:
        raise SystemExit(f"{family}: the monitor is off but these are ours: {ours[:5]}")


def monitor() -> network.NetworkMonitor | None:
    agent = current_agent()
    for running in agent.monitors if agent is not None else ():
        if isinstance(running, network.NetworkMonitor):
            return running
    return None


def batch(family: str, url: str, count: int, arm: str) -> tuple[float, float]:
    """One arm's batch: (wall s, CPU s) of ``count`` requests and their writing."""
    hawkwatch.start(**ARMS[arm], **QUIET)
    try:
        running = monitor()
        check(family, monitor_on=ARMS[arm]["network.enabled"] is True)
        net_families.run(family, url, WARMUP)
        if running is not None:
            running.drain()
        gc.collect()
        wall, cpu = net_families.run(family, url, count)  # the loop alone, not the client's making
        started = time.perf_counter(), time.process_time()
        if running is not None:
            running.drain()
        return (wall + time.perf_counter() - started[0], cpu + time.process_time() - started[1])
    finally:
        hawkwatch.stop()


def main() -> None:
    family, url, count, rounds = sys.argv[1], sys.argv[2], int(sys.argv[3]), int(sys.argv[4])
    arms = tuple(sys.argv[5].split(",")) if len(sys.argv) > 5 else tuple(ARMS)
    # the batch's drain runs in this thread, timed; the aggregates' timer drains too (and would
    # race this thread's drain): pushed out as well, the window is written at stop
    network.DRAIN_INTERVAL_S = network.AGGREGATE_INTERVAL_S = 1e6
    net_families.libraries(family)  # imported before the agent first starts
    for arm in arms:  # the warm-up round: imports, the first write, connections, caches
        batch(family, url, count, arm)
    for index in range(rounds):
        turn = index % len(arms)
        for arm in arms[turn:] + arms[:turn]:
            wall, cpu = batch(family, url, count, arm)
            print(json.dumps({"round": index, "arm": arm, "wall_s": wall, "cpu_s": cpu}),
                  flush=True)  # fmt: skip


if __name__ == "__main__":
    main()

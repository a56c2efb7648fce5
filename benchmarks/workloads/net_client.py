"""One arm of the network benchmark: N GET requests through one client family, timed.

Usage: python net_client.py FAMILY URL N on|full|untraced|off|hooks [quiet] (the client loops:
``net_families.py``). Starts the agent
with the network monitor on or off (every other monitor alike in all arms), warms up (past the
host's sampling warm-up), then prints requests per second and the client's CPU µs per request.
``on``: the default configuration (head sampling: 1 request in ``network.sample_every`` traced
after the warm-up); ``full``: every request traced (``network.sample_every = 1``, the cost
before sampling); ``untraced``: no request traced (each only counted and timed: the untraced
path alone). ``hooks``: the monitor off, but the
library's own extension point in use with callbacks that do nothing (httpx: a ``trace``
extension on each request; aiohttp: a ``TraceConfig`` on the signals the monitor listens to):
what the library costs before the monitor does anything. ``quiet``
(``network_instructions.py``, under callgrind): the agent's periodic monitors are off in both
arms, the timed loop is bracketed by ``os.getppid()`` and ``os.getpgrp()``, where callgrind
zeroes and dumps its counters, and the monitor's writing of the ended requests (its ``drain``,
the job of two timers on the scheduler thread otherwise) runs in the program's thread before
each, and
what the warm-up left alive is frozen out of the garbage collector's passes (``gc.freeze``).
"""

from __future__ import annotations

import gc
import os
import sys
import time

import net_families  # type: ignore[import-not-found]

import hawkwatch
from hawkwatch.agent.api import current_agent
from hawkwatch.agent.plugins import network

family, url, count, arm = sys.argv[1], sys.argv[2], int(sys.argv[3]), sys.argv[4]
quiet = sys.argv[5:] == ["quiet"]
options: dict[str, object] = {
    "network.enabled": arm in ("on", "full", "untraced"),
    "stall.enabled": False,
}
if arm == "full":
    options["network.sample_every"], options["network.max_traced_per_s"] = 1, 0
elif arm == "untraced":
    options["network.sample_warmup"], options["network.sample_every"] = 0, 10**9
if quiet:  # nothing periodic but the network monitor's own writing: counts that repeat
    for name in ("resources", "cpu", "memory", "gc", "crash"):
        options[f"{name}.enabled"] = False
    # ended requests stay queued and are written in the counted thread (``drain`` below), not
    # on the scheduler's timer: under callgrind a run lasts ~50x longer, so the timer's work
    # per request would scale with the machine's load. The aggregates' timer drains too (every
    # 10 s: within a run under callgrind, more often the slower the machine): pushed out as well,
    # it moved a run's writing to the scheduler's thread (traced +46k a request in one run,
    # +116k in the next) and raced the counted thread's drain
    network.DRAIN_INTERVAL_S = network.AGGREGATE_INTERVAL_S = 1e6
hawkwatch.start(**options)
hooks = arm == "hooks"


def run(n: int) -> float:
    return net_families.run(family, url, n, hooks)[0]


def drain() -> None:
    """The monitor's writing of the requests ended so far, in this thread (``quiet``)."""
    agent = current_agent()
    for monitor in agent.monitors if agent is not None else ():
        if isinstance(monitor, network.NetworkMonitor):
            monitor.drain()


run(max(count // 10, 80))  # warm-up: imports, connections, caches, the host's sampling warm-up
if quiet:
    drain()  # the warm-up's records are written before counting starts
    # what is alive now is left out of the collector's later passes: a full pass over the
    # whole heap, run or not in the counted loop, moved the count by ~8,000 a request
    gc.collect()
    gc.freeze()
    os.getppid()  # callgrind: --zero-before=os_getppid
cpu_started = time.process_time()
elapsed = run(count)
cpu = time.process_time() - cpu_started
if quiet:
    drain()  # and this run's records are written (counted) before the dump
    os.getpgrp()  # callgrind: --dump-before=os_getpgrp
hawkwatch.stop()
print(f"{count / elapsed:.1f} {cpu / count * 1e6:.2f}")

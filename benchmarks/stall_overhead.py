"""What the stall monitor costs an asyncio HTTP server: loop throughput with it on and off.

Run: python benchmarks/stall_overhead.py [--rounds 15] [--requests 5000] [--slices 5]

The same server (``workloads/asyncio_http.py --start-agent``, every default monitor on) runs in
three arms, alternated in one run by ``agent_overhead.py``'s HTTP section (one server per arm
per round, the load generator ``workloads/http_load.py`` loads them in alternating slices):

  plain  HAWKWATCH_STALL_ENABLED=false   the agent without the stall monitor (the baseline)
  stall  (defaults)                      the agent with the stall monitor: asyncio threshold
                                         100 ms, pings every 0.1 s, faulthandler backstop
                                         (0.2 s) re-armed on every check
  old    ..._ASYNCIO_THRESHOLD_S=0.4     the default before issue #13: pings every 0.1 s,
                                         backstop (0.4 s) re-armed every other check
  aa     HAWKWATCH_STALL_ENABLED=false   the baseline again: an A/A control (noise floor)

Overhead = median over rounds of (time per request with) / (time per request without) - 1, with
min .. max and a distribution-free confidence interval of the median. Target (issue #4): <= 1 %.

On a shared machine that ratio is noisy (the A/A control shows how noisy), so the benchmark
also measures the monitor's cost directly, which needs no peer: a process whose asyncio loop
idles for ``--idle-s`` seconds with the stall monitor on reports the CPU time of the watchdog
thread (pings, checks, faulthandler re-arming) and of the loop thread (answering pings), per
second of wall time, as a share of one core.
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tempfile
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))

import agent_overhead as ao

OFF = {"HAWKWATCH_STALL_ENABLED": "false"}
OLD = {"HAWKWATCH_STALL_ASYNCIO_THRESHOLD_S": "0.4"}  # the asyncio threshold before issue #13
ARMS = (
    ao.Arm(
        "plain", "agent, stall monitor off", agent=True, supervised=False, env=OFF, in_code=True
    ),
    ao.Arm("stall", "agent, stall monitor on", agent=True, supervised=False, in_code=True),
    ao.Arm("old", "stall on, old 0.4 s default", True, False, env=OLD, in_code=True),
    ao.Arm("aa", "agent, stall off (A/A control)", True, False, env=OFF, in_code=True),
)


IDLE_PROGRAM = """
import asyncio, json, sys, threading, time
import hawkwatch
hawkwatch.start(resources_enabled=False, gc_enabled=False, imports_enabled=False,
                launch_enabled=False)
seconds = float(sys.argv[1])

def cpu(thread):
    return time.clock_gettime(time.pthread_getcpuclockid(thread.ident))

async def main():
    watchdog = next(t for t in threading.enumerate() if t.name == "hawkwatch-stall")
    await asyncio.sleep(0.5)  # the loop is watched
    loop_thread = threading.current_thread()
    w0, l0, t0 = cpu(watchdog), cpu(loop_thread), time.perf_counter()
    await asyncio.sleep(seconds)
    w1, l1, t1 = cpu(watchdog), cpu(loop_thread), time.perf_counter()
    print(json.dumps({"watchdog": (w1 - w0) / (t1 - t0), "loop": (l1 - l0) / (t1 - t0)}))

asyncio.run(main())
"""


def idle_cost(setup: ao.Setup, seconds: float, stall_env: dict[str, str]) -> dict[str, float]:
    out = subprocess.run(
        [sys.executable, "-c", IDLE_PROGRAM, str(seconds)],
        env=setup.env | stall_env,
        cwd=setup.cwd,
        capture_output=True,
        text=True,
        check=True,
        timeout=seconds + 60,
    ).stdout
    result: dict[str, float] = json.loads(out.strip().splitlines()[-1])
    return result


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n", 1)[0])
    parser.add_argument("--rounds", type=int, default=15, help="measured rounds (default 15)")
    parser.add_argument("--requests", type=int, default=5000, help="timed requests per server")
    parser.add_argument("--slices", type=int, default=5, help="alternating load slices")
    parser.add_argument("--connections", type=int, default=16, help="keep-alive connections")
    parser.add_argument("--idle-s", type=float, default=10.0, help="idle-cost run length")
    args = parser.parse_args()
    for line in ao.machine_lines([sys.executable, *sys.argv]):
        print(line)
    load = ao.HttpLoad(
        args.requests, args.slices, max(1000, args.requests // 5), args.connections, False
    )
    with tempfile.TemporaryDirectory(prefix="hawkwatch-stall-bench-") as home:
        setup = ao.make_setup(Path(home), bytecode_cache=True)
        idle = idle_cost(setup, args.idle_s, {}) if os.name == "posix" else None
        idle_old = idle_cost(setup, args.idle_s, OLD) if os.name == "posix" else None
        results = ao.section_http(ARMS, args.rounds, setup, load)
    stall, control = results["stall_time"], results["aa_time"]
    low, high, _ = stall.median_ci()
    if high - 1 <= ao.TARGET:
        verdict = "met"
    elif low - 1 > ao.TARGET:
        verdict = "NOT met"
    else:
        verdict = "not decided at this noise (the confidence interval spans the target)"
    print(
        f"\nstall monitor overhead on loop throughput: {stall.pct()} (old 0.4 s default "
        f"{results['old_time'].pct()}); A/A control {control.pct()}"
        f"; slices {ao.pct(results['stall_slices'].median)} (A/A "
        f"{ao.pct(results['aa_slices'].median)}); target <= 1 %: {verdict} "
        f"(CI of the median {ao.pct(low)} .. {ao.pct(high)})"
    )
    for label, cost in (("default", idle), ("old 0.4 s default", idle_old)):
        if cost is not None:
            print(
                f"idle loop, {args.idle_s:g} s, stall monitor on ({label}): watchdog thread "
                f"{cost['watchdog'] * 100:.3f} % of a core, loop thread (answering pings) "
                f"{cost['loop'] * 100:.3f} % of a core"
            )


if __name__ == "__main__":
    main()

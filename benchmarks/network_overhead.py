"""What the network monitor costs per request: requests/s with the monitor on vs off.

Run: python benchmarks/network_overhead.py [--rounds 51] [--requests 300] [--families ...]
         [--arms on,full,aa] [--pin]
         [--processes [--pairs 9] [--control]] [--accuracy] [--accuracy-runs 5]

A fast keep-alive aiohttp.web server answers 1 KB on loopback (its own process). Each client
family (http.client, requests, httpx, httpx-async, aiohttp) runs in one client process of its
own (``workloads/net_rounds.py``), where the arms alternate batch by batch, as in
``io_overhead.py``: for each batch the agent is started with the arm's configuration, the
untimed warm-up requests are made (past the host's sampling warm-up: 64 traced, then 1 in 16,
at most 10 a second),
a timed batch of ``--requests`` requests is made and written (the monitor's ``drain``, in the
batch), and the agent is stopped. Arms: ``off`` (the network monitor off), ``on`` (as
configured by default: per-host head sampling, every request counted), ``full`` (every request
traced: ``sample_every = 1``, what tracing costs) and ``aa`` (off again: the A/A control,
showing how far two identical arms drift apart here now); every other monitor is off in all.
The order rotates each round (each arm first in turn); a first round, not counted, warms up
imports, connections and the monitor's one-time first write. The off arms check that the
libraries run unpatched after the agent stopped (no wrapper of ours left on the modules the
monitor may wrap), the on arms that they are wrapped.

A batch's time is its request loop and the monitor's writing, not the making of its client
(an ``httpx`` client loads a CA bundle: ~10 ms, the size of the effect, and as noisy).
``--pin`` keeps the client process (every thread, the agent's included) on CPU 0 and the
server on CPU 1. Not the default: on this 2-vCPU VM it halved requests/s and raised the
client's CPU per request by ~60 % (each request wakes the other CPU), which dilutes the
monitor's share; the default leaves placement to the OS.

Why in one process: between processes, identical runs differ by ±5–10 % in requests/s here
(where the heap, the interpreter's caches and the CPU's state land), more than the 2–3 % to
resolve; within one process, consecutive batches share all of that, and the machine's load
moves both arms of a round alike.

Overhead per round = (wall time of the arm's batch) / (the off batch's) − 1 = (requests/s
off) / (requests/s of the arm) − 1; printed per arm: the median over rounds with its
distribution-free 95 % interval (``_paired_stats.median_interval``), from which the verdict is
taken (met only when the whole interval is within the target; two runs of 31 and 51 rounds
moved the same arm's median by 4 points), and the median, min and max of the process's CPU time
(every thread: the scheduler's work included). The added µs per request (median wall per
request, arm − off: what a slower server or a real network would dilute) and the client's CPU
µs per request are beside it.
Targets (issue #19, for ``on``): ≤ 2 % for requests and httpx, ≤ 3 % for aiohttp. The load
average is printed at the start, per family and at the end.

``--processes``: the former method, each arm a fresh process per round
(``workloads/net_client.py``: off, on, full; ``--control``: a second off, A/A), ``--pairs``
rounds: the median of per-round ratios of requests/s, and the client's CPU µs per request.

``--accuracy`` also runs ``workloads/net_accuracy.py`` per family: a server waits 200 ms before the
first byte, trickles a body over 4 × 50 ms, and a name resolves after 100 ms; printed is how far
each measured phase (ttfb, receive, dns — for httpx-async DNS is inside tcp) is from the delay,
median and worst over the runs (issue #19: within 10 ms).
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import statistics
import subprocess
import sys
import tempfile
from pathlib import Path

from _paired_stats import median_interval
from _paired_stats import verdict as paired_verdict

HERE = Path(__file__).resolve().parent
FAMILIES = ("http.client", "requests", "httpx", "httpx-async", "aiohttp")
TARGETS = {"requests": 0.02, "httpx": 0.02, "httpx-async": 0.02, "aiohttp": 0.03}


ROUND_ARMS = ("on", "full", "aa")  # compared with "off", in net_rounds.py's rotation


CLIENT_CPU, SERVER_CPU = 0, 1
PINNED = False  # ``--pin``


def pin(pid: int, cpu: int) -> None:
    """With ``--pin`` (on a machine with two CPUs or more), keep a process on one CPU."""
    if PINNED and (os.cpu_count() or 1) >= 2 and hasattr(os, "sched_setaffinity"):
        os.sched_setaffinity(pid, {cpu})


def load() -> str:
    return " ".join(f"{x:.2f}" for x in os.getloadavg())


def in_one_process(
    family: str, url: str, count: int, rounds: int, env: dict[str, str], *, arms: tuple[str, ...]
) -> None:
    """The arms alternated in one client process (``net_rounds.py``); one table row per arm."""
    client = subprocess.Popen(
        [sys.executable, str(HERE / "workloads" / "net_rounds.py"), family, url, str(count),
         str(rounds), ",".join(("off", *arms))],
        stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, env=env,
    )  # fmt: skip
    pin(client.pid, CLIENT_CPU)
    stdout, stderr = client.communicate(timeout=3600)
    if client.returncode:
        raise SystemExit(f"{family}: net_rounds.py failed:\n{stderr[-2000:]}")
    batches: dict[str, dict[int, tuple[float, float]]] = {}
    for line in stdout.splitlines():
        row = json.loads(line)
        batches.setdefault(row["arm"], {})[row["round"]] = (row["wall_s"], row["cpu_s"])
    off = batches["off"]
    off_wall = statistics.median(wall for wall, _ in off.values())
    off_cpu = statistics.median(cpu for _, cpu in off.values())
    target = TARGETS.get(family)
    for arm in arms:
        walls = [batches[arm][r][0] / off[r][0] - 1 for r in sorted(off)]
        cpus = [batches[arm][r][1] / off[r][1] - 1 for r in sorted(off)]
        arm_wall = statistics.median(wall for wall, _ in batches[arm].values())
        arm_cpu = statistics.median(cpu for _, cpu in batches[arm].values())
        low, high, _ = median_interval(walls)
        verdict = "" if target is None or arm != "on" else (
            f"≤ {target:.0%}: {paired_verdict(low, high, target)}"
        )  # fmt: skip
        print(f"{family if arm == 'on' else '':<12} "
              f"{f'{count / off_wall:.0f}' if arm == 'on' else '':>8} {arm:>5} "
              f"{statistics.median(walls):>+8.1%} {low:>+7.1%} {high:>+7.1%} "
              f"{(arm_wall - off_wall) / count * 1e6:>+7.1f} "
              f"{statistics.median(cpus):>+8.1%} {min(cpus):>+7.1%} {max(cpus):>+7.1%} "
              f"{off_cpu / count * 1e6:>7.1f} {arm_cpu / count * 1e6:>7.1f}"
              f"  {verdict:<12}" + (f" {load()}" if arm == "on" else ""))  # fmt: skip


def one_arm(
    family: str, url: str, count: int, arm: str, env: dict[str, str]
) -> tuple[float, float]:
    """(requests per second, client CPU µs per request) of one process."""
    out = subprocess.run(
        [sys.executable, str(HERE / "workloads" / "net_client.py"), family, url, str(count), arm],
        capture_output=True, text=True, env=env, check=True, timeout=600,
    )  # fmt: skip
    rate, cpu = out.stdout.strip().splitlines()[-1].split()
    return float(rate), float(cpu)


def accuracy(families: list[str], runs: int, env: dict[str, str]) -> None:
    delays = {"ttfb": 200.0, "receive": 200.0, "dns": 100.0}
    print(f"\nphase accuracy: measured − injected ms, median / worst of {runs} runs")
    print(f"{'family':<12} " + " ".join(f"{name + ' (' + str(int(d)) + ')':>18}"
                                       for name, d in delays.items()))  # fmt: skip
    for family in families:
        seen: dict[str, list[float]] = {name: [] for name in delays}
        for _ in range(runs):
            out = subprocess.run(
                [sys.executable, str(HERE / "workloads" / "net_accuracy.py"), family],
                capture_output=True, text=True, env=env, check=True, timeout=300,
            )  # fmt: skip
            measured = json.loads(out.stdout.strip().splitlines()[-1])
            for name, delay in delays.items():
                seen[name].append(measured[name] - delay)
        cells = [
            f"{statistics.median(v):>+8.1f} / {max(v, key=abs):>+7.1f}" for v in seen.values()
        ]
        print(f"{family:<12} " + " ".join(f"{cell:>18}" for cell in cells))


def in_processes(families: list[str], url: str, args: argparse.Namespace,
                 env: dict[str, str]) -> None:  # fmt: skip
    """The former method: each arm a fresh process per round (``--processes``)."""
    print(f"{args.requests} requests per arm, {args.pairs} rounds, each arm a fresh process")
    print(f"{'family':<12} {'rps off':>9} {'arm':>5} {'rps':>9} {'overhead':>9} {'min':>7} "
          f"{'max':>7} {'µs/req':>7} {'cpu µs':>8}" + (f" {'A/A':>7}" if args.control else "")
          + "  target  load")  # fmt: skip
    for family in families:
        names = ["off", "on", "full"] + (["control"] if args.control else [])
        rates: dict[str, list[float]] = {name: [] for name in names}
        cpus: dict[str, list[float]] = {name: [] for name in names}
        for round_index in range(args.pairs):
            turn = round_index % len(names)
            for arm in names[turn:] + names[:turn]:  # each arm first in turn
                rate, cpu = one_arm(
                    family, url, args.requests, arm.replace("control", "off"), env
                )
                rates[arm].append(rate)
                cpus[arm].append(cpu)
        off = statistics.median(rates["off"])
        target = TARGETS.get(family)
        control = ""
        if args.control:
            aa = [a / b - 1 for a, b in zip(rates["off"], rates["control"], strict=True)]
            control = f" {statistics.median(aa):>+7.1%}"
        for arm in ("on", "full"):
            ratios = [a / b - 1 for a, b in zip(rates["off"], rates[arm], strict=True)]
            median = statistics.median(ratios)
            cost_us = (1 / statistics.median(rates[arm]) - 1 / off) * 1e6
            verdict = "" if target is None or arm != "on" else (
                f"≤ {target:.0%}: {'met' if median <= target else 'NOT met'}"
            )  # fmt: skip
            print(f"{family if arm == 'on' else '':<12} "
                  f"{f'{off:.0f}' if arm == 'on' else '':>9} {arm:>5} "
                  f"{statistics.median(rates[arm]):>9.0f} {median:>+8.1%} "
                  f"{min(ratios):>+7.1%} {max(ratios):>+7.1%} {cost_us:>7.1f} "
                  f"{statistics.median(cpus[arm]):>8.1f}"
                  + (control if arm == "on" else " " * len(control))
                  + f"  {verdict}  {os.getloadavg()[0]:.1f}")  # fmt: skip
        print(f"{'':<12} {'':>9} {'off':>5} {off:>9.0f} {'':>9} {'':>7} {'':>7} {'':>7} "
              f"{statistics.median(cpus['off']):>8.1f}")  # fmt: skip


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rounds", type=int, default=51, help="rounds of all arms (one process)")
    parser.add_argument("--requests", type=int, default=300, help="requests per batch")
    parser.add_argument("--families", default=",".join(FAMILIES))
    parser.add_argument("--processes", action="store_true",
                        help="the former method: each arm a fresh process per round")  # fmt: skip
    parser.add_argument("--pairs", type=int, default=9, help="--processes: rounds")
    parser.add_argument("--control", action="store_true", help="--processes: an A/A pair too")
    parser.add_argument("--accuracy", action="store_true", help="also measure phase accuracy")
    parser.add_argument("--accuracy-runs", type=int, default=5)
    parser.add_argument("--arms", default=",".join(ROUND_ARMS),
                        help="arms compared with off (on, full, aa): fewer, more rounds")
    parser.add_argument("--pin", action="store_true",
                        help="the client on CPU 0, the server on CPU 1")  # fmt: skip
    args = parser.parse_args()
    global PINNED
    PINNED = args.pin
    families = args.families.split(",")
    home = tempfile.mkdtemp(prefix="hawkwatch-netbench-")
    env = {k: v for k, v in os.environ.items() if not k.startswith("HAWKWATCH_")}
    env["HAWKWATCH_HOME"] = home
    server = subprocess.Popen(
        [sys.executable, str(HERE / "workloads" / "net_server.py")],
        stdout=subprocess.PIPE, text=True,
    )  # fmt: skip
    pin(server.pid, SERVER_CPU)
    try:
        assert server.stdout is not None
        url = f"http://127.0.0.1:{server.stdout.readline().strip()}/"
        print(f"machine: {os.cpu_count()} CPUs, {platform.python_implementation()} "
              f"{platform.python_version()}; server {url}; load average {load()}")  # fmt: skip
        print(f"command: python {' '.join(sys.argv)}"
              + ("; client on CPU 0, server on CPU 1" if PINNED else ""))
        if args.processes:
            in_processes(families, url, args, env)
        else:
            print(f"{args.requests} requests per batch, {args.rounds} rounds of the arms "
                  "alternated in one process per family; overhead: arm / off − 1 per round "
                  "(wall: median and its 95 % interval, low … high; CPU: median, min, max; "
                  "the verdict from the wall interval: met, NOT met, or not decided)")  # fmt: skip
            print(f"{'':<12} {'':>8} {'':>5} {'wall (requests/s)':^24} {'':>7} "
                  f"{'CPU (every thread)':^24} {'CPU µs/req':^15}")  # fmt: skip
            print(f"{'family':<12} {'rps off':>8} {'arm':>5} {'median':>8} {'low':>7} "
                  f"{'high':>7} {'µs/req':>7} {'median':>8} {'min':>7} {'max':>7} {'off':>7} "
                  f"{'arm':>7}  {'target':<12} load")  # fmt: skip
            arms = tuple(args.arms.split(","))
            for family in families:
                in_one_process(family, url, args.requests, args.rounds, env, arms=arms)
        if args.accuracy:
            accuracy([f for f in families if f != "http.client"], args.accuracy_runs, env)
        print(f"load average at the end: {load()}")
    finally:
        server.kill()
        server.wait()


if __name__ == "__main__":
    main()

"""What the network monitor costs per request: requests/s with the monitor on vs off.

Run: python benchmarks/network_overhead.py [--pairs 9] [--requests 2000] [--families ...]
         [--accuracy] [--accuracy-runs 5]

A fast keep-alive aiohttp.web server answers 1 KB on loopback (its own process). For each client
family (http.client, requests, httpx, httpx-async, aiohttp), each round runs the client in fresh
processes: ``network.enabled`` off; on as configured by default (``on``: head sampling, after
each host's warm-up 1 request in ``network.sample_every`` traced, every request counted); and
on with every request traced (``full``: ``sample_every = 1``, what tracing costs), every other
monitor the same in all, in an order that rotates each round (BENCHMARKS.md). Overhead per
round = (requests/s off) / (requests/s of the arm) − 1; printed per arm: the median over rounds,
min and max. Targets (issue #19, for the default): ≤ 2 % for requests and httpx, ≤ 3 % for
aiohttp. The per-request cost in µs is printed beside it: it is what a slower server or a real
network would dilute. The client's own CPU time per request (µs, off/on/full) is printed too:
it is steadier than requests/s on a shared machine. The load average is printed per family.

``--control``: each round also runs a second ``off`` process (A/A, same rotation): its median
ratio says how far two identical arms drift apart on this machine now (other work, CPU
frequency), the noise floor the overhead must be read against on a shared machine.

``--accuracy`` also runs ``workloads/net_accuracy.py`` per family: a server waits 200 ms before the
first byte, trickles a body over 4 × 50 ms, and a name resolves after 100 ms; printed is how far
each measured phase (ttfb, receive, dns — for httpx-async DNS is inside tcp) is from the delay,
median and worst over the runs (issue #19: within 10 ms).
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile
from pathlib import Path

HERE = Path(__file__).resolve().parent
FAMILIES = ("http.client", "requests", "httpx", "httpx-async", "aiohttp")
TARGETS = {"requests": 0.02, "httpx": 0.02, "httpx-async": 0.02, "aiohttp": 0.03}


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


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--pairs", type=int, default=9)
    parser.add_argument("--requests", type=int, default=2000)
    parser.add_argument("--families", default=",".join(FAMILIES))
    parser.add_argument("--accuracy", action="store_true", help="also measure phase accuracy")
    parser.add_argument("--accuracy-runs", type=int, default=5)
    parser.add_argument("--control", action="store_true", help="also an A/A (off vs off) pair")
    args = parser.parse_args()
    home = tempfile.mkdtemp(prefix="hawkwatch-netbench-")
    env = {k: v for k, v in os.environ.items() if not k.startswith("HAWKWATCH_")}
    env["HAWKWATCH_HOME"] = home
    server = subprocess.Popen(
        [sys.executable, str(HERE / "workloads" / "net_server.py")],
        stdout=subprocess.PIPE, text=True,
    )  # fmt: skip
    try:
        assert server.stdout is not None
        url = f"http://127.0.0.1:{server.stdout.readline().strip()}/"
        print(f"server {url}; {args.requests} requests per arm, {args.pairs} rounds, alternated")
        print(f"{'family':<12} {'rps off':>9} {'arm':>5} {'rps':>9} {'overhead':>9} {'min':>7} "
              f"{'max':>7} {'µs/req':>7} {'cpu µs':>8}" + (f" {'A/A':>7}" if args.control else "")
              + "  target  load")  # fmt: skip
        for family in args.families.split(","):
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
        if args.accuracy:
            accuracy([f for f in args.families.split(",") if f != "http.client"],
                     args.accuracy_runs, env)  # fmt: skip
    finally:
        server.kill()
        server.wait()


if __name__ == "__main__":
    main()

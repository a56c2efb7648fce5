"""What the network monitor costs per request: requests/s with the monitor on vs off.

Run: python benchmarks/network_overhead.py [--pairs 9] [--requests 2000] [--families ...]

A fast keep-alive aiohttp.web server answers 1 KB on loopback (its own process). For each client
family (http.client, requests, httpx, httpx-async, aiohttp), each round runs the client twice in
fresh processes, once with ``network.enabled`` off and once on (every other monitor the same in
both), in an order that alternates each round (BENCHMARKS.md). Overhead per round = (requests/s
off) / (requests/s on) − 1; printed: the median over rounds, min and max. Targets (issue #19):
≤ 2 % for requests and httpx, ≤ 3 % for aiohttp. The per-request cost in µs is printed beside it:
it is what a slower server or a real network would dilute.
"""

from __future__ import annotations

import argparse
import os
import statistics
import subprocess
import sys
import tempfile
from pathlib import Path

HERE = Path(__file__).resolve().parent
FAMILIES = ("http.client", "requests", "httpx", "httpx-async", "aiohttp")
TARGETS = {"requests": 0.02, "httpx": 0.02, "httpx-async": 0.02, "aiohttp": 0.03}


def one_arm(family: str, url: str, count: int, arm: str, env: dict[str, str]) -> float:
    out = subprocess.run(
        [sys.executable, str(HERE / "workloads" / "net_client.py"), family, url, str(count), arm],
        capture_output=True, text=True, env=env, check=True, timeout=600,
    )  # fmt: skip
    return float(out.stdout.strip().splitlines()[-1])


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--pairs", type=int, default=9)
    parser.add_argument("--requests", type=int, default=2000)
    parser.add_argument("--families", default=",".join(FAMILIES))
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
        print(f"{'family':<12} {'rps off':>9} {'rps on':>9} {'overhead':>9} {'min':>7} "
              f"{'max':>7} {'µs/req':>7}  target")  # fmt: skip
        for family in args.families.split(","):
            ratios, offs, ons = [], [], []
            for round_index in range(args.pairs):
                arms = ("off", "on") if round_index % 2 == 0 else ("on", "off")
                got = {arm: one_arm(family, url, args.requests, arm, env) for arm in arms}
                offs.append(got["off"])
                ons.append(got["on"])
                ratios.append(got["off"] / got["on"] - 1)
            median = statistics.median(ratios)
            cost_us = (1 / statistics.median(ons) - 1 / statistics.median(offs)) * 1e6
            target = TARGETS.get(family)
            verdict = "" if target is None else (
                f"≤ {target:.0%}: {'met' if median <= target else 'NOT met'}"
            )  # fmt: skip
            print(f"{family:<12} {statistics.median(offs):>9.0f} {statistics.median(ons):>9.0f} "
                  f"{median:>+8.1%} {min(ratios):>+7.1%} {max(ratios):>+7.1%} {cost_us:>7.1f}"
                  f"  {verdict}")  # fmt: skip
    finally:
        server.kill()
        server.wait()


if __name__ == "__main__":
    main()

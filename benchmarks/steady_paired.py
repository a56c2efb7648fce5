"""What the agent's default monitors cost a running program in steady state, measured inside one
process: segments with the agent started and stopped, alternated, compared pair by pair.

Run: python benchmarks/steady_paired.py [--pairs 20] [--segment-s 5] [--settle-s 1]
         [--sections cpu,http] [--arms agent,aa] [--cpu-scale 0.25] [--connections 16]

Why paired: ``agent_overhead.py --sections cpu,http`` compares separate processes, and on a
shared 2-vCPU VM two identical processes differ by ±5–15 % (memory layout, hash seed, the
type-attribute cache, CPU placement, the neighbours' load): a 1 % target (issue #13) drowns.
Here one process runs the workload for ``2 × --pairs`` segments per arm and the agent is
started in half of them, in the order on-off, off-on, on-off, … (``_paired_stats.abba``: a drift
in the machine's speed falls on both sides alike); each adjacent pair gives one ratio, "on" over
"off" minus 1. Printed per section and arm: the median of the pairs' ratios, a distribution-free
95 % interval of that median (binomial order statistics) and the range. A first pair of each
arm is a warm-up, not counted (the agent's first start imports it).

"On" is ``hawkwatch.start()`` with default options, as a program calls it: the process's
environment has no HAWKWATCH_ variable but HAWKWATCH_HOME (a temporary folder) and its working
folder is a temporary one (no ``pyproject.toml``); "off" is after ``hawkwatch.stop()``. Each
segment first runs ``--settle-s`` seconds of the workload untimed (the start, the monitors'
first samples and the retention pass, or the stop's flush), then checks the agent's state
(``workloads/agent_state.py``; the run fails if it is not as scheduled: "on", an agent with
exactly the default config's monitors, the stall watchdog alive and, in the server, its loop
watched and armed; "off", no agent, none of its threads, asyncio unwrapped), then measures for
``--segment-s`` seconds. Arms: ``agent`` (on against off) and ``aa`` (off against off in the
same order: the noise floor of the method); their pairs alternate, agent pair then A/A pair.

What this measures is the monitors' running cost: the agent's modules stay imported in the
"off" segments, so the GC heap they add (each full collection walks it) is in both sides. That
effect is measured by ``agent_overhead.py``'s process comparison (under ``hawkwatch run`` the
bootstrap calls ``gc.freeze()``, which takes the agent's objects out of the collections).

Sections:
  cpu   ``workloads/steady_cpu.py``: ``cpu_mix.py``'s seven kernels in rounds (each kernel once
        at ``--cpu-scale``, ~0.13 s a round at 0.25); per segment the mean wall time of a round
        and the process's CPU time per round (every thread: the agent's threads count).
  http  ``workloads/steady_http.py`` (``asyncio_http.py``'s server, plus a ``/__agent`` route
        that starts or stops the agent in the server, from its loop's thread) in its own process;
        this process drives it with ``http_load.py``'s closed-loop generator (``--connections``
        keep-alive connections) in slices of a fixed number of requests (``--segment-s`` worth,
        from the throughput measured after the warm-up); per slice the time per request, the
        server's CPU per request (it reports its CPU time on a control request before and after
        the slice) and the p99 latency.

The summary line judges the wall-time ratios (time per kernel round, time per request) against
the target of at most 1 %: "met" when the interval's upper end is <= 1 %, "not met" when its
lower end is > 1 %, else "not decided" (so too with fewer than 6 pairs, too few for a 95 %
interval of the median).
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import statistics
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

from _paired_stats import abba, median_interval, pair_ratios, verdict
from agent_overhead import machine_lines

import hawkwatch

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE / "workloads"))

from http_load import Server, read_response  # type: ignore[import-not-found]  # noqa: E402

STEADY_CPU = HERE / "workloads" / "steady_cpu.py"
STEADY_HTTP = HERE / "workloads" / "steady_http.py"
ARMS = ("agent", "aa")
SECTIONS = ("cpu", "http")
TARGET = 0.01
LEVEL = 0.95
Segment = dict[str, Any]


def schedule(pairs: int, arms: list[str]) -> list[Segment]:
    """The segments in running order: pair 0 (the warm-up) to ``pairs``, each arm's pair in turn,
    each pair in ``abba`` order; "on" only in the agent arm."""
    order = abba(pairs + 1)
    segments = []
    for index in range(pairs + 1):
        for arm in arms:
            for k in (2 * index, 2 * index + 1):
                role = order[k]
                segments.append(
                    {"arm": arm, "pair": index, "role": "on" if role else "off",
                     "on": role and arm == "agent"}
                )  # fmt: skip
    return segments


def environment(home: Path) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith(("HAWKWATCH_", "_HAWKWATCH"))}
    env["HAWKWATCH_HOME"] = str(home)
    return env


# -- sections --------------------------------------------------------------------------------


def section_cpu(args: argparse.Namespace, plan: list[Segment], scratch: Path) -> list[Segment]:
    """Run the plan in ``steady_cpu.py``; its segments with their measures."""
    request = {"segments": plan, "segment_s": args.segment_s, "settle_s": args.settle_s}
    program = subprocess.Popen(
        [sys.executable, str(STEADY_CPU), str(args.cpu_scale)],
        stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True, cwd=scratch,
        env=environment(scratch / "home-cpu"),
    )  # fmt: skip
    out, _ = program.communicate(json.dumps(request) + "\n")
    if program.returncode:
        raise SystemExit(f"cpu: the workload failed ({program.returncode})")
    return [json.loads(line) for line in out.splitlines()]


async def control(port: int, query: str) -> dict[str, Any]:
    """One request to the server's ``/__agent`` route on a connection of its own."""
    reader, writer = await asyncio.open_connection("127.0.0.1", port)
    writer.write(f"GET /__agent?{query} HTTP/1.1\r\nHost: 127.0.0.1\r\n"
                 "Connection: close\r\n\r\n".encode())  # fmt: skip
    head = await reader.readuntil(b"\r\n\r\n")
    length = int(head.lower().split(b"content-length:", 1)[1].split(b"\r\n", 1)[0])
    body = await reader.readexactly(length)
    writer.close()
    if head[9:12] != b"200":
        raise SystemExit(f"http: /__agent?{query} answered {head[:12]!r}: {body!r}")
    answer: dict[str, Any] = json.loads(body)
    return answer


async def drive(args: argparse.Namespace, plan: list[Segment], port: int) -> list[Segment]:
    """The load generator: slices of the plan, switching the server's agent between them."""
    connections = [
        await asyncio.open_connection("127.0.0.1", port) for _ in range(args.connections)
    ]
    server = Server(port, connections)
    await server.load(args.warmup, record=False)
    started = time.perf_counter()
    await server.load(args.warmup, record=False)
    rps = args.warmup / (time.perf_counter() - started)
    per_slice = max(500, round(rps * args.segment_s))
    settle = max(100, round(rps * args.settle_s))
    print(f"  {rps:.0f} requests/s after the warm-up: {per_slice} requests a slice, "
          f"{settle} to settle", flush=True)  # fmt: skip
    measured = []
    for segment in plan:
        await control(port, f"on={int(segment['on'])}")
        await server.load(settle, record=False)
        expect = "on" if segment["on"] else "off"
        before = await control(port, f"expect={expect}")
        if before["problems"]:
            raise SystemExit(f"http: segment {segment}: {'; '.join(before['problems'])}")
        first = len(server.latencies_ns)
        wall = time.perf_counter()
        await server.load(per_slice, record=True)
        wall = time.perf_counter() - wall
        after = await control(port, f"expect={expect}")
        latencies = sorted(server.latencies_ns[first:])
        measured.append({
            **segment, "requests": per_slice, "wall_s": wall / per_slice,
            "cpu_s": (after["cpu_s"] - before["cpu_s"]) / per_slice,
            "p99_s": latencies[round(0.99 * (len(latencies) - 1))] / 1e9,
            "monitors": before["monitors"],
        })  # fmt: skip
    if server.errors:
        raise SystemExit(f"http: {server.errors} answers were not 200")
    await control(port, "on=0")
    for _, writer in connections:
        writer.close()
    reader, writer = await asyncio.open_connection("127.0.0.1", port)
    writer.write(b"GET /__shutdown HTTP/1.1\r\nHost: 127.0.0.1\r\n\r\n")
    await read_response(reader)
    writer.close()
    return measured


def section_http(args: argparse.Namespace, plan: list[Segment], scratch: Path) -> list[Segment]:
    """Start ``steady_http.py``, drive it through the plan, stop it."""
    server = subprocess.Popen(
        [sys.executable, str(STEADY_HTTP)], stdout=subprocess.PIPE, text=True, cwd=scratch,
        env=environment(scratch / "home-http"),
    )  # fmt: skip
    assert server.stdout is not None
    try:
        line = server.stdout.readline().split()
        if line[:1] != ["LISTENING"]:
            raise SystemExit("http: the server did not start")
        measured = asyncio.run(drive(args, plan, int(line[1])))
        server.wait(timeout=60)
    finally:
        if server.poll() is None:
            server.kill()
            server.wait()
    if server.returncode:
        raise SystemExit(f"http: the server failed ({server.returncode})")
    return measured


# -- analysis --------------------------------------------------------------------------------


def pct(value: float) -> str:
    return f"{value * 100:+.2f} %"


def analyse(
    label: str, segments: list[Segment], metrics: dict[str, str], arms: list[str]
) -> tuple[float, float, float, float] | None:
    """Print each arm's and metric's pair ratios; the agent arm's wall median, interval and its
    coverage."""
    print(f"  {'arm':6} {'metric':30} {'median':>9}  {'CI of the median (coverage)':>28}  "
          f"{'range':>22}")  # fmt: skip
    judged = None
    for arm in arms:
        counted = [s for s in segments if s["arm"] == arm and s["pair"] > 0]
        for key, name in metrics.items():
            ratios = pair_ratios([[s[key]] for s in counted], 0)
            low, high, coverage = median_interval(ratios, LEVEL)
            middle = statistics.median(ratios)
            print(f"  {'A/A' if arm == 'aa' else arm:6} {name:30} {pct(middle):>9}  "
                  f"{f'[{pct(low)} … {pct(high)}] ({coverage:.0%})':>28}  "
                  f"{f'[{pct(min(ratios))} … {pct(max(ratios))}]':>22}")  # fmt: skip
            if arm == "agent" and key == "wall_s":
                judged = (middle, low, high, coverage)
    offs = [s["wall_s"] for s in segments if s["pair"] > 0 and not s["on"]]
    off_ms = statistics.median(offs) * 1e3
    print(f"  {label}: {len(offs)} segments without the agent, median {off_ms:.3f} ms; "
          f"load {os.getloadavg()[0]:.2f}")  # fmt: skip
    seen = {", ".join(s["monitors"]) for s in segments if s["on"]}
    if seen:
        print(
            f"  checked in every segment: with the agent, the default monitors ran "
            f"({' | '.join(sorted(seen))}); without it, no agent and none of its threads"
        )
    return judged


def judge(judged: tuple[float, float, float, float]) -> str:
    """The verdict, "not decided" too when there are too few pairs for a 95 % interval."""
    _, low, high, coverage = judged
    return verdict(low, high, TARGET) if coverage >= LEVEL else "not decided (too few pairs)"


def summary_part(name: str, judged: tuple[float, float, float, float] | None, unit: str) -> str:
    if judged is None:
        return f"{name}: the agent arm not run"
    middle, low, high, coverage = judged
    return (f"{name} {pct(middle)} {unit} [{coverage:.0%} CI {pct(low)} … {pct(high)}]: "
            f"{judge(judged)}")  # fmt: skip


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n", 1)[0])
    parser.add_argument("--pairs", type=int, default=20, help="counted pairs per arm (+1 warm-up)")
    parser.add_argument("--segment-s", type=float, default=5.0, help="measured part of a segment")
    parser.add_argument("--settle-s", type=float, default=1.0, help="untimed start of a segment")
    parser.add_argument("--sections", default=",".join(SECTIONS))
    parser.add_argument("--arms", default=",".join(ARMS))
    parser.add_argument("--cpu-scale", type=float, default=0.25, help="kernel round size")
    parser.add_argument("--connections", type=int, default=16, help="http: keep-alive")
    parser.add_argument("--warmup", type=int, default=2000, help="http: untimed requests")
    args = parser.parse_args()
    sections = args.sections.split(",")
    arms = args.arms.split(",")
    if not set(sections) <= set(SECTIONS) or not set(arms) <= set(ARMS) or args.pairs < 1:
        parser.error(f"--sections from {SECTIONS}, --arms from {ARMS}, --pairs >= 1")
    for line in machine_lines([sys.executable, *sys.argv]):
        print(line)
    print(f"agent source: {Path(hawkwatch.__file__).parent} (the workloads inherit this path)")
    plan = schedule(args.pairs, arms)
    minutes = len(sections) * len(plan) * (args.segment_s + args.settle_s) / 60
    print(f"{args.pairs} pairs (+1 warm-up) per arm of {args.segment_s:g} s segments after "
          f"{args.settle_s:g} s to settle; about {minutes:.1f} min")  # fmt: skip
    runs: dict[str, tuple[Callable[..., list[Segment]], dict[str, str], str, str]] = {
        "cpu": (section_cpu, {"wall_s": "wall per kernel round",
                              "cpu_s": "CPU per round (all threads)"},
                "cpu-bound", "per kernel round"),
        "http": (section_http, {"wall_s": "time per request",
                                "cpu_s": "server CPU per request", "p99_s": "p99 latency"},
                 "asyncio http", "per request"),
    }  # fmt: skip
    parts, verdicts = [], []
    with tempfile.TemporaryDirectory(prefix="hw-steady-") as tmp:
        for section in sections:
            run, metrics, name, unit = runs[section]
            print(f"\n{name} ({section}):", flush=True)
            judged = analyse(name, run(args, plan, Path(tmp)), metrics, arms)
            parts.append(summary_part(name, judged, unit))
            if judged is not None:
                verdicts.append(judge(judged))
    overall = (
        "met" if verdicts and all(v == "met" for v in verdicts)
        else "not met" if "not met" in verdicts
        else "not decided"
    )  # fmt: skip
    print(f"\nload average at the end: {' '.join(f'{x:.2f}' for x in os.getloadavg())}")
    print(f"steady-state overhead of the default monitors (one process, {args.pairs} ABBA pairs "
          f"of {args.segment_s:g} s): {'; '.join(parts)}; target <= 1 %: {overall}")  # fmt: skip


if __name__ == "__main__":
    main()

"""What the network monitor costs per request, in instructions: a figure the machine's load
does not move.

Run: python benchmarks/network_instructions.py [--requests 300] [--families ...]

The client of ``network_overhead.py`` (``workloads/net_client.py``, against the same loopback
aiohttp server) runs under ``valgrind --tool=callgrind``, with the network monitor off, on with
every request left untraced (``untraced``: the path of a request the head sampling leaves out:
counted and timed only), on with every request traced (``traced``: ``sample_every = 1``, the
full cost) and on as configured by default (``sampled``: after the host's warm-up, 1 in 16
traced). Only the timed loop is counted: callgrind zeroes its counters at ``os.getppid()`` just
before it and dumps them at ``os.getpgrp()`` just after, in the program's thread, where the
client runs the monitor's writing of the ended requests (records and aggregates) before the
dump. The scheduler thread is not counted: its timers fire per second, not per request, and
under callgrind a run lasts ~50 times longer than without, so their share per request would
grow with the run's length and the machine's load (counted, the same run gave from 1.8 % to
10.7 % on requests). Printed per family: instructions per request off, and added per
request by each arm on (with its ratio to off): the CPU cost of the monitor on a machine where
one instruction costs what it costs elsewhere in the client. The last column is computed, not
counted: the default configuration's cost at ``--rate`` requests a second (4,000: the loopback
benchmark's aiohttp), where ``network.max_traced_per_s`` caps the traced share (``capped``).
With ``--hooks``, for httpx and aiohttp another arm, ``hooks``, runs with the monitor off but
the library's extension point in use with callbacks that do nothing: the share of the cost
that is the library's own (``hooks`` column, as added over ``off``). The server is not under
valgrind.

``--breakdown``: where the added instructions go, per family (``workloads/net_breakdown.py``):
the requests alone (the monitor's writing held back) off and on, then each step of writing
their records, per request, one dump per step.
"""

from __future__ import annotations

import argparse
import os
import re
import subprocess
import sys
import tempfile
from pathlib import Path

HERE = Path(__file__).resolve().parent
FAMILIES = ("http.client", "requests", "httpx", "httpx-async", "aiohttp")
HOOKED = ("httpx", "httpx-async", "aiohttp")  # families timed through a library's own hooks
#: Column name: the arm of ``workloads/net_client.py``.
ARMS = {"untraced": "untraced", "traced": "full", "sampled": "on"}
PORT = 47319


def instructions(family: str, url: str, count: int, arm: str, env: dict[str, str]) -> float:
    """Instructions per request of the client's timed loop (its thread)."""
    with tempfile.TemporaryDirectory(prefix="hawkwatch-callgrind-") as folder:
        out = Path(folder) / "callgrind.out"
        run = subprocess.run(
            ["valgrind", "--tool=callgrind", "--separate-threads=yes", "--zero-before=os_getppid",
             "--dump-before=os_getpgrp", f"--callgrind-out-file={out}", sys.executable,
             str(HERE / "workloads" / "net_client.py"), family, url, str(count), arm, "quiet"],
            capture_output=True, text=True, env=env, check=False, timeout=1800,
        )  # fmt: skip
        if run.returncode:
            lines = [line for line in run.stderr.splitlines() if not line.startswith("==")]
            raise SystemExit(f"{family} {arm} failed under callgrind:\n" + "\n".join(lines[-15:]))
        dumps = [p for p in Path(folder).iterdir() if p.name.endswith(".1-01")]  # main thread
        if not dumps:
            raise SystemExit(f"callgrind wrote no dump for {family} {arm}: is os_getpgrp named?")
        total = 0
        for dump in dumps:
            match = re.search(r"^summary:\s*(\d+)", dump.read_text(errors="replace"), re.M)
            total += int(match.group(1)) if match else 0
    return total / count


STEPS = ("requests", "(boundary)", "complete", "phases", "url facts", "call sites",
         "thread name", "to_record", "record_key", "encode", "write_many")  # fmt: skip


def steps(family: str, url: str, count: int, arm: str, env: dict[str, str]) -> list[float]:
    """Instructions per request of each step of ``workloads/net_breakdown.py``, in order."""
    with tempfile.TemporaryDirectory(prefix="hawkwatch-callgrind-") as folder:
        out = Path(folder) / "callgrind.out"
        subprocess.run(
            ["valgrind", "--tool=callgrind", "--zero-before=os_getppid",
             "--dump-before=os_getpgrp", f"--callgrind-out-file={out}", sys.executable,
             str(HERE / "workloads" / "net_breakdown.py"), family, url, str(count), arm],
            capture_output=True, text=True, env=env, check=True, timeout=1800,
        )  # fmt: skip
        dumps = sorted(
            (p for p in Path(folder).iterdir() if re.search(r"\.\d+$", p.name)),
            key=lambda p: int(p.name.rpartition(".")[2]),
        )
        counts = []
        for dump in dumps:
            match = re.search(r"^summary:\s*(\d+)", dump.read_text(errors="replace"), re.M)
            counts.append(int(match.group(1)) / count if match else 0.0)
    return counts


def breakdown(families: list[str], url: str, count: int, env: dict[str, str]) -> None:
    print(f"{'family':<12} {'off':>10} " + " ".join(f"{s:>11}" for s in STEPS))
    for family in families:
        off = steps(family, url, count, "off", env)[0]
        on = steps(family, url, count, "on", env)
        print(f"{family:<12} {off:>10,.0f} {on[0] - off:>+11,.0f} "
              + " ".join(f"{v:>11,.0f}" for v in on[1:]))  # fmt: skip
    print("(requests: added over off; the other steps: per request, the monitor on)")


def capped(untraced: float, traced: float, rate: float) -> float:
    """What the default configuration adds per request at ``rate`` requests a second: the
    untraced path, and the traced one for the share traced: 1 in ``sample_every``, or
    ``max_traced_per_s / rate`` where the cap binds. Computed, not counted: under callgrind a
    request lasts ~50 times longer, so the cap (a rate in wall time) does not bind in the
    ``sampled`` arm."""
    from hawkwatch.config import NetworkConfig

    config = NetworkConfig()
    share = 1 / config.sample_every
    if config.max_traced_per_s > 0:
        share = min(share, config.max_traced_per_s / rate)
    return untraced + (traced - untraced) * share


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--requests", type=int, default=300)
    parser.add_argument("--families", default=",".join(FAMILIES))
    parser.add_argument("--breakdown", action="store_true", help="instructions per step")
    parser.add_argument("--hooks", action="store_true", help="also the library's own hooks")
    parser.add_argument("--port", type=int, default=PORT, help="the server's, if free")
    parser.add_argument("--rate", type=float, default=4000.0,
                        help="requests a second of the computed column (the cap's share)")
    args = parser.parse_args()
    home = tempfile.mkdtemp(prefix="hawkwatch-netbench-")
    env = {k: v for k, v in os.environ.items() if not k.startswith("HAWKWATCH_")}
    env.update(HAWKWATCH_HOME=home, PYTHONHASHSEED="0")
    server = subprocess.Popen(
        [sys.executable, str(HERE / "workloads" / "net_server.py"), str(args.port)],
        stdout=subprocess.PIPE, text=True,
    )  # fmt: skip
    try:
        assert server.stdout is not None
        port = server.stdout.readline().strip()
        url = f"http://127.0.0.1:{port}/"
        print(f"callgrind, {args.requests} requests per arm, {sys.version.split()[0]}, "
              f"port {port}" + ("" if port == str(args.port) else
                                f" ({args.port} was taken: counts not comparable)"))  # fmt: skip
        if args.breakdown:
            breakdown(args.families.split(","), url, args.requests, env)
            return
        print(f"{'family':<12} {'instr/req off':>14} " + " ".join(
            f"{arm + ' added':>18}" for arm in ARMS
        ) + f" {f'at {args.rate:,.0f} req/s':>18}"
          + (f" {'hooks':>18}" if args.hooks else ""))  # fmt: skip
        for family in args.families.split(","):
            off = instructions(family, url, args.requests, "off", env)
            cells, added_by_arm = [], {}
            for name, arm in ARMS.items():
                added = instructions(family, url, args.requests, arm, env) - off
                added_by_arm[name] = added
                cells.append(f"{added:>+9,.0f} ({added / off:+6.1%})")
            added = capped(added_by_arm["untraced"], added_by_arm["traced"], args.rate)
            cells.append(f"{added:>+9,.0f} ({added / off:+6.1%})")
            if args.hooks and family in HOOKED:
                added = instructions(family, url, args.requests, "hooks", env) - off
                cells.append(f"{added:>+9,.0f} ({added / off:+6.1%})")
            print(f"{family:<12} {off:>14,.0f} " + " ".join(f"{c:>18}" for c in cells))
    finally:
        server.kill()
        server.wait()


if __name__ == "__main__":
    main()

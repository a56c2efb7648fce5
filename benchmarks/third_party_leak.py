"""The leak report of a real third-party app: a Starlette service (uvicorn) with an unbounded
cache, under ``hawkwatch run --memory``, driven by a loopback load generator.

Run: python benchmarks/third_party_leak.py [--requests 6000] [--backend tracemalloc|memray]
         [-o report.txt]

The service is ``examples/starlette_cache_service.py``: ``/profile/{user}`` memoizes each page
forever, ``/search`` allocates as much and keeps nothing. The load generator (httpx, one
keep-alive connection to 127.0.0.1) alternates new users' profiles and searches, a bounded
number of requests, then stops the service with SIGINT (uvicorn's graceful shutdown; it re-raises
the signal after it, and SIGTERM's default action would end the process before the agent writes
its last records) and prints ``hawkwatch memory`` for the session.
"""

from __future__ import annotations

import argparse
import os
import signal
import socket
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import httpx

HERE = Path(__file__).resolve().parent
EXAMPLES = HERE.parent / "examples"
HAWKWATCH = Path(sys.executable).with_name("hawkwatch")


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def wait_until_serving(client: httpx.Client, server: subprocess.Popen[str], limit_s: float) -> None:
    deadline = time.monotonic() + limit_s
    while time.monotonic() < deadline:
        if server.poll() is not None:
            stderr = server.stderr.read() if server.stderr else ""
            raise SystemExit(f"the service exited early:\n{stderr}")
        try:
            if client.get("/health").status_code == 200:
                return
        except httpx.TransportError:
            time.sleep(0.1)
    raise SystemExit("the service did not start in time")


def drive(client: httpx.Client, requests: int) -> None:
    """New users' profiles (each one cached forever) between searches (churn)."""
    for i in range(requests):
        if i % 2 == 0:
            response = client.get(f"/profile/user{i}", params={"utm_source": f"mail{i % 7}"})
        else:
            response = client.get("/search", params={"q": f"term {i % 50}"})
        response.raise_for_status()
        if i % 200 == 0:
            time.sleep(0.05)  # a few pauses: snapshots see the cache grow step by step


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n", 1)[0])
    parser.add_argument("--requests", type=int, default=6000)
    parser.add_argument("--backend", default="tracemalloc", choices=["tracemalloc", "memray"])
    parser.add_argument("-o", "--output", help="also write the report to this file")
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as tmp:
        env = {
            k: v for k, v in os.environ.items() if not k.startswith(("HAWKWATCH_", "_HAWKWATCH"))
        }
        env["HAWKWATCH_HOME"] = str(Path(tmp) / "home")
        env["PYTHONPATH"] = str(EXAMPLES)
        port = free_port()
        server = subprocess.Popen(
            [
                str(HAWKWATCH), "run", f"--memory={args.backend}",
                "-o", "memory.snapshot_interval_s=1", "--app-name", "starlette-cache-service",
                "--", sys.executable, "-m", "uvicorn", "starlette_cache_service:app",
                "--host", "127.0.0.1", "--port", str(port), "--log-level", "warning",
            ],
            env=env, cwd=tmp, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
        )  # fmt: skip
        try:
            with httpx.Client(base_url=f"http://127.0.0.1:{port}", timeout=30) as client:
                wait_until_serving(client, server, 60)
                started = time.monotonic()
                drive(client, args.requests)
                took = time.monotonic() - started
                cached = client.get("/health").json()["cached_pages"]
        finally:
            server.send_signal(signal.SIGINT)  # uvicorn re-raises SIGTERM after its shutdown
            server.wait(timeout=120)
        shown = subprocess.run(
            [str(HAWKWATCH), "memory"], env=env, cwd=tmp, capture_output=True, text=True, check=True
        )
    header = (
        f"Starlette {_version('starlette')} on uvicorn {_version('uvicorn')}, "
        f"hawkwatch run --memory={args.backend}; {args.requests} requests over loopback in "
        f"{took:.1f} s; the service cached {cached} pages\n\n"
    )
    report = header + shown.stdout.replace(str(EXAMPLES) + "/", "examples/")
    print(report, end="")
    if args.output:
        Path(args.output).write_text(report)


def _version(name: str) -> str:
    from importlib.metadata import version

    return version(name)


if __name__ == "__main__":
    main()

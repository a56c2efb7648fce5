"""Collector throughput: records per second one collector process acknowledges, p99
acknowledgement latency, and how fast one worker processes what was stored.

Run: python benchmarks/ingest.py [--database sqlite|postgresql|both] [--envelopes 400]
         [--records 500] [--clients 4]

A real ``hawkwatch server run --no-worker`` process (uvicorn, one process) on loopback; clients
(threads of this process, ``hawkwatch.uploader.post``) send gzip envelopes of ``--records``
records each (resource samples, GC pauses and spans, as an agent writes them), each with its own
id. Printed: acknowledged records per second of wall time and per second of the collector's CPU
(the issue's goal: ≥ 20,000 records/s per core), p50/p99 latency; then one in-process worker
drains the jobs (sessions, issues) and its envelopes and records per second are printed.
PostgreSQL is started in a temporary folder like the tests do.
"""

from __future__ import annotations

import argparse
import gzip
import os
import signal
import socket
import statistics
import subprocess
import sys
import threading
import time
from pathlib import Path

import psutil

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
sys.path.insert(0, str(Path(__file__).resolve().parent))
from _databases import each_database

from hawkwatch.model.envelope import Envelope, EnvelopeSession, encode_envelope
from hawkwatch.model.records import CpuUsage, Footprint, GcPause
from hawkwatch.server import admin
from hawkwatch.server.database import make_engine, migrate
from hawkwatch.server.pipeline import drain
from hawkwatch.uploader import ENVELOPE_TYPE, post

HAWKWATCH = Path(sys.executable).with_name("hawkwatch")


def envelope_body(number: int, records: int) -> bytes:
    start = 1_700_000_000.0 + number * 1000
    rows = []
    for i in range(records):
        moment = start + i * 0.5
        kind = (Footprint(time=moment, value=200 + i % 7), CpuUsage(time=moment, value=i % 90),
                GcPause(start=moment, generation=i % 3, duration_ms=12.5))[i % 3]  # fmt: skip
        rows.append(tuple(kind.to_record()))
    envelope = Envelope(id=f"bench-{number}:1", session=EnvelopeSession(f"bench-{number}"),
                        records=rows)  # type: ignore[arg-type]  # fmt: skip
    return gzip.compress(encode_envelope(envelope), 6)


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


def measure(url: str, label: str, args: argparse.Namespace) -> None:
    engine = make_engine(url)
    migrate(engine)
    key = admin.add_project(engine, f"bench-{time.time_ns()}")
    port = free_port()
    env = {k: v for k, v in os.environ.items() if not k.startswith("HAWKWATCH_")}
    command = [str(HAWKWATCH), "server", "run", "--no-worker", "--database", url,
               "--port", str(port)]  # fmt: skip
    server = subprocess.Popen(command, env=env, stderr=subprocess.DEVNULL)
    base = f"http://127.0.0.1:{port}"
    deadline = time.monotonic() + 30
    while time.monotonic() < deadline:
        try:
            socket.create_connection(("127.0.0.1", port), timeout=1).close()
            break
        except OSError:
            time.sleep(0.05)
    bodies = [envelope_body(n, args.records) for n in range(args.envelopes)]
    latencies: list[float] = []
    lock = threading.Lock()
    headers = {"Content-Encoding": "gzip", "Content-Type": ENVELOPE_TYPE}

    def client(offset: int) -> None:
        for body in bodies[offset :: args.clients]:
            started = time.perf_counter()
            post(base, key, body, headers, retries=5)
            with lock:
                latencies.append(time.perf_counter() - started)

    collector = psutil.Process(server.pid)
    cpu_before = sum(collector.cpu_times()[:2])
    started = time.perf_counter()
    threads = [threading.Thread(target=client, args=(i,)) for i in range(args.clients)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    elapsed = time.perf_counter() - started
    cpu = sum(collector.cpu_times()[:2]) - cpu_before
    server.send_signal(signal.SIGINT)
    server.wait(30)
    records = args.envelopes * args.records
    latencies.sort()
    print(f"{label}: {records:,} records in {args.envelopes} envelopes, {args.clients} clients")
    print(f"  acknowledged: {records / elapsed:,.0f} records/s wall, "
          f"{records / cpu:,.0f} records/s per collector CPU second (goal ≥ 20,000)")  # fmt: skip
    print(f"  latency: p50 {statistics.median(latencies) * 1000:.1f} ms, "
          f"p99 {latencies[int(len(latencies) * 0.99) - 1] * 1000:.1f} ms")  # fmt: skip
    started = time.perf_counter()
    processed = drain(engine, deadline_s=600)
    took = time.perf_counter() - started
    print(f"  one worker: {processed / took:,.1f} envelopes/s, "
          f"{processed * args.records / took:,.0f} records/s")  # fmt: skip
    engine.dispose()


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--database", choices=("sqlite", "postgresql", "both"), default="both")
    parser.add_argument("--envelopes", type=int, default=400)
    parser.add_argument("--records", type=int, default=500)
    parser.add_argument("--clients", type=int, default=4)
    args = parser.parse_args()
    each_database(
        args.database, "hawkwatch-ingest-", lambda url, label, _: measure(url, label, args)
    )


if __name__ == "__main__":
    main()

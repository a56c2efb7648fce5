"""A closed-loop HTTP/1.1 load generator (asyncio, keep-alive), for ``agent_overhead.py``.

Run: python benchmarks/workloads/http_load.py --port PORT [--port PORT2 ...]
         [--requests 20000] [--slices 10] [--connections 16] [--warmup 2000] [--no-shutdown]

For each server (``--port``, repeatable) ``--connections`` keep-alive connections each send one
request and wait for its answer, then send the next. After ``--warmup`` untimed requests per
server, the ``--requests`` timed requests per server are cut into ``--slices`` slices, and the
slices of the servers alternate (A B C, B C A, C A B, ...): only one server is under load at a
time, and on a shared, noisy machine every server sees the same noise. Requests cycle through
``GET /items/10?page=N``, ``GET /items/40``, ``POST /echo`` (a ~300-byte JSON body) and
``GET /health``. Latency is perf_counter_ns from writing a request to reading the last byte of
its answer. Then ``GET /__shutdown`` stops each server (unless ``--no-shutdown``).

Prints one JSON line: ``servers``, a list in ``--port`` order of ``port``, ``requests``,
``elapsed_s`` (sum of the server's slices), ``rps``, ``p50_ms``, ``p90_ms``, ``p99_ms``,
``max_ms``, ``slice_rps`` and ``errors`` (non-200 answers).
"""

from __future__ import annotations

import argparse
import asyncio
import itertools
import json
import time

Connection = tuple[asyncio.StreamReader, asyncio.StreamWriter]


def build_requests() -> list[bytes]:
    body = json.dumps(
        {"user": "bench", "items": [{"id": i, "qty": i % 3 + 1} for i in range(12)], "note": "x"}
    ).encode()
    host = "Host: 127.0.0.1\r\n"
    requests = [f"GET /items/10?page={page} HTTP/1.1\r\n{host}\r\n".encode() for page in range(4)]
    requests.append(f"GET /items/40 HTTP/1.1\r\n{host}\r\n".encode())
    requests.append(
        f"POST /echo HTTP/1.1\r\n{host}Content-Type: application/json\r\n"
        f"Content-Length: {len(body)}\r\n\r\n".encode()
        + body
    )
    requests.append(f"GET /health HTTP/1.1\r\n{host}\r\n".encode())
    return requests


async def read_response(reader: asyncio.StreamReader) -> int:
    """Read one response; its status code."""
    head = await reader.readuntil(b"\r\n\r\n")
    status = int(head[9:12])
    marker = head.find(b"Content-Length:")
    if marker < 0:
        marker = head.lower().find(b"content-length:")
    length = int(head[marker + 15 : head.index(b"\r\n", marker)])
    await reader.readexactly(length)
    return status


class Server:
    """One server's connections and what was measured on them."""

    def __init__(self, port: int, connections: list[Connection]) -> None:
        self.port = port
        self.connections = connections
        self.requests = itertools.cycle(build_requests())
        self.latencies_ns: list[int] = []
        self.slice_rps: list[float] = []
        self.elapsed_s = 0.0
        self.errors = 0

    async def load(self, total: int, record: bool) -> None:
        """``total`` requests over all connections, closed loop."""
        remaining = [total]

        async def worker(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
            clock = time.perf_counter_ns
            append = self.latencies_ns.append
            while remaining[0] > 0:
                remaining[0] -= 1
                t0 = clock()
                writer.write(next(self.requests))
                status = await read_response(reader)
                if record:
                    append(clock() - t0)
                if status != 200:
                    self.errors += 1

        started = time.perf_counter()
        await asyncio.gather(*(worker(r, w) for r, w in self.connections))
        elapsed = time.perf_counter() - started
        if record:
            self.elapsed_s += elapsed
            self.slice_rps.append(total / elapsed)

    def summary(self) -> dict[str, object]:
        ordered = sorted(self.latencies_ns)

        def pct(p: float) -> float:
            return ordered[min(len(ordered) - 1, round(p / 100 * (len(ordered) - 1)))] / 1e6

        return {
            "port": self.port,
            "requests": len(ordered),
            "elapsed_s": self.elapsed_s,
            "rps": len(ordered) / self.elapsed_s,
            "p50_ms": pct(50),
            "p90_ms": pct(90),
            "p99_ms": pct(99),
            "max_ms": ordered[-1] / 1e6,
            "slice_rps": self.slice_rps,
            "errors": self.errors,
        }


async def run(args: argparse.Namespace) -> dict[str, object]:
    servers = []
    for port in args.port:
        connections = [
            await asyncio.open_connection("127.0.0.1", port) for _ in range(args.connections)
        ]
        servers.append(Server(port, connections))
    for server in servers:
        await server.load(args.warmup, record=False)
    per_slice = max(1, args.requests // args.slices)
    for index in range(args.slices):
        shift = index % len(servers)
        for server in servers[shift:] + servers[:shift]:
            await server.load(per_slice, record=True)
    for server in servers:
        for _, writer in server.connections:
            writer.close()
        if not args.no_shutdown:
            reader, writer = await asyncio.open_connection("127.0.0.1", server.port)
            writer.write(b"GET /__shutdown HTTP/1.1\r\nHost: 127.0.0.1\r\n\r\n")
            await read_response(reader)
            writer.close()
    return {"servers": [server.summary() for server in servers]}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n", 1)[0])
    parser.add_argument("--port", type=int, action="append", required=True, help="repeatable")
    parser.add_argument("--requests", type=int, default=20_000, help="timed requests per server")
    parser.add_argument("--slices", type=int, default=10, help="alternating slices per server")
    parser.add_argument("--connections", type=int, default=16, help="per server")
    parser.add_argument("--warmup", type=int, default=2_000, help="untimed requests per server")
    parser.add_argument("--no-shutdown", action="store_true", help="leave the servers running")
    args = parser.parse_args()
    print(json.dumps(asyncio.run(run(args))), flush=True)


if __name__ == "__main__":
    main()

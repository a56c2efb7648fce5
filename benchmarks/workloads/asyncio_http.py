"""An asyncio HTTP/1.1 server on loopback, for ``benchmarks/agent_overhead.py``.

Run: python benchmarks/workloads/asyncio_http.py [--port 0] [--start-agent]

Standard library only: ``asyncio.start_server`` streams, keep-alive connections, a small JSON API
(``GET /items/<n>`` lists ``n`` items, ``POST /echo`` returns the parsed JSON body with a digest,
``GET /health``). The load comes from another process (``http_load.py``).

Prints ``LISTENING <port>`` once it accepts connections. ``GET /__shutdown`` answers, stops the
server and prints one JSON line: ``main_unix`` (``time.time()`` at the first line of this file),
``requests`` served, ``cpu_s`` (this process's user + system CPU from ``LISTENING`` to shutdown,
every thread included, so the agent's own threads count) and whether a hawkwatch agent ran.
``--start-agent`` calls ``hawkwatch.start()`` first (the in-code way to start it).
"""

import time

MAIN_UNIX = time.time()  # first statement: when the interpreter reached the main module

import argparse  # noqa: E402 - after the start-up timestamp on purpose
import asyncio  # noqa: E402
import hashlib  # noqa: E402
import json  # noqa: E402
import sys  # noqa: E402
from urllib.parse import parse_qs, urlsplit  # noqa: E402

REASONS = {200: "OK", 400: "Bad Request", 404: "Not Found", 405: "Method Not Allowed"}
MAX_HEAD = 64 * 1024


class Stats:
    def __init__(self) -> None:
        self.requests = 0
        self.stop = asyncio.Event()


def route(method: str, target: str, body: bytes) -> tuple[int, object]:
    """The application: what a small JSON API does per request."""
    parts = urlsplit(target)
    path = parts.path
    if path.startswith("/items/"):
        if method != "GET":
            return 405, {"error": "method"}
        try:
            count = min(int(path.rsplit("/", 1)[1]), 100)
        except ValueError:
            return 400, {"error": "count"}
        query = parse_qs(parts.query)
        page = int(query.get("page", ["0"])[0])
        items = [
            {"id": page * count + i, "name": f"item-{page * count + i}", "price": (i * 7) % 100 / 4}
            for i in range(count)
        ]
        return 200, {"page": page, "count": count, "items": items}
    if path == "/echo":
        if method != "POST":
            return 405, {"error": "method"}
        try:
            payload = json.loads(body or b"null")
        except ValueError:
            return 400, {"error": "json"}
        return 200, {"echo": payload, "sha1": hashlib.sha1(body).hexdigest()}
    if path == "/health":
        return 200, {"ok": True}
    return 404, {"error": "not found", "path": path}


def render(status: int, payload: object, keep_alive: bool) -> bytes:
    body = json.dumps(payload, separators=(",", ":")).encode()
    head = (
        f"HTTP/1.1 {status} {REASONS.get(status, 'Error')}\r\n"
        "Content-Type: application/json\r\n"
        f"Content-Length: {len(body)}\r\n"
        f"Connection: {'keep-alive' if keep_alive else 'close'}\r\n\r\n"
    )
    return head.encode("latin-1") + body


async def handle(reader: asyncio.StreamReader, writer: asyncio.StreamWriter, stats: Stats) -> None:
    try:
        while True:
            try:
                head = await reader.readuntil(b"\r\n\r\n")
            except (asyncio.IncompleteReadError, asyncio.LimitOverrunError, ConnectionError):
                return
            lines = head.decode("latin-1").split("\r\n")
            try:
                method, target, version = lines[0].split(" ", 2)
            except ValueError:
                writer.write(render(400, {"error": "request line"}, keep_alive=False))
                return
            headers = {}
            for line in lines[1:]:
                if line:
                    name, _, value = line.partition(":")
                    headers[name.strip().lower()] = value.strip()
            length = int(headers.get("content-length", "0") or 0)
            body = await reader.readexactly(length) if length else b""
            keep_alive = headers.get("connection", "").lower() != "close" and version.endswith(
                "1.1"
            )
            stats.requests += 1
            if target == "/__shutdown":
                writer.write(render(200, {"bye": True}, keep_alive=False))
                await writer.drain()
                stats.stop.set()
                return
            status, payload = route(method, target, body)
            writer.write(render(status, payload, keep_alive))
            if writer.transport.get_write_buffer_size() > MAX_HEAD:
                await writer.drain()
            if not keep_alive:
                await writer.drain()
                return
    finally:
        writer.close()


async def serve(port: int) -> dict[str, object]:
    stats = Stats()
    server = await asyncio.start_server(
        lambda r, w: handle(r, w, stats), "127.0.0.1", port, backlog=256
    )
    bound = server.sockets[0].getsockname()[1]
    cpu0 = time.process_time()
    print(f"LISTENING {bound}", flush=True)
    async with server:
        await stats.stop.wait()
    return {"requests": stats.requests, "cpu_s": time.process_time() - cpu0}


def agent_running() -> bool:
    api = sys.modules.get("hawkwatch.agent.api")
    return api is not None and api.current_agent() is not None


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n", 1)[0])
    parser.add_argument("--port", type=int, default=0, help="0 picks a free port")
    parser.add_argument("--start-agent", action="store_true", help="call hawkwatch.start() first")
    args = parser.parse_args()
    if args.start_agent:
        import hawkwatch

        hawkwatch.start()
    result = asyncio.run(serve(args.port))
    result.update(main_unix=MAIN_UNIX, agent=agent_running())
    print(json.dumps(result), flush=True)


if __name__ == "__main__":
    main()

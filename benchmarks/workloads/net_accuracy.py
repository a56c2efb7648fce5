"""How close the network monitor's phases come to delays injected on purpose (one family).

Usage: python net_accuracy.py FAMILY. A loopback server waits 200 ms before the first byte
(``/wait``) or sends its body in 4 chunks 50 ms apart (``/trickle``), and ``slow-dns.test``
resolves after 100 ms (``socket.getaddrinfo`` wrapped below the agent). Prints one JSON object:
the measured ``ttfb``, ``receive`` and ``dns`` (ms) of those requests.
"""

from __future__ import annotations

import asyncio
import http.server
import json
import socket
import sys
import threading
import time

FAMILY = sys.argv[1]
real_getaddrinfo = socket.getaddrinfo


def slow_getaddrinfo(host, *args, **kwargs):  # type: ignore[no-untyped-def]
    if host in ("slow-dns.test", b"slow-dns.test"):
        time.sleep(0.1)
        host = "127.0.0.1"
    return real_getaddrinfo(host, *args, **kwargs)


socket.getaddrinfo = slow_getaddrinfo

import hawkwatch  # noqa: E402
from hawkwatch.agent import current_agent  # noqa: E402
from hawkwatch.model.records import NetworkTransaction  # noqa: E402
from hawkwatch.store import Session  # noqa: E402


class Handler(http.server.BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"
    wbufsize = 1 << 16

    def do_GET(self) -> None:
        if self.path.startswith("/wait"):
            time.sleep(0.2)
        chunks = 4 if self.path.startswith("/trickle") else 1
        self.send_response(200)
        self.send_header("Content-Length", str(chunks * 100))
        self.end_headers()
        if chunks > 1:  # headers first, then the body in chunks
            self.wfile.flush()
        for _ in range(chunks):
            if chunks > 1:
                time.sleep(0.05)
            self.wfile.write(b"t" * 100)
            self.wfile.flush()

    def log_message(self, *args: object) -> None:
        pass


server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), Handler)
threading.Thread(target=server.serve_forever, daemon=True).start()
port = server.server_address[1]
urls = [f"http://127.0.0.1:{port}/wait", f"http://127.0.0.1:{port}/trickle",
        f"http://slow-dns.test:{port}/ok"]  # fmt: skip
hawkwatch.start(**{"stall.enabled": False})


def fetch_sync() -> None:
    if FAMILY == "requests":
        import requests

        for url in urls:
            _ = requests.get(url).content
    elif FAMILY == "httpx":
        import httpx

        for url in urls:
            _ = httpx.get(url).content
    else:
        import urllib.request

        for url in urls:
            urllib.request.urlopen(url).read()


async def fetch_async() -> None:
    if FAMILY == "aiohttp":
        import aiohttp

        for url in urls:
            async with aiohttp.ClientSession() as session, session.get(url) as response:
                await response.read()
    else:
        import httpx

        for url in urls:
            async with httpx.AsyncClient() as client:
                _ = (await client.get(url)).content


if FAMILY in ("aiohttp", "httpx-async"):
    asyncio.run(fetch_async())
else:
    fetch_sync()
agent = current_agent()
assert agent is not None
folder = agent.session.path
hawkwatch.stop()
records = Session.open(folder).records("network-transaction")
found = sorted((NetworkTransaction.from_record(r) for r in records), key=lambda t: t.start)
wait, trickle, dns = found[-3:]
print(json.dumps({
    "ttfb": wait.phases_ms.ttfb,
    "receive": trickle.phases_ms.receive,
    "dns": dns.phases_ms.dns if dns.phases_ms.dns is not None else dns.phases_ms.tcp,
}))  # fmt: skip

"""One arm of the network benchmark: N GET requests through one client family, timed.

Usage: python net_client.py FAMILY URL N on|off. Starts the agent with the network monitor on
or off (every other monitor alike in both arms), warms up, then prints requests per second.
"""

from __future__ import annotations

import asyncio
import sys
import time

import hawkwatch

family, url, count, arm = sys.argv[1], sys.argv[2], int(sys.argv[3]), sys.argv[4]
hawkwatch.start(**{"network.enabled": arm == "on", "stall.enabled": False})


def sync_run(n: int) -> float:
    if family == "requests":
        import requests

        with requests.Session() as session:
            get = session.get
            started = time.perf_counter()
            for _ in range(n):
                _ = get(url).content
            return time.perf_counter() - started
    if family == "httpx":
        import httpx

        with httpx.Client() as client:
            started = time.perf_counter()
            for _ in range(n):
                _ = client.get(url).content
            return time.perf_counter() - started
    import http.client
    from urllib.parse import urlsplit

    parts = urlsplit(url)
    conn = http.client.HTTPConnection(parts.hostname, parts.port)
    started = time.perf_counter()
    for _ in range(n):
        conn.request("GET", "/")
        conn.getresponse().read()
    elapsed = time.perf_counter() - started
    conn.close()
    return elapsed


async def async_run(n: int) -> float:
    if family == "aiohttp":
        import aiohttp

        async with aiohttp.ClientSession() as session:
            started = time.perf_counter()
            for _ in range(n):
                async with session.get(url) as response:
                    await response.read()
            return time.perf_counter() - started
    import httpx

    async with httpx.AsyncClient() as client:
        started = time.perf_counter()
        for _ in range(n):
            _ = (await client.get(url)).content
        return time.perf_counter() - started


def run(n: int) -> float:
    if family in ("aiohttp", "httpx-async"):
        return asyncio.run(async_run(n))
    return sync_run(n)


run(max(count // 10, 20))  # warm-up: imports, connections, caches
cpu_started = time.process_time()
elapsed = run(count)
cpu = time.process_time() - cpu_started
hawkwatch.stop()
print(f"{count / elapsed:.1f} {cpu / count * 1e6:.2f}")

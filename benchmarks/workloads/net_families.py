"""The network benchmarks' client loops: N GET requests through one client family.

``run(family, url, n, hooks=False)`` makes a client (a ``requests.Session``, an ``httpx``
client, an ``aiohttp.ClientSession``, an ``http.client`` connection; for the async families in
an event loop of its own), sends ``n`` requests one after the other, reading each body to its
end, and returns the wall and CPU seconds of the loop alone (its first request opens the
connection).
``hooks``: the library's own extension point in use with callbacks that do nothing (httpx: a
``trace`` extension on each request; aiohttp: a ``TraceConfig`` on the signals the monitor
listens to), what the library costs before the monitor does anything.

``libraries(family)`` imports what a family's loop uses, and ``patchable(family)`` names the
modules whose classes and functions the network monitor may wrap (``net_rounds.py`` checks
that an arm with the monitor off runs them as they were before the agent first started).
"""

from __future__ import annotations

import asyncio
import time
from types import ModuleType

FAMILIES = ("http.client", "requests", "httpx", "httpx-async", "aiohttp")
_PATCHABLE = {
    "http.client": ("socket", "ssl", "http.client"),
    "requests": ("socket", "ssl", "http.client", "urllib3", "requests"),
    "httpx": ("socket", "ssl", "http.client", "httpx", "httpcore"),
    "httpx-async": ("socket", "ssl", "http.client", "httpx", "httpcore"),
    "aiohttp": ("socket", "ssl", "http.client", "aiohttp"),
}


def libraries(family: str) -> list[ModuleType]:
    """Import the family's client (and the standard modules the monitor wraps)."""
    import http.client
    import socket
    import ssl

    modules = [socket, ssl, http.client]
    if family == "requests":
        import requests
        import urllib3

        modules += [requests, urllib3]
    elif family.startswith("httpx"):
        import httpcore
        import httpx

        modules += [httpx, httpcore]
    elif family == "aiohttp":
        import aiohttp

        modules.append(aiohttp)
    return modules


def patchable(family: str) -> tuple[str, ...]:
    """Top-level names of the packages whose modules the monitor may wrap for ``family``."""
    return _PATCHABLE[family]


def _noop(name: str, info: object) -> None:
    pass


async def _anoop(*args: object) -> None:
    pass


def _trace_configs(hooks: bool) -> list[object] | None:
    if not hooks:
        return None
    import aiohttp

    config = aiohttp.TraceConfig()
    for name in ("request_start", "dns_resolvehost_start", "dns_resolvehost_end",
                 "connection_create_start", "connection_create_end", "connection_reuseconn",
                 "request_headers_sent", "request_chunk_sent", "request_end",
                 "response_chunk_received", "request_redirect", "request_exception"):  # fmt: skip
        getattr(config, f"on_{name}").append(_anoop)
    config.freeze()
    return [config]


def _stamp() -> tuple[float, float]:
    return time.perf_counter(), time.process_time()


def _since(started: tuple[float, float]) -> tuple[float, float]:
    """(wall s, CPU s of the process: every thread) since ``started``."""
    wall, cpu = _stamp()
    return wall - started[0], cpu - started[1]


def _sync_run(family: str, url: str, n: int, hooks: bool) -> tuple[float, float]:
    if family == "requests":
        import requests

        with requests.Session() as session:
            get = session.get
            started = _stamp()
            for _ in range(n):
                _ = get(url).content
            return _since(started)
    if family == "httpx":
        import httpx

        extensions = {"trace": _noop} if hooks else None
        with httpx.Client() as client:
            started = _stamp()
            for _ in range(n):
                _ = client.get(url, extensions=extensions).content
            return _since(started)
    import http.client
    from urllib.parse import urlsplit

    parts = urlsplit(url)
    conn = http.client.HTTPConnection(parts.hostname, parts.port)
    started = _stamp()
    for _ in range(n):
        conn.request("GET", "/")
        conn.getresponse().read()
    elapsed = _since(started)
    conn.close()
    return elapsed


async def _async_run(family: str, url: str, n: int, hooks: bool) -> tuple[float, float]:
    if family == "aiohttp":
        import aiohttp

        async with aiohttp.ClientSession(trace_configs=_trace_configs(hooks)) as session:
            started = _stamp()
            for _ in range(n):
                async with session.get(url) as response:
                    await response.read()
            return _since(started)
    import httpx

    extensions = {"trace": _anoop} if hooks else None
    async with httpx.AsyncClient() as client:
        started = _stamp()
        for _ in range(n):
            _ = (await client.get(url, extensions=extensions)).content
        return _since(started)


def run(family: str, url: str, n: int, hooks: bool = False) -> tuple[float, float]:
    """(wall s, CPU s) of ``n`` requests through a new client of ``family``: the loop alone,
    not the client's making (an ``httpx`` client loads the CA bundle: ~10 ms of noise)."""
    if family in ("aiohttp", "httpx-async"):
        return asyncio.run(_async_run(family, url, n, hooks))
    return _sync_run(family, url, n, hooks)

"""A fast keep-alive HTTP server on loopback for the network benchmark (aiohttp.web).

Usage: python net_server.py [PORT]. Prints its port on the first line, then serves until
killed. ``GET /`` answers 1 KB. ``PORT`` (``network_instructions.py``: the URL's text, port
included, moves a client's instruction count) is taken if free, else any free port is.
"""

from __future__ import annotations

import asyncio
import socket
import sys

from aiohttp import web

BODY = b"x" * 1024


async def handle(request: web.Request) -> web.Response:
    return web.Response(body=BODY)


async def main() -> None:
    app = web.Application()
    app.router.add_get("/", handle)
    runner = web.AppRunner(app, access_log=None)
    await runner.setup()
    sock = socket.socket()
    try:
        sock.bind(("127.0.0.1", int(sys.argv[1]) if sys.argv[1:] else 0))
    except OSError:  # taken: any port
        sock.bind(("127.0.0.1", 0))
    site = web.SockSite(runner, sock)
    await site.start()
    print(sock.getsockname()[1], flush=True)
    await asyncio.Event().wait()


asyncio.run(main())

"""A real app for the HTML report's tests: run under ``hawkwatch run --profile``.

It launches, marks itself ready, fetches from a loopback HTTP server, sends an event and a span,
burns CPU and blocks its event loop (a stall, in a function whose name holds ``</script>`` and
quotes, as do the event and the span), then dies of an uncaught exception: one session with
every view of the report filled.
"""

from __future__ import annotations

import asyncio
import http.server
import threading
import time
import urllib.request

import hawkwatch

HOSTILE = "</script><script>document.title='pwned'</script>\"'<b>"


class Backend(http.server.BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"

    def do_GET(self) -> None:
        time.sleep(0.05)
        body = b'{"ok": true}'
        self.send_response(200)
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)

    def log_message(self, *args: object) -> None:
        pass


def burn(seconds: float) -> int:
    total = 0
    deadline = time.perf_counter() + seconds
    while time.perf_counter() < deadline:
        total += sum(i * i for i in range(2000))
    return total


def block() -> None:
    """Blocks the loop: CPU then a sleep (renamed below so its name is hostile)."""
    burn(0.4)
    time.sleep(0.5)


block.__code__ = block.__code__.replace(co_name=HOSTILE, co_qualname=HOSTILE)


async def handler() -> None:
    block()


async def main() -> None:
    await asyncio.sleep(0.3)
    await handler()
    await asyncio.sleep(0.3)


if __name__ == "__main__":
    hawkwatch.mark_ready()
    server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), Backend)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    with urllib.request.urlopen(f"http://127.0.0.1:{server.server_address[1]}/items?page=1") as r:
        r.read()
    hawkwatch.event(HOSTILE, {"note": HOSTILE})
    with hawkwatch.span(HOSTILE):
        burn(0.3)
    asyncio.run(main())
    raise RuntimeError(f"checkout failed {HOSTILE}")

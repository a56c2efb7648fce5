"""A service client with HTTP problems hawkwatch's network monitor catches (``hawkwatch network``).

A small loopback "backend" answers slowly on ``/report`` (the server waits 400 ms before its
first byte) and fails on ``/flaky`` (503). The client opens a new connection for every request to
``/price`` (no pooling), asks for the same price twice in a row (a duplicate), and fetches the
report from inside an asyncio handler with a blocking client (every task waits for it).
Standard library only.
"""

from __future__ import annotations

import asyncio
import http.server
import threading
import time
import urllib.error
import urllib.request


class Backend(http.server.BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"
    wbufsize = 1 << 16

    def do_GET(self) -> None:
        if self.path.startswith("/report"):
            time.sleep(0.4)  # the slow part: the server thinks before its first byte
        status = 503 if self.path.startswith("/flaky") else 200
        body = b'{"ok": true}' if status == 200 else b"busy"
        self.send_response(status)
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)

    def log_message(self, *args: object) -> None:
        pass


def fetch(url: str) -> int:
    try:
        with urllib.request.urlopen(url, timeout=5) as response:
            response.read()
            return int(response.status)
    except urllib.error.HTTPError as exc:
        exc.close()
        return exc.code


async def handler(base: str) -> None:
    fetch(base + "/report?user=42&token=s3cret")  # a blocking client on the loop's thread


def main() -> None:
    server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), Backend)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    base = f"http://127.0.0.1:{server.server_address[1]}"
    for item in ("apples", "pears", "plums", "figs"):
        fetch(f"{base}/price?item={item}")  # a new connection every time
    fetch(f"{base}/price?item=apples")  # asked for again right away
    for _ in range(4):
        fetch(f"{base}/flaky")
    asyncio.run(handler(base))
    print("client done")


if __name__ == "__main__":
    main()

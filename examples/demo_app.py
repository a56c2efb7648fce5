"""A small web service with three real performance problems, for hawkwatch to catch.

Run it under hawkwatch (``bash scripts/demo.sh`` does it all):

    hawkwatch run --app-name demo -- python examples/demo_app.py
    hawkwatch report

1. A slow launch: ``demo_catalog`` builds a big table at import time (see "Slowest imports").
2. A leak: every request adds ~6 MB to a module-level cache that is never trimmed
   (see ``mem`` and ``r-mem`` climbing in "Resources").
3. Long garbage-collection pauses: request handling builds object graphs with reference
   cycles, so full collections take tens of milliseconds (see "GC pauses").
Plus a CPU-heavy report endpoint, timed with ``hawkwatch.span`` (see "Spans").
"""

from __future__ import annotations

import gc
import http.server
import json
import sys
import threading
import time
import urllib.request
from pathlib import Path

sys.path.insert(0, str(Path(__file__).parent))

import demo_catalog  # problem 1: slow to import

import hawkwatch  # under `hawkwatch run` the agent is already running

_response_cache: list[bytes] = []  # problem 2: grows with every request, never trimmed
_sessions: list[object] = []


class Handler(http.server.BaseHTTPRequestHandler):
    def do_GET(self) -> None:
        with hawkwatch.span(f"GET {self.path.split('?')[0]}"):
            body = self._report() if self.path.startswith("/report") else self._lookup()
        self.send_response(200)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)

    def _lookup(self) -> bytes:
        items = list(demo_catalog.CATALOG.items())[:2000]
        body = json.dumps(dict(items)).encode()
        _response_cache.append(b"\x01" * (6 * 1024 * 1024))  # "cache" the rendered page... forever
        for _ in range(40_000):  # problem 3: a graph full of reference cycles per request
            node: dict[str, object] = {}
            node["self"] = node
            _sessions.append(node)
        if len(_sessions) > 200_000:
            _sessions.clear()
        return body

    def _report(self) -> bytes:
        total = 0.0
        for entry in demo_catalog.CATALOG.values():  # CPU-heavy aggregation
            total += float(entry["price"]) ** 0.5
        return json.dumps({"total": round(total, 2)}).encode()

    def log_message(self, format: str, *args: object) -> None:
        pass


def main() -> int:
    server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    threading.Thread(target=server.serve_forever, name="http-server", daemon=True).start()
    hawkwatch.mark_ready()  # listening: the launch ends here
    hawkwatch.event("listening", extra=f"port {server.server_port}")
    base = f"http://127.0.0.1:{server.server_port}"
    for n in range(30):
        path = "/report" if n % 10 == 9 else f"/item?n={n}"
        with urllib.request.urlopen(base + path, timeout=10) as response:
            response.read()
        if n % 10 == 4:
            gc.collect()  # what a busy service does implicitly, every few requests
        time.sleep(0.1)
    server.shutdown()
    hawkwatch.event("shutdown", extra=f"{len(_response_cache)} pages cached")
    print(f"demo: served 30 requests; cache holds {len(_response_cache) * 6} MB")
    return 0


if __name__ == "__main__":
    sys.exit(main())

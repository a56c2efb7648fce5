"""Real HTTP servers on loopback for the network monitor's tests.

``HttpServer``: HTTP/1.1 (optionally TLS with a ``trustme`` certificate) with paths
``/ok``, ``/wait?ms=N`` (N ms before the first byte), ``/trickle?chunks=N&ms=M`` (the body in N
chunks of 100 bytes, M ms apart), ``/redirect`` (302 to /ok), ``/status/N``, ``/big?bytes=N``;
a ``POST`` to any path answers its body.
``Http2Server``: hypercorn over TLS offering h2. ``refused_port()``: a port nobody listens on.
"""

from __future__ import annotations

import asyncio
import http.server
import socket
import ssl
import threading
import time
from pathlib import Path
from urllib.parse import parse_qs, urlsplit

import trustme


class _Handler(http.server.BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"
    wbufsize = 1 << 16  # headers and a small body leave in one segment (no Nagle gap)

    def do_GET(self) -> None:
        parts = urlsplit(self.path)
        query = {k: int(v[0]) for k, v in parse_qs(parts.query).items() if v[0].isdigit()}
        if parts.path == "/wait":
            time.sleep(query.get("ms", 0) / 1000)
        if parts.path == "/redirect":
            self._respond(302, b"", [("Location", "/ok")])
        elif parts.path.startswith("/status/"):
            self._respond(int(parts.path.rsplit("/", 1)[1]), b"status")
        elif parts.path == "/big":
            self._respond(200, b"b" * query.get("bytes", 0))
        elif parts.path == "/trickle":
            chunks, pause = query.get("chunks", 1), query.get("ms", 0) / 1000
            self.send_response(200)
            self.send_header("Content-Length", str(chunks * 100))
            self.end_headers()
            self.wfile.flush()
            for _ in range(chunks):
                time.sleep(pause)
                self.wfile.write(b"t" * 100)
                self.wfile.flush()
        else:
            self._respond(200, b"x" * 1000)

    def do_POST(self) -> None:
        self._respond(200, self.rfile.read(int(self.headers.get("Content-Length") or 0)))

    def _respond(self, status: int, body: bytes, headers: list[tuple[str, str]] = ()) -> None:
        self.send_response(status)
        for name, value in headers:
            self.send_header(name, value)
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)
        self.wfile.flush()

    def log_message(self, *args: object) -> None:
        pass


class _Server(http.server.ThreadingHTTPServer):
    daemon_threads = True

    def __init__(self, context: ssl.SSLContext | None) -> None:
        super().__init__(("127.0.0.1", 0), _Handler)
        self.context = context

    def get_request(self) -> tuple[socket.socket, object]:
        sock, address = super().get_request()
        if self.context is not None:
            sock.settimeout(5)
            try:
                sock = self.context.wrap_socket(sock, server_side=True)
            except (ssl.SSLError, OSError):
                sock.close()
                raise
        return sock, address

    def handle_error(self, request: object, client_address: object) -> None:
        pass  # clients that reject our certificate hang up: expected in the tests


class HttpServer:
    """A threaded HTTP/1.1 server on 127.0.0.1, optionally HTTPS."""

    def __init__(self, cert: trustme.LeafCert | None = None) -> None:
        context = None
        if cert is not None:
            context = ssl.create_default_context(ssl.Purpose.CLIENT_AUTH)
            cert.configure_cert(context)
        self.server = _Server(context)
        self.port = self.server.server_address[1]
        self.scheme = "https" if cert else "http"
        self._thread = threading.Thread(target=self.server.serve_forever, daemon=True)

    def url(self, path: str, host: str = "127.0.0.1") -> str:
        return f"{self.scheme}://{host}:{self.port}{path}"

    def __enter__(self) -> HttpServer:
        self._thread.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self.server.shutdown()
        self.server.server_close()


class Http2Server:
    """hypercorn serving a tiny ASGI app over TLS with ALPN h2, in a thread of its own."""

    def __init__(self, cert: trustme.LeafCert, folder: Path) -> None:
        from hypercorn.config import Config

        cert_file, key_file = folder / "h2-cert.pem", folder / "h2-key.pem"
        cert.cert_chain_pems[0].write_to_path(str(cert_file))
        cert.private_key_pem.write_to_path(str(key_file))
        self.port = _free_port()
        self.config = Config()
        self.config.bind = [f"127.0.0.1:{self.port}"]
        self.config.certfile, self.config.keyfile = str(cert_file), str(key_file)
        self.config.alpn_protocols = ["h2", "http/1.1"]
        self.config.accesslog = self.config.errorlog = None
        self._stop: asyncio.Event | None = None
        self._ready = threading.Event()
        self._thread = threading.Thread(target=self._serve, daemon=True)

    def url(self, path: str) -> str:
        return f"https://127.0.0.1:{self.port}{path}"

    def _serve(self) -> None:
        from hypercorn.asyncio import serve

        async def app(scope: dict, receive: object, send: object) -> None:  # type: ignore[type-arg]
            if scope["type"] != "http":
                return
            await send({"type": "http.response.start", "status": 200,  # type: ignore[operator]
                        "headers": [(b"content-length", b"2")]})  # fmt: skip
            await send({"type": "http.response.body", "body": b"h2"})  # type: ignore[operator]

        async def main() -> None:
            self._stop = asyncio.Event()
            self._ready.set()
            await serve(app, self.config, shutdown_trigger=self._stop.wait)  # type: ignore[arg-type]

        self._loop = asyncio.new_event_loop()
        try:
            self._loop.run_until_complete(main())
        finally:
            self._loop.close()

    def __enter__(self) -> Http2Server:
        self._thread.start()
        self._ready.wait(10)
        deadline = time.monotonic() + 10
        while time.monotonic() < deadline:
            try:
                socket.create_connection(("127.0.0.1", self.port), timeout=1).close()
                break
            except OSError:
                time.sleep(0.02)
        return self

    def __exit__(self, *exc: object) -> None:
        if self._stop is not None:
            self._loop.call_soon_threadsafe(self._stop.set)
        self._thread.join(10)


def _free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


def refused_port() -> int:
    """A loopback port with no listener (bound, then released)."""
    return _free_port()

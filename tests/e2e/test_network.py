"""The network monitor in a real program under ``hawkwatch run``: libraries imported after the
agent started are instrumented, no secret reaches the session folder, and ``hawkwatch network``
shows what happened."""

from __future__ import annotations

import json
import sys
from pathlib import Path

from tests.e2e.conftest import Runner

SECRETS = ("hunter2-token", "s3cr3t-pass", "Bearer-abc123", "session-cookie-xyz", "frag-private",
           "body-secret-999")  # fmt: skip

APP = """
import http.server, threading, json

class Handler(http.server.BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"
    def _answer(self):
        length = int(self.headers.get("Content-Length") or 0)
        self.rfile.read(length)
        body = b"ok" if self.path.startswith("/ok") else b""
        status = 200 if self.path.startswith("/ok") else 503
        self.send_response(status)
        self.send_header("Set-Cookie", "server=session-cookie-xyz")
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)
    do_GET = do_POST = _answer
    def log_message(self, *args):
        pass

server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), Handler)
threading.Thread(target=server.serve_forever, daemon=True).start()
port = server.server_address[1]

import requests  # imported after the agent started: instrumented as the import completes

session = requests.Session()
session.get(f"http://user:s3cr3t-pass@127.0.0.1:{port}/ok?token=hunter2-token&page=2#frag-private",
            headers={"Authorization": "Bearer-abc123", "Cookie": "id=session-cookie-xyz"})
session.post(f"http://127.0.0.1:{port}/ok", data=b"body-secret-999")
for _ in range(3):
    requests.get(f"http://localhost:{port}/down")
print("app done")
"""


def test_secrets_never_reach_the_session_and_the_view_shows_the_requests(runner: Runner) -> None:
    app = runner.script("app.py", APP)
    result = runner.hawkwatch("run", "--", sys.executable, str(app))
    assert result.returncode == 0, result.stderr
    assert "app done" in result.stdout
    session = runner.only_session()

    _assert_no_secret_in(session.path)

    shown = runner.hawkwatch("network", str(session.path), "--json")
    assert shown.returncode == 0, shown.stderr
    report = json.loads(shown.stdout)
    assert (report["format"], report["format_version"]) == ("hawkwatch-network", 1)
    requests = report["requests"]
    assert [r["method"] for r in requests] == ["GET", "POST", "GET", "GET", "GET"]
    assert requests[0]["url"].endswith("/ok?token=[redacted]&page=[redacted]")
    assert "@" not in requests[0]["url"] and "#" not in requests[0]["url"]
    assert [r["status"] for r in requests] == [200, 200, 503, 503, 503]
    assert {r["library"] for r in requests} == {"requests"}
    assert requests[1]["reused"] is True
    assert set(requests[0]["phases_ms"]) == {
        "queue", "dns", "tcp", "tls", "send", "ttfb", "receive", "total"
    }  # fmt: skip
    findings = {f["type"]: f for f in report["findings"]}
    assert findings["failing-host"]["requests"] == [2, 3, 4]
    assert findings["no-connection-reuse"]["requests"] == [2, 3, 4]
    hosts = {h["host"].split(":")[0]: h for h in report["hosts"]}
    assert (hosts["127.0.0.1"]["count"], hosts["127.0.0.1"]["errors"]) == (2, 0)
    assert (hosts["localhost"]["count"], hosts["localhost"]["errors"]) == (3, 3)

    console = runner.hawkwatch("network", str(session.path))
    assert console.returncode == 0
    assert "failing-host" in console.stdout and "HTTP requests: 5" in console.stdout


REFUSED = """
import socket
spare = socket.socket()
spare.bind(("127.0.0.1", 0))
closed_port = spare.getsockname()[1]
spare.close()  # nothing listens there: refused
try:
    session.get(f"http://user:s3cr3t-pass@127.0.0.1:{closed_port}/x?token=hunter2-token#frag-private",
                headers={"Authorization": "Bearer-abc123", "Cookie": "id=session-cookie-xyz"})
except requests.ConnectionError:
    pass
print("app done")
"""


def test_untraced_requests_leak_no_secret_and_are_all_counted(runner: Runner) -> None:
    """With head sampling tracing none of them, the requests are still counted, the failing one
    still recorded (untraced), and no secret reaches the session folder on that path either."""
    app = runner.script("app.py", APP.replace('print("app done")\n', REFUSED))
    result = runner.hawkwatch("run", "--", sys.executable, str(app),
                              HAWKWATCH_NETWORK_SAMPLE_WARMUP="0",
                              HAWKWATCH_NETWORK_SAMPLE_EVERY="1000")  # fmt: skip
    assert result.returncode == 0, result.stderr
    session = runner.only_session()
    _assert_no_secret_in(session.path)

    shown = runner.hawkwatch("network", str(session.path), "--json")
    assert shown.returncode == 0, shown.stderr
    report = json.loads(shown.stdout)
    (failed,) = report["requests"]
    assert failed["traced"] is False and failed["error"] == "ConnectionRefusedError"
    assert failed["url"].endswith("/x?token=[redacted]") and "@" not in failed["url"]
    assert (report["counted"], report["sampled"]) == (6, True)
    hosts = {h["host"].split(":")[0]: h for h in report["hosts"]}
    assert (hosts["localhost"]["count"], hosts["localhost"]["errors"]) == (3, 3)
    assert hosts["localhost"]["traced"] == 0
    assert "failing-host" in {f["type"] for f in report["findings"]}


def _assert_no_secret_in(folder: Path) -> None:
    for path in folder.rglob("*"):
        if path.is_file():
            data = path.read_bytes()
            for secret in SECRETS:
                assert secret.encode() not in data, f"{secret} in {path.name}"

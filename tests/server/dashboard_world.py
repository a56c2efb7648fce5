"""A project for the dashboard's tests, made the way production makes one: real apps run under
``hawkwatch run --profile`` (two releases), their sessions and iOS crash reports uploaded over
HTTP to the real app under uvicorn, then processed by the real pipeline.

Also: a loopback uvicorn serving an app with chosen settings, and an HTTP client that logs in
through the login form like a browser would.
"""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
import threading
import time
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path

import httpx
from sqlalchemy import Engine

from hawkwatch.server import admin
from hawkwatch.server.app import ServerSettings, create_app
from hawkwatch.server.pipeline import drain
from hawkwatch.store import list_sessions
from hawkwatch.uploader import upload_file, upload_session

HAWKWATCH = Path(sys.executable).with_name("hawkwatch")
FIXTURES = Path(__file__).resolve().parents[1] / "fixtures" / "crash"
EMAIL, PASSWORD = "dev@example.test", "correct horse battery"
SCRIPT_TITLE = '<script>alert("hawk")</script>'

# the in-process sampler, so that sessions have a flame graph
PROFILED = ["--profile", "-c", "profiler.rate_hz=100", "-c", "profiler.engine=in-process"]
APPS = {  # file → (source, release)
    "stall.py": ("""
import asyncio, time
import hawkwatch

def block_the_loop():
    time.sleep(0.8)

def price_the_cart():
    total, ends = 0, time.perf_counter() + 1.0
    while time.perf_counter() < ends:
        total += sum(i * i for i in range(500))
    return total

async def handler():
    await asyncio.sleep(0.3)
    hawkwatch.event("checkout started", {"cart": 3})
    block_the_loop()
    await asyncio.sleep(0.3)

price_the_cart()  # CPU for the profile, outside the loop: the one stall is block_the_loop's
asyncio.run(handler())
""", "1.0"),
    "clean.py": ("print('fine')\n", "1.0"),
    "segfault.py": ("import ctypes\nctypes.string_at(0)\n", "2.0"),
}  # fmt: skip


@contextmanager
def serving(engine: Engine, settings: ServerSettings) -> Iterator[str]:
    """The real ASGI app under uvicorn on a loopback port; yields its base URL."""
    import uvicorn

    config = uvicorn.Config(create_app(engine, settings), host="127.0.0.1", port=0,
                            log_level="warning", lifespan="off")  # fmt: skip
    server = uvicorn.Server(config)
    thread = threading.Thread(target=server.run, daemon=True)
    thread.start()
    deadline = time.monotonic() + 30
    while not server.started and time.monotonic() < deadline:
        time.sleep(0.01)
    port = server.servers[0].sockets[0].getsockname()[1]
    try:
        yield f"http://127.0.0.1:{port}"
    finally:
        server.should_exit = True
        thread.join(10)


def run_apps(home: Path) -> None:
    """Run each app under the agent with its release; their sessions land in ``home``."""
    env = {k: v for k, v in os.environ.items() if not k.startswith("HAWKWATCH_")}
    env["HAWKWATCH_HOME"] = str(home)
    for name, (source, release) in APPS.items():
        script = home / name
        script.write_text(source)
        subprocess.run([str(HAWKWATCH), "run", *PROFILED, "--", sys.executable, str(script)],
                       env={**env, "HAWKWATCH_APP_VERSION": release}, cwd=home,
                       capture_output=True, timeout=120)  # fmt: skip
    assert len(list_sessions(home / "sessions")) == len(APPS)


def crash_report(folder: Path, message: str = SCRIPT_TITLE, *, when: float | None = None,
                 name: str = "markup.ips") -> Path:  # fmt: skip
    """A real ``.ips`` (the null-dereference fixture) whose exception message is ``message`` and
    whose threads have no frames, so the grouping titles its issue with that message; ``when``
    moves its capture time."""
    head, _, body = (FIXTURES / "ips" / "nullderef.ips").read_text().partition("\n")
    header, document = json.loads(head), json.loads(body)
    document["exception"]["message"] = message
    for thread in document["threads"]:
        thread["frames"] = []
    if when is not None:
        stamp = time.strftime("%Y-%m-%d %H:%M:%S.00 +0000", time.gmtime(when))
        header["timestamp"] = document["captureTime"] = stamp
        header["incident_id"] = document["incident"] = f"{int(when)}-{name}"
    path = folder / name
    path.write_text(json.dumps(header) + "\n" + json.dumps(document))
    return path


def script_titled_crash(folder: Path) -> Path:
    return crash_report(folder)


def upload_all(url: str, key: str, home: Path | None, artifacts: list[Path]) -> None:
    for session in list_sessions(home / "sessions") if home is not None else []:
        (session.path / "upload.json").unlink(missing_ok=True)  # sent by an earlier test
        assert upload_session(session, url, key).status == 202
    for path in artifacts:
        assert upload_file(path, url, key).status == 202


@dataclass
class World:
    url: str
    engine: Engine
    project: str = "shop"


def seed(engine: Engine, url: str, home: Path | None, artifacts: list[Path],
         symbols_root: Path | None = None) -> World:  # fmt: skip
    """Project ``shop`` and user ``EMAIL`` with uploads processed by the pipeline."""
    key = admin.add_project(engine, "shop")
    admin.add_user(engine, EMAIL, PASSWORD)
    upload_all(url, key, home, artifacts)
    expected = (len(APPS) if home is not None else 0) + len(artifacts)
    assert drain(engine, symbols_root) == expected
    return World(url, engine)


def csrf_of(html: str) -> str:
    found = re.search(r'name="csrf_token" value="([^"]+)"', html)
    assert found is not None, html[:500]
    return found.group(1)


def login(client: httpx.Client, email: str = EMAIL, password: str = PASSWORD,
          next_: str = "/") -> httpx.Response:  # fmt: skip
    """Fetch the login form (its CSRF cookie and token) and post it, like a browser."""
    form = client.get("/login", params={"next": next_})
    assert form.status_code == 200
    return client.post("/login", data={"csrf_token": csrf_of(form.text), "email": email,
                                       "password": password, "next": next_})  # fmt: skip

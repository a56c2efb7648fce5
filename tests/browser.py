"""A real headless browser for tests of files meant to be opened in one (SVG, speedscope).

Pages are served from a loopback HTTP server (browsers refuse scripts that read ``file://``
neighbours) and loaded by Debian's ``chromium`` with ``--dump-dom``; ``--virtual-time-budget``
lets the page's scripts run to completion before the DOM is printed, with no sleeps.
``scripts/test.sh`` installs chromium and the ``speedscope`` npm package (for its viewer and
schema) when they are missing.
"""

from __future__ import annotations

import functools
import shutil
import subprocess
import sys
import threading
from collections.abc import Iterator
from contextlib import contextmanager
from http.server import SimpleHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
SPEEDSCOPE_RELEASE = ROOT / ".cache" / "npm" / "node_modules" / "speedscope" / "dist" / "release"
CHROMIUM_FLAGS = (
    "--headless",
    "--no-sandbox",
    "--disable-gpu",
    "--no-first-run",
    "--disable-background-networking",
    "--disable-component-update",
    "--disable-sync",
    "--disable-dev-shm-usage",
)


def chromium() -> str:
    """Path of chromium; outside Linux the test is skipped, on Linux a missing one fails."""
    found = shutil.which("chromium") or shutil.which("chromium-browser")
    if found:
        return found
    if not sys.platform.startswith("linux"):
        pytest.skip("needs Debian's chromium")
    pytest.fail("chromium is missing: run scripts/test.sh (or apt-get install -y chromium)")


def speedscope_release() -> Path:
    if (SPEEDSCOPE_RELEASE / "index.html").is_file():
        return SPEEDSCOPE_RELEASE
    if not sys.platform.startswith("linux"):
        pytest.skip("needs the speedscope npm package")
    pytest.fail(
        "the speedscope npm package is missing: run scripts/test.sh "
        "(npm install --prefix .cache/npm speedscope)"
    )


class _QuietHandler(SimpleHTTPRequestHandler):
    def log_message(self, format: str, *args: object) -> None:
        pass


@contextmanager
def serve(*folders: Path) -> Iterator[str]:
    """Serve the files of ``folders`` (the first one wins) on loopback; yields the base URL."""
    base = folders[0]
    for extra in folders[1:]:
        for item in extra.iterdir():
            target = base / item.name
            if not target.exists():
                target.symlink_to(item)
    handler = functools.partial(_QuietHandler, directory=str(base))
    server = ThreadingHTTPServer(("127.0.0.1", 0), handler)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    try:
        yield f"http://127.0.0.1:{server.server_address[1]}"
    finally:
        server.shutdown()
        server.server_close()


def dump_dom(url: str, profile_dir: Path, budget_ms: int = 8000) -> str:
    """The page's DOM after its scripts ran, as chromium prints it."""
    result = subprocess.run(
        [
            chromium(),
            *CHROMIUM_FLAGS,
            f"--user-data-dir={profile_dir}",
            f"--virtual-time-budget={budget_ms}",
            "--dump-dom",
            url,
        ],
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert result.returncode == 0, result.stderr[-2000:]
    return result.stdout

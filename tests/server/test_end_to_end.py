"""Apps under the agent and iOS crash reports → upload → pipeline → query API, on both databases.

Three real programs run under ``hawkwatch run`` (one stalls its asyncio loop, one ends cleanly,
one dies of SIGSEGV in C code through ctypes); their sessions and iOS reports (one built from
real arm64 binaries whose dSYMs are in the server's symbol store) are uploaded over HTTP, the
jobs run, and the query API must name each problem where it happened.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import urllib.error
import urllib.request
from pathlib import Path

import pytest
from sqlalchemy import Engine

from hawkwatch.server import admin
from hawkwatch.server.pipeline import drain
from hawkwatch.store import list_sessions
from hawkwatch.symbols.store import SymbolStore
from hawkwatch.uploader import already_sent, pending_sessions, upload_file, upload_session
from tests.server.conftest import LiveServer, row_counts
from tests.symbols.debug_files import Built, build
from tests.symbols.reports import ips

HAWKWATCH = Path(sys.executable).with_name("hawkwatch")
FIXTURES = Path(__file__).resolve().parents[1] / "fixtures" / "crash"

APPS = {
    "stall.py": """
import asyncio, time

def block_the_loop():
    time.sleep(0.8)

async def handler():
    await asyncio.sleep(0.3)
    block_the_loop()
    await asyncio.sleep(0.3)

asyncio.run(handler())
""",
    "clean.py": "print('fine')\n",
    "segfault.py": "import ctypes\nctypes.string_at(0)\n",
}


@pytest.fixture(scope="module")
def home(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A hawkwatch home holding the three apps' sessions (run once for both databases)."""
    home = tmp_path_factory.mktemp("home")
    env = {k: v for k, v in os.environ.items() if not k.startswith("HAWKWATCH_")}
    env["HAWKWATCH_HOME"] = str(home)
    for name, source in APPS.items():
        script = home / name
        script.write_text(source)
        subprocess.run([str(HAWKWATCH), "run", "--", sys.executable, str(script)], env=env,
                       cwd=home, capture_output=True, timeout=120)  # fmt: skip
    assert len(list_sessions(home / "sessions")) == 3
    return home


@pytest.fixture(scope="module")
def symbols(tmp_path_factory: pytest.TempPathFactory) -> tuple[Built, Path]:
    built = build(tmp_path_factory.mktemp("debug-files"))
    root = tmp_path_factory.mktemp("server-symbols")
    SymbolStore(root).add([built.app_dsym, built.lib_dsym])
    return built, root


def api(server: LiveServer, token: str, path: str) -> dict:
    request = urllib.request.Request(server.url + path,
                                     headers={"Authorization": f"Bearer {token}"})  # fmt: skip
    with urllib.request.urlopen(request, timeout=30) as response:
        return json.loads(response.read())  # type: ignore[no-any-return]


def test_problems_of_apps_and_ios_reports_become_issues(
    live_server: LiveServer, engine: Engine, home: Path, symbols: tuple[Built, Path],
    tmp_path: Path,
) -> None:  # fmt: skip
    built, symbols_root = symbols
    key = admin.add_project(engine, "shop")
    admin.add_user(engine, "dev@example.test", "correct horse")
    token = admin.add_token(engine, "dev@example.test")

    sessions = list_sessions(home / "sessions")
    for session in sessions:
        (session.path / "upload.json").unlink(missing_ok=True)  # the other database's run
    assert {s.name for s in pending_sessions(home / "sessions")} == {s.name for s in sessions}
    for session in sessions:
        assert upload_session(session, live_server.url, key).status == 202
    assert pending_sessions(home / "sessions") == []
    assert all(already_sent(s) for s in sessions)
    report = tmp_path / "symbolicate-me.ips"
    report.write_text(ips(built))
    for path in (report, FIXTURES / "ips" / "nullderef.ips"):
        assert upload_file(path, live_server.url, key).status == 202

    assert drain(engine, symbols_root) == 5
    assert row_counts(engine)["jobs"] == 5

    issues = api(live_server, token, "/api/v1/issues?project=shop")["issues"]
    by_kind: dict[str, list[dict]] = {}
    for issue in issues:
        by_kind.setdefault(issue["kind"], []).append(issue)
    (stall,) = by_kind["stall"]
    assert "block_the_loop" in stall["culprit"] and stall["count"] == 1
    (signal,) = by_kind["fatal-signal"]
    assert signal["title"] == "ended by SIGSEGV"
    crashes = {issue["culprit"] for issue in by_kind["crash"]}
    assert len(crashes) == 2
    assert any("crash_here" in (c or "") or "deep" in (c or "") for c in crashes), crashes

    listed = api(live_server, token, "/api/v1/sessions?project=shop")["sessions"]
    kinds = sorted(s["exit_kind"] for s in listed if not s["name"].endswith((".ips", ".tar")))
    assert kinds == ["clean", "clean", "fatal-signal"]
    stalled = next(s for s in listed if stall["id"] in s["issue_ids"])
    detail = api(live_server, token, f"/api/v1/sessions/{stalled['id']}")
    assert detail["format"] == "hawkwatch-report" and detail["stalls"]["count"] == 1

    one = api(live_server, token, f"/api/v1/issues/{signal['id']}")
    assert one["event"]["signal"] == 11 and len(one["occurrences"]) == 1
    releases = api(live_server, token, "/api/v1/releases?project=shop")["releases"]
    assert releases[0]["sessions"] == 3
    assert releases[0]["crash_free_rate"] == pytest.approx(2 / 3)
    assert releases[0]["stall_rate"] == pytest.approx(1 / 3)
    schema = api(live_server, token, "/api/v1/openapi.json")
    assert "/api/v1/issues" in schema["paths"]

    # the same snapshot again changes nothing; the pipeline ran each upload once
    for session in sessions:
        assert upload_session(session, live_server.url, key).duplicate
    assert drain(engine, symbols_root) == 0
    again = api(live_server, token, "/api/v1/issues?project=shop")["issues"]
    assert [(i["id"], i["count"]) for i in again] == [(i["id"], i["count"]) for i in issues]


def test_the_query_api_wants_a_token(live_server: LiveServer, engine: Engine) -> None:
    admin.add_project(engine, "shop")
    with pytest.raises(urllib.error.HTTPError) as refused:
        api(live_server, "nope", "/api/v1/issues?project=shop")
    with refused.value:
        assert refused.value.code == 401

"""The agent's uploader against a real collector: the running session is sent while the app
runs, earlier unsent sessions at the next start; a dead collector changes nothing for the app."""

from __future__ import annotations

import os
import socket
import subprocess
import sys
from pathlib import Path

from sqlalchemy import Engine, select

from hawkwatch.server import admin
from hawkwatch.server.schema import envelopes
from hawkwatch.store import list_sessions
from hawkwatch.uploader import already_sent
from tests.server.conftest import LiveServer

HAWKWATCH = Path(sys.executable).with_name("hawkwatch")
APP = "import time\nprint('working')\ntime.sleep(2.5)\n"


def run_app(home: Path, script: Path, **env: str) -> subprocess.CompletedProcess[str]:
    environment = {k: v for k, v in os.environ.items() if not k.startswith("HAWKWATCH_")}
    environment.update(HAWKWATCH_HOME=str(home), **env)
    home.mkdir(parents=True, exist_ok=True)
    return subprocess.run([str(HAWKWATCH), "run", "--", sys.executable, str(script)],
                          env=environment, cwd=home, capture_output=True, text=True,
                          timeout=120)  # fmt: skip


def test_sessions_go_up_while_running_and_at_the_next_start(
    live_server: LiveServer, engine: Engine, tmp_path: Path
) -> None:
    key = admin.add_project(engine, "shop")
    script = tmp_path / "app.py"
    script.write_text(APP)
    home = tmp_path / "home"
    offline = run_app(home, script)  # no collector configured: stays in the store
    assert offline.returncode == 0
    (earlier,) = list_sessions(home / "sessions")
    assert already_sent(earlier) is None

    online = run_app(home, script, HAWKWATCH_UPLOAD_URL=live_server.url,
                     HAWKWATCH_UPLOAD_KEY=key, HAWKWATCH_UPLOAD_INTERVAL_S="1")  # fmt: skip
    assert (online.returncode, online.stdout) == (0, "working\n"), online.stderr
    with engine.connect() as db:
        names = set(db.execute(select(envelopes.c.name)).scalars())
    sessions = list_sessions(home / "sessions")
    assert names == {s.name for s in sessions}  # the earlier one and the running one
    assert already_sent(earlier) == len(earlier.records().records)


def test_a_dead_collector_changes_nothing_for_the_app(tmp_path: Path) -> None:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        port = probe.getsockname()[1]
    script = tmp_path / "app.py"
    script.write_text(APP)
    result = run_app(tmp_path / "home", script, HAWKWATCH_UPLOAD_URL=f"http://127.0.0.1:{port}",
                     HAWKWATCH_UPLOAD_KEY="k", HAWKWATCH_UPLOAD_INTERVAL_S="1")  # fmt: skip
    assert (result.returncode, result.stdout) == (0, "working\n")
    assert result.stderr.count("upload") <= 1
    assert "Traceback" not in result.stderr


KILLED = "import os, signal, time\nprint('working', flush=True)\ntime.sleep(0.5)\n" \
    "os.kill(os.getpid(), signal.SIGKILL)\n"


def test_the_supervisor_uploads_a_killed_programs_final_session(
    live_server: LiveServer, engine: Engine, tmp_path: Path
) -> None:
    from hawkwatch.server.pipeline import drain
    from hawkwatch.server.schema import sessions as sessions_table

    key = admin.add_project(engine, "shop")
    script = tmp_path / "killed.py"
    script.write_text(KILLED)
    home = tmp_path / "home"
    # the in-process uploader's round would come after a minute: the program dies first
    result = run_app(home, script, HAWKWATCH_UPLOAD_URL=live_server.url,
                     HAWKWATCH_UPLOAD_KEY=key, HAWKWATCH_UPLOAD_INTERVAL_S="60")  # fmt: skip
    assert result.returncode == -9, result.stderr  # hawkwatch run leaves as the program did
    (session,) = list_sessions(home / "sessions")
    final = len(session.records().records)  # the supervisor's exit record included
    assert already_sent(session) == final
    with engine.connect() as db:
        ids = set(db.execute(select(envelopes.c.envelope_id)).scalars())
    assert f"{session.name}:{final}" in ids
    drain(engine)
    with engine.connect() as db:
        kinds = dict(db.execute(select(sessions_table.c.name, sessions_table.c.exit_kind)).all())
    assert kinds == {session.name: "killed"}


def test_an_unanswering_collector_leaves_the_session_for_the_next_start(
    live_server: LiveServer, engine: Engine, tmp_path: Path
) -> None:
    key = admin.add_project(engine, "shop")
    script = tmp_path / "killed.py"
    script.write_text(KILLED)
    home = tmp_path / "home"
    with socket.socket() as silent:  # accepts connections (the backlog) and never answers
        silent.bind(("127.0.0.1", 0))
        silent.listen(8)
        port = silent.getsockname()[1]
        result = run_app(home, script, HAWKWATCH_UPLOAD_URL=f"http://127.0.0.1:{port}",
                         HAWKWATCH_UPLOAD_KEY=key, HAWKWATCH_UPLOAD_INTERVAL_S="60",
                         HAWKWATCH_UPLOAD_EXIT_WAIT_S="0.5")  # fmt: skip
    assert result.returncode == -9 and "Traceback" not in result.stderr
    (session,) = list_sessions(home / "sessions")
    assert already_sent(session) is None  # not sent: still queued in the store
    sent = subprocess.run([str(HAWKWATCH), "upload", "--url", live_server.url, "--key", key],
                          env={**os.environ, "HAWKWATCH_HOME": str(home)},
                          capture_output=True, text=True, timeout=120)  # fmt: skip
    assert sent.returncode == 0, sent.stderr
    assert already_sent(session) == len(session.records().records)

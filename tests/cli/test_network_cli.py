"""``hawkwatch network`` in real subprocesses, on sessions written with the real store."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

from hawkwatch.model.records import NetworkTransaction, Phases
from hawkwatch.store import Session

HAWKWATCH = Path(sys.executable).with_name("hawkwatch")
T0 = 1_700_000_000.0


def run(*args: str, home: Path) -> subprocess.CompletedProcess[str]:
    return subprocess.run([str(HAWKWATCH), "network", *args], capture_output=True, text=True,
                          env={"HAWKWATCH_HOME": str(home), "PATH": "/usr/bin:/bin"},
                          timeout=60)  # fmt: skip


def session_with_requests(root: Path) -> Session:
    session = Session.create(root=root, start_time=T0)
    with session.open_store() as store:
        for i in range(3):
            record = NetworkTransaction(
                start=T0 + i, index=i + 1, method="GET", url="http://api.test/slow",
                host="api.test:80", library="requests", status=200, reused=i > 0,
                phases_ms=Phases(queue=0.1, dns=1.0 if i == 0 else None, send=0.1,
                                 ttfb=1500.0, receive=1.0, total=1502.2),
            ).to_record()  # fmt: skip
            store.store(record.collection, record.key, record.value)
    return session


def test_json_to_a_file_and_console_to_stdout(tmp_path: Path) -> None:
    home = tmp_path / "home"
    session = session_with_requests(home / "sessions")
    out = tmp_path / "net.json"
    written = run(session.name, "--json", "-o", str(out), home=home)
    assert written.returncode == 0, written.stderr
    assert written.stdout == "" and "wrote 3 requests" in written.stderr
    report = json.loads(out.read_text())
    assert [r["phases_ms"]["ttfb"] for r in report["requests"]] == [1500.0] * 3
    assert sorted(f["type"] for f in report["findings"]).count("slow-request") == 3
    console = run(home=home)  # the newest session
    assert console.returncode == 0
    assert "mostly ttfb (1500 ms)" in console.stdout


def test_a_missing_session_is_one_line_and_a_non_zero_exit(tmp_path: Path) -> None:
    result = run(str(tmp_path / "nope"), home=tmp_path / "home")
    assert result.returncode != 0
    assert result.stderr.count("\n") == 1 and "nope" in result.stderr
    assert "Traceback" not in result.stderr

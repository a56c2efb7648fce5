"""Crash records end to end: recrash safety, memory levels, faulthandler coexistence, views."""

from __future__ import annotations

import json
import signal
import subprocess
import sys
import time

from hawkwatch.model.records import MemoryLevel, decode_all
from tests.e2e.conftest import Runner
from tests.e2e.test_crash_exits import (
    NEXT,
    SEGV,
    START,
    _memory_cgroup,
    classification,
    crashes,
    run_unsupervised,
)

# -- recrash -----------------------------------------------------------------------------------


def test_a_crash_while_building_the_record_still_leaves_one(runner: Runner) -> None:
    source = (
        START
        + """
import hawkwatch.agent.plugins.crash as crash_plugin
def broken(*args, **kwargs):
    raise MemoryError("while building the crash record")
crash_plugin.build_crash = broken
raise ConnectionError("upstream closed")
"""
    )
    done, session = run_unsupervised(runner, source)
    assert done.returncode == 1
    (crash,) = crashes(session)
    assert (crash.type, crash.message, crash.truncated) == (
        "ConnectionError",
        "upstream closed",
        True,
    )


def test_a_reader_that_crashes_leaves_the_fault_dump_readable(runner: Runner) -> None:
    app = runner.script("app.py", START + SEGV)
    assert runner.python(str(app)).returncode == -signal.SIGSEGV
    recrash = runner.script(
        "recrash.py",
        "import ctypes\nimport hawkwatch.agent.crash_recovery as r\n"
        "r.parse_fault_dump = lambda *a, **k: ctypes.string_at(0)\n" + NEXT,
    )
    assert runner.python(str(recrash)).returncode == -signal.SIGSEGV  # the reader crashed
    crashed = runner.sessions()[0]
    dump = (crashed.path / "crash-fault.txt.claimed").read_text()
    assert "Fatal Python error: Segmentation fault" in dump
    assert "read_null" in dump


# -- memory levels -----------------------------------------------------------------------------


def test_memory_levels_in_a_memory_cgroup(runner: Runner) -> None:
    folder, procs = _memory_cgroup(256 * 1024 * 1024)
    try:
        source = (
            START
            + """
import os, time
hog = bytearray(150 * 1024 * 1024)
from hawkwatch.agent import current_agent
folder = str(current_agent().session.path)
deadline = time.monotonic() + 60
while not os.path.exists(os.path.join(folder, "memory-level.json")):
    assert time.monotonic() < deadline
    time.sleep(0.05)
"""
        )
        app = runner.script("app.py", source)
        argv = ["sh", "-c", f'echo $$ > "{procs}" && exec "$@"', "sh", sys.executable, str(app)]
        done = subprocess.run(
            argv, cwd=runner.cwd, env=runner.env(), capture_output=True, text=True, timeout=120
        )
        assert done.returncode == 0, done.stderr
        levels = decode_all(runner.only_session().records().records).of(MemoryLevel)
        assert levels
        assert levels[-1].level == 50  # 150 MB + the interpreter over 256 MB: 50–75 %
        assert levels[-1].limit_mb == 256.0
        assert levels[-1].limit_source.startswith("cgroup")
    finally:
        for _ in range(50):
            try:
                folder.rmdir()
                break
            except OSError:
                time.sleep(0.1)


# -- views ---------------------------------------------------------------------------------------


def test_report_sessions_and_crashes_views(runner: Runner) -> None:
    bug = (
        "import hawkwatch\n"
        "def charge(amount):\n"
        "    raise ValueError(f'card declined for {amount}')\n"
        "charge(AMOUNT)\n"
    )
    for amount in (10, 25):  # the same bug twice, different messages: one group
        assert (
            runner.hawkwatch(
                "run", "--", str(runner.script("app.py", bug.replace("AMOUNT", str(amount))))
            ).returncode
            == 1
        )
    assert runner.hawkwatch("run", "--", str(runner.script("segv.py", SEGV))).returncode == -11
    first = runner.sessions()[0]

    report = json.loads(runner.hawkwatch("report", "--json", str(first.path)).stdout)
    assert report["exit"]["kind"] == "exception"
    assert report["exit"]["exit_code"] == 1
    assert report["exit"]["source"] == "supervisor"
    assert report["exit"]["evidence"][0] == "hawkwatch run saw exit status 1 (exit code 1)"
    (crash,) = report["crashes"]
    assert {k: crash[k] for k in ("kind", "fatal", "type", "message", "thread")} == {
        "kind": "exception",
        "fatal": True,
        "type": "ValueError",
        "message": "card declined for 10",
        "thread": "MainThread",
    }
    assert [f["function"] for f in crash["frames"]] == ["charge", "<module>"]
    assert set(crash["frames"][0]) >= {"function", "file", "line"}
    assert isinstance(crash["threads"], list) and isinstance(crash["breadcrumbs"], list)

    console = runner.hawkwatch("report", str(first.path)).stdout
    assert "fatal ValueError: card declined for 10" in console
    assert "raise ValueError(f'card declined for {amount}')" in console  # the source line
    assert "Exit: exception" in console

    rows = json.loads(runner.hawkwatch("sessions", "--json").stdout)["sessions"]
    assert [row["exit"] for row in rows] == ["exception", "exception", "fatal-signal"]

    grouped = json.loads(runner.hawkwatch("crashes", "--json", str(runner.root)).stdout)
    assert [(g["count"], g["title"]) for g in grouped["groups"]] == [
        (2, "ValueError in app.py charge"),
        (1, "SIGSEGV in segv.py read_null"),
    ]
    assert grouped["groups"][0]["fingerprint"] == crash["fingerprint"]  # the same code path


def test_the_apps_own_faulthandler_is_left_alone(runner: Runner) -> None:
    source = "import faulthandler, sys\nfaulthandler.enable(sys.stderr)\n" + START + SEGV
    app = runner.script("app.py", source)
    done = runner.python(str(app))
    assert done.returncode == -signal.SIGSEGV
    assert "Fatal Python error: Segmentation fault" in done.stderr  # the app's file got it
    session = runner.only_session()
    assert not (session.path / "crash-fault.txt").exists()
    assert "enabled by the app" in session.metadata["crash"]["faulthandler"]
    runner.python(str(runner.script("next.py", NEXT)))
    verdict = classification(session)
    assert verdict.kind == "unknown"  # no dump of ours: a crash cannot be told from a kill
    assert "faulthandler belonged to the app" in verdict.evidence[0]

"""``hawkwatch report`` in real subprocesses, on sessions written with the real store."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from hawkwatch.model import collections as c
from hawkwatch.store import Session
from tests.builders import (
    event_record,
    exit_state_record,
    hawkwatch_launch_record,
    series_records,
    span_record,
)

T0 = 1_700_000_000.0
HAWKWATCH = Path(sys.executable).with_name("hawkwatch")
IOS_START = 1554251562.052403


@pytest.fixture
def home(tmp_path):
    """A HAWKWATCH_HOME of its own, so the user's sessions are never read."""
    folder = tmp_path / "home"
    folder.mkdir()
    return folder


def hawkwatch(home: Path, *args: str, module: bool = False) -> subprocess.CompletedProcess[str]:
    command = [sys.executable, "-m", "hawkwatch"] if module else [str(HAWKWATCH)]
    env = {k: v for k, v in os.environ.items() if not k.startswith("HAWKWATCH_")}
    env["HAWKWATCH_HOME"] = str(home)
    return subprocess.run(
        [*command, *args],
        capture_output=True,
        text=True,
        encoding="utf-8",
        env=env,
        cwd=home,
        timeout=120,
    )


def make_session(root: Path, start: float = T0, app_name: str = "shop") -> Session:
    session = Session.create(root=root, app_name=app_name, start_time=start)
    records = [
        hawkwatch_launch_record(
            process_start=start, main_started=start + 0.1, ready=start + 0.5, duration_s=0.5
        ),
        *series_records(c.CPU, (start, 10), (start + 1, 20), (start + 3, 50)),
        *series_records(c.RESIDENT_FOOTPRINT, (start + 0.5, 64)),
        event_record(start + 0.01, "App::Start"),
        event_record(start + 0.5, "App::Ready"),
        span_record(start + 1, "checkout", 120.0),
        event_record(start + 4, "App::Exit", '{"exit_code": 0}'),
        exit_state_record(start + 4, clean=True, exit_code=0),
    ]
    with session.open_store() as store:
        for record in records:
            store.store(*record)
    return session


def write_mthawkeye_folder(folder: Path, *extra_lines: bytes) -> Path:
    """An MTHawkeye session as copied from an iPhone: ``records.mtlog`` only, no session.json."""
    launch = {
        "appLaunchTime": IOS_START,
        "firstObjcLoadStartTime": IOS_START + 0.2,
        "lastObjcLoadEndTime": IOS_START + 0.25,
        "staticInitializerStartTime": IOS_START + 0.26,
        "staticInitializerEndTime": IOS_START + 0.3,
        "applicationInitTime": IOS_START + 0.41,
        "appDidLaunchEnterTime": IOS_START + 0.45,
        "appDidLaunchExitTime": IOS_START + 0.9,
    }
    lines = [
        b"collection,key,value",
        f"launch-time,{IOS_START},{IOS_START}".encode(),
        b"app-launch,0," + json.dumps(launch, separators=(",", ":")).encode(),
        b"r-mem,1554251563.1,120.50",
        b"cpu,1554251563.1,45.2",
        b"fps,1554251563.1,58",
        b"r-mem,1554251563.6,130.25",
        b"fps,1554251564.1,60",
        b'custom-time-event,1554251564.000000,{"time":1554251564.0,"event":"App::DidBecomeActive"}',
        b'anr,1554251565_0,{"duration":500,"startFrom":1554251565,"inBackground":false,'
        b'"stacks":[]}',
        *extra_lines,
    ]
    folder.mkdir(parents=True)
    (folder / "records.mtlog").write_bytes(b"".join(line + b"\n" for line in lines))
    return folder


def test_json_report_of_a_session_path(home, tmp_path):
    session = make_session(tmp_path / "sessions")

    result = hawkwatch(home, "report", "--json", str(session.path))

    assert result.returncode == 0, result.stderr
    assert result.stderr == ""
    data = json.loads(result.stdout)
    assert data["format"] == "hawkwatch-report"
    assert data["session"]["name"] == session.name
    assert data["session"]["app_name"] == "shop"
    assert data["session"]["source"] == "hawkwatch"
    assert data["session"]["duration_s"] == pytest.approx(4.0)
    assert data["launch"]["duration_ms"] == pytest.approx(500.0)
    assert [p["label"] for p in data["launch"]["phases"]] == [
        "process start",
        "main started",
        "ready",
    ]
    cpu = next(s for s in data["resources"] if s["collection"] == "cpu")
    assert (cpu["count"], cpu["min"], cpu["max"]) == (3, 10.0, 50.0)
    assert cpu["mean"] == pytest.approx(25.0)  # time-weighted, the session ends at T0 + 4
    assert [e["name"] for e in data["events"]] == ["App::Start", "App::Ready", "App::Exit"]
    assert data["spans"]["groups"][0]["name"] == "checkout"
    assert data["exit"]["clean"] is True
    assert data["findings"] == []


def test_python_dash_m_reports_the_newest_session_under_the_home(home):
    make_session(home / "sessions", start=T0, app_name="older")
    newest = make_session(home / "sessions", start=T0 + 3600, app_name="newer")

    result = hawkwatch(home, "report", "--json", module=True)

    assert result.returncode == 0, result.stderr
    data = json.loads(result.stdout)
    assert data["session"]["name"] == newest.name
    assert data["session"]["app_name"] == "newer"


def test_a_session_name_under_root_and_the_console_format(home, tmp_path):
    session = make_session(tmp_path / "elsewhere")

    result = hawkwatch(home, "report", "--root", str(tmp_path / "elsewhere"), session.name)

    assert result.returncode == 0, result.stderr
    assert f"hawkwatch report · {session.name}" in result.stdout
    assert "Launch · 500.0 ms from process start to ready" in result.stdout
    assert "\x1b[" not in result.stdout  # not a terminal: no colour codes


def test_an_mthawkeye_folder_from_ios(home, tmp_path):
    folder = write_mthawkeye_folder(tmp_path / "2019-04-03_08-32-42+052")

    result = hawkwatch(home, "report", "--json", str(folder))

    assert result.returncode == 0, result.stderr
    data = json.loads(result.stdout)
    assert data["session"]["source"] == "mthawkeye"
    assert data["session"]["start_time"] == IOS_START
    assert data["launch"]["layout"] == "mthawkeye"
    assert data["launch"]["duration_ms"] == pytest.approx(900.0, abs=0.01)
    assert len(data["launch"]["phases"]) == 8
    series = {s["collection"]: s for s in data["resources"]}
    assert list(series) == ["r-mem", "cpu", "fps"]
    assert (series["r-mem"]["min"], series["r-mem"]["max"]) == (120.5, 130.25)
    assert series["fps"]["unit"] == "fps"
    assert [e["name"] for e in data["events"]] == ["App::DidBecomeActive"]
    assert data["other_collections"] == []
    assert (data["stalls"]["count"], data["stalls"]["max_ms"]) == (1, 500)
    console = hawkwatch(home, "report", str(folder))
    assert console.returncode == 0, console.stderr
    assert "MTHawkeye session" in console.stdout
    assert "didFinishLaunching end" in console.stdout


def test_unreadable_lines_and_values_are_reported_on_stderr(home, tmp_path):
    folder = write_mthawkeye_folder(
        tmp_path / "ios", b"not a record", b"cpu,1554251565.0,busy", b"r-mem,\xff\xfe,1"
    )

    result = hawkwatch(home, "report", "--json", str(folder))

    assert result.returncode == 0, result.stderr
    assert json.loads(result.stdout)["skipped_lines"] == 2
    (line,) = result.stderr.splitlines()
    assert line == (
        f"hawkwatch: {folder}: skipped 2 unreadable lines (first: line 11, not a "
        "collection,key,value record); left out 1 record whose values could not be used "
        "(see 'Skipped records' in the report)"
    )


def test_no_session_at_all_is_one_line_and_exit_code_2(home):
    result = hawkwatch(home, "report")

    assert result.returncode == 2
    assert result.stdout == ""
    assert result.stderr == (
        f"hawkwatch: no sessions under {home / 'sessions'}; run your app with "
        "'hawkwatch run -- python app.py' first\n"
    )


@pytest.mark.parametrize("given", ["no-such-session", "/no/such/folder"])
def test_a_missing_session_is_one_line_and_exit_code_2(home, given):
    result = hawkwatch(home, "report", given)

    assert result.returncode == 2
    assert "Traceback" not in result.stderr
    (line,) = result.stderr.splitlines()
    assert line.startswith(f"hawkwatch: {given}: no such session folder")


def test_a_folder_that_is_not_a_session(home, tmp_path):
    result = hawkwatch(home, "report", str(tmp_path))

    assert result.returncode == 2
    (line,) = result.stderr.splitlines()
    assert line.startswith(f"hawkwatch: {tmp_path}: not a session folder")


def test_a_garbage_session_json_is_reported_not_ignored(home, tmp_path):
    session = make_session(tmp_path / "sessions")
    (session.path / "session.json").write_bytes(b"\x00\x17garbage{")

    result = hawkwatch(home, "report", "--json", str(session.path))

    assert result.returncode == 0, result.stderr
    assert json.loads(result.stdout)["session"]["name"] == session.name  # the records still count
    (line,) = result.stderr.splitlines()
    assert line.startswith(f"hawkwatch: {session.path}: session.json is not valid JSON (")
    assert line.endswith("the run's details are unknown")

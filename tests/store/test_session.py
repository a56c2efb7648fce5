"""Session folders: names, session.json, retention, previous/latest, MTHawkeye folders."""

from __future__ import annotations

import json
import os
import platform
import socket
import subprocess
import sys
import time
from pathlib import Path

import psutil
import pytest

import hawkwatch
from hawkwatch.errors import NotASessionError
from hawkwatch.model import Record
from hawkwatch.store import (
    Session,
    apply_retention,
    format_session_name,
    latest_session,
    list_sessions,
    parse_session_name,
    sessions_root,
)
from hawkwatch.store._process import process_start_time
from hawkwatch.store.session import _metadata
from tests.builders import write_hawkeye_records

DAY = 86_400.0


@pytest.fixture
def home(tmp_path, monkeypatch) -> Path:
    """A private ``HAWKWATCH_HOME``; sessions go to ``<home>/sessions``."""
    monkeypatch.setenv("HAWKWATCH_HOME", str(tmp_path / "home"))
    return tmp_path / "home"


def local(*fields: int) -> float:
    """Unix time of a local date and time (year, month, day, hour, minute, second)."""
    return time.mktime((*fields, 0, 0, -1))


def make_session_dir(root: Path, start: float, **metadata: object) -> Path:
    folder = root / format_session_name(start)
    folder.mkdir(parents=True)
    if metadata:
        (folder / "session.json").write_text(json.dumps(metadata))
    return folder


# -- names -----------------------------------------------------------------------------------


def test_names_are_the_local_start_time_with_milliseconds():
    start = local(2019, 4, 3, 8, 32, 42) + 0.052
    assert format_session_name(start) == "2019-04-03_08-32-42+052"
    assert parse_session_name("2019-04-03_08-32-42+052") == pytest.approx(start, abs=1e-6)
    assert parse_session_name("2019-04-03_08:32:42+052") == pytest.approx(start, abs=1e-6)


def test_a_start_time_just_below_a_whole_second_rounds_up():
    assert format_session_name(local(2024, 12, 31, 23, 59, 59) + 0.9996) == (
        "2025-01-01_00-00-00+000"
    )


@pytest.mark.parametrize(
    "name",
    ["preferences", "2019-04-03_08-32-42", "2019-04-03 08-32-42+052", "x2019-04-03_08-32-42+052"],
)
def test_other_names_are_not_session_names(name):
    assert parse_session_name(name) is None


def test_sessions_created_in_the_same_millisecond_get_distinct_parseable_names(home):
    start = time.time()
    sessions = [Session.create(start_time=start) for _ in range(3)]
    names = [s.name for s in sessions]
    assert len(set(names)) == 3
    stamps = [parse_session_name(n) for n in names]
    assert stamps[0] == pytest.approx(start, abs=0.001)
    assert stamps[1] == pytest.approx(stamps[0] + 0.001, abs=1e-6)
    assert stamps[2] == pytest.approx(stamps[0] + 0.002, abs=1e-6)
    assert [s.start_time for s in sessions] == [start] * 3


# -- session.json ----------------------------------------------------------------------------


def test_session_json_describes_the_process(home):
    start = time.time() - 1.5
    session = Session.create(
        start_time=start, app_name="shop", app_version="2.1.0", extra={"command": "run"}
    )
    assert session.path.parent == home / "sessions"
    assert session.is_hawkwatch
    meta = json.loads((session.path / "session.json").read_text())
    assert meta == session.metadata
    assert meta["format"] == "hawkwatch-session"
    assert meta["hawkwatch_version"] == hawkwatch.__version__
    assert meta["pid"] == os.getpid()
    assert meta["argv"] == sys.argv
    assert meta["executable"] == sys.executable
    assert meta["python_version"] == platform.python_version()
    assert meta["hostname"] == socket.gethostname()
    system = os.uname()  # not platform.platform(): that starts a `uname -p` child process
    assert meta["platform"] == f"{system.sysname}-{system.release}-{system.machine}"
    assert meta["python_implementation"] == platform.python_implementation()
    assert meta["start_time"] == start
    assert (meta["app_name"], meta["app_version"]) == ("shop", "2.1.0")
    assert meta["command"] == "run"
    assert [p.name for p in session.path.iterdir()] == ["session.json"]  # no temporary left


def test_the_default_start_time_is_the_process_start(home):
    session = Session.create()
    # psutil counts from a boot time in whole seconds, so it may be up to a second early.
    started = psutil.Process().create_time()
    assert started - 0.01 <= session.start_time <= started + 1.01
    assert session.start_time < time.time()
    assert parse_session_name(session.name) == pytest.approx(session.start_time, abs=0.001)


def test_a_store_opened_on_a_session_writes_its_launch_time(home):
    session = Session.create(start_time=1_700_000_000.5)
    with session.open_store() as store:
        store.store("cpu", "1700000001.0", "3.5")
    assert session.records().records == [
        Record("launch-time", "1700000000.5", "1700000000.5"),
        Record("cpu", "1700000001.0", "3.5"),
    ]
    assert Session.open(session.path) == session
    assert session.size_bytes() > 153_600


# -- roots, listing, previous ----------------------------------------------------------------


def test_sessions_root_follows_hawkwatch_home_and_an_explicit_root_wins(home, tmp_path):
    assert sessions_root() == home / "sessions"
    assert sessions_root(tmp_path / "elsewhere") == tmp_path / "elsewhere"


def test_sessions_root_defaults_to_dot_hawkwatch_in_the_home_folder(tmp_path, monkeypatch):
    monkeypatch.delenv("HAWKWATCH_HOME", raising=False)
    monkeypatch.setenv("HOME", str(tmp_path))
    assert sessions_root() == tmp_path / ".hawkwatch" / "sessions"


def test_listing_latest_and_previous(home):
    root = home / "sessions"
    now = time.time()
    older = make_session_dir(root, now - 300)
    middle = make_session_dir(root, now - 200)
    (root / "preferences").write_bytes(b"bplist00")
    (root / "not-a-session").mkdir()
    (root / format_session_name(now - 150)).write_text("a file with a session-like name")
    newest = make_session_dir(root, now - 100)

    assert [s.path for s in list_sessions()] == [older, middle, newest]
    assert latest_session() == Session(newest)
    assert latest_session(root) == Session(newest)
    assert Session(newest).previous() == Session(middle)
    assert Session(middle).previous() == Session(older)
    assert Session(older).previous() is None


def test_no_sessions_yet(home):
    assert list_sessions() == []
    assert latest_session() is None


# -- retention -------------------------------------------------------------------------------


def test_retention_keeps_the_newest_and_leaves_other_entries_alone(tmp_path):
    now = time.time()
    folders = [make_session_dir(tmp_path, now - 60 * (12 - i)) for i in range(12)]
    (tmp_path / "preferences").write_bytes(b"bplist00")
    (tmp_path / "exports").mkdir()
    (tmp_path / "exports" / "report.json").write_text("{}")

    removed = apply_retention(tmp_path, keep=10, now=now)

    assert sorted(removed) == folders[:2]
    assert [s.path for s in list_sessions(tmp_path)] == folders[2:]
    assert (tmp_path / "preferences").read_bytes() == b"bplist00"
    assert (tmp_path / "exports" / "report.json").exists()


def test_retention_drops_sessions_older_than_the_maximum_age_by_name(tmp_path):
    now = time.time()
    too_old = make_session_dir(tmp_path, now - 8 * DAY)
    recent = make_session_dir(tmp_path, now - 6 * DAY)
    os.utime(too_old, (now, now))  # file times do not matter, the name does
    assert apply_retention(tmp_path, keep=10, max_age_days=7, now=now) == [too_old]
    assert [s.path for s in list_sessions(tmp_path)] == [recent]


def test_retention_never_removes_the_session_of_a_live_process(tmp_path):
    now = time.time()
    with subprocess.Popen(
        [sys.executable, "-c", "import sys; sys.stdin.read()"], stdin=subprocess.PIPE
    ) as child:
        try:
            # What Session.create writes for a process (psutil's create_time may be 1 s off).
            started = process_start_time(child.pid)
            alive = make_session_dir(tmp_path, now - 30 * DAY, pid=child.pid, start_time=started)
            # Same pid, another start time: the pid was reused, that session's process is gone.
            reused = make_session_dir(
                tmp_path, now - 29 * DAY, pid=child.pid, start_time=started - 3600
            )
            assert apply_retention(tmp_path, keep=10, now=now) == [reused]
            assert alive.exists()
        finally:
            child.stdin.close()
            child.wait()
    assert apply_retention(tmp_path, keep=10, now=now) == [alive]


def test_creating_a_session_applies_retention(home):
    now = time.time()
    root = home / "sessions"
    old = [make_session_dir(root, now - 60 * (5 - i)) for i in range(4)]
    ancient = make_session_dir(root, now - 30 * DAY)
    session = Session.create(start_time=now, keep=3)
    assert [s.path for s in list_sessions()] == [old[2], old[3], session.path]
    assert not ancient.exists()


def test_creating_a_session_never_removes_the_new_session_itself(home):
    now = time.time()
    newer = [make_session_dir(home / "sessions", now - 60 * i) for i in range(3)]
    session = Session.create(start_time=now - 40 * DAY, keep=3)  # too old and 4th newest
    assert [s.path for s in list_sessions()] == [session.path, *reversed(newer)]


# -- MTHawkeye folders and other paths -------------------------------------------------------


def test_an_mthawkeye_folder_opens_as_a_session(tmp_path):
    folder = write_hawkeye_records(
        tmp_path / "com.meitu.hawkeye" / "2019-04-03_08-32-42+052",
        flushed=["collection,key,value", "launch-time,1554251562.052,1554251562.052"],
        unflushed=["cpu,1554251563.0,12.5"],
    )
    session = Session.open(folder)
    assert not session.is_hawkwatch
    assert session.metadata == {}
    assert session.start_time == pytest.approx(local(2019, 4, 3, 8, 32, 42) + 0.052)
    assert session.records().records == [
        Record("launch-time", "1554251562.052", "1554251562.052"),
        Record("cpu", "1554251563.0", "12.5"),
    ]
    assert list_sessions(folder.parent) == [session]


def test_an_mthawkeye_folder_with_only_an_mtlog_opens(tmp_path):
    folder = tmp_path / "2019-04-03_08:32:42+052"
    folder.mkdir()
    (folder / "records.mtlog").write_bytes(b"cpu,1,2\n")
    assert Session.open(folder).records().records == [Record("cpu", "1", "2")]


def test_a_folder_that_is_not_a_session_is_refused_with_the_way_out(tmp_path):
    (tmp_path / "notes.txt").write_text("hello")
    with pytest.raises(NotASessionError, match=r"not a session folder.*hawkwatch sessions"):
        Session.open(tmp_path)
    with pytest.raises(NotASessionError, match="no such session folder"):
        Session.open(tmp_path / "missing")
    with pytest.raises(NotASessionError):
        Session.open(tmp_path / "notes.txt")
    assert NotASessionError.exit_code == 2


@pytest.mark.parametrize("pid", [2**31, 10**30, -1, 0, True, "12"])
def test_retention_ignores_a_pid_no_process_can_have(tmp_path, pid):
    # A damaged session.json must not stop every new session from being created.
    old = Session.create(root=tmp_path, start_time=1_000.0, keep=10)
    old.write_metadata({**old.metadata, "pid": pid})
    Session.create(root=tmp_path, keep=1)
    assert not old.path.exists()


# -- the agent's start: str paths, session.json without json, names without re -----------------


def test_session_json_is_what_json_dumps_wrote(home):
    """``session.json`` comes from ``plain_records.json_text``: the bytes ``json.dumps(...,
    indent=2, default=str)`` wrote before, whatever the values (non-ASCII, nested, odd types)."""
    extra = {
        "parent_session": None,
        "supervised": True,
        "config_file": "/tmp/é/hawkwatch.toml",
        "nested": {"a": [1, 2.5, float("inf")], "b": (), 3: {}, "path": Path("/x")},
    }
    session = Session.create(start_time=1_700_000_000.25, app_name="ünï\u2028", extra=extra)
    written = (session.path / "session.json").read_bytes()
    expected = _metadata(1_700_000_000.25, "ünï\u2028", None) | extra
    assert written == json.dumps(expected, indent=2, default=str).encode("utf-8")
    metadata = json.loads(written)
    session.update_metadata("cpu", {"cores": 2})
    metadata["cpu"] = {"cores": 2}
    assert (session.path / "session.json").read_bytes() == json.dumps(
        metadata, indent=2, default=str
    ).encode("utf-8")


def test_metadata_a_session_wrote_reads_back_as_json_would_and_a_changed_file_is_read(home):
    session = Session.create(start_time=1_700_000_000.5, extra={"k": (1, "é"), 7: Path("/p")})
    path = session.path / "session.json"
    assert session.metadata == json.loads(path.read_text())
    assert session.metadata is not session.metadata  # a fresh copy each time: callers change it
    session.metadata["k"].append("changed")
    assert session.metadata["k"] == [1, "é"]
    assert Session(session.path).metadata == session.metadata  # read from disk: the same
    # someone else rewrites the file (a new inode): this object reads it again
    other = json.loads(path.read_text()) | {"app_name": "theirs"}
    replacement = path.with_name("elsewhere.json")
    replacement.write_text(json.dumps(other))
    os.replace(replacement, path)
    assert session.metadata["app_name"] == "theirs"
    session.update_metadata("cpu", 1)
    assert json.loads(path.read_text()) == other | {"cpu": 1}


def test_a_session_made_from_a_str_or_a_path_names_the_same_folder(tmp_path):
    for text in ["a//b/./c/", "/x/y", "//x/y", "rel", "./rel/", "/"]:
        by_path, by_text = Session(Path(text)), Session(text)
        assert by_text.folder == by_path.folder == str(Path(text))
        assert by_text.path == by_path.path == Path(text)
        assert by_text.name == Path(text).name
        assert by_text == by_path and hash(by_text) == hash(by_path)
        assert repr(by_text) == f"Session({str(Path(text))!r})"


@pytest.mark.parametrize(
    "name",
    [
        "2019-04-03_08-32-42+052",
        "2019-04-03_08:32:42+052",
        "2019-04-03_08-32:42+052\n",
        "2019-04-03_08-32-42+052\n\n",
        "٢٠١٩-04-03_08-32-42+052",  # Arabic-Indic digits: \d matches them
        "2019-04-03_08-32-42+05²",  # superscript two: a digit, not a decimal
        "2019-04-03_08-32-42+0521",
        "2019-04-03T08-32-42+052",
        "2019-04-03_08-32-42-052",
        "",
    ],
)
def test_session_names_are_read_as_the_pattern_reads_them(name):
    import re

    pattern = re.compile(r"^(\d{4})-(\d\d)-(\d\d)_(\d\d)[-:](\d\d)[-:](\d\d)\+(\d{3})$")
    match = pattern.match(name)
    if match is None:
        assert parse_session_name(name) is None
    else:
        fields = [int(g) for g in match.groups()]
        expected = time.mktime((*fields[:6], 0, 0, -1)) + fields[6] / 1000
        assert parse_session_name(name) == expected


def test_a_sessions_root_given_as_text_is_the_path_it_was(tmp_path, monkeypatch):
    monkeypatch.setenv("HOME", str(tmp_path / "me"))
    for root in ["~", "~/s//x/", "a/./b", str(tmp_path) + "//s/"]:
        assert sessions_root(root) == Path(root).expanduser()
    monkeypatch.setenv("HAWKWATCH_HOME", str(tmp_path / "h") + "//")
    assert str(sessions_root()) == str(tmp_path / "h" / "sessions")

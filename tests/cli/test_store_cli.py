"""``hawkwatch sessions`` and ``hawkwatch records`` run as real processes, both entry points."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import time
from pathlib import Path

import pytest

from hawkwatch.store import RecordStore, Session
from tests.builders import write_hawkeye_records

HAWKWATCH_SCRIPT = Path(sys.executable).parent / "hawkwatch"
ENTRY_POINTS = {
    "python -m hawkwatch": [sys.executable, "-m", "hawkwatch"],
    "hawkwatch": [str(HAWKWATCH_SCRIPT)],
}

RECORDS = [
    ("cpu", "1700000001.0", "12.5"),
    ("custom-span", "1700000001.5", '{"name":"load, then parse","duration_ms":3.25}'),
    ("custom-time-event", "1700000002.0", "multi\nline\r\nvalue é"),
    ("cpu", "1700000002.5", "13.0"),
]


@pytest.fixture(params=list(ENTRY_POINTS), ids=list(ENTRY_POINTS))
def hawkwatch(request, tmp_path):
    """Run the CLI through one entry point, with a private HAWKWATCH_HOME."""
    assert HAWKWATCH_SCRIPT.exists(), "install the package (pip install -e .) in this venv"
    env = {**os.environ, "HAWKWATCH_HOME": str(tmp_path / "home")}

    def run(*args: str) -> subprocess.CompletedProcess[str]:
        return subprocess.run(
            [*ENTRY_POINTS[request.param], *args],
            capture_output=True,
            text=True,
            env=env,
            timeout=60,
        )

    return run


def records_of(text: str) -> list[dict[str, object]]:
    document = json.loads(text)
    assert (document["format"], document["format_version"]) == ("hawkwatch-records", 1)
    return document["records"]


def sessions_of(text: str) -> list[dict[str, object]]:
    document = json.loads(text)
    assert (document["format"], document["format_version"]) == ("hawkwatch-sessions", 1)
    return document["sessions"]


def make_session(root: Path, start: float, records=RECORDS, app_name="shop") -> Session:
    session = Session.create(root=root, start_time=start, app_name=app_name)
    with RecordStore(session.path, launch_time=start) as store:
        for record in records:
            store.store(*record)
    return session


def test_records_json_prints_every_record_in_stored_order(hawkwatch, tmp_path):
    session = make_session(tmp_path / "home" / "sessions", 1_700_000_000.0)
    done = hawkwatch("records", str(session.path), "--json")
    assert done.returncode == 0, done.stderr
    assert records_of(done.stdout) == [
        {"collection": "launch-time", "key": "1700000000.0", "value": "1700000000.0"},
        *({"collection": c, "key": k, "value": v} for c, k, v in RECORDS),
    ]
    assert "5 records" in done.stderr


def test_records_json_filters_by_collection(hawkwatch, tmp_path):
    session = make_session(tmp_path / "home" / "sessions", 1_700_000_000.0)
    done = hawkwatch("records", str(session.path), "--collection", "cpu", "--json")
    assert done.returncode == 0, done.stderr
    assert [(r["key"], r["value"]) for r in records_of(done.stdout)] == [
        ("1700000001.0", "12.5"),
        ("1700000002.5", "13.0"),
    ]


def test_records_reads_unflushed_records_of_a_live_writer(hawkwatch, tmp_path):
    store = RecordStore(tmp_path / "live", launch_time=1.0)
    try:
        store.store("cpu", "2.0", "50.0")  # still only in records.mmap2
        done = hawkwatch("records", str(tmp_path / "live"), "--json")
    finally:
        store.close()
    assert done.returncode == 0, done.stderr
    assert records_of(done.stdout)[-1] == {"collection": "cpu", "key": "2.0", "value": "50.0"}


def test_records_of_an_mthawkeye_folder(hawkwatch, tmp_path):
    folder = write_hawkeye_records(
        tmp_path / "2019-04-03_08-32-42+052",
        flushed=["collection,key,value", "cpu,1554251563.1,87.5"],
        unflushed=["fps,1554251563.5,58"],
        stale=b"fps,1554251500.0,60\n",
    )
    done = hawkwatch("records", str(folder), "--json")
    assert done.returncode == 0, done.stderr
    assert records_of(done.stdout) == [
        {"collection": "cpu", "key": "1554251563.1", "value": "87.5"},
        {"collection": "fps", "key": "1554251563.5", "value": "58"},
    ]


@pytest.mark.parametrize("which", ["not-a-session", "missing", "a-file"])
def test_records_of_a_path_that_is_not_a_session_is_one_line_and_exit_2(hawkwatch, tmp_path, which):
    (tmp_path / "not-a-session").mkdir()
    (tmp_path / "not-a-session" / "notes.txt").write_text("hi")
    (tmp_path / "a-file").write_text("hi")
    done = hawkwatch("records", str(tmp_path / which), "--json")
    assert done.returncode == 2
    assert done.stdout == ""
    assert len(done.stderr.splitlines()) == 1
    assert done.stderr.startswith("hawkwatch: ")
    assert str(tmp_path / which) in done.stderr
    assert "Traceback" not in done.stderr


def test_sessions_json_lists_sessions_oldest_first(hawkwatch, tmp_path):
    root = tmp_path / "home" / "sessions"
    now = time.time()
    first = make_session(root, now - 120, app_name="first")
    second = make_session(root, now - 60, records=RECORDS[:1], app_name="second")
    (root / "preferences").write_bytes(b"bplist00")
    done = hawkwatch("sessions", "--json")
    assert done.returncode == 0, done.stderr
    rows = sessions_of(done.stdout)
    assert [r["name"] for r in rows] == [first.name, second.name]
    assert [r["path"] for r in rows] == [str(first.path), str(second.path)]
    assert [r["app_name"] for r in rows] == ["first", "second"]
    assert [r["records"] for r in rows] == [5, 2]
    assert rows[0]["start_time"] == pytest.approx(now - 120)
    assert all(r["size_bytes"] >= 153_600 for r in rows)


def test_sessions_json_with_an_explicit_root(hawkwatch, tmp_path):
    other = tmp_path / "other"
    session = make_session(other, time.time())
    done = hawkwatch("sessions", "--root", str(other), "--json")
    assert done.returncode == 0, done.stderr
    assert [r["name"] for r in sessions_of(done.stdout)] == [session.name]


def test_sessions_with_nothing_recorded(hawkwatch):
    done = hawkwatch("sessions", "--json")
    assert done.returncode == 0, done.stderr
    assert sessions_of(done.stdout) == []
    assert "no sessions under" in done.stderr
    assert hawkwatch("sessions").stdout == ""


def test_sessions_of_a_root_that_does_not_exist_is_exit_2(hawkwatch, tmp_path):
    done = hawkwatch("sessions", "--root", str(tmp_path / "nowhere"))
    assert done.returncode == 2
    assert (
        done.stderr == f"hawkwatch: {tmp_path / 'nowhere'}: no such folder; pass the folder "
        "that holds session folders\n"
    )


def test_records_takes_a_session_name_and_a_root(hawkwatch, tmp_path):
    other = tmp_path / "other"
    session = make_session(other, 1_700_000_000.0)
    done = hawkwatch("records", session.name, "--root", str(other), "--collection", "cpu")
    assert done.returncode == 0, done.stderr
    assert done.stdout == "cpu\t1700000001.0\t12.5\ncpu\t1700000002.5\t13.0\n"
    newest = hawkwatch("records", "--root", str(other), "--json")
    assert len(records_of(newest.stdout)) == 5


def test_records_of_an_unknown_collection_is_exit_2_naming_the_ones_there(hawkwatch, tmp_path):
    session = make_session(tmp_path / "home" / "sessions", 1_700_000_000.0)
    done = hawkwatch("records", str(session.path), "--collection", "nosuch")
    assert done.returncode == 2
    assert done.stdout == ""
    assert done.stderr.splitlines() == [
        f"hawkwatch: no collection 'nosuch' in {session.path}; it has: "
        + ", ".join(sorted({"launch-time", *(c for c, _, _ in RECORDS)}))
    ]
    known = hawkwatch("records", str(session.path), "--collection", "fps")
    assert (known.returncode, known.stdout) == (0, "")  # a real collection this run did not write

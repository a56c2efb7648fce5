"""Damaged session folders: unreadable files are named, FIFOs never block, one bad session.json
never hides the others, no home directory is a clear message."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path

import pytest

from hawkwatch.errors import StoreError
from hawkwatch.store import Session, read_records
from tests.builders import lines_bytes, mmap_image, write_appender
from tests.e2e.conftest import HAWKWATCH_SCRIPT, Runner

LINES = ["collection,key,value", "launch-time,1.0,1.0", "cpu,2.0,10.0", "cpu,3.0,20.0"]


def make_session(root: Path, name: str = "2024-06-01_10-00-00+000", **metadata: object) -> Path:
    folder = write_appender(root / name, "records", log=lines_bytes(LINES))
    meta = {"format": "hawkwatch-session", "start_time": 1717236000.0, "app_name": "demo"}
    meta.update(metadata)
    (folder / "session.json").write_text(json.dumps(meta))
    return folder


SESSION_COMMANDS = [
    ("sessions",),
    ("sessions", "--json"),
    ("records", "{session}"),
    ("records", "--json", "{session}"),
    ("report", "{session}"),
    ("profile", "{session}", "--format", "collapsed"),
]


@pytest.mark.parametrize("victim", ["records.mtlog", "records.mmap2", "session.json"])
def test_a_fifo_as_a_session_file_blocks_no_command(runner: Runner, victim: str) -> None:
    folder = make_session(runner.root)
    (folder / victim).unlink(missing_ok=True)
    os.mkfifo(folder / victim)
    for command in SESSION_COMMANDS:
        args = [a.format(session=folder) for a in command]
        # A blocked open would hit the timeout and fail the test with TimeoutExpired.
        result = runner.hawkwatch(*args, timeout=60)
        assert "Traceback" not in result.stderr and "internal error" not in result.stderr
        if victim != "session.json":
            assert f"{victim}: not a regular file" in result.stderr, (args, result.stderr)
            assert result.returncode != 0
    dump = runner.hawkwatch("debug", "dump", str(folder / victim), timeout=60)
    assert dump.returncode == 1 and "not a regular file" in dump.stderr


def test_a_records_file_that_is_a_directory_is_an_error_naming_it(runner: Runner) -> None:
    folder = make_session(runner.root)
    (folder / "records.mtlog").unlink()
    (folder / "records.mtlog").mkdir()
    result = runner.hawkwatch("records", str(folder))
    assert result.returncode == 1
    assert result.stderr.strip().endswith("records.mtlog: not a regular file")
    assert result.stdout == ""
    report = runner.hawkwatch("report", str(folder))
    assert report.returncode == 1 and "records.mtlog: not a regular file" in report.stderr


def _read_as_nobody(folder: Path) -> str:
    """Read the records in a forked child running as ``nobody``; returns what it saw."""
    read_fd, write_fd = os.pipe()
    pid = os.fork()
    if pid == 0:
        try:
            os.close(read_fd)
            os.setgid(65534)
            os.setuid(65534)
            try:
                found = f"records:{len(read_records(folder).records)}"
            except StoreError as exc:
                found = f"error:{exc}"
            os.write(write_fd, found.encode())
        finally:
            os._exit(0)
    os.close(write_fd)
    with os.fdopen(read_fd, "rb") as pipe:
        seen = pipe.read().decode()
    os.waitpid(pid, 0)
    return seen


@pytest.mark.skipif(os.geteuid() != 0, reason="needs root to switch to the 'nobody' user")
@pytest.mark.parametrize("victim", ["records.mtlog", "records.mmap2"])
def test_a_records_file_without_read_permission_is_an_error_naming_it(victim: str) -> None:
    base = Path(tempfile.mkdtemp(prefix="hawkwatch-perm-"))  # pytest's tmp is root-only
    folder = write_appender(
        base / "s", "records", log=lines_bytes(LINES), buffer=mmap_image(b"cpu,4.0,1\n")
    )
    base.chmod(0o755)
    folder.chmod(0o755)
    for name in ("records.mtlog", "records.mmap2"):
        (folder / name).chmod(0o644)
    assert _read_as_nobody(folder) == "records:4"
    (folder / victim).chmod(0o000)
    try:
        seen = _read_as_nobody(folder)
    finally:
        shutil.rmtree(base)
    assert seen == f"error:{folder / victim}: cannot read: Permission denied"


def test_a_nul_inside_the_buffer_is_reported_as_skipped_lines(tmp_path: Path) -> None:
    data = bytearray(b"cpu,1,1\ncpu,2,2\ncpu,3,3\ncpu,4,4\n")
    data[10] = 0  # inside the second line: it and the two after it are hidden
    write_appender(tmp_path, "records", buffer=mmap_image(bytes(data)))
    result = read_records(tmp_path)
    assert [r.key for r in result.records] == ["1"]
    reasons = [s.reason for s in result.skipped]
    assert reasons == [
        "incomplete last line (torn write)",
        "2 buffered line(s) after a NUL byte where the data should go on (a damaged .mmap2)",
    ]


@pytest.mark.parametrize("start", ["NaN", "Infinity", "-Infinity", "1e300", "-1e300", "true"])
def test_sessions_lists_everything_when_one_start_time_is_absurd(
    runner: Runner, start: str
) -> None:
    make_session(runner.root, "2024-06-01_10-00-00+000")
    bad = make_session(runner.root, "2024-06-02_10-00-00+000")
    text = (bad / "session.json").read_text().replace("1717236000.0", start)
    (bad / "session.json").write_text(text)
    assert Session(bad).start_time is not None  # falls back to the folder name
    result = runner.hawkwatch("sessions", "--json")
    assert result.returncode == 0, result.stderr
    rows = json.loads(result.stdout)["sessions"]
    assert [r["records"] for r in rows] == [3, 3]
    table = runner.hawkwatch("sessions")
    assert table.returncode == 0, table.stderr
    assert "2024-06-02_10-00-00+000" in table.stdout


def test_sessions_lists_the_others_when_one_cannot_be_read(runner: Runner) -> None:
    make_session(runner.root, "2024-06-01_10-00-00+000")
    bad = make_session(runner.root, "2024-06-02_10-00-00+000")
    (bad / "records.mtlog").unlink()
    (bad / "records.mtlog").mkdir()
    result = runner.hawkwatch("sessions", "--json")
    assert result.returncode == 1
    rows = json.loads(result.stdout)["sessions"]
    assert [r["records"] for r in rows] == [3, None]
    assert rows[1]["error"].endswith("records.mtlog: not a regular file")
    assert "records.mtlog: not a regular file" in result.stderr


@pytest.mark.skipif(os.geteuid() != 0, reason="needs root to run as a user without a home")
@pytest.mark.parametrize("command", [("sessions",), ("report",)])
def test_no_home_directory_is_one_clear_line(runner: Runner, command: tuple[str, ...]) -> None:
    env = {k: v for k, v in runner.env().items() if k not in ("HOME", "HAWKWATCH_HOME")}
    code = "import sys; from hawkwatch.cli import main; sys.exit(main(sys.argv[1:]))"
    # uid 54321 has no passwd entry, and HOME is unset: Path.home() cannot answer.
    result = subprocess.run(
        [
            "setpriv",
            "--reuid=54321",
            "--regid=54321",
            "--clear-groups",
            sys.executable,
            "-c",
            code,
            *command,
        ],
        env=env,
        cwd="/",
        capture_output=True,
        text=True,
        timeout=60,
        check=False,
    )
    unreadable = ("Permission denied", "error while loading shared libraries")
    if "hawkwatch" not in result.stderr and any(text in result.stderr for text in unreadable):
        pytest.skip("the test's Python (or its libpython) is not readable by another user")
    assert result.returncode == 2, result.stderr
    assert result.stderr.strip() == (
        "hawkwatch: cannot determine the home directory (no $HOME, and no passwd entry for this "
        "user); set HAWKWATCH_HOME, or pass the folder (--root)"
    )
    assert HAWKWATCH_SCRIPT  # the console script is the same entry point
